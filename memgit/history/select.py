"""``ID@REV``: one version of a memory, by commit, date or number.

``REV`` is ``vN`` (the Nth version, v1 the first: always a number, never a tag named
v2, which ``tags/v2`` names), an ISO 8601 date (the last version at or before it; a
date alone means the end of that day, UTC, as ``recall --as-of`` reads it), or
anything ``git rev-parse`` takes (the file as that commit holds it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import pygit2

from memgit.catalog import find_memory_file
from memgit.errors import UsageError
from memgit.history.versions import MemoryHistory, Version, commit_date, load_history
from memgit.jsonio import json_data
from memgit.revisions import parse_date
from memgit.store.tree import read_blob

_VERSION = re.compile(r"v([0-9]{1,9})")
MAX_REV_CHARS = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class Status:
    """What the memory is now, whichever version is shown: its file says
    ``status: active`` in every version, since a memory leaves the tree when it is
    retired. ``state`` is ``active``, ``superseded``, ``retracted``, ``removed`` (by a
    person's commit without trailers) or ``retired`` (its retired ref holds it, but
    HEAD's history does not show the commit that removed it); ``commit`` is the
    commit that removed it from the tree, and ``superseded_by`` its successor."""

    state: str
    superseded_by: str | None = None
    commit: str | None = None
    date: str | None = None

    @property
    def active(self) -> bool:
        return self.state == "active"

    def describe(self, memory_id: str) -> str:
        """One line for ``memgit show``'s stderr, above the file that still reads active."""
        by = f" by {self.superseded_by}" if self.superseded_by else ""
        when = f" in commit {self.commit[:12]} on {self.date}" if self.commit else ""
        return (
            f"memory {memory_id} is {self.state}{by}{when}; the file shown is a version "
            "from when it was active"
        )


ACTIVE = Status(state="active")


def memory_status(history: MemoryHistory) -> Status:
    """The memory's status now, read from the newest version of its history."""
    if history.active:
        return ACTIVE
    latest = history.versions[0] if history.versions else None
    if latest is None or latest.blob is not None:
        return Status(state="retired")
    return Status(
        state=latest.change if latest.change in ("superseded", "retracted") else "removed",
        superseded_by=latest.superseded_by,
        commit=latest.commit,
        date=latest.date,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """The memory's file as one commit holds it, the version that wrote it (None
    for a commit whose content no version the log lists made), and what the memory
    is now (``status``)."""

    memory_id: str
    commit: str
    date: str
    path: str
    blob: str
    text: str
    version: Version | None
    status: Status = ACTIVE

    def to_dict(self) -> dict[str, Any]:
        """As ``memgit show --json`` prints it: the version's number and change flattened
        beside the file's commit, path, blob and text."""
        version = self.version
        return {
            "id": self.memory_id,
            "commit": self.commit,
            "date": self.date,
            "version": version.number if version is not None else None,
            "change": version.change if version is not None else None,
            "status": json_data(self.status),
            "path": self.path,
            "blob": self.blob,
            "text": self.text,
        }


def split_spec(spec: str) -> tuple[str, str | None]:
    """``ID@REV`` -> (ID, REV); a memory id holds no ``@``, a revision may."""
    memory_id, at, rev = spec.partition("@")
    return memory_id, (rev if at else None)


def select(repo: pygit2.Repository, history: MemoryHistory, rev: str | None) -> Snapshot:
    """The version ``rev`` names (the latest when None), with the memory's status now;
    ``no-version`` when there is none."""
    return replace(_select(repo, history, rev), status=memory_status(history))


def _select(repo: pygit2.Repository, history: MemoryHistory, rev: str | None) -> Snapshot:
    memory_id = history.memory_id
    contents = history.contents
    if rev is None:
        if not contents:
            raise _no_version(memory_id, "has no version")
        return _snapshot(repo, contents[0])
    shown = repr(rev if len(rev) <= 60 else rev[:57] + "...")
    if not rev.strip() or len(rev) > MAX_REV_CHARS or any(ord(c) < 32 or c == "\x7f" for c in rev):
        raise _bad_revision(memory_id, shown, "is not a revision")
    number = _VERSION.fullmatch(rev)
    if number is not None:
        wanted = int(number.group(1))
        if wanted == 0:
            raise _bad_revision(memory_id, shown, "is no version: versions count from v1")
        for version in contents:
            if version.number == wanted:
                return _snapshot(repo, version)
        raise _no_version(memory_id, f"has {len(contents)} versions, so no {rev}")
    when = parse_date(rev.strip())
    if when is not None:
        limit = when.timestamp()
        for version in history.versions:
            commit = repo[version.commit].peel(pygit2.Commit)
            if commit.commit_time <= limit:
                if version.blob is None:
                    raise _no_version(
                        memory_id, f"was {version.change} by {rev} ({_where(version)})"
                    )
                return _snapshot(repo, version)
        first = history.versions[-1] if history.versions else None
        since = f": its first version is {_where(first)}" if first else ""
        raise _no_version(memory_id, f"has no version at or before {rev}{since}")
    return _at_commit(repo, history, rev, shown)


def _at_commit(repo: pygit2.Repository, history: MemoryHistory, rev: str, shown: str) -> Snapshot:
    memory_id = history.memory_id
    try:
        commit = repo.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError) as err:
        raise _bad_revision(
            memory_id, shown, "is neither vN, an ISO 8601 date nor a revision"
        ) from err
    found = find_memory_file(repo, commit.tree, memory_id)
    if found is None:
        raise _no_version(memory_id, f"is not in commit {str(commit.id)[:12]}")
    path, blob = found
    version = next(
        (
            v
            for v in history.contents
            if v.blob == str(blob)
            and v.path == path
            and (v.commit == str(commit.id) or repo.descendant_of(commit.id, v.commit))
        ),
        None,
    )
    return Snapshot(
        memory_id=memory_id,
        commit=str(commit.id),
        date=commit_date(commit),
        path=path,
        blob=str(blob),
        text=_text(repo, str(blob)),
        version=version,
    )


def _snapshot(repo: pygit2.Repository, version: Version) -> Snapshot:
    if version.blob is None:  # a deletion: no file to show
        raise _no_version(version.memory_id, f"was {version.change} ({_where(version)})")
    return Snapshot(
        memory_id=version.memory_id,
        commit=version.commit,
        date=version.date,
        path=version.path,
        blob=version.blob,
        text=_text(repo, version.blob),
        version=version,
    )


def _text(repo: pygit2.Repository, blob: str) -> str:
    return read_blob(repo, blob).decode("utf-8", "replace")


def _where(version: Version) -> str:
    return f"{version.change} in {version.commit[:12]} on {version.date}"


def _no_version(memory_id: str, problem: str) -> UsageError:
    return UsageError(
        f"memory {memory_id} {problem}",
        code="no-version",
        field="REV",
        hint=f"`memgit log {memory_id}` lists its versions",
    )


def _bad_revision(memory_id: str, shown: str, problem: str) -> UsageError:
    return UsageError(
        f"{shown} {problem}",
        code="invalid-revision",
        field=f"{memory_id}@REV",
        hint="after @: vN (v1 is the first version), an ISO 8601 date such as 2026-11-30, "
        "or a commit, branch, tag or rev-parse expression (HEAD~3)",
    )


def previous(repo: pygit2.Repository, history: MemoryHistory, snap: Snapshot) -> Snapshot | None:
    """The version before ``snap``'s (None for the first), as ``memgit diff ID`` compares."""
    number = snap.version.number if snap.version is not None else None
    if number is None or number <= 1:
        return None
    return select(repo, history, f"v{number - 1}")


def load_snapshot(repo: pygit2.Repository, spec: str) -> tuple[MemoryHistory, Snapshot]:
    """``ID[@REV]`` -> the memory's history and the version REV names."""
    memory_id, rev = split_spec(spec)
    history = load_history(repo, memory_id)
    return history, select(repo, history, rev)
