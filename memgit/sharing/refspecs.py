"""Make a plain ``git fetch`` and ``git push`` carry memgit's refs (``refs/memgit/*``).

Git fetches and pushes only branches and tags by default, so a clone would never
see which memories are retired (``refs/memgit/retired/*``) or where each run is
(``refs/memgit/runs/*``), and would accept a retired id back. Each remote gets one
fetch and one push refspec for the namespace; docs/decisions/0008-sharing-refs.md
says why they map the namespace onto itself.

A push refspec replaces git's default push of the current branch, so a remote
with no push refspec of its own also gets ``HEAD`` (the current branch, to the
branch of the same name), which is what a plain ``git push`` did before for a
branch that tracks its namesake. A remote that has push refspecs keeps exactly
those and gains only memgit's: the person already said which branches go.
"""

from __future__ import annotations

import re

import pygit2

FETCH_REFSPEC = "+refs/memgit/*:refs/memgit/*"
PUSH_REFSPEC = "refs/memgit/*:refs/memgit/*"
BRANCH_PUSH_REFSPEC = "HEAD"


def configure_remotes(repo: pygit2.Repository) -> tuple[str, ...]:
    """Add memgit's refspecs to every remote that lacks them; the names of the
    remotes changed. A remote that has them is left exactly as it is."""
    changed = []
    for name in repo.remotes.names():
        if name is None:
            continue
        fetch, push = f"remote.{name}.fetch", f"remote.{name}.push"
        added = False
        if FETCH_REFSPEC not in _values(repo, fetch):
            _add(repo, fetch, FETCH_REFSPEC)
            added = True
        pushed = _values(repo, push)
        if PUSH_REFSPEC not in pushed:
            if not pushed:
                _add(repo, push, BRANCH_PUSH_REFSPEC)
            _add(repo, push, PUSH_REFSPEC)
            added = True
        if added:
            changed.append(name)
    return tuple(changed)


def _values(repo: pygit2.Repository, name: str) -> list[str]:
    return [value for value in repo.config.get_multivar(name) if value is not None]


def _add(repo: pygit2.Repository, name: str, value: str) -> None:
    """Append one value to a multi-valued key of the repository's own config (libgit2
    appends when the pattern matches no existing value, and it matches only ``value``)."""
    repo.config.set_multivar(name, f"^{re.escape(value)}$", value)
