"""Which memory ids a history retired, read from its commits rather than from refs.

``refs/memgit/retired/<id>`` marks a retirement where memgit made it, but refs do
not travel with every push, and a push can delete or move them. The commits that
retired a memory travel with the branch and cannot be changed without a new id:
their trailers (``Memgit-Superseded: A -> B``, ``Memgit-Retracted: A``) say so.
``memgit verify`` and the pre-receive hook read them, so a retired id cannot come
back through a merge, a deleted ref or a branch pushed back to before the change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pygit2

from memgit.constants import TRAILER_RETRACTED, TRAILER_SUPERSEDED
from memgit.trailers import parse_trailers

Retirements = Mapping[str, tuple[pygit2.Oid, ...]]  # memory id -> commits that retired it


def retired_ids(message: str) -> list[str]:
    """The memory ids a commit message's trailers retire."""
    found = []
    for key, value in parse_trailers(message):
        if key == TRAILER_SUPERSEDED:
            found.append(value.split(" -> ", 1)[0].strip())
        elif key == TRAILER_RETRACTED:
            found.append(value.strip())
    return found


def history_retirements(repo: pygit2.Repository, tips: Iterable[pygit2.Oid]) -> Retirements:
    """Every retirement in the history of ``tips``: one walk of the commits."""
    starts = list(tips)
    if not starts:
        return {}
    walker = repo.walk(starts[0], pygit2.enums.SortMode.NONE)
    for tip in starts[1:]:
        walker.push(tip)
    found: dict[str, list[pygit2.Oid]] = {}
    for commit in walker:
        if "Memgit-" not in commit.message:
            continue
        for memory_id in retired_ids(commit.message):
            found.setdefault(memory_id, []).append(commit.id)
    return {memory_id: tuple(commits) for memory_id, commits in found.items()}


def retired_in(
    repo: pygit2.Repository, retirements: Retirements, memory_id: str, base: pygit2.Oid
) -> pygit2.Oid | None:
    """The commit of ``base``'s history (``base`` included) that retired ``memory_id``."""
    for commit in retirements.get(memory_id, ()):
        if commit == base or repo.descendant_of(base, commit):
            return commit
    return None
