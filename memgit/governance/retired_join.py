"""A memory one side of a join retired stays retired in the join.

Two clones that decide the same pushed turn each create the same memory id (a run's
output depends only on its inputs). When one of them then retires it (``git rm``, a
supersession, a contradiction closed) before the clones meet, the merge base lacks
the memory, so git sees one side add it and the other change nothing, and keeps it:
the retraction is undone. Where this clone retired it, the merge commit then fails
``retired-id-active`` at every sync, a wedge; where the other side did, the retraction
is lost silently. A retired id can never be active again, so there is nothing for a
person to choose: the join leaves the memory out, as the side that retired it did.
``memgit sync`` treats a memory one side forgot (``memgit forget``) the same way: it
was removed on purpose, and the other clone's copy is the same memory. A plain ``git
merge`` cannot leave it out (git runs no merge driver for a file only one side has
changed), so the checks refuse a merge that keeps it (:func:`forgotten_by_a_side`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

import pygit2

from memgit.constants import MEMORIES_DIR, REFS_RETIRED, TRAILER_FORGOTTEN
from memgit.governance.retirements import retired_ids
from memgit.store.tree import blob_at, diff_trees
from memgit.trailers import parse_trailers


def retired_by_a_side(
    git: pygit2.Repository,
    merged: pygit2.Tree,
    sides: Sequence[tuple[pygit2.Commit, Mapping[str, pygit2.Oid]]],
    base: pygit2.Oid | None,
    *,
    forgotten: bool = False,
) -> list[str]:
    """The memory files of ``merged`` that a side lacks because it retired them, sorted.
    ``sides`` are each side's tip with its ``refs/memgit/*`` (by full name); a side
    retired a memory when a commit it has and ``base`` lacks says so in its trailers,
    or its retired ref names a commit of its history. With ``forgotten``, a memory a
    side removed with ``memgit forget`` counts too (``Memgit-Forgotten``)."""
    found: set[str] = set()
    for tip, refs in sides:
        lacking = _lacking(git, merged, tip)
        if not lacking:
            continue
        retired = _retired_since(git, tip.id, base, retired=True, forgotten=forgotten)
        for memory_id, path in lacking.items():
            at = refs.get(f"{REFS_RETIRED}{memory_id}")
            if memory_id in retired or (
                at is not None and (at == tip.id or git.descendant_of(tip.id, at))
            ):
                found.add(path)
    return sorted(found)


def forgotten_by_a_side(
    git: pygit2.Repository,
    merged: pygit2.Tree,
    sides: Sequence[pygit2.Commit],
    base: pygit2.Oid | None,
) -> list[str]:
    """The memory files of ``merged`` that a side lacks because a commit it has and
    ``base`` lacks forgot them (``Memgit-Forgotten``), sorted: a merge that keeps one
    undoes a ``memgit forget``, as :func:`retired_by_a_side` finds for a retirement."""
    found: set[str] = set()
    for tip in sides:
        lacking = _lacking(git, merged, tip)
        if lacking:
            forgotten = _retired_since(git, tip.id, base, retired=False, forgotten=True)
            found.update(path for memory_id, path in lacking.items() if memory_id in forgotten)
    return sorted(found)


def _lacking(git: pygit2.Repository, merged: pygit2.Tree, tip: pygit2.Commit) -> dict[str, str]:
    """Memory id -> path of the memory files ``merged`` holds and ``tip`` does not."""
    return {
        PurePosixPath(path).stem: path
        for path, entry in diff_trees(git, tip.tree, merged).items()
        if entry is not None
        and path.startswith(f"{MEMORIES_DIR}/")
        and path.endswith(".md")
        and blob_at(tip.tree, path) is None
    }


def _retired_since(
    git: pygit2.Repository,
    tip: pygit2.Oid,
    base: pygit2.Oid | None,
    *,
    retired: bool,
    forgotten: bool,
) -> set[str]:
    """The ids the commits of ``base..tip`` retire, or forget, by their trailers."""
    walker = git.walk(tip, pygit2.enums.SortMode.NONE)
    if base is not None:
        walker.hide(base)
    found: set[str] = set()
    for commit in walker:
        if "Memgit-" not in commit.message:
            continue
        if retired:
            found.update(retired_ids(commit.message))
        if forgotten:
            found.update(
                value.strip()
                for key, value in parse_trailers(commit.message)
                if key == TRAILER_FORGOTTEN
            )
    return found
