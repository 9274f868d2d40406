"""Which captured units still need the Gate: derived from the tree, never stored in it.

A unit is processed when a run record on the branch covers it with CANDIDATE
or NO_CHANGE. A unit the Gate DEFERRED is asked again, up to a bound, and then
reported as stuck. Because this is computed from run records in the commit,
two branches never disagree about a state file: each branch's history says
what it has processed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import pygit2

from memgit.constants import INBOX_DIR, RUNS_DIR
from memgit.evidence import EvidenceUnit, units_of
from memgit.index.coverage import CaptureSummary, StateTables, state_tables
from memgit.parsecache import cached, capture_turn
from memgit.runrecord import parse_run_record
from memgit.store.tree import blob_at, diff_trees

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


def _summary(repo: pygit2.Repository, path: str, blob: str) -> CaptureSummary:
    turn = capture_turn(repo, blob, path=path)
    units = units_of(turn, capture=path, blob=blob)
    return CaptureSummary(path, blob, turn.timestamp, tuple(u.id for u in units if u.can_support))


def _pending(
    repo: pygit2.Repository, capture: CaptureSummary, closed: set[str], stuck: frozenset[str]
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


def _evaluate(
    repo: pygit2.Repository,
    tables: StateTables,
    tree: pygit2.Tree,
    summaries: list[CaptureSummary],
) -> Known:
    """The units of these captures, counted against every run record in ``tree``."""
    counts = {unit_id: 0 for capture in summaries for unit_id in capture.supporting}
    for unit_id, decision in tables.unit_coverage(
        tree, counts.keys(), lambda path, blob: _coverage_rows(repo, path, blob)
    ):
        _count(counts, unit_id, decision)
    return {c.path: (c.blob, c.timestamp, {u: counts[u] for u in c.supporting}) for c in summaries}


def _count(counts: Units, unit_id: str, decision: str) -> None:
    if decision != "DEFERRED":
        counts[unit_id] = PROCESSED
    elif counts[unit_id] != PROCESSED:
        counts[unit_id] += 1


def _carried_over(
    repo: pygit2.Repository,
    tables: StateTables,
    tree: pygit2.Tree,
    inbox: pygit2.Tree | None,
    runs: pygit2.Tree | None,
) -> tuple[Known, int] | None:
    """The state saved last, brought forward to ``tree``, and how many files changed
    since; None to compute it afresh.

    Sound when ``runs/`` only gained records since (their rows are counted in) and
    whatever changed in ``inbox/`` is evaluated again; a removed or changed run
    record could reopen any unit, so then everything is computed afresh.
    """
    saved = tables.last_snapshot()
    if saved is None:
        return None
    try:
        known = _decode(saved[2])
        old_inbox, old_runs = _tree_by_id(repo, saved[0]), _tree_by_id(repo, saved[1])
    except (KeyError, TypeError, ValueError):
        return None
    added = diff_trees(repo, old_runs, runs) if _id(old_runs) != _id(runs) else {}
    if any(entry is None or blob_at(old_runs, name) is not None for name, entry in added.items()):
        return None  # a record removed or changed
    if added:
        holders: dict[str, list[Units]] = {}
        for _blob, _timestamp, units in known.values():
            for unit_id in units:
                holders.setdefault(unit_id, []).append(units)
        for name, entry in added.items():
            if not name.endswith(".json") or entry is None:
                continue
            for unit_id, decision in _coverage_rows(repo, f"{RUNS_DIR}/{name}", str(entry[0])):
                for units in holders.get(unit_id, ()):
                    _count(units, unit_id, decision)
    changed = diff_trees(repo, old_inbox, inbox) if _id(old_inbox) != _id(inbox) else {}
    fresh = []
    for name, entry in changed.items():
        path = f"{INBOX_DIR}/{name}"
        known.pop(path, None)
        if entry is not None and path.endswith(".yaml"):
            fresh.append((path, str(entry[0])))
    summaries = tables.summaries(fresh, lambda path, blob: _summary(repo, path, blob))
    known.update(_evaluate(repo, tables, tree, summaries))
    return known, len(added) + len(changed)


def _encode(known: Known) -> str:
    return json.dumps(known, separators=(",", ":"))


def _decode(data: str) -> Known:
    """A saved state back (TypeError, ValueError or KeyError on any other shape)."""
    known: Known = {}
    for path, (blob, timestamp, units) in json.loads(data).items():
        known[path] = (blob, timestamp, units)
        if not isinstance(blob, str) or not isinstance(timestamp, str):
            raise TypeError("not a saved state")
    counts = [n for _, _, units in known.values() for n in units.values()]
    if not all(type(n) is int for n in counts):
        raise TypeError("not a saved state")
    return known


def _folder(repo: pygit2.Repository, tree: pygit2.Tree, name: str) -> pygit2.Tree | None:
    try:
        found = repo[tree[name].id]
    except KeyError:
        return None
    return found if isinstance(found, pygit2.Tree) else None


def _tree_by_id(repo: pygit2.Repository, tree_id: str) -> pygit2.Tree | None:
    """The tree saved as ``tree_id`` ("" for none); KeyError if the repository lacks it."""
    if not tree_id:
        return None
    found = repo[tree_id]
    if not isinstance(found, pygit2.Tree):
        raise KeyError(tree_id)
    return found


def _id(tree: pygit2.Tree | None) -> str:
    return str(tree.id) if tree is not None else ""


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


# A capture's supporting units: unit id -> times DEFERRED, or PROCESSED.
Units = dict[str, int]
PROCESSED = -1
# capture path -> (blob id, timestamp, its supporting units)
Known = dict[str, tuple[str, str, Units]]
# A state is saved for later processes once this many files changed since the saved one.
SAVE_AFTER = 16


def _compute_state(
    repo: pygit2.Repository, tree: pygit2.Tree, max_deferrals: int
) -> ProcessingState:
    inbox, runs = _folder(repo, tree, INBOX_DIR), _folder(repo, tree, RUNS_DIR)
    with state_tables(repo) as tables:
        carried = _carried_over(repo, tables, tree, inbox, runs)
        if carried is None:
            summaries = tables.captures(tree, lambda path, blob: _summary(repo, path, blob))
            known, changes = _evaluate(repo, tables, tree, summaries), SAVE_AFTER
        else:
            known, changes = carried
        if changes >= SAVE_AFTER:  # a few changes are cheaper to carry over again than to save
            tables.save_snapshot(_id(inbox), _id(runs), _encode(known))
    pending: list[PendingCapture] = []
    processed: set[str] = set()
    stuck: list[str] = []
    done: dict[str, str] = {}
    for path, (blob, timestamp, units) in known.items():
        closed = {unit_id for unit_id, n in units.items() if n == PROCESSED}
        too_often = [u for u, n in units.items() if n != PROCESSED and n >= max_deferrals]
        processed |= closed
        stuck += too_often
        if len(units) > len(closed) + len(too_often):
            summary = CaptureSummary(path, blob, timestamp, tuple(units))
            pending.append(_pending(repo, summary, closed, frozenset(too_often)))
        elif not too_often:
            done[path] = timestamp
    pending.sort(key=lambda capture: (capture.timestamp, capture.path))
    return ProcessingState(
        pending=tuple(pending),
        processed=frozenset(processed),
        stuck=tuple(sorted(stuck)),
        fully_processed=done,
    )
