"""Where each file of a memory repository lives, and which names are safe.

Every id, source, session and scope path that comes from input is checked here
before it can reach libgit2, which silently drops a leading ``/`` and truncates
at NUL. Folders are sharded by a short hash so that no tree object grows with
the repository (see docs/decisions/0001-sharded-layout.md).
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

from memgit.constants import (
    INBOX_DIR,
    MAX_SCOPE_DEPTH,
    MAX_SEGMENT_LENGTH,
    MEMORIES_DIR,
    RUNS_DIR,
)
from memgit.errors import InvalidInputError

_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_MEMORY_ID = re.compile(r"[a-z0-9][a-z0-9_-]{1,63}")
_RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[a-z0-9]{4,16}")
_SEQ_WIDTH = 6
# Names Windows gives to devices, with or without an extension ("nul.txt" is NUL too):
# a file or folder named so cannot be checked out there, and neither can one ending in
# a dot (Windows drops it). The repository must check out wherever Git runs.
_WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul"]
    + [f"{port}{number}" for port in ("com", "lpt") for number in range(1, 10)]
)


def _describe(value: str) -> str:
    shown = value if len(value) <= 40 else value[:37] + "..."
    return repr(shown)


def check_segment(value: object, *, field: str, source: str | None = None) -> str:
    """One path component from input: letters, digits, ``.``, ``_``, ``-``; no leading dot."""
    if not isinstance(value, str):
        raise InvalidInputError(
            f"expected a string, got {type(value).__name__}",
            code="invalid-name",
            path=source,
            field=field,
        )
    if not value or len(value) > MAX_SEGMENT_LENGTH or not _SEGMENT.fullmatch(value):
        raise InvalidInputError(
            f"{_describe(value)} is not a safe name",
            code="invalid-name",
            path=source,
            field=field,
            hint=(
                f"use 1-{MAX_SEGMENT_LENGTH} letters, digits, '.', '_' or '-', starting with a "
                "letter or digit; no '/', '..', spaces or control characters"
            ),
        )
    problem = windows_problem(value)
    if problem is not None:
        raise InvalidInputError(
            f"{_describe(value)} {problem}",
            code="invalid-name",
            path=source,
            field=field,
            hint="pick another name: the repository must check out on Windows too",
        )
    return value


def windows_problem(name: str) -> str | None:
    """Why Windows cannot hold a file or folder called ``name`` (one path part), or None."""
    if name.endswith((".", " ")):
        return "ends with a dot or space, which Windows drops from file names"
    if name.split(".", 1)[0].lower() in _WINDOWS_DEVICES:
        return "is a device name on Windows (CON, PRN, AUX, NUL, COM1-9, LPT1-9)"
    return None


def check_scope(value: object, *, field: str = "scope", source: str | None = None) -> str:
    """A scope path such as ``project/memgit``: safe segments joined by ``/``."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(
            "a scope must be a non-empty string", code="invalid-scope", path=source, field=field
        )
    parts = value.split("/")
    if len(parts) > MAX_SCOPE_DEPTH:
        raise InvalidInputError(
            f"scope {_describe(value)} is deeper than {MAX_SCOPE_DEPTH} levels",
            code="invalid-scope",
            path=source,
            field=field,
        )
    for part in parts:
        try:
            check_segment(part, field=field, source=source)
        except InvalidInputError as err:
            raise InvalidInputError(
                f"scope {_describe(value)} has an unsafe part {_describe(part)}",
                code="invalid-scope",
                path=source,
                field=field,
                hint="a scope is names joined by '/', e.g. 'user' or 'project/memgit'",
            ) from err
    return value


def is_memory_id(value: str) -> bool:
    """Whether ``value`` is a memory id; it names a file, so no Windows device name either
    (``nul.md``)."""
    return _MEMORY_ID.fullmatch(value) is not None and windows_problem(value) is None


def check_memory_id(value: object, *, field: str = "id", source: str | None = None) -> str:
    if not isinstance(value, str) or not is_memory_id(value):
        raise InvalidInputError(
            f"{_describe(str(value))} is not a valid memory id",
            code="invalid-id",
            path=source,
            field=field,
            hint="memory ids are 2-64 lower-case letters, digits, '_' or '-'",
        )
    return value


def is_run_id(value: str) -> bool:
    """Whether ``value`` has a run id's shape (a memory id has no upper-case letter)."""
    return _RUN_ID.fullmatch(value) is not None


def check_run_id(value: object, *, field: str = "run_id", source: str | None = None) -> str:
    if not isinstance(value, str) or not _RUN_ID.fullmatch(value):
        raise InvalidInputError(
            f"{_describe(str(value))} is not a valid run id",
            code="invalid-id",
            path=source,
            field=field,
            hint="run ids look like 20261130T103500Z-k3v9x2",
        )
    return value


def shard(name: str) -> str:
    """Two hex digits of a name's hash: 256 folders keep every tree object small."""
    return hashlib.sha1(name.encode("utf-8")).hexdigest()[:2]


def capture_path(source: str, session: str, seq: int) -> str:
    """``inbox/<source>/<shard>/<session>/<seq>.yaml``; seq zero-padded so ``ls`` sorts."""
    return f"{INBOX_DIR}/{source}/{shard(session)}/{session}/{seq:0{_SEQ_WIDTH}d}.yaml"


def memory_path(scope: str, memory_id: str) -> str:
    """``memories/<scope>/<first two chars of id>/<id>.md``."""
    return f"{MEMORIES_DIR}/{scope}/{memory_id[:2]}/{memory_id}.md"


def run_path(run_id: str) -> str:
    """``runs/<yyyy>/<mm>/<run-id>.json``; the run id starts with its UTC timestamp."""
    return f"{RUNS_DIR}/{run_id[:4]}/{run_id[4:6]}/{run_id}.json"


def run_moment(record_path: str) -> float | None:
    """When the run whose record is at ``record_path`` was made (seconds since the epoch,
    from the run id that names the file), or None for a path that names no run (or no
    real moment). Read field by field: ``strptime`` cost 30 us a record."""
    name = record_path.rsplit("/", 1)[-1].removesuffix(".json")
    if not _RUN_ID.fullmatch(name):
        return None
    year, month, day = int(name[0:4]), int(name[4:6]), int(name[6:8])
    hour, minute, second = int(name[9:11]), int(name[11:13]), int(name[13:15])
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()
    except ValueError:  # a month 13, a second 61
        return None


def parse_capture_path(path: str) -> tuple[str, str, int] | None:
    """(source, session, seq) of an inbox path this module would write, else None."""
    parts = path.split("/")
    if len(parts) != 5 or parts[0] != INBOX_DIR or not parts[4].endswith(".yaml"):
        return None
    source, shard_dir, session, leaf = parts[1:]
    digits = leaf[: -len(".yaml")]
    if not digits.isdigit() or shard_dir != shard(session):
        return None
    return source, session, int(digits)


def is_memory_path(path: str) -> bool:
    return path.startswith("memories/") and path.endswith(".md")


def is_capture_path(path: str) -> bool:
    return path.startswith("inbox/") and path.endswith(".yaml")
