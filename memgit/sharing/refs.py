"""``refs/memgit/*`` of two clones, joined: every ref either side has, one value each.

A run ref or a retired memory's ref that only one side has is taken as it is. When
both have one and they differ (two clones made the same run, or retired the same
memory, in different commits) the earlier commit wins, then the smaller id: a rule
every clone applies alike, so all of them settle on the same value whichever syncs
first. Nothing is ever deleted: a ref the remote lacks stays, and is pushed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pygit2

from memgit.store.lock import WriterLock

MEMGIT_REFS = "refs/memgit/"


def local_refs(repo: pygit2.Repository) -> dict[str, pygit2.Oid]:
    found = {}
    for name in repo.references:
        if name.startswith(MEMGIT_REFS):
            target = repo.references[name].target
            if isinstance(target, pygit2.Oid):
                found[name] = target
    return found


def winner(repo: pygit2.Repository, mine: pygit2.Oid | None, theirs: pygit2.Oid) -> pygit2.Oid:
    """Of two values of one ref, the one both clones keep."""
    if mine is None or mine == theirs:
        return theirs
    return min(mine, theirs, key=lambda oid: (_commit_time(repo, oid), str(oid)))


def _commit_time(repo: pygit2.Repository, oid: pygit2.Oid) -> int:
    commit = repo.get(oid)
    return commit.commit_time if isinstance(commit, pygit2.Commit) else 0


def adopt(repo: pygit2.Repository, fetched: Mapping[str, pygit2.Oid]) -> list[str]:
    """Set each local ``refs/memgit/*`` to the winner of its local and fetched values,
    under the writer lock and in one ref transaction; the names that changed."""
    with WriterLock(Path(repo.path)):
        mine = local_refs(repo)
        changed = {
            name: chosen
            for name, theirs in fetched.items()
            if (chosen := winner(repo, mine.get(name), theirs)) != mine.get(name)
        }
        if changed:
            with repo.transaction() as transaction:
                for name, oid in sorted(changed.items()):
                    transaction.lock_ref(name)
                    transaction.set_target(name, oid, None, "memgit: sync")
    return sorted(changed)


def to_push(
    repo: pygit2.Repository, fetched: Mapping[str, pygit2.Oid]
) -> dict[str, tuple[pygit2.Oid, pygit2.Oid | None]]:
    """The local ``refs/memgit/*`` the remote lacks or holds another value of: (ours, the
    remote's at the fetch)."""
    return {
        name: (oid, fetched.get(name))
        for name, oid in local_refs(repo).items()
        if fetched.get(name) != oid
    }
