"""Setting memgit's own refs that no commit moves with: the ones ``memgit sync`` takes
from a remote."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import pygit2

from memgit.store.lock import WriterLock


def set_refs(
    repo: pygit2.Repository, targets: Mapping[str, pygit2.Oid], *, message: str
) -> dict[str, pygit2.Oid]:
    """Set each ref whose value is not already its target, under the writer lock (so no
    memgit write is in between) and in one ref transaction (all or none); the refs
    that changed."""
    with WriterLock(Path(repo.path)):
        changed = {
            name: oid
            for name, oid in targets.items()
            if (found := repo.references.get(name)) is None or found.target != oid
        }
        if changed:
            with repo.transaction() as transaction:
                for name, oid in sorted(changed.items()):
                    transaction.lock_ref(name)
                    transaction.set_target(name, oid, None, message)
    return changed


def delete_refs(repo: pygit2.Repository, names: Iterable[str]) -> None:
    """Delete these refs where they exist (sync's own fetched copies: never a branch's
    or memgit's, which only publish moves)."""
    for name in names:
        with contextlib.suppress(KeyError):
            repo.references.delete(name)
