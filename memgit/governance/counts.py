"""What a range's memgit commits say they did, counted from their trailers.

memgit writes a trailer for every memory it creates, updates, supersedes or
retracts and every turn it captures, so the counts cost one read of each
commit's message, not a diff.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import pygit2

from memgit.constants import (
    TRAILER_CAPTURED,
    TRAILER_CREATED,
    TRAILER_RETRACTED,
    TRAILER_SUPERSEDED,
    TRAILER_UPDATED,
)
from memgit.trailers import parse_trailers


@dataclass(frozen=True, slots=True, kw_only=True)
class RangeCounts:
    """What the range's memgit commits say they did, from their trailers."""

    commits: int
    created: int = 0
    updated: int = 0
    superseded: int = 0
    retracted: int = 0
    captured: int = 0


def count_range(repo: pygit2.Repository, commits: Iterable[str]) -> RangeCounts:
    ids = list(commits)
    keys: Counter[str] = Counter()
    for oid in ids:
        commit = repo[oid]
        if isinstance(commit, pygit2.Commit):
            keys.update(key for key, _ in parse_trailers(commit.message))
    return RangeCounts(
        commits=len(ids),
        created=keys[TRAILER_CREATED],
        updated=keys[TRAILER_UPDATED],
        superseded=keys[TRAILER_SUPERSEDED],
        retracted=keys[TRAILER_RETRACTED],
        captured=keys[TRAILER_CAPTURED],
    )
