"""Units two clones decided two ways, read from the run records a merge joins.

A turn pushed before it is processed can be decided in two clones. Each clone's run
is right where it was made, yet they may disagree: one keeps the turn's fact as a new
memory, the other finds it already known (it holds the fact already, perhaps edited by
hand since). The merge keeps both run records, and so the fact twice or once, and no
file conflicts. The possible-duplicate notice compares words and misses a twin edited
apart; the run records say it exactly: the same unit, two runs, two decisions. So
``memgit sync`` reports every merge it makes or brings that joins such runs, and
``memgit verify`` warns about each merge commit it checks that does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pygit2

from memgit.constants import RUNS_DIR
from memgit.errors import MemgitError
from memgit.jsonio import parse_json
from memgit.store.tree import blob_at, diff_trees, read_blob


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitDecision:
    """What one run decided for a unit: the coverage decision, its reason, and what the
    unit's candidates did (``CREATE k3v9x2m4p7qa``; ``not applied`` for a candidate
    the run did not apply)."""

    run_id: str
    decision: str
    reason: str | None
    made: tuple[str, ...]

    def describe(self) -> str:
        what = " ".join(self.made) if self.made else self.decision
        reason = f" ({self.reason})" if self.reason else ""
        return f"run {self.run_id} {what}{reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class DecidedApart:
    """A unit runs on two sides of ``commit`` (a merge) decided with different results."""

    unit: str
    commit: str
    decisions: tuple[UnitDecision, ...]

    def describe(self) -> str:
        return f"unit {self.unit} decided two ways: " + "; ".join(
            decision.describe() for decision in self.decisions
        )


def decided_apart_in(
    git: pygit2.Repository, commits: Iterable[pygit2.Commit]
) -> list[DecidedApart]:
    """The units each merge among ``commits`` joins decided two ways, in commit order."""
    found: list[DecidedApart] = []
    for commit in commits:
        if len(commit.parents) < 2:
            continue
        first = commit.parents[0]
        for other in commit.parents[1:]:
            base = git.merge_base(first.id, other.id)
            base_tree = git[base].peel(pygit2.Tree) if base is not None else None
            found.extend(_apart(git, str(commit.id), base_tree, [first.tree, other.tree]))
    return found


def _apart(
    git: pygit2.Repository,
    commit: str,
    base: pygit2.Tree | None,
    sides: Sequence[pygit2.Tree],
) -> list[DecidedApart]:
    by_unit: dict[str, dict[int, list[UnitDecision]]] = defaultdict(lambda: defaultdict(list))
    for index, side in enumerate(sides):
        for decision_by_unit in _added_runs(git, base, side):
            for unit, decision in decision_by_unit.items():
                by_unit[unit][index].append(decision)
    found = []
    for unit, by_side in sorted(by_unit.items()):
        if len(by_side) < 2:
            continue
        decisions = sorted(
            {d.run_id: d for side in by_side.values() for d in side}.values(),
            key=lambda d: d.run_id,
        )
        if len({(d.decision, d.made) for d in decisions}) > 1:
            found.append(DecidedApart(unit=unit, commit=commit, decisions=tuple(decisions)))
    return found


def _added_runs(
    git: pygit2.Repository, base: pygit2.Tree | None, side: pygit2.Tree
) -> Iterable[dict[str, UnitDecision]]:
    """Each run record ``side`` has and ``base`` lacks, as unit -> what it decided. A
    record that does not read is skipped: memgit-schemas reports it."""
    for path, entry in sorted(diff_trees(git, base, side).items()):
        if entry is None or not path.startswith(f"{RUNS_DIR}/") or not path.endswith(".json"):
            continue
        if blob_at(base, path) is not None:
            continue  # a rewritten record, not a run of this side (memgit-evidence says so)
        try:
            record = parse_json(read_blob(git, entry[0]), source=path)
            yield _decisions(record)
        except (MemgitError, KeyError, TypeError, AttributeError):
            continue


def _decisions(record: Any) -> dict[str, UnitDecision]:
    run_id = str(record["run_id"])
    made: dict[str, list[str]] = defaultdict(list)
    for applied in record["decisions"]:
        made[str(applied["candidate_id"])].append(f"{applied['action']} {applied['memory_id']}")
    found = {}
    for row in record["gate_output"]["coverage"]:
        if row["decision"] == "DEFERRED":
            continue  # not decided: asked again later
        results: list[str] = []
        for candidate in row.get("candidate_ids", []):
            results.extend(made.get(str(candidate), ["not applied"]))
        found[str(row["unit_id"])] = UnitDecision(
            run_id=run_id,
            decision=str(row["decision"]),
            reason=str(row["reason"]) if row.get("reason") else None,
            made=tuple(results),
        )
    return found
