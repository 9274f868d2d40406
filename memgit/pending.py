"""Which captured units still need the Gate: derived from the tree, never stored in it.

A unit is processed when a run record on the branch covers it with CANDIDATE
or NO_CHANGE. A unit the Gate DEFERRED is asked again, up to a bound, and then
reported as stuck. Because this is computed from run records in the commit,
two branches never disagree about a state file: each branch's history says
what it has processed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import pygit2

from memgit.capture.turn import moment
from memgit.evidence import EvidenceUnit, units_of
from memgit.index.coverage import CaptureSummary, SettledFolder, state_tables
from memgit.layout import run_moment
from memgit.parsecache import cached, capture_turn
from memgit.runrecord import parse_run_record
from memgit.store.tree import read_blob

DEFAULT_MAX_DEFERRALS = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingCapture:
    """A capture with at least one supporting unit the Gate must still decide on."""

    path: str
    blob: str
    timestamp: str
    units: tuple[EvidenceUnit, ...]


@dataclass(frozen=True, slots=True)
class Tally:
    """The inbox's captures (but for the settled folders) and what the run records say
    of their supporting units."""

    captures: tuple[CaptureSummary, ...]
    processed: frozenset[str]
    deferred: Counter[str]
    settled: tuple[SettledFolder, ...] = ()
    # processed unit -> when the first run that decided it was made (epoch seconds)
    decided_at: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ProcessingState:
    """What is left to process, and what is done.

    ``processed`` and ``fully_processed`` hold the captures outside ``settled``
    folders, whose captures are all processed and read only when asked for; equal
    states give the same answers, however they were computed."""

    pending: tuple[PendingCapture, ...]
    processed: frozenset[str]
    stuck: tuple[str, ...] = field(default_factory=tuple)
    # capture path -> when it was processed (epoch seconds: the run that decided its last
    # unit; its own time when it had nothing to decide), for captures with nothing left
    fully_processed: dict[str, float] = field(default_factory=dict)
    settled: tuple[SettledFolder, ...] = ()
    tally: Tally | None = field(default=None, repr=False)

    def processed_units(self) -> frozenset[str]:
        """Every processed supporting unit in the inbox."""
        settled = (u for f in self.settled for c in f.captures() for u in c.supporting)
        return self.processed.union(settled)

    def closed(self, unit_ids: Iterable[str]) -> dict[str, str]:
        """Of ``unit_ids``, those no run on this tree may decide again, each with the
        Gate check code that refuses it: processed by a run already, or deferred too
        often. The planner and the governance check both ask this, so a run is asked
        for, and held to, the same units."""
        wanted = frozenset(unit_ids)
        closed = dict.fromkeys(wanted.intersection(self.stuck), "unit-stuck")
        closed.update(dict.fromkeys(wanted & self.processed_units(), "unit-already-covered"))
        return closed

    def done_captures(self) -> dict[str, float]:
        """Capture path -> when it was processed, for every capture with nothing left to
        decide."""
        done = dict(self.fully_processed)
        for folder in self.settled:
            done.update(folder.processed_at())
        return done

    def done_before(self, cutoff: datetime) -> list[str]:
        """The captures processed before ``cutoff`` with nothing left to decide, sorted;
        a settled folder is read only if its first capture was processed that early."""
        limit = cutoff.timestamp()
        found = [path for path, when in self.fully_processed.items() if when < limit]
        for folder in self.settled:
            if folder.oldest < limit:
                found += [path for path, when in folder.processed_at().items() if when < limit]
        return sorted(found)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProcessingState):
            return NotImplemented
        return (self.pending, self.stuck, self.processed_units(), self.done_captures()) == (
            other.pending,
            other.stuck,
            other.processed_units(),
            other.done_captures(),
        )

    __hash__ = None  # type: ignore[assignment]


def _coverage_rows(repo: pygit2.Repository, path: str, blob: str) -> tuple[tuple[str, str], ...]:
    """(unit id, decision) of each coverage row of run record blob ``blob``."""

    def parse() -> tuple[tuple[str, str], ...]:
        record = parse_run_record(read_blob(repo, blob), path=path)
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


def deciding_records(
    repo: pygit2.Repository, tree: pygit2.Tree, unit_ids: Collection[str]
) -> set[tuple[str, str]]:
    """(path, blob id) of the run records in ``tree`` with a coverage row for any of
    ``unit_ids``: the runs that read those units' capture."""
    with state_tables(repo) as tables:
        rows = tables.unit_coverage(
            tree, unit_ids, lambda path, blob: _coverage_rows(repo, path, blob)
        )
    return {(record, blob) for _, _, record, blob in rows}


def _summary(repo: pygit2.Repository, path: str, blob: str) -> CaptureSummary:
    turn = capture_turn(repo, blob, path=path)
    units = units_of(turn, capture=path, blob=blob)
    return CaptureSummary(path, blob, turn.timestamp, tuple(u.id for u in units if u.can_support))


def _pending(
    repo: pygit2.Repository,
    capture: CaptureSummary,
    closed: frozenset[str],
    stuck: frozenset[str],
) -> PendingCapture:
    """The capture with its units; those processed or stuck can no longer support."""
    turn = capture_turn(repo, capture.blob, path=capture.path)
    units = tuple(
        replace(unit, can_support=False)
        if unit.can_support and (unit.id in closed or unit.id in stuck)
        else unit
        for unit in units_of(turn, capture=capture.path, blob=capture.blob)
    )
    return PendingCapture(
        path=capture.path, blob=capture.blob, timestamp=turn.timestamp, units=units
    )


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
        state = _remember(key, _compute_state(repo, tree, max_deferrals))
    return state


def _remember(key: tuple[str, str, int], state: ProcessingState) -> ProcessingState:
    if len(_states) >= _MAX_STATES:
        _states.pop(next(iter(_states)))
    _states[key] = state
    return state


def advance_state(
    repo: pygit2.Repository,
    before: pygit2.Tree,
    after: pygit2.Tree,
    record: str,
    coverage: Sequence[tuple[str, str]],
    *,
    max_deferrals: int,
) -> None:
    """Derive the state of ``after`` from the one of ``before`` (if known in this process),
    for a commit that added one run record (at ``record``, with these coverage rows) and
    changed nothing in the inbox: a run's own commit, whose state the next steps need."""
    known = _states.get((repo.path, str(before.id), max_deferrals))
    if known is None or known.tally is None:
        return
    processed = set(known.tally.processed)
    deferred = Counter(known.tally.deferred)
    decided_at = dict(known.tally.decided_at)
    when = run_moment(record)
    for unit_id, decision in coverage:
        if decision == "DEFERRED":
            deferred[unit_id] += 1
        elif unit_id not in processed:
            processed.add(unit_id)
            if when is not None:
                decided_at[unit_id] = when
    tally = Tally(
        known.tally.captures, frozenset(processed), deferred, known.tally.settled, decided_at
    )
    _remember((repo.path, str(after.id), max_deferrals), _state_from(repo, tally, max_deferrals))


def ingest_run(
    repo: pygit2.Repository, tree: pygit2.Tree, record: str, coverage: Sequence[tuple[str, str]]
) -> None:
    """Take a run's own commit into the coverage table, its record's rows known without
    reading it, so the next process has nothing to take in."""

    def rows_of(path: str, blob: str) -> Iterable[tuple[str, str]]:
        return coverage if path == record else _coverage_rows(repo, path, blob)

    with state_tables(repo) as tables:
        tables.ingest(tree, rows_of)


def _compute_state(
    repo: pygit2.Repository, tree: pygit2.Tree, max_deferrals: int
) -> ProcessingState:
    with state_tables(repo) as tables:
        inbox = tables.captures(tree, lambda path, blob: _summary(repo, path, blob))
        supporting = {unit_id for capture in inbox.captures for unit_id in capture.supporting}
        coverage = tables.unit_coverage(
            tree, supporting, lambda path, blob: _coverage_rows(repo, path, blob)
        )
        witnesses: dict[str, tuple[str, str]] = {}
        deferred: Counter[str] = Counter()
        decided_at: dict[str, float] = {}
        for unit_id, decision, record, blob in coverage:
            if decision == "DEFERRED":
                deferred[unit_id] += 1
                continue
            witnesses[unit_id] = (record, blob)
            when = run_moment(record)
            if when is not None and when < decided_at.get(unit_id, math.inf):
                decided_at[unit_id] = when
        tally = Tally(
            tuple(inbox.captures),
            frozenset(witnesses),
            deferred,
            tuple(inbox.settled),
            decided_at,
        )
        state = _state_from(repo, tally, max_deferrals)
        tables.settle(
            tree,
            [
                (path, tree_id, captures)
                for path, (tree_id, captures) in inbox.whole.items()
                if all(capture.path in state.fully_processed for capture in captures)
            ],
            witnesses,
            state.fully_processed,
        )
    return state


def processed_at(capture: CaptureSummary, decided_at: Mapping[str, float]) -> float:
    """When a capture with nothing left to decide was processed: when its last unit was
    decided (never, for a unit whose run has no time: it then stays), or its own time
    when it had no unit to decide (no run ever reads it)."""
    if not capture.supporting:
        return moment(capture.timestamp).timestamp()
    return max(decided_at.get(unit_id, math.inf) for unit_id in capture.supporting)


def _state_from(repo: pygit2.Repository, tally: Tally, max_deferrals: int) -> ProcessingState:
    pending: list[PendingCapture] = []
    stuck: list[str] = []
    done: dict[str, float] = {}
    for capture in tally.captures:
        waiting = [unit_id for unit_id in capture.supporting if unit_id not in tally.processed]
        too_often = [u for u in waiting if tally.deferred[u] >= max_deferrals]
        stuck += too_often
        if len(waiting) > len(too_often):
            pending.append(_pending(repo, capture, tally.processed, frozenset(too_often)))
        elif not too_often:
            done[capture.path] = processed_at(capture, tally.decided_at)
    pending.sort(key=lambda capture: (capture.timestamp, capture.path))
    return ProcessingState(
        pending=tuple(pending),
        processed=tally.processed,
        stuck=tuple(sorted(stuck)),
        fully_processed=done,
        settled=tally.settled,
        tally=tally,
    )
