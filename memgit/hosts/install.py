"""``memgit install HOST``: merge memgit's hook into a host's configuration.

The host's file is the person's: every setting memgit does not own is kept as
it is, a file that cannot be read safely is refused before anything is
written, the old file is kept as ``<file>.memgit-backup``, and installing
again changes nothing. memgit's own entry is recognised by its command
(``memgit.hosts.hook HOST``), so a reinstall with another interpreter or
repository updates it instead of adding a second.

Claude Code's ``settings.json`` is JSON, rewritten whole (two-space indent).
Codex's ``config.toml`` is edited as text, since Python reads TOML but cannot
write it: one ``notify = [...]`` line at the top level, and the result is read
back with :mod:`tomllib` and compared with what was meant before it is written.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memgit.errors import ConflictError, InvalidInputError
from memgit.hosts.events import CLAUDE_CODE, CODEX
from memgit.jsonio import parse_json

BACKUP_SUFFIX = ".memgit-backup"
CLAUDE_EVENTS = ("UserPromptSubmit", "Stop", "SessionStart")
HOOK_TIMEOUT = 60
"""Seconds Claude Code gives the hook: more than a capture waits for the writer lock (30 s
by default), so one waiting for a running process is not cut off before it commits."""
HOOK_MODULE = "memgit.hosts.hook"
_TABLE = re.compile(r"\s*\[")
_NOTIFY = re.compile(r"\s*notify\s*=")
_TOML_WHERE = re.compile(r"at line (\d+), column (\d+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Installed:
    """What an install did (or, with ``dry_run``, would do) to the host's file."""

    host: str
    file: str
    changed: bool
    backup: str | None
    diff: str
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "file": self.file,
            "changed": self.changed,
            "backup": self.backup,
            "diff": self.diff,
            "dry_run": self.dry_run,
        }


def install(host: str, workdir: Path, *, config_dir: Path | None, dry_run: bool) -> Installed:
    """Merge the hook for the memory repository ``workdir`` into ``host``'s configuration
    (in ``config_dir``, else the host's default folder)."""
    folder, name, merge = HOSTS[host]
    path = (config_dir if config_dir is not None else folder()) / name
    old = _read(path)
    new = merge(old, path, workdir)
    diff = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=str(path),
            tofile=str(path),
        )
    )
    changed = new != old
    backup = path.with_name(path.name + BACKUP_SUFFIX) if changed and path.exists() else None
    if changed and not dry_run:
        _write(path, new, backup, old)
    return Installed(
        host=host,
        file=str(path),
        changed=changed,
        backup=str(backup) if backup is not None else None,
        diff=diff,
        dry_run=dry_run,
    )


def hook_words(host: str, workdir: Path) -> list[str]:
    """The hook's command: this interpreter by its absolute path, so no virtual
    environment needs to be active when the host runs it."""
    return [sys.executable, "-m", HOOK_MODULE, host, "-C", str(workdir.resolve())]


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as err:
        raise _invalid(path, "(file)", f"cannot be read: {err}") from err


def _write(path: Path, text: str, backup: Path | None, old: str) -> None:
    """The backup first, then the new file by rename, so the host never reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if backup is not None:
        backup.write_text(old, "utf-8")
    temporary = path.with_name(path.name + ".memgit-new")
    temporary.write_text(text, "utf-8")
    if path.exists():
        os.chmod(temporary, path.stat().st_mode & 0o7777)
    os.replace(temporary, path)


def _invalid(path: Path, field: str, message: str) -> InvalidInputError:
    return InvalidInputError(
        message,
        code="host-config-invalid",
        path=str(path),
        field=field,
        hint="fix the file (memgit changed nothing), or add the hook by hand (docs/hosts.md)",
    )


# ---------------------------------------------------------------- Claude Code


def _claude_folder() -> Path:
    return Path.home() / ".claude"


def merge_claude(old: str, path: Path, workdir: Path) -> str:
    """settings.json with the hook under each event; ``old`` itself when nothing changes."""
    settings = _claude_settings(old, path)
    command = shlex.join(hook_words(CLAUDE_CODE, workdir))
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise _invalid(path, "hooks", f"is {_kind(hooks)}, not an object of events")
    changed = False
    for event in CLAUDE_EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise _invalid(path, f"hooks.{event}", f"is {_kind(groups)}, not a list")
        changed |= _place_command(groups, command, path, event)
    if not changed:
        return old
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def _claude_settings(old: str, path: Path) -> dict[str, Any]:
    if not old.strip():
        return {}
    try:
        settings = parse_json(old, source=str(path))
    except InvalidInputError as err:
        raise _invalid(path, err.field or "(file)", err.message) from err
    if not isinstance(settings, dict):
        raise _invalid(path, "(top level)", f"is {_kind(settings)}, not an object")
    return settings


def _place_command(groups: list[Any], command: str, path: Path, event: str) -> bool:
    """Add ``command`` to ``groups`` (or update memgit's older one); whether it changed."""
    marker = f"{HOOK_MODULE} {CLAUDE_CODE}"
    for number, group in enumerate(groups):
        entries = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(entries, list):
            raise _invalid(path, f"hooks.{event}[{number}].hooks", "is not a list of hooks")
        for entry in entries:
            found = entry.get("command") if isinstance(entry, dict) else None
            if isinstance(found, str) and marker in found:
                if found == command:
                    return False
                entry["command"] = command
                return True
    hook = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}
    groups.append({"hooks": [hook]})
    return True


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else "null")


# ---------------------------------------------------------------- Codex


def _codex_folder() -> Path:
    home = os.environ.get("CODEX_HOME")
    return Path(home) if home else Path.home() / ".codex"


def merge_codex(old: str, path: Path, workdir: Path) -> str:
    """config.toml with ``notify`` running the hook; ``old`` itself when it does already."""
    config = _codex_config(old, path)
    words = hook_words(CODEX, workdir)
    current = config.get("notify")
    if current == words:
        return old
    line = "notify = [" + ", ".join(json.dumps(word, ensure_ascii=False) for word in words) + "]\n"
    lines = old.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    top = next((i for i, text in enumerate(lines) if _TABLE.match(text)), len(lines))
    if current is None:
        new_lines = [*lines[:top], line, *lines[top:]]
    elif _is_ours(current):
        at = [i for i in range(top) if _NOTIFY.match(lines[i])]
        if len(at) != 1:
            raise _unplaceable(path)
        new_lines = [*lines[: at[0]], line, *lines[at[0] + 1 :]]
    else:
        raise ConflictError(
            f"notify already runs another program ({_shown(current)}); Codex runs only one",
            code="host-config-conflict",
            path=str(path),
            field="notify",
            hint="have that program also run the memgit hook, or replace it by hand "
            "(docs/hosts.md#codex); memgit changed nothing",
        )
    new = "".join(new_lines)
    try:
        reread = tomllib.loads(new)
    except tomllib.TOMLDecodeError as err:
        raise _unplaceable(path) from err
    if reread != {**config, "notify": words}:
        raise _unplaceable(path)
    return new


def _codex_config(old: str, path: Path) -> dict[str, Any]:
    try:
        config = tomllib.loads(old)
    except tomllib.TOMLDecodeError as err:
        where = _TOML_WHERE.search(str(err))
        field = f"line {where[1]}, column {where[2]}" if where else "(file)"
        raise _invalid(path, field, f"is not TOML: {str(err).split(' (at ')[0]}") from err
    current = config.get("notify")
    if current is not None and not (
        isinstance(current, list) and all(isinstance(word, str) for word in current)
    ):
        raise _invalid(path, "notify", "is not a list of strings (a program and its arguments)")
    return config


def _is_ours(words: list[str]) -> bool:
    return HOOK_MODULE in words and CODEX in words


def _shown(words: list[str]) -> str:
    return shlex.join(words)[:80]


def _unplaceable(path: Path) -> ConflictError:
    return ConflictError(
        "memgit cannot place one notify line at the top level of this file and read it back",
        code="host-config-conflict",
        path=str(path),
        field="notify",
        hint="add the notify line by hand (docs/hosts.md#codex); memgit changed nothing",
    )


HOSTS: dict[str, tuple[Callable[[], Path], str, Callable[[str, Path, Path], str]]] = {
    CLAUDE_CODE: (_claude_folder, "settings.json", merge_claude),
    CODEX: (_codex_folder, "config.toml", merge_codex),
}
