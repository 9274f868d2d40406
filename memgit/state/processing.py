"""Which captured units still need the Gate: derived from the tree, never stored in it.

A unit is processed when a run record in the tree covers it with CANDIDATE or
NO_CHANGE. A unit the Gate DEFERRED is asked again, up to a bound, and then
reported as stuck. Because this is computed from the run records of the tree,
two branches never disagree about a state file: each branch's history says
what it has processed.

The rows come from a :class:`~memgit.state.lookup.Lookup`: the recall index
for memgit's own commands, a walk of the tree for the hooks and ``verify``;
this module only counts them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

import pygit2

from memgit.evidence import EvidenceUnit, units_of
from memgit.state.rows import CaptureRow
from memgit.store.tree import read_blob
from memgit.turn import moment, read_capture

if TYPE_CHECKING:
    from memgit.state.lookup import Lookup

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
    """What is left to process, and what is done."""

    pending: tuple[PendingCapture, ...] = ()
    processed: frozenset[str] = frozenset()  # processed supporting units in the inbox
    stuck: tuple[str, ...] = ()
    # capture path -> when it was processed (epoch seconds: the run that decided its last
    # unit; its own time when it had nothing to decide), for captures with nothing left
    done: dict[str, float] = field(default_factory=dict)

    def closed(self, unit_ids: Iterable[str]) -> dict[str, str]:
        """Of ``unit_ids``, those no run on this tree may decide again, each with the
        Gate check code that refuses it: processed by a run already, or deferred too
        often. The planner and the governance check both ask this, so a run is asked
        for, and held to, the same units."""
        wanted = frozenset(unit_ids)
        closed = dict.fromkeys(wanted.intersection(self.stuck), "unit-stuck")
        closed.update(dict.fromkeys(wanted & self.processed, "unit-already-covered"))
        return closed

    def holding(self, held: frozenset[str]) -> ProcessingState:
        """This state as planning sees it while open proposals hold ``held`` units:
        decided, so no batch asks about them again, though no run in the tree decides
        them (the checks, which ask :meth:`closed` of the tree alone, do not hold them)."""
        if not held:
            return self
        pending = []
        for capture in self.pending:
            units = tuple(
                replace(unit, can_support=False) if unit.can_support and unit.id in held else unit
                for unit in capture.units
            )
            if any(unit.can_support for unit in units):
                pending.append(replace(capture, units=units))
        return replace(self, pending=tuple(pending), processed=self.processed | held)

    def done_before(self, cutoff: datetime) -> list[str]:
        """The captures processed before ``cutoff`` with nothing left to decide, sorted."""
        limit = cutoff.timestamp()
        return sorted(path for path, when in self.done.items() if when < limit)


def processing_state(
    lookup: Lookup, tree: pygit2.Tree | None, *, max_deferrals: int
) -> ProcessingState:
    """Everything in ``tree``'s inbox that still needs the Gate, in capture-time order
    (a run asks before calling the Gate, again on the tip it commits on, and its checks
    ask of the parent: the lookup keeps the answer)."""
    if tree is None:
        return ProcessingState()
    return lookup.kept.get(
        f"state:{max_deferrals}", tree, lambda: _state(lookup, tree, max_deferrals)
    )


def _state(lookup: Lookup, tree: pygit2.Tree, max_deferrals: int) -> ProcessingState:
    inbox = lookup.inbox(tree)
    processed = set(inbox.settled_units)
    deferred: Counter[str] = Counter()
    decided_at: dict[str, float] = {}  # unit -> when the first run deciding it was made
    for row in inbox.coverage:
        if row.decision == "DEFERRED":
            deferred[row.unit_id] += 1
            continue
        processed.add(row.unit_id)
        when = row.moment
        if when is not None and when < decided_at.get(row.unit_id, math.inf):
            decided_at[row.unit_id] = when
    pending: list[PendingCapture] = []
    stuck: list[str] = []
    done = dict(inbox.settled)
    for capture in inbox.captures:
        waiting = [unit_id for unit_id in capture.supporting if unit_id not in processed]
        too_often = [u for u in waiting if deferred[u] >= max_deferrals]
        stuck += too_often
        if len(waiting) > len(too_often):
            pending.append(_pending(lookup.repo, capture, processed, frozenset(too_often)))
        elif not too_often:
            done[capture.path] = _processed_at(capture, decided_at)
    pending.sort(key=lambda capture: (capture.timestamp, capture.path))
    return ProcessingState(
        pending=tuple(pending),
        processed=frozenset(processed),
        stuck=tuple(sorted(stuck)),
        done=done,
    )


def _pending(
    repo: pygit2.Repository, capture: CaptureRow, processed: set[str], stuck: frozenset[str]
) -> PendingCapture:
    """The capture with its units; those processed or stuck can no longer support."""
    turn = read_capture(
        read_blob(repo, capture.blob), path=capture.path, blob=capture.blob, check=False
    )
    units = tuple(
        replace(unit, can_support=False)
        if unit.can_support and (unit.id in processed or unit.id in stuck)
        else unit
        for unit in units_of(turn, capture=capture.path, blob=capture.blob)
    )
    return PendingCapture(
        path=capture.path, blob=capture.blob, timestamp=capture.timestamp, units=units
    )


def _processed_at(capture: CaptureRow, decided_at: dict[str, float]) -> float:
    """When a capture with nothing left to decide was processed: when its last unit was
    decided (never, for a unit whose run has no time: it then stays), or its own time
    when it had no unit to decide (no run ever reads it)."""
    if not capture.supporting:
        return moment(capture.timestamp).timestamp()
    return max(decided_at.get(unit_id, math.inf) for unit_id in capture.supporting)
