"""The rows a lookup gives of a tree's inbox and run records, for the processing state
(memgit.state.processing) to count: the values both sides of a lookup share.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pygit2

from memgit.constants import REFS_RUNS
from memgit.evidence import units_of
from memgit.layout import run_moment
from memgit.turn import Turn, read_capture


@dataclass(frozen=True, slots=True)
class CaptureRow:
    """What the state needs of a capture in the inbox."""

    path: str
    blob: str
    timestamp: str
    supporting: tuple[str, ...]  # ids of the units that can support a memory


@dataclass(frozen=True, slots=True)
class CoverageRow:
    """One coverage row of a run record: what a run decided for one unit."""

    unit_id: str
    decision: str
    record: str  # the record's path
    blob: str  # the record's blob id
    moment: float | None  # when the run was made (run_time)


@dataclass(frozen=True, slots=True)
class Inbox:
    """What a lookup gives of a tree's inbox: captures to count (with the coverage rows
    for their supporting units), and captures already known to be settled."""

    captures: list[CaptureRow]
    coverage: list[CoverageRow]
    # Captures whose every unit a run decided: path -> when the last was first decided
    # (inf: by a run with no time), and all their units.
    settled: dict[str, float] = field(default_factory=dict)
    settled_units: frozenset[str] = frozenset()


def run_time(repo: pygit2.Repository, record_path: str) -> float | None:
    """When the run of the record at ``record_path`` was made, as retention counts it:
    the time of the commit its ``refs/memgit/runs/<id>`` names, else the time its id
    starts with (None when neither names one).

    A run's id and record come from its captures and its Gate answer alone, so that two
    clones processing the same turns write the same bytes; its time in the id is the
    conversation's. The commit says when it was processed, so last month's conversation
    processed today stays for the retention period (docs/decisions/0009).
    """
    name = record_path.rsplit("/", 1)[-1].removesuffix(".json")
    ref = repo.references.get(REFS_RUNS + name) if name else None
    if ref is not None:
        commit = repo.get(ref.target)
        if isinstance(commit, pygit2.Commit):
            return float(commit.commit_time)
    return run_moment(record_path)


def capture_row(path: str, blob: str, data: bytes) -> CaptureRow:
    """The row of capture file ``data`` (InvalidInputError if it cannot be read)."""
    return capture_row_of(
        read_capture(data, path=path, blob=blob, check=False), path=path, blob=blob
    )


def capture_row_of(turn: Turn, *, path: str, blob: str) -> CaptureRow:
    units = units_of(turn, capture=path, blob=blob)
    return CaptureRow(path, blob, turn.timestamp, tuple(u.id for u in units if u.can_support))
