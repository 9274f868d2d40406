"""``refs/memgit/*`` of a clone and its remote, joined: every ref either side has.

A run ref or a retired memory's ref that only one side has is taken as it is: the
clone takes the remote's, the push creates the clone's there. When both have one
and they differ (two clones made the same run in different commits, or retired the
same memory) the remote's wins: the first clone to push it decided, every clone
converges on that value, and no ref on the remote is ever moved or deleted (a
retired memory's ref only grows; pre-receive refuses anything else).
"""

from __future__ import annotations

from collections.abc import Mapping

import pygit2

from memgit.store.refs import set_refs

MEMGIT_REFS = "refs/memgit/"


def local_refs(repo: pygit2.Repository) -> dict[str, pygit2.Oid]:
    found = {}
    for name in repo.references:
        if name.startswith(MEMGIT_REFS):
            target = repo.references[name].target
            if isinstance(target, pygit2.Oid):
                found[name] = target
    return found


def adopt(repo: pygit2.Repository, fetched: Mapping[str, pygit2.Oid]) -> list[str]:
    """Set each local ``refs/memgit/*`` the remote has to the remote's value; the names
    that changed."""
    return sorted(set_refs(repo, fetched, message="memgit: sync"))


def to_push(repo: pygit2.Repository, fetched: Mapping[str, pygit2.Oid]) -> dict[str, pygit2.Oid]:
    """The local ``refs/memgit/*`` the remote lacks."""
    return {name: oid for name, oid in local_refs(repo).items() if name not in fetched}
