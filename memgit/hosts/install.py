"""``memgit install HOST``: merge memgit's hook into a host's configuration
(``memgit uninstall HOST``: take it out again).

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
_TAKE_OUT = "take the notify line out of"


@dataclass(frozen=True, slots=True, kw_only=True)
class Installed:
    """What an install did (or, with ``dry_run``, would do) to the host's file."""

    host: str
    file: str
    changed: bool
    backup: str | None
    diff: str
    dry_run: bool


def install(host: str, workdir: Path, *, config_dir: Path | None, dry_run: bool) -> Installed:
    """Merge the hook for the memory repository ``workdir`` into ``host``'s configuration
    (in ``config_dir``, else the host's default folder)."""
    folder, name, merge, _ = HOSTS[host]
    path = (config_dir if config_dir is not None else folder()) / name
    return _change(host, path, merge(_read(path), path, workdir), dry_run=dry_run)


def uninstall(host: str, *, config_dir: Path | None, dry_run: bool) -> Installed:
    """Take memgit's hook (for any repository) out of ``host``'s configuration, keeping
    everything else; a file without it is left as it is."""
    folder, name, _, remove = HOSTS[host]
    path = (config_dir if config_dir is not None else folder()) / name
    return _change(host, path, remove(_read(path), path), dry_run=dry_run)


def _change(host: str, path: Path, new: str, *, dry_run: bool) -> Installed:
    """Write ``new`` over the file at ``path`` (its backup first), unless it is the same."""
    old = _read(path)
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


def remove_claude(old: str, path: Path) -> str:
    """settings.json without memgit's hook entries (a group, event or ``hooks`` object
    they leave empty goes too); ``old`` itself when it has none."""
    settings = _claude_settings(old, path)
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return old
    marker = f"{HOOK_MODULE} {CLAUDE_CODE}"
    changed = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                kept_groups.append(group)
                continue
            kept = [e for e in entries if not _is_memgit_entry(e, marker)]
            changed |= len(kept) != len(entries)
            if kept or len(kept) == len(entries):
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        elif groups:
            del hooks[event]
    if not changed:
        return old
    if not hooks:
        del settings["hooks"]
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def _is_memgit_entry(entry: Any, marker: str) -> bool:
    command = entry.get("command") if isinstance(entry, dict) else None
    return isinstance(command, str) and marker in command


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


def remove_codex(old: str, path: Path) -> str:
    """config.toml without memgit's ``notify`` line; ``old`` itself when notify is not
    memgit's (another program's is left alone)."""
    config = _codex_config(old, path)
    current = config.get("notify")
    if current is None or not _is_ours(current):
        return old
    lines = old.splitlines(keepends=True)
    top = next((i for i, text in enumerate(lines) if _TABLE.match(text)), len(lines))
    at = [i for i in range(top) if _NOTIFY.match(lines[i])]
    if len(at) != 1:
        raise _unplaceable(path, _TAKE_OUT)
    new = "".join([*lines[: at[0]], *lines[at[0] + 1 :]])
    try:
        reread = tomllib.loads(new)
    except tomllib.TOMLDecodeError as err:
        raise _unplaceable(path, _TAKE_OUT) from err
    if reread != {key: value for key, value in config.items() if key != "notify"}:
        raise _unplaceable(path, _TAKE_OUT)
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


def _unplaceable(
    path: Path, doing: str = "place one notify line at the top level of"
) -> ConflictError:
    return ConflictError(
        f"memgit cannot {doing} this file and read it back as meant",
        code="host-config-conflict",
        path=str(path),
        field="notify",
        hint="edit the notify line by hand (docs/hosts.md#codex); memgit changed nothing",
    )


Merge = Callable[[str, Path, Path], str]
Remove = Callable[[str, Path], str]
HOSTS: dict[str, tuple[Callable[[], Path], str, Merge, Remove]] = {
    CLAUDE_CODE: (_claude_folder, "settings.json", merge_claude, remove_claude),
    CODEX: (_codex_folder, "config.toml", merge_codex, remove_codex),
}
