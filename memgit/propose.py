"""Whether a run is proposed rather than committed: the policy over its decisions."""

from __future__ import annotations

from memgit.catalog import Catalog
from memgit.gate.contract import GateOutput
from memgit.memory import Memory
from memgit.settings import ReviewPolicy


def needs_review(policy: ReviewPolicy, gate: GateOutput, catalog: Catalog) -> bool:
    """Whether ``policy`` covers any candidate of ``gate``, as applied to ``catalog``'s
    tree: the memory each writes (its type and scope, as apply fills them in) and the
    memory it changes both count."""
    for candidate in gate.candidates:
        old: Memory | None = None
        if candidate.target is not None and candidate.action != "CREATE":
            old = catalog.load(candidate.target)
        types: set[str] = set()
        scopes: set[str] = set()
        if old is not None:
            types.add(old.type)
            scopes.add(old.scope)
        if candidate.action != "RETRACT":
            kept = old if candidate.action == "UPDATE" else None
            types.add(candidate.type or (kept.type if kept else "fact"))
            scopes.add(candidate.scope or (kept.scope if kept else "user"))
        if policy.covers(candidate.action, types=types, scopes=scopes):
            return True
    return False
