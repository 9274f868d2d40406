"""Push a history rewrite (``memgit forget --purge --push``) to the remotes holding the old one.

Each remote is asked what it holds now (``git ls-remote``), and every branch, tag and
``refs/memgit/*`` ref it names on a rewritten object is replaced in one atomic push,
each with a lease on the value the remote just showed: a push that races another
changes nothing there. A remote ref at an object this clone's rewrite never saw may
build on the purged history, and memgit cannot rewrite what it does not have, so that
remote is refused whole and left as it was (``remote-ahead``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import pygit2

from memgit.errors import ConflictError, MemgitError, quote_foreign
from memgit.sharing.remote import push, remote_error, run_git
from memgit.store.rewrite import RefMove

SHARED_PREFIXES = ("refs/heads/", "refs/tags/", "refs/memgit/")
"""The remote refs a purge replaces; others (a host's ``refs/pull/*``) cannot be pushed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemotePush:
    """What a purge's push did to one remote: the refs it moved there, or why not."""

    remote: str
    refs: tuple[RefMove, ...]
    error: MemgitError | None = None


def push_rewrite(
    git: pygit2.Repository,
    remotes: Iterable[str],
    replaced: Mapping[str, str],
    dropped: Collection[str],
) -> tuple[RemotePush, ...]:
    """Replace the old history on each of ``remotes``: ``replaced`` maps every object
    id the rewrite saw to its new id (unchanged ones to themselves); refs named in
    ``dropped`` are deleted there. One remote's failure does not stop the others."""
    new_ids = set(replaced.values())
    results = []
    for remote in remotes:
        try:
            moves = _plan(git, remote, replaced, new_ids, dropped)
            updates = {
                move.name: (
                    pygit2.Oid(hex=move.new) if move.new is not None else None,
                    pygit2.Oid(hex=move.old),
                )
                for move in moves
            }
            if not push(git, remote, updates):
                raise ConflictError(
                    f"{quote_foreign(remote)} moved while the purge pushed to it",
                    code="remote-moved",
                    path=remote,
                    hint="nothing changed there; fetch it, then run the same purge with --push",
                )
            results.append(RemotePush(remote=remote, refs=moves))
        except MemgitError as err:
            results.append(RemotePush(remote=remote, refs=(), error=err))
    return tuple(results)


def _plan(
    git: pygit2.Repository,
    remote: str,
    replaced: Mapping[str, str],
    new_ids: Collection[str],
    dropped: Collection[str],
) -> tuple[RefMove, ...]:
    """The moves that put ``remote``'s refs on the rewritten history."""
    moves = []
    for name, held in sorted(_listed(git, remote).items()):
        if held in new_ids and name not in dropped:
            continue  # already rewritten (an earlier push), or never touched
        if held not in replaced and held not in new_ids:
            raise ConflictError(
                f"{quote_foreign(remote)}'s {quote_foreign(name)} is at {held[:12]}, which "
                "this clone has not fetched: it may build on the purged history",
                code="remote-ahead",
                path=remote,
                hint=f"nothing was pushed to it; `git fetch {remote}`, then run the same "
                "purge with --push again (it rewrites what the fetch brought)",
            )
        new = None if name in dropped else replaced[held]
        if new != held:
            moves.append(RefMove(name=name, old=held, new=new))
    return tuple(moves)


def _listed(git: pygit2.Repository, remote: str) -> dict[str, str]:
    """The remote's branches, tags and memgit refs, as it holds them now."""
    done = run_git(git, "ls-remote", "--refs", remote)
    if not done.ok:
        raise remote_error("ls-remote", remote, done)
    listed = {}
    for line in done.out.splitlines():
        oid, _, name = line.partition("\t")
        if name.startswith(SHARED_PREFIXES):
            listed[name] = oid
    return listed
