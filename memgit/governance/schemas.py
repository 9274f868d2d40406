"""memgit-schemas: every memgit file parses and fits its schema, at the path it names.

``memgit.yaml``, captures, memories and run records are each parsed by the
same strict parser memgit itself uses, checked against their JSON Schema, and
checked to live at the path their content implies (a memory's scope and id, a
capture's source, session and seq, a run's id).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

import pygit2

from memgit.constants import CONFIG_FILE, INBOX_DIR, MEMORIES_DIR, RUNS_DIR
from memgit.errors import MemgitError, Problem
from memgit.governance.attributes import ATTRIBUTES_FILE, iter_attributes_problems
from memgit.governance.view import CommitView
from memgit.layout import windows_problem
from memgit.memory import read_memory
from memgit.runrecord import parse_run_record
from memgit.settings import parse_settings
from memgit.turn import read_capture

HOOK_ID = "memgit-schemas"


def kind_of(path: str) -> str | None:
    """Which memgit format a path holds, by where it lives."""
    if path == CONFIG_FILE:
        return "config"
    if path.startswith(f"{INBOX_DIR}/") and path.endswith(".yaml"):
        return "capture"
    if path.startswith(f"{MEMORIES_DIR}/") and path.endswith(".md"):
        return "memory"
    if path.startswith(f"{RUNS_DIR}/") and path.endswith(".json"):
        return "run"
    return None


def _misplaced(path: str, expected: str) -> Problem:
    return Problem(
        code="misplaced-file",
        message=f"its content belongs at {expected}",
        path=path,
        hint="memgit finds files by path: move the file, or fix the fields that name it",
    )


def _check_capture(path: str, view: CommitView) -> Iterator[Problem]:
    turn = view.parsed(path, read_capture)
    if turn.path != path:
        yield _misplaced(path, turn.path)


def _check_memory(path: str, view: CommitView) -> Iterator[Problem]:
    memory = view.parsed(path, read_memory)
    if memory.path != path:
        yield _misplaced(path, memory.path)
    settings = view.settings
    if settings is None:
        return
    if memory.type not in settings.memory_types:
        yield Problem(
            code="unknown-type",
            message=f"type {memory.type!r} is not in memgit.yaml's memory_types",
            path=path,
            field="type",
        )
    if memory.scope.split("/")[0] not in settings.scopes:
        yield Problem(
            code="unknown-scope",
            message=f"scope {memory.scope!r} does not start with one of memgit.yaml's scopes",
            path=path,
            field="scope",
        )


def _check_run(path: str, view: CommitView) -> Iterator[Problem]:
    record = view.parsed(path, parse_run_record)
    if record.path != path:
        yield _misplaced(path, record.path)


def _check_config(path: str, view: CommitView) -> Iterator[Problem]:
    """A type or scope may leave memgit.yaml only once no memory uses it."""
    settings = view.parsed(path, parse_settings)
    before = view.parent_settings
    if before is None:
        return
    types = set(before.memory_types) - set(settings.memory_types)
    scopes = set(before.scopes) - set(settings.scopes)
    if not types and not scopes:
        return
    users = view.lookup.memories_using(view.tree, types=types, scopes=scopes)
    for field, removed, column in (("memory_types", types, 1), ("scopes", scopes, 2)):
        for value in sorted(removed):
            using = [row[0] for row in users if row[column].split("/")[0] == value]
            if using:
                yield Problem(
                    code="unknown-type" if field == "memory_types" else "unknown-scope",
                    message=f"{value!r} is removed from {field}, but {len(using)} "
                    f"memories still use it (first: {using[0]})",
                    path=path,
                    field=field,
                    hint="move or retract those memories first, or keep the value",
                )


def iter_file_problems(path: str, view: CommitView) -> Iterator[Problem]:
    """Problems of one file of a known kind (nothing for other files)."""
    checks: dict[str, Callable[[str, CommitView], Iterator[Problem]]] = {
        "config": _check_config,
        "capture": _check_capture,
        "memory": _check_memory,
        "run": _check_run,
    }
    kind = kind_of(path)
    if kind is None:
        return
    try:
        yield from checks[kind](path, view)
    except MemgitError as err:
        yield from err.problems or (err.problem,)


_PLAIN = {pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE}
_OWNED = (f"{INBOX_DIR}/", f"{MEMORIES_DIR}/", f"{RUNS_DIR}/")


def _not_a_file(path: str, view: CommitView) -> Problem | None:
    """memgit's files are plain files: a submodule or symlink among them cannot be read
    as what its path says (and a submodule's commit is not even in the repository)."""
    mode = view.mode(path)
    if mode is None or mode in _PLAIN or not (path == CONFIG_FILE or path.startswith(_OWNED)):
        return None
    what = "a submodule" if mode == pygit2.enums.FileMode.COMMIT else "a symbolic link"
    return Problem(
        code="not-a-file",
        message=f"it is {what}, not a file",
        path=path,
        hint="memgit's folders hold plain files only: remove it with git rm --cached",
    )


def _not_for_windows(path: str) -> Problem | None:
    """memgit's files must check out on Windows too: no part of their path may be a
    device name (``aux``, ``nul.md``) or end with a dot. Sources and sessions are refused
    when captured; this catches scopes, memory ids and files people commit."""
    if not (path == CONFIG_FILE or path.startswith(_OWNED)):
        return None
    for part in path.split("/"):
        problem = windows_problem(part)
        if problem is not None:
            return Problem(
                code="invalid-name",
                message=f"{part!r} {problem}",
                path=path,
                hint="rename it (for a memory: another scope or id); the repository must "
                "check out on Windows too",
            )
    return None


def iter_schema_problems(view: CommitView) -> Iterator[Problem]:
    for path in sorted(view.changed):
        special = _not_a_file(path, view) or _not_for_windows(path)
        if special is not None:
            yield special
        elif path.rsplit("/", 1)[-1] == ATTRIBUTES_FILE:
            yield from iter_attributes_problems(path, view.read(path) or b"")
        elif view.read(path) is not None:
            yield from iter_file_problems(path, view)


def main(argv: list[str] | None = None) -> int:
    from memgit.governance.hooks import run_hook

    return run_hook(HOOK_ID, iter_schema_problems, sys.argv[1:] if argv is None else argv)
