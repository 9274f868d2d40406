"""memgit-evidence: every memory's sources quote real evidence, and every change is explained.

- Each source of a memory changed in the commit names a capture by blob id
  (so it holds after inbox cleanup); the unit exists in that capture, can
  support a memory (user text or complete tool output; or an assistant's
  proposal, when the memory also quotes a user unit of the turn right after
  it: the user's agreement), and the quote stands there exactly once (or at
  the offsets given).
- Captured turns and run records never change once committed.
- Each run record added in the commit agrees with the captures it names: the
  Gate output it records passes the Gate's own checks against those units,
  its targets included (as the parent commit had them). It answers for the
  units still open on the parent, no more and no less: a unit an earlier run
  already decided (``unit-already-covered``) or deferred too often
  (``unit-stuck``) is not its to decide again.
- Each memory written by memgit (``origin: memgit``) that the commit creates
  or changes is explained by a run record in the same commit: applying the
  record's Gate output to the parent commit writes exactly that file. A memory
  written by a person says so (``origin: human`` with ``author``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pygit2

from memgit.apply import apply_gate_output
from memgit.catalog import Catalog
from memgit.constants import INBOX_DIR, RUNS_DIR
from memgit.errors import MemgitError, Problem
from memgit.evidence import EvidenceUnit, agrees_to, locate_quote, units_of
from memgit.gate.contract import GateOutputError, check_gate_output
from memgit.governance.view import CommitView
from memgit.memory import Memory
from memgit.runrecord import RunRecord, parse_run_record
from memgit.settings import Settings, gate_setting
from memgit.state.processing import DEFAULT_MAX_DEFERRALS, processing_state
from memgit.store.tree import blob_at, read_blob
from memgit.turn import read_capture

HOOK_ID = "memgit-evidence"


def _units(view: CommitView, blob: str, capture_path: str) -> dict[str, EvidenceUnit] | None:
    data = view.object_data(blob)
    if data is None:
        return None
    try:
        # Read as every reader of a committed capture reads it; memgit-schemas checks
        # each changed capture strictly.
        turn = read_capture(data, path=capture_path, blob=blob, check=False)
    except MemgitError:
        return None
    return {unit.id: unit for unit in units_of(turn, capture=capture_path, blob=blob)}


def _quoted_units(view: CommitView, memory: Memory) -> Iterator[EvidenceUnit]:
    """The units ``memory``'s sources quote, where they exist."""
    for source in memory.sources:
        unit = (_units(view, source.blob, source.capture) or {}).get(source.unit)
        if unit is not None:
            yield unit


def _user_units(view: CommitView, memory: Memory) -> list[str]:
    """The user units ``memory``'s sources quote (the agreements a proposal may lean on)."""
    return [u.id for u in _quoted_units(view, memory) if u.role == "user" and u.can_support]


def _quotes_a_proposal(view: CommitView, memory: Memory) -> bool:
    """Whether one of ``memory``'s sources quotes the assistant: beside that proposal the
    user's whole reply may be a bare "yes" (docs/gate.md)."""
    return any(unit.role == "assistant" for unit in _quoted_units(view, memory))


def iter_source_problems(view: CommitView, path: str, memory: Memory) -> Iterator[Problem]:
    agreements: list[str] | None = None
    for i, source in enumerate(memory.sources):
        field = f"sources[{i}]"
        units = _units(view, source.blob, source.capture)
        if units is None:
            yield Problem(
                code="source-capture-missing",
                message=f"no capture with blob id {source.blob[:12]} in the repository",
                path=path,
                field=f"{field}.blob",
                hint="a source must name the blob id of the capture file it quotes",
            )
            continue
        unit = units.get(source.unit)
        if unit is None:
            yield Problem(
                code="source-unit-missing",
                message=f"the capture has no unit {source.unit!r}",
                path=path,
                field=f"{field}.unit",
            )
            continue
        if not unit.can_support:
            # The assistant's proposal is quotable beside the user's agreement to it.
            if agreements is None:
                agreements = _user_units(view, memory)
            agreed = unit.role == "assistant" and any(agrees_to(u, unit.id) for u in agreements)
            if not agreed:
                yield Problem(
                    code="source-not-evidence",
                    message=f"unit {unit.id} is {unit.role} text, which cannot support a memory",
                    path=path,
                    field=f"{field}.unit",
                    hint="only user text and complete tool output are evidence, and the "
                    "assistant's proposal beside a quote of the user's agreement in the next turn",
                )
        where = locate_quote(unit.text, source.quote, source.start, source.end)
        if where == "quote-too-short" and unit.role == "user" and _quotes_a_proposal(view, memory):
            # Only a short quote asks for the other sources (each read parses a capture).
            where = locate_quote(unit.text, source.quote, source.start, source.end, whole=True)
        if isinstance(where, str):
            yield Problem(
                code=where,
                message=f"the quote does not stand in unit {unit.id} as written",
                path=path,
                field=f"{field}.quote",
                hint="a source quotes the capture exactly; fix the quote or the unit",
            )
        current = view.read(source.capture)
        if current is not None and str(pygit2.hash(current)) != source.blob:
            yield Problem(
                code="source-blob-mismatch",
                message=f"{source.capture} holds other content than blob {source.blob[:12]}",
                path=path,
                field=f"{field}.blob",
            )


def _any_target(memory_id: str) -> str:
    return "active"


def iter_run_problems(
    view: CommitView, path: str, record: RunRecord, produced: dict[str, bytes | None]
) -> Iterator[Problem]:
    """Problems of a run record; the memory files its Gate output writes when applied to
    the parent commit go into ``produced`` (for a record this commit adds)."""
    units: dict[str, EvidenceUnit] = {}
    for i, item in enumerate(record.inputs):
        found = _units(view, item.blob, item.path)
        if found is None:
            yield Problem(
                code="run-input-missing",
                message=f"input capture blob {item.blob[:12]} is not in the repository",
                path=path,
                field=f"inputs[{i}].blob",
            )
            return
        units.update(found)
    settings = view.settings
    if settings is None:
        return
    # Targets as the Gate saw them: the memories of the parent commit. A record
    # this commit does not add (pre-commit --all-files) was checked when it was.
    parent = Catalog(view.repo, view.parent) if view.differs(path) else None
    try:
        gate = check_gate_output(
            record.gate_output,
            units=units,
            settings=settings,
            target_state=parent.state if parent is not None else _any_target,
            closed=_closed(view, path, record, settings, units),
            target_text=parent.text if parent is not None else None,
        )
    except GateOutputError as err:
        for problem in err.problems:
            yield Problem(
                code=problem.code,
                message=problem.message,
                path=path,
                field=f"gate_output.{problem.field}" if problem.field else "gate_output",
                hint="the recorded Gate output must agree with the captures the run names",
            )
        return
    if parent is not None:
        base = view.repo[view.base] if view.base is not None else None
        files, _, _ = apply_gate_output(
            gate,
            units,
            parent,
            base if isinstance(base, pygit2.Commit) else None,
            record.created,
            [],
        )
        produced.update(files)


def _closed(
    view: CommitView,
    path: str,
    record: RunRecord,
    settings: Settings,
    units: dict[str, EvidenceUnit],
) -> dict[str, str]:
    """The units of the run's captures that were not its to decide: for a record this
    commit adds, those closed on the parent, as the planner saw them; one it does not
    add was held to that when it was added, so it answers for the rows it has."""
    if not view.differs(path):
        answered = {row["unit_id"] for row in record.gate_output.get("coverage", ())}
        return {
            unit_id: "unit-already-covered"
            for unit_id, unit in units.items()
            if unit_id not in answered and unit.can_support
        }
    max_deferrals = gate_setting(settings, "max_deferrals", DEFAULT_MAX_DEFERRALS)
    return processing_state(view.lookup, view.parent, max_deferrals=max_deferrals).closed(units)


def iter_capture_problems(view: CommitView) -> Iterator[Problem]:
    """Captured turns are immutable: memory sources pin them by blob id, and run records
    name their units by path (``source/session/seq#index``). So a path keeps its content
    even after the capture left the tree: a turn put back under a path an earlier run
    read with other content would be taken for the turn that run decided."""
    for path in view.changed_under(f"{INBOX_DIR}/", ".yaml"):
        if view.rewritten(path):
            yield Problem(
                code="capture-rewritten",
                message="an already captured turn was changed",
                path=path,
                hint="captures are evidence and never change; capture a new turn instead",
            )
        elif view.parent is not None and view.differs(path):
            yield from _reused(view, view.parent, path)


def _reused(view: CommitView, parent: pygit2.Tree, path: str) -> Iterator[Problem]:
    blob = str(blob_at(view.tree, path))
    try:
        turn = view.parsed(path, read_capture)
    except MemgitError:
        return  # memgit-schemas reports it
    ids = [unit.id for unit in units_of(turn, capture=path, blob=blob)]
    for record_path, record_blob in sorted(view.lookup.deciding(parent, ids)):
        try:
            record = parse_run_record(read_blob(view.repo, record_blob), path=record_path)
        except MemgitError:
            continue
        if any(item.path == path and item.blob != blob for item in record.inputs):
            yield Problem(
                code="capture-reused",
                message=f"run record {record_path} read another turn at this path",
                path=path,
                hint="a removed capture's path stays taken: capture the turn under a new seq",
            )
            return


def iter_evidence_problems(view: CommitView) -> Iterator[Problem]:
    yield from iter_capture_problems(view)
    produced: dict[str, bytes | None] = {}
    for path in view.changed_under(f"{RUNS_DIR}/", ".json"):
        if view.rewritten(path):
            yield Problem(
                code="run-record-rewritten",
                message="an existing run record was changed",
                path=path,
                hint="a run record is the history of one run and never changes",
            )
            continue
        try:
            record = view.parsed(path, parse_run_record)
        except MemgitError:
            continue  # memgit-schemas reports it
        yield from iter_run_problems(view, path, record, produced)
    for path, memory in view.changed_memories():
        yield from iter_source_problems(view, path, memory)
        explained = (path in produced and produced[path] == view.read(path)) or view.joined(path)
        if memory.origin == "memgit" and not explained and view.differs(path):
            yield Problem(
                code="unexplained-memory",
                message="written by memgit (origin: memgit) but no run record in this commit "
                "made this change",
                path=path,
                field="origin",
                hint="memgit writes memories only through runs; a person's memory says "
                "origin: human and names its author",
            )


def main(argv: list[str] | None = None) -> int:
    from memgit.governance.hooks import run_hook

    return run_hook(HOOK_ID, iter_evidence_problems, sys.argv[1:] if argv is None else argv)
