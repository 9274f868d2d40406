"""Which captured units still need the Gate: derived from the tree, never stored in it.

A unit is processed when a run record on the branch covers it with CANDIDATE
or NO_CHANGE. A unit the Gate DEFERRED is asked again, up to a bound, and then
reported as stuck. Because this is computed from run records in the commit,
two branches never disagree about a state file: each branch's history says
what it has processed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import pygit2

from memgit.constants import INBOX_DIR
from memgit.evidence import EvidenceUnit, units_of
from memgit.index.coverage import unit_coverage
from memgit.parsecache import cached, capture_turn
from memgit.runrecord import parse_run_record
from memgit.store.tree import iter_blobs

DEFAULT_MAX_DEFERRALS = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingCapture:
    """A capture with at least one supporting unit the Gate must still decide on."""

    path: str
    blob: str
    timestamp: str
    units: tuple[EvidenceUnit, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessingState:
    pending: tuple[PendingCapture, ...]
    processed: frozenset[str]
    stuck: tuple[str, ...] = field(default_factory=tuple)
    # capture path -> its timestamp, for captures with nothing left to decide
    fully_processed: dict[str, str] = field(default_factory=dict)


def _coverage_rows(repo: pygit2.Repository, path: str, blob: str) -> tuple[tuple[str, str], ...]:
    """(unit id, decision) of each coverage row of run record blob ``blob``."""

    def parse() -> tuple[tuple[str, str], ...]:
        record = parse_run_record(repo[blob].data, path=path)
        coverage = record.gate_output.get("coverage", ())
        return tuple((row["unit_id"], row["decision"]) for row in coverage)

    return cached(repo, "run-coverage", blob, parse, encode=list, decode=_rows_from_json)


def _rows_from_json(data: Any) -> tuple[tuple[str, str], ...]:
    """Cached coverage rows back as pairs; ValueError for anything else (a cache miss)."""
    if isinstance(data, list) and all(
        isinstance(row, list) and len(row) == 2 and all(isinstance(part, str) for part in row)
        for row in data
    ):
        return tuple((unit_id, decision) for unit_id, decision in data)
    raise ValueError("not a list of [unit id, decision] pairs")


# A tree never changes, so its state is computed once per process: a run asks for
# it before calling the Gate, again under the lock, and after committing.
_states: dict[tuple[str, str, int], ProcessingState] = {}
_MAX_STATES = 8


def processing_state(
    repo: pygit2.Repository, tree: pygit2.Tree | None, *, max_deferrals: int
) -> ProcessingState:
    """Everything in the inbox that still needs the Gate, in capture-time order."""
    if tree is None:
        return ProcessingState(pending=(), processed=frozenset())
    key = (repo.path, str(tree.id), max_deferrals)
    state = _states.get(key)
    if state is None:
        if len(_states) >= _MAX_STATES:
            _states.pop(next(iter(_states)))
        state = _states[key] = _compute_state(repo, tree, max_deferrals)
    return state


def _compute_state(
    repo: pygit2.Repository, tree: pygit2.Tree, max_deferrals: int
) -> ProcessingState:
    captures = []
    for path, blob in iter_blobs(repo, tree, INBOX_DIR):
        if path.endswith(".yaml"):
            turn = capture_turn(repo, blob, path=path)
            captures.append((path, blob, turn, units_of(turn, capture=path, blob=blob)))
    supporting = {unit.id for *_, units in captures for unit in units if unit.can_support}
    processed: set[str] = set()
    deferred: Counter[str] = Counter()
    for unit_id, decision in unit_coverage(
        repo, tree, supporting, lambda path, blob: _coverage_rows(repo, path, blob)
    ):
        if decision == "DEFERRED":
            deferred[unit_id] += 1
        else:
            processed.add(unit_id)
    pending: list[PendingCapture] = []
    stuck: list[str] = []
    done: dict[str, str] = {}
    for path, blob, turn, all_units in captures:
        units = []
        open_units = 0
        for unit in all_units:
            if unit.can_support and unit.id in processed:
                unit = replace(unit, can_support=False)
            elif unit.can_support and deferred[unit.id] >= max_deferrals:
                stuck.append(unit.id)
                unit = replace(unit, can_support=False)
            open_units += unit.can_support
            units.append(unit)
        if open_units:
            pending.append(
                PendingCapture(path=path, blob=blob, timestamp=turn.timestamp, units=tuple(units))
            )
        elif not any(unit.id in stuck for unit in units):
            done[path] = turn.timestamp
    pending.sort(key=lambda capture: (capture.timestamp, capture.path))
    return ProcessingState(
        pending=tuple(pending),
        processed=frozenset(processed),
        stuck=tuple(sorted(stuck)),
        fully_processed=done,
    )
