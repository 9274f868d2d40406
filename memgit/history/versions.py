"""Every version of one memory: the commits on a first-parent walk that changed its file.

The walk compares the blob id at the memory's path in each commit with the one in
its first parent, so it reads two tree lookups a commit and no diff; it stops at the
commit that created the memory (nothing older can hold it). When a commit added the
file and its parent held the same id elsewhere, the memory moved (an UPDATE that
changed its scope) and the walk goes on at the old path. bench/history.py measured
this against ``git log --first-parent -- PATH`` through the CLI (docs/history.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygit2

from memgit.catalog import find_memory_file
from memgit.constants import (
    REFS_RETIRED,
    TRAILER_BACKEND,
    TRAILER_CREATED,
    TRAILER_RETRACTED,
    TRAILER_RUN,
    TRAILER_SUPERSEDED,
    TRAILER_UPDATED,
)
from memgit.derived.documents import read_memory
from memgit.errors import InvalidInputError, MemgitError, UsageError
from memgit.jsonio import json_fields
from memgit.layout import check_memory_id, run_path
from memgit.runrecord import RunRecord, parse_run_record
from memgit.store.tree import blob_at, read_blob
from memgit.trailers import parse_trailers

# What a commit did to the memory. "edited" and "removed" are commits without a
# Memgit-Run trailer (a person's; one whose trailers retire the memory is "retracted"
# or "superseded", as the commit-msg hook records a removal by hand); "merged" is a
# merge commit whose first parent had another version (the change came from the
# merged branch).
CHANGES = ("created", "updated", "superseded", "retracted", "edited", "removed", "merged")


@dataclass(frozen=True, slots=True, kw_only=True)
class Version:
    """One commit that changed a memory's file; ``blob`` is None where it removed it.

    ``number`` counts the versions that hold content, oldest first (v1 created it);
    a removal has none. ``moved_from`` is the path the memory had in the parent when
    this commit moved it.
    """

    memory_id: str
    commit: str
    date: str
    change: str
    path: str
    blob: str | None
    author: str
    summary: str
    number: int | None = None
    run_id: str | None = None
    backend: str | None = None
    model: str | None = None
    superseded_by: str | None = None
    supersedes: tuple[str, ...] = ()
    moved_from: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = json_fields(self, "commit", "date", "change", "path", "blob", "author")
        data = {"id": self.memory_id, "version": self.number, **data}
        return (
            data
            | json_fields(
                self, "run_id", "backend", "model", "superseded_by", "supersedes", "moved_from"
            )
            | {"summary": self.summary}
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryHistory:
    """The versions of one memory, newest first, and whether it is still in HEAD."""

    memory_id: str
    active: bool
    versions: tuple[Version, ...]

    @property
    def contents(self) -> tuple[Version, ...]:
        """The versions that hold the file, newest first."""
        return tuple(version for version in self.versions if version.blob is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.memory_id,
            "active": self.active,
            "versions": [version.to_dict() for version in self.versions],
        }


def locate(
    repo: pygit2.Repository, memory_id: str, hint: str | None = None
) -> tuple[pygit2.Commit, str, bool] | None:
    """(commit to walk from, the memory's path there, whether HEAD holds it), or None.

    HEAD first; else the commit its retired ref keeps (walked from HEAD when HEAD
    descends from it, so the commit that retired it is listed too); else ``hint``, a
    commit a successor's ``supersedes`` names as its last active one.
    """
    head = None if repo.head_is_unborn else repo.head.peel(pygit2.Commit)
    if head is not None:
        found = find_memory_file(repo, head.tree, memory_id)
        if found is not None:
            return head, found[0], True
    for start in (_retired_target(repo, memory_id), hint):
        commit = _commit(repo, start)
        if commit is None:
            continue
        found = find_memory_file(repo, commit.tree, memory_id)
        if found is None:
            continue
        if head is not None and (head.id == commit.id or repo.descendant_of(head.id, commit.id)):
            return head, found[0], False
        return commit, found[0], False
    return None


def _retired_target(repo: pygit2.Repository, memory_id: str) -> str | None:
    try:
        return str(repo.references[f"{REFS_RETIRED}{memory_id}"].resolve().target)
    except (KeyError, pygit2.GitError, ValueError):
        return None


def _commit(repo: pygit2.Repository, rev: str | None) -> pygit2.Commit | None:
    if rev is None:
        return None
    try:
        found = repo.get(rev)
    except (ValueError, pygit2.GitError):
        return None
    return found if isinstance(found, pygit2.Commit) else None


def load_history(repo: pygit2.Repository, memory_id: str, hint: str | None = None) -> MemoryHistory:
    """Every version of ``memory_id``, newest first; ``unknown-memory`` when none is found."""
    check_memory_id(memory_id, field="ID")
    found = locate(repo, memory_id, hint)
    if found is None:
        raise UsageError(
            f"no memory {memory_id!r} in HEAD, its history or refs/memgit/retired/",
            code="unknown-memory",
            field="ID",
            hint="`memgit recall --include-retired WORDS` finds a memory's id",
        )
    start, path, active = found
    versions = walk_versions(repo, memory_id, start, path)
    return MemoryHistory(memory_id=memory_id, active=active, versions=versions)


def walk_versions(
    repo: pygit2.Repository, memory_id: str, start: pygit2.Commit, path: str
) -> tuple[Version, ...]:
    """The commits of ``start``'s first-parent history that changed the memory's file."""
    found: list[tuple[pygit2.Commit, str, pygit2.Oid | None, str | None]] = []
    commit = start
    entry = blob_at(commit.tree, path)
    while True:
        parent = commit.parents[0] if commit.parents else None
        before = blob_at(parent.tree, path) if parent is not None else None
        if before != entry:
            moved: tuple[str, pygit2.Oid] | None = None
            if before is None and parent is not None:
                moved = find_memory_file(repo, parent.tree, memory_id)
            found.append((commit, path, entry, moved[0] if moved else None))
            if entry is not None and before is None and moved is None:
                break  # created here: nothing older holds it
            if moved is not None:
                path, before = moved
        if parent is None:
            break
        commit, entry = parent, before
    numbered = sum(1 for item in found if item[2] is not None)
    versions = []
    for commit, at, blob, moved_from in found:
        number = None
        if blob is not None:
            number, numbered = numbered, numbered - 1
        versions.append(_version(repo, memory_id, commit, at, blob, number, moved_from))
    return tuple(versions)


def _version(
    repo: pygit2.Repository,
    memory_id: str,
    commit: pygit2.Commit,
    path: str,
    blob: pygit2.Oid | None,
    number: int | None,
    moved_from: str | None,
) -> Version:
    trailers = parse_trailers(commit.message) if "Memgit-" in commit.message else []
    values = dict(trailers)
    run_id = values.get(TRAILER_RUN)
    change = None
    superseded_by = None
    supersedes = []
    for key, value in trailers:
        if key == TRAILER_SUPERSEDED:
            old, _, new = (part.strip() for part in value.partition(" -> "))
            if old == memory_id:
                change, superseded_by = "superseded", new
            elif new == memory_id:
                change = "created"
                supersedes.append(old)
        elif value == memory_id and key in _TRAILER_CHANGES:
            change = _TRAILER_CHANGES[key]
    if len(commit.parents) > 1:
        change = "merged"
    elif run_id is None and not (blob is None and change in ("retracted", "superseded")):
        # A person's commit; one that removed a memory says how in its trailers (the
        # commit-msg hook adds them, docs/governance.md#removing-a-memory-by-hand).
        change = "edited" if blob is not None else "removed"
    elif change is None:  # a run that changed the file without saying so
        change = "removed" if blob is None else "updated"
    record = run_record(repo, commit, run_id) if run_id is not None else None
    author = commit.author
    return Version(
        memory_id=memory_id,
        commit=str(commit.id),
        date=commit_date(commit),
        change=change,
        path=path,
        blob=str(blob) if blob is not None else None,
        author=f"{author.name} <{author.email}>",
        summary=commit.message.split("\n", 1)[0],
        number=number,
        run_id=run_id,
        backend=record.backend if record is not None else values.get(TRAILER_BACKEND),
        model=record.model if record is not None else None,
        superseded_by=superseded_by,
        supersedes=tuple(supersedes),
        moved_from=moved_from,
    )


_TRAILER_CHANGES = {
    TRAILER_CREATED: "created",
    TRAILER_UPDATED: "updated",
    TRAILER_RETRACTED: "retracted",
}


def commit_date(commit: pygit2.Commit) -> str:
    """The committer date in UTC, as ``2026-11-30T10:35:00Z``."""
    moment = datetime.fromtimestamp(commit.commit_time, tz=UTC)
    return moment.isoformat().replace("+00:00", "Z")


def run_record(repo: pygit2.Repository, commit: pygit2.Commit, run_id: str) -> RunRecord | None:
    """The run record a run commit holds, or None when it is missing or unreadable
    (a history is shown even where a record was damaged)."""
    try:
        path = run_path(run_id)
        blob = blob_at(commit.tree, path)
        if blob is None:
            return None
        return parse_run_record(read_blob(repo, blob), path=path)
    except (InvalidInputError, KeyError, ValueError):
        return None


# A supersession chain longer than this is followed no further (a loop is refused by
# memgit-supersession, but a history is read as it is).
MAX_CHAIN = 100


def follow_chain(repo: pygit2.Repository, memory_id: str) -> tuple[MemoryHistory, ...]:
    """``memory_id``'s history with its successors' (newest first, before it) and its
    predecessors' (after it, each memory's before the ones it superseded)."""
    own = load_history(repo, memory_id)
    seen = {memory_id}
    later: list[MemoryHistory] = []
    current = own
    while len(seen) < MAX_CHAIN:
        successor = next((v.superseded_by for v in current.versions if v.superseded_by), None)
        if successor is None or successor in seen:
            break
        seen.add(successor)
        try:
            current = load_history(repo, successor)
        except MemgitError:
            break
        later.append(current)
    earlier: list[MemoryHistory] = []
    pending = list(reversed(_predecessors(repo, own)))
    while pending and len(seen) < MAX_CHAIN:
        old_id, hint = pending.pop()
        if old_id in seen:
            continue
        seen.add(old_id)
        try:
            history = load_history(repo, old_id, hint)
        except MemgitError:
            continue
        earlier.append(history)
        pending.extend(reversed(_predecessors(repo, history)))
    return (*reversed(later), own, *earlier)


def _predecessors(repo: pygit2.Repository, history: MemoryHistory) -> list[tuple[str, str | None]]:
    """(id, last active commit) of the memories this one superseded: from its first
    version's front matter, and from the trailers of the commit that created it."""
    found: dict[str, str | None] = {}
    contents = history.contents
    if contents:
        first = contents[-1]
        try:
            memory = read_memory(
                read_blob(repo, first.blob or ""), path=first.path, blob=first.blob or ""
            )
        except (InvalidInputError, KeyError, ValueError):
            memory = None
        for item in memory.supersedes if memory is not None else ():
            found.setdefault(item.id, item.commit)
    for version in history.versions:
        for old_id in version.supersedes:
            found.setdefault(old_id, None)
    return list(found.items())
