"""``memgit process``: pending turns in, validated memories out, one commit per run.

For each batch of pending captures: find related memories, ask the Gate
backend, validate its answer (with one correction round that sends back only
the failing check codes), then apply the decisions as one commit holding the
memory files and the run record, with trailers and ``refs/memgit/runs/<id>``.
Anything that fails leaves the branch as it was and the turns pending.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2

from memgit.apply import Decision, apply_gate_output, describe_decisions, redact_candidates
from memgit.catalog import Catalog
from memgit.constants import (
    CACHE_DIR,
    REFS_RUNS,
    TRAILER_BACKEND,
    TRAILER_RUN,
)
from memgit.derived.lexical import LexicalIndex
from memgit.derived.lookup import IndexLookup
from memgit.duplicates import Held, without_duplicates
from memgit.errors import MemgitError, Problem
from memgit.evidence import EvidenceUnit, previous_turn, units_of
from memgit.gate.backends import Backend
from memgit.gate.contract import (
    GateOutput,
    GateOutputError,
    check_gate_output,
    narrow_answer,
)
from memgit.gate.prompt import GateRequest
from memgit.governance.checks import Governance
from memgit.jsonio import json_as, json_data, render_json
from memgit.layout import capture_path
from memgit.proposals import branch_name, held_units
from memgit.propose import needs_review
from memgit.related import related_memories
from memgit.retention import expire_inbox
from memgit.runrecord import RunInput, RunRecord, render_run_record
from memgit.settings import Settings, gate_setting
from memgit.state.lookup import Lookup
from memgit.state.processing import (
    DEFAULT_MAX_DEFERRALS,
    PendingCapture,
    ProcessingState,
    processing_state,
)
from memgit.store.engine import Change, publish
from memgit.store.identity import commit_time
from memgit.store.tree import blob_at, read_blob
from memgit.trailers import render_message
from memgit.turn import moment, read_capture

DEFAULT_BATCH_SIZE = 20
DEFAULT_RELATED = 8
BATCH_CHAR_BUDGET = 24_000
# A turn whose user text is this short may need the turn before it to be understood
# ("yes, do that"): the Gate is shown that turn as context (docs/gate.md).
SHORT_REPLY = 200
# How many commits back that turn is looked for, once it left the inbox.
CONTEXT_HISTORY = 8

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOutcome:
    run_id: str
    commit: str
    # The proposal branch the run was committed on, when review held it back.
    proposal: str | None = None
    backend: str
    model: str | None
    captures: tuple[str, ...]
    decisions: tuple[Decision, ...]
    diagnostics: tuple[dict[str, Any], ...] = ()
    # The CREATEs dropped because an active memory already holds what they say.
    held: tuple[Held, ...] = field(default=(), metadata=json_as(key="already_held"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessResult:
    runs: tuple[RunOutcome, ...]
    cleanup_commit: str | None = field(default=None, metadata=json_as(before=("proposed",)))
    expired: tuple[str, ...] = ()
    stuck: tuple[str, ...] = ()
    remaining: int = 0

    @property
    def proposed(self) -> int:
        """How many runs review held back on a proposal branch."""
        return sum(run.proposal is not None for run in self.runs)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Batch:
    captures: tuple[PendingCapture, ...]
    units: tuple[EvidenceUnit, ...]
    # The batch's units no run may decide again, as the Gate is asked (shown to it
    # as unable to support): ProcessingState.closed.
    closed: dict[str, str]
    # Units open (or rejected) proposals decided: decided for planning, not for the checks.
    held: frozenset[str] = frozenset()
    # The turns just before short replies ("yes, do that"), already decided: context the
    # Gate reads (their units cannot support, as any decided unit), and the record names.
    context: tuple[PendingCapture, ...] = ()

    @property
    def unit_map(self) -> dict[str, EvidenceUnit]:
        return {unit.id: unit for unit in self.units}


def pending_batches(
    lookup: Lookup,
    settings: Settings,
    *,
    include_rejected: bool = False,
    only: Collection[str] | None = None,
) -> tuple[list[_Batch], ProcessingState]:
    """The batches to run, of every pending capture (``only``: of those paths)."""
    tree = _tree(lookup.repo)
    held = held_units(lookup.repo, tree, include_rejected=include_rejected)
    state = _state(lookup, settings, tree).holding(held)
    size = gate_setting(settings, "batch_size", DEFAULT_BATCH_SIZE)
    chosen = (
        state
        if only is None
        else replace(state, pending=tuple(c for c in state.pending if c.path in only))
    )
    tree_state = _state(lookup, settings, tree)
    batches = []
    # A turn an earlier batch of this call decides is decided when a later one runs, as
    # it is for a later call: a run's context must not depend on where a process began.
    earlier: set[str] = set()
    for batch in _batches(chosen, size, held):
        batches.append(_with_context(lookup.repo, tree, batch, tree_state, frozenset(earlier)))
        earlier.update(unit.id for unit in batch.units)
    return batches, state


def _state(lookup: Lookup, settings: Settings, tree: pygit2.Tree | None) -> ProcessingState:
    max_deferrals = gate_setting(settings, "max_deferrals", DEFAULT_MAX_DEFERRALS)
    return processing_state(lookup, tree, max_deferrals=max_deferrals)


def first_request(
    git: pygit2.Repository,
    settings: Settings,
    index: LexicalIndex,
    *,
    include_rejected: bool = False,
) -> GateRequest | None:
    """What the backend is asked for the first pending batch (``--print-prompt``)."""
    lookup = IndexLookup(index)
    batches, _ = pending_batches(lookup, settings, include_rejected=include_rejected)
    if not batches:
        return None
    return request_for(settings, batches[0], index, _tree(git))


def process_inbox(
    git: pygit2.Repository,
    settings: Settings,
    backend: Backend,
    *,
    index: LexicalIndex,
    max_batches: int | None = None,
    progress: Progress | None = None,
    include_rejected: bool = False,
    only: Collection[str] | None = None,
) -> ProcessResult:
    """Run the Gate over pending captures (``only``: those capture paths), then expire
    old processed captures.

    ``index`` is the derived store: the recall index, which finds related memories
    for the Gate, and the processing state. Units in open proposals are not asked
    about again, nor those of rejected ones unless ``include_rejected``.
    """
    index.refresh()  # the Gate's related memories need it current; the state then costs least
    lookup = IndexLookup(index)
    batches, state = pending_batches(lookup, settings, include_rejected=include_rejected, only=only)
    if backend.name == "host":
        batches = batches[:1]
    if max_batches is not None:
        batches = batches[:max_batches]
    outcomes = []
    for number, batch in enumerate(batches, start=1):
        outcome = _run_batch(lookup, settings, backend, batch, index)
        if outcome is not None:
            outcomes.append(outcome)
        if progress is not None:
            progress(number, len(batches))
    processed_now = {path for outcome in outcomes for path in outcome.captures}
    cleanup, expired = expire_inbox(git, settings, lookup, keep=processed_now)
    index.warm()  # the next command starts from a current store
    after, state = pending_batches(lookup, settings, include_rejected=include_rejected)
    return ProcessResult(
        runs=tuple(outcomes),
        cleanup_commit=cleanup,
        expired=expired,
        stuck=state.stuck,
        remaining=sum(len(batch.captures) for batch in after),
    )


def _tip(git: pygit2.Repository) -> pygit2.Commit | None:
    if git.head_is_unborn:
        return None
    return git.head.peel(pygit2.Commit)


def _tree(git: pygit2.Repository) -> pygit2.Tree | None:
    tip = _tip(git)
    return tip.tree if tip is not None else None


def _batches(state: ProcessingState, size: int, held: frozenset[str]) -> list[_Batch]:
    batches: list[_Batch] = []
    current: list[PendingCapture] = []
    chars = 0
    for capture in state.pending:
        length = sum(len(unit.text) for unit in capture.units)
        if current and (len(current) >= size or chars + length > BATCH_CHAR_BUDGET):
            batches.append(_make_batch(current, state, held))
            current, chars = [], 0
        current.append(capture)
        chars += length
    if current:
        batches.append(_make_batch(current, state, held))
    return batches


def _make_batch(
    captures: list[PendingCapture], state: ProcessingState, held: frozenset[str]
) -> _Batch:
    units = tuple(unit for capture in captures for unit in capture.units)
    closed = state.closed(u.id for u in units)
    return _Batch(captures=tuple(captures), units=units, closed=closed, held=held)


def _with_context(
    repo: pygit2.Repository,
    tree: pygit2.Tree | None,
    batch: _Batch,
    state: ProcessingState,
    earlier: frozenset[str] = frozenset(),
) -> _Batch:
    """``batch`` with the turn before each of its short replies, when that turn is in
    ``tree`` and an earlier run (or an earlier batch of this call: ``earlier``, unit ids)
    decided it (an agent host processes each turn as it
    comes, so "yes, do that" arrives after the proposal was processed). ``state`` is
    the tree's own, without what open proposals hold: the checks know only the tree."""
    tip = _tip(repo)
    if tree is None or tip is None:
        return batch
    have = {capture.path for capture in batch.captures}
    order: list[PendingCapture] = []
    context: list[PendingCapture] = []
    for capture in batch.captures:
        before = _turn_before(repo, tip, capture, state, earlier) if _short_reply(capture) else None
        if before is not None and before.path not in have:
            have.add(before.path)
            context.append(before)
            order.append(before)
        order.append(capture)
    if not context:
        return batch
    units = tuple(unit for capture in order for unit in capture.units)
    closed = state.holding(batch.held).closed(u.id for u in units)
    return replace(batch, units=units, closed=closed, context=tuple(context))


def _short_reply(capture: PendingCapture) -> bool:
    said = [unit.text for unit in capture.units if unit.can_support and unit.role == "user"]
    return bool(said) and sum(len(text) for text in said) <= SHORT_REPLY


def _turn_before(
    repo: pygit2.Repository,
    tip: pygit2.Commit,
    capture: PendingCapture,
    state: ProcessingState,
    earlier: frozenset[str],
) -> PendingCapture | None:
    """The session's previous turn (seq one less), when a run decided every unit of it
    that can support a memory; its units shown as unable to support: context, never
    this run's to decide. Looked for in the tip's tree, then in the trees of the few
    commits before it: a turn with nothing to decide (the assistant's alone) may have
    left the inbox already, if it is older than the retention."""
    key = previous_turn(capture.units[0].id) if capture.units else ""
    source, _, rest = key.partition("/")
    session, _, seq = rest.partition("/")
    if not seq:
        return None
    path = capture_path(source, session, int(seq))
    commit: pygit2.Commit | None = tip
    blob = None
    for _ in range(CONTEXT_HISTORY):
        blob = blob_at(commit.tree, path) if commit is not None else None
        if blob is not None or commit is None or not commit.parents:
            break
        commit = commit.parents[0]
    if blob is None:
        return None
    try:
        turn = read_capture(read_blob(repo, str(blob)), path=path, blob=str(blob), check=False)
    except MemgitError:
        return None
    units = units_of(turn, capture=path, blob=str(blob))
    if any(
        unit.can_support and unit.id not in state.processed and unit.id not in earlier
        for unit in units
    ):
        return None
    return PendingCapture(
        path=path,
        blob=str(blob),
        timestamp=turn.timestamp,
        units=tuple(replace(unit, can_support=False) for unit in units),
    )


def request_for(
    settings: Settings,
    batch: _Batch,
    index: LexicalIndex,
    tree: pygit2.Tree | None,
    as_of: pygit2.Commit | None = None,
) -> GateRequest:
    limit = gate_setting(settings, "related_memories", DEFAULT_RELATED)
    # The user's words of the turn shown as context count too: "sorry, it's the 15th"
    # shares no word with the memory of the turn before that it corrects.
    said = [unit for unit in batch.units if unit.can_support or unit.role == "user"]
    related = related_memories(index, tree, said, limit=limit, as_of=as_of)
    return GateRequest(units=batch.units, related=related, settings=settings)


def _run_batch(
    lookup: Lookup,
    settings: Settings,
    backend: Backend,
    batch: _Batch,
    index: LexicalIndex,
) -> RunOutcome | None:
    git = lookup.repo
    base = _tip(git)
    catalog = Catalog(git, base.tree if base is not None else None)
    request = request_for(settings, batch, index, catalog.tree)
    answer = backend.answer(request)
    corrected: tuple[Problem, ...] = ()
    try:
        gate = check_answer(answer, batch, settings, catalog)
    except GateOutputError as refused:
        if not backend.can_correct:
            _record_failure(git, batch, backend, refused.problems)
            raise
        corrected = refused.problems
        request = replace(request, problems=refused.problems)
        answer = backend.answer(request)
        try:
            gate = check_answer(answer, batch, settings, catalog)
        except GateOutputError as again:
            _record_failure(git, batch, backend, corrected + again.problems)
            raise
    now = _run_moment(batch)
    earlier = lookup.deciding(catalog.tree, batch.unit_map) if catalog.tree is not None else ()
    run_id = _run_id(now.strftime("%Y%m%dT%H%M%SZ"), batch, gate, sorted(earlier))
    diagnostics = _diagnostics(corrected)
    gate = redact_candidates(gate, diagnostics)
    gate, held = without_duplicates(gate, index, catalog.tree, diagnostics)
    applied: list[Decision] = []
    catalog_tree_id = catalog.tree.id if catalog.tree is not None else None
    proposal = _proposal(settings, gate, catalog, run_id)
    spec = RunSpec(
        run_id=run_id,
        now=now,
        backend=backend.name,
        model=backend.model,
        prompt_digest=request.digest,
        batch=batch,
        gate=gate,
        diagnostics=tuple(diagnostics),
    )

    def plan(tip: pygit2.Commit | None) -> Change | None:
        tree = tip.tree if tip is not None else None
        current = catalog if tree is not None and tree.id == catalog_tree_id else Catalog(git, tree)
        change = run_change(lookup, settings, spec, current, tip, applied)
        # A proposal's refs are set when it is approved: its memories are not retired yet.
        return change if change is None or proposal is None else replace(change, refs={})

    result = publish(
        git,
        plan,
        guard=Governance(lookup),
        author_fallback=settings.author,
        ref=proposal,
        start=str(base.id) if proposal is not None and base is not None else None,
    )
    if result.commit is None:
        return None
    return RunOutcome(
        run_id=run_id,
        commit=result.commit,
        backend=backend.name,
        model=backend.model,
        captures=tuple(c.path for c in batch.captures),
        decisions=tuple(applied),
        diagnostics=tuple(diagnostics),
        proposal=proposal.removeprefix("refs/heads/") if proposal is not None else None,
        held=held,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSpec:
    """A run's checked answer and provenance: what its commit is made of on whichever
    tip it lands (``memgit process``'s, or a proposal replayed by ``review approve``)."""

    run_id: str
    now: datetime
    backend: str
    model: str | None
    prompt_digest: str
    batch: _Batch
    gate: GateOutput
    diagnostics: tuple[dict[str, Any], ...] = ()


def run_change(
    lookup: Lookup,
    settings: Settings,
    spec: RunSpec,
    catalog: Catalog,
    tip: pygit2.Commit | None,
    applied: list[Decision],
) -> Change | None:
    """The run's commit on ``tip`` (``catalog`` reads its tree): the answer replanned for
    what changed since it was made (:func:`_replan`) and applied, with its record,
    trailers and refs; None when nothing of it is left to decide. ``applied`` is
    filled with the decisions."""
    applied.clear()
    replanned = _replan(lookup, settings, catalog.tree, spec.batch, spec.gate, catalog)
    if replanned is None:
        return None
    answer, captures, dropped = replanned
    now = spec.now
    files, refs, trailers = apply_gate_output(
        answer, spec.batch.unit_map, catalog, tip, now.isoformat(), applied
    )
    record = RunRecord(
        run_id=spec.run_id,
        created=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        backend=spec.backend,
        model=spec.model,
        prompt_digest=spec.prompt_digest,
        gate_output=answer.raw,
        inputs=tuple(RunInput(path=c.path, blob=c.blob) for c in (*spec.batch.context, *captures)),
        decisions=tuple(json_data(d) for d in applied),
        diagnostics=(*spec.diagnostics, *dropped),
    )
    files[record.path] = render_run_record(record).encode("utf-8")
    refs[f"{REFS_RUNS}{spec.run_id}"] = "HEAD"
    summary = _summary(applied, spec.backend, len(answer.decisions))
    backend_label = f"{spec.backend}/{spec.model}" if spec.model else spec.backend
    message = render_message(
        summary, [(TRAILER_RUN, spec.run_id), (TRAILER_BACKEND, backend_label), *trailers]
    )
    return Change(files=files, message=message, refs=dict(refs))


def replayed_run(
    lookup: Lookup,
    settings: Settings,
    record: RunRecord,
    catalog: Catalog,
    *,
    answer: dict[str, Any] | None = None,
) -> RunSpec:
    """A recorded run made again from its record (its inputs and stored Gate answer,
    or ``answer`` in its place), checked against ``catalog``'s tree as its Gate answer
    was when it was made: the backend is not asked again. A target gone since, or any
    other check the answer no longer passes, raises GateOutputError; units decided
    since are cut by :func:`run_change`, as for a run that lost a race."""
    given = record.gate_output if answer is None else answer
    batch = recorded_batch(lookup.repo, record)
    gate = check_answer(given, batch, settings, catalog)
    return RunSpec(
        run_id=record.run_id,
        now=datetime.fromisoformat(record.created.replace("Z", "+00:00")),
        backend=record.backend,
        model=record.model,
        prompt_digest=record.prompt_digest,
        batch=batch,
        gate=gate,
        diagnostics=(*record.diagnostics, {"code": "replayed", "count": 1}),
    )


def recorded_batch(repo: pygit2.Repository, record: RunRecord) -> _Batch:
    """The batch a recorded run answered: its captures' units, those its answer has no
    row for (decided before it was asked) shown as context that cannot support."""
    covered = {row.get("unit_id") for row in record.gate_output.get("coverage", ())}
    captures = []
    for item in record.inputs:
        turn = read_capture(read_blob(repo, item.blob), path=item.path, blob=item.blob, check=False)
        units = tuple(
            unit if unit.id in covered else replace(unit, can_support=False)
            for unit in units_of(turn, capture=item.path, blob=item.blob)
        )
        captures.append(
            PendingCapture(path=item.path, blob=item.blob, timestamp=turn.timestamp, units=units)
        )
    return _make_batch(captures, ProcessingState(), frozenset())


def check_answer(
    answer: str | bytes | dict[str, Any], batch: _Batch, settings: Settings, catalog: Catalog
) -> GateOutput:
    """A backend's answer for ``batch``, checked against ``catalog``'s tree as a run's is."""
    return _check(answer, batch, settings, catalog, batch.closed)


def _proposal(settings: Settings, gate: GateOutput, catalog: Catalog, run_id: str) -> str | None:
    """The proposal branch the run commits on, when the review policy covers it."""
    return branch_name(run_id) if needs_review(settings.review, gate, catalog) else None


def _check(
    answer: str | bytes | dict[str, Any],
    batch: _Batch,
    settings: Settings,
    targets: Catalog,
    closed: Mapping[str, str],
) -> GateOutput:
    return check_gate_output(
        answer,
        units=batch.unit_map,
        settings=settings,
        target_state=targets.state,
        closed=closed,
        target_text=targets.text,
    )


def _replan(
    lookup: Lookup,
    settings: Settings,
    tree: pygit2.Tree | None,
    batch: _Batch,
    gate: GateOutput,
    current: Catalog,
) -> tuple[GateOutput, tuple[PendingCapture, ...], tuple[dict[str, Any], ...]] | None:
    """The answer as it applies to ``tree``, the tip the run commits on: whole when
    no other run decided any of its units meanwhile; None when nothing of it is left
    to decide; otherwise narrowed to the units still open (see :func:`narrow_answer`),
    with the captures that still have one and a ``replanned`` diagnostic.

    A target that left meanwhile refuses the run; a unit that opened meanwhile (a
    run was undone) leaves the batch for the next process, as the Gate never
    answered for it."""
    for candidate in gate.candidates:
        if candidate.target is not None and current.state(candidate.target) != "active":
            raise GateOutputError(
                f"target {candidate.target} changed while the Gate was answering",
                code="gate-rejected",
                path="gate output",
                hint="run memgit process again",
                problems=(
                    Problem(
                        code="unknown-target",
                        message="the target is no longer an active memory",
                        path="gate output",
                        field=candidate.candidate_id,
                    ),
                ),
            )
    closed = _state(lookup, settings, tree).holding(batch.held).closed(batch.unit_map)
    # A context turn (never this run's to decide) may have been decided meanwhile by an
    # earlier batch of the same call: that changes nothing the answer covers.
    deciding = {unit.id for unit in batch.units if unit.can_support}
    if _only(closed, deciding) == _only(batch.closed, deciding):
        return gate, batch.captures, ()
    if not closed.keys() >= batch.closed.keys():
        return None
    supporting = [unit for unit in batch.units if unit.can_support and unit.id not in closed]
    if not supporting:
        return None
    narrowed, dropped = narrow_answer(gate.raw, closed)
    answer = _check(narrowed, batch, settings, current, closed)
    still_open = {unit.capture for unit in supporting}
    captures = tuple(c for c in batch.captures if c.path in still_open)
    return answer, captures, ({"code": "replanned", "count": dropped},)


def _only(closed: Mapping[str, Any], units: Collection[str]) -> dict[str, Any]:
    return {unit: value for unit, value in closed.items() if unit in units}


def _run_moment(batch: _Batch) -> datetime:
    """The run's time, as its id, record and memories carry it: its latest capture's, to
    the second, in UTC. Not the clock's: two clones that process the same captures with
    the same answer write the same bytes, so their histories merge without a conflict.
    (Retention counts from the run's commit instead: :func:`run_time`.)"""
    latest = max(moment(capture.timestamp) for capture in batch.captures)
    return latest.astimezone(UTC).replace(microsecond=0)


def _run_id(stamp: str, batch: _Batch, gate: GateOutput, earlier: Sequence[tuple[str, str]]) -> str:
    """``<stamp>-<digest>``: the digest of what the run read and was answered, and of
    the runs that decided its units before it (``earlier``, (path, blob) pairs), so a
    batch deferred again is a new run, and the same run made in two clones is one."""
    digest = hashlib.sha256()
    for capture in batch.captures:
        digest.update(f"{capture.path}\0{capture.blob}\0".encode())
    for path, blob in earlier:
        digest.update(f"{path}\0{blob}\0".encode())
    digest.update(json.dumps(gate.raw, sort_keys=True).encode())
    alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
    number = int.from_bytes(digest.digest()[:5], "big")
    suffix = "".join(alphabet[(number >> (5 * i)) & 31] for i in range(6))
    return f"{stamp}-{suffix}"


def _diagnostics(problems: Sequence[Problem]) -> list[dict[str, Any]]:
    """Allowlisted codes and counts only: never the model's text."""
    counts = Counter(problem.code for problem in problems)
    return [{"code": f"corrected-{code}", "count": n} for code, n in sorted(counts.items())]


def _summary(applied: Sequence[Decision], backend: str, units: int) -> str:
    what = describe_decisions(applied) if applied else f"no memory changes ({units} units reviewed)"
    return f"process: {what} [{backend}]"


def _record_failure(
    git: pygit2.Repository, batch: _Batch, backend: Backend, problems: Sequence[Problem]
) -> None:
    """Keep the allowlisted diagnostics of a refused run in the cache, never on the branch."""
    folder = Path(git.path) / CACHE_DIR / "failed-runs"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = commit_time().strftime("%Y%m%dT%H%M%SZ")
    record = {
        "created": stamp,
        "backend": backend.name,
        "captures": [capture.path for capture in batch.captures],
        "problems": [{"code": p.code, "field": p.field} for p in problems],
    }
    (folder / f"{stamp}-{len(list(folder.iterdir()))}.json").write_text(
        render_json(record), "utf-8"
    )
