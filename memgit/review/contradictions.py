"""Contradictions as review items: keep one of the memories that replace the same one.

A contradiction (:mod:`memgit.governance.contradictions`) is open while the branch's
tree holds it, whoever made it and however it arrived; nothing else records it, so two
clones always agree on what is open. Resolving it is one checked commit: the memories
not kept leave the tree, each recorded as replaced by the one kept
(``Memgit-Superseded: OTHER -> KEPT``, and ``refs/memgit/retired/OTHER`` at the commit
before), and ``Memgit-Contradiction: ID`` names the item the decision closed.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from memgit.constants import REFS_RETIRED, TRAILER_CONTRADICTION, TRAILER_SUPERSEDED
from memgit.errors import UsageError
from memgit.governance.checks import Governance
from memgit.governance.contradictions import Contradiction, find_contradictions
from memgit.layout import check_memory_id
from memgit.state.lookup import Lookup
from memgit.store.engine import Change, publish
from memgit.trailers import render_message


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    """The commit that closed contradiction ``id``: ``kept`` stays, ``retired`` left."""

    id: str
    kept: str
    retired: tuple[str, ...]
    commit: str


def find_contradiction(repo: pygit2.Repository, tree: pygit2.Tree, item: str) -> Contradiction:
    """Contradiction ``item`` (the id its memories replace) in ``tree``, or a usage error."""
    memory_id = check_memory_id(item, field="ID")
    found = find_contradictions(repo, tree, only=[memory_id])
    if not found:
        raise UsageError(
            f"no open contradiction about {memory_id}",
            code="unknown-contradiction",
            field="ID",
            hint="`memgit review list` shows the open ones",
        )
    return found[0]


def resolve(
    lookup: Lookup, item: str, keep: str, *, author_fallback: tuple[str, str] | None = None
) -> Resolution:
    """Keep memory ``keep`` of contradiction ``item``; the others leave the tree, as
    replaced by it, in one commit through the governance checks."""
    git = lookup.repo
    kept = check_memory_id(keep, field="--keep")
    retired: list[str] = []

    def plan(tip: pygit2.Commit | None) -> Change:
        if tip is None:
            raise UsageError("the branch has no commit yet", code="unknown-contradiction")
        found = find_contradiction(git, tip.tree, item)
        rivals = {rival.id: rival for rival in found.rivals}
        if kept not in rivals:
            raise UsageError(
                f"{kept} is not one of the memories of contradiction {found.id}: "
                + ", ".join(rivals),
                code="usage",
                field="--keep",
                hint=f"`memgit review show {found.id}` lists them",
            )
        retired[:] = [memory_id for memory_id in rivals if memory_id != kept]
        summary = f"review: keep {kept} of {len(rivals)} memories that replace {found.id}"
        trailers = [(TRAILER_SUPERSEDED, f"{memory_id} -> {kept}") for memory_id in retired]
        trailers.append((TRAILER_CONTRADICTION, found.id))
        return Change(
            files=dict.fromkeys(rivals[memory_id].path for memory_id in retired),
            message=render_message(summary, trailers),
            refs={f"{REFS_RETIRED}{memory_id}": str(tip.id) for memory_id in retired},
        )

    result = publish(git, plan, guard=Governance(lookup), author_fallback=author_fallback)
    if result.commit is None:
        raise UsageError(f"no open contradiction about {item}", code="unknown-contradiction")
    return Resolution(id=item, kept=kept, retired=tuple(retired), commit=result.commit)
