"""Every version of one memory: the commits of its history that changed its file.

The walk compares the blob id at the memory's path in each commit with the ones in
its parents, so it reads a few tree lookups a commit and no diff. It follows every
parent that holds the memory, so a version made in another clone and merged by a
sync is listed as the commit that made it; it stops at the commit that created the
memory (nothing older can hold it). When a commit added the file and its parent held
the same id elsewhere, the memory moved (an UPDATE that changed its scope) and the
walk goes on at the old path. bench/history.py measured the first-parent walk this
replaced against ``git log --first-parent -- PATH`` through the CLI (docs/history.md).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import UTC, datetime

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
from memgit.errors import InvalidInputError, MemgitError, UsageError
from memgit.jsonio import json_as
from memgit.layout import check_memory_id, run_path
from memgit.memory import read_memory
from memgit.runrecord import RunRecord, parse_run_record
from memgit.store.tree import blob_at, read_blob
from memgit.trailers import parse_trailers

# What a commit did to the memory. "edited" and "removed" are commits without a
# Memgit-Run trailer (a person's; one whose trailers retire the memory is "retracted"
# or "superseded", as the commit-msg hook records a removal by hand); "merged" is a
# merge commit whose version no parent had (the merge driver joined both sides').
CHANGES = ("created", "updated", "superseded", "retracted", "edited", "removed", "merged")


@dataclass(frozen=True, slots=True, kw_only=True)
class Version:
    """One commit that changed a memory's file; ``blob`` is None where it removed it.

    ``number`` counts the versions that hold content, oldest first (v1 created it);
    a removal has none. ``moved_from`` is the path the memory had in the parent when
    this commit moved it.
    """

    memory_id: str = field(metadata=json_as(key="id"))
    number: int | None = field(default=None, metadata=json_as(key="version"))
    commit: str
    date: str
    change: str
    path: str
    blob: str | None
    author: str
    run_id: str | None = None
    backend: str | None = None
    model: str | None = None
    superseded_by: str | None = None
    supersedes: tuple[str, ...] = ()
    moved_from: str | None = None
    summary: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryHistory:
    """The versions of one memory, newest first, and whether it is still in HEAD."""

    memory_id: str = field(metadata=json_as(key="id"))
    active: bool
    versions: tuple[Version, ...]

    @property
    def contents(self) -> tuple[Version, ...]:
        """The versions that hold the file, newest first."""
        return tuple(version for version in self.versions if version.blob is not None)


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
    """The commits of ``start``'s history that changed the memory's file, newest first.

    Every version that reached the branch counts, on whichever side of a merge it was
    made (a teammate's edit a sync merged): the walk follows every parent that holds
    the memory. A merge is a version only when it made content neither parent had
    (the merge driver's join); otherwise the commit that made its content is listed.
    """
    walked: dict[pygit2.Oid, pygit2.Commit] = {}
    found: dict[pygit2.Oid, tuple[str, pygit2.Oid | None, str | None]] = {}
    pending: list[tuple[pygit2.Commit, str]] = [(start, path)]
    while pending:
        commit, at = pending.pop()
        if commit.id in walked:
            continue
        walked[commit.id] = commit
        entry = blob_at(commit.tree, at)
        parents = [(parent, *_held(repo, parent, memory_id, at)) for parent in commit.parents]
        holding = [(parent, where) for parent, where, blob in parents if blob is not None]
        if entry is None:
            follow = _after_removal(repo, memory_id, commit, parents, holding)
        else:
            follow = holding
        same = any(where == at and blob == entry for _, where, blob in parents)
        if not same and (entry is not None or holding):
            moved = next((where for _, where, _ in parents if where != at), None)
            found[commit.id] = (at, entry, moved if entry is not None else None)
        pending.extend(follow)
    ordered = [oid for oid in _newest_first(walked) if oid in found]
    numbered = sum(1 for oid in ordered if found[oid][1] is not None)
    versions = []
    for oid in ordered:
        at, blob, moved_from = found[oid]
        number = None
        if blob is not None:
            number, numbered = numbered, numbered - 1
        versions.append(_version(repo, memory_id, walked[oid], at, blob, number, moved_from))
    return tuple(versions)


def _held(
    repo: pygit2.Repository, commit: pygit2.Commit, memory_id: str, path: str
) -> tuple[str, pygit2.Oid | None]:
    """Where ``commit`` holds the memory and its blob: at ``path``, else wherever it
    is there (an update moved it to another scope since); ``(path, None)`` if not."""
    entry = blob_at(commit.tree, path)
    if entry is not None:
        return path, entry
    moved = find_memory_file(repo, commit.tree, memory_id)
    return moved if moved is not None else (path, None)


def _after_removal(
    repo: pygit2.Repository,
    memory_id: str,
    commit: pygit2.Commit,
    parents: list[tuple[pygit2.Commit, str, pygit2.Oid | None]],
    holding: list[tuple[pygit2.Commit, str]],
) -> list[tuple[pygit2.Commit, str]]:
    """The parents to walk from a commit that lacks the memory: the ones that hold it,
    and a parent that lacks it too where the memory may have left on that side: the
    first parent while none holds it (looking for the removal), a merged side whose
    fork point held it (a teammate removed it there)."""
    if not parents:
        return []
    if not holding:
        first, where, _ = parents[0]
        return [(first, where)]
    follow = list(holding)
    for parent, where, blob in parents:
        if blob is not None:
            continue
        base = repo.merge_base(parent.id, holding[0][0].id)
        if base is not None and _held(repo, repo[base].peel(pygit2.Commit), memory_id, where)[1]:
            follow.append((parent, where))
    return follow


def _newest_first(commits: dict[pygit2.Oid, pygit2.Commit]) -> list[pygit2.Oid]:
    """The walked commits, each after every walked commit that descends from it, the
    newest (committer date) first among those that are ready."""
    children = dict.fromkeys(commits, 0)
    for commit in commits.values():
        for parent in commit.parent_ids:
            if parent in children:
                children[parent] += 1
    ready = [(-c.commit_time, str(oid), oid) for oid, c in commits.items() if not children[oid]]
    heapq.heapify(ready)
    ordered = []
    while ready:
        *_, oid = heapq.heappop(ready)
        ordered.append(oid)
        for parent in commits[oid].parent_ids:
            if parent in children:
                children[parent] -= 1
                if not children[parent]:
                    heapq.heappush(ready, (-commits[parent].commit_time, str(parent), parent))
    return ordered


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
                read_blob(repo, first.blob or ""),
                path=first.path,
                blob=first.blob or "",
                check=False,
            )
        except (InvalidInputError, KeyError, ValueError):
            memory = None
        for item in memory.supersedes if memory is not None else ():
            found.setdefault(item.id, item.commit)
    for version in history.versions:
        for old_id in version.supersedes:
            found.setdefault(old_id, None)
    return list(found.items())
