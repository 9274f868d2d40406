"""``memgit review approve``: bring a proposal into the branch, compare-and-swap.

Three ways, tried in order on the tip the commit engine hands over (a lost race
plans again on the new tip):

- the branch is still the proposal's base: fast-forward to the proposal's commit;
- the branch moved, but nothing the proposal writes (its memory files, its
  targets, its run record) changed, and none of its units was decided since: a
  merge commit, the tip plus the proposal's changes;
- otherwise stop with ``proposal-stale``, unless ``rebase``: then the run record's
  stored Gate answer is checked and applied again on the tip (the backend is not
  asked), as ``memgit process`` applies an answer. ``only`` is such a replay with
  the answer cut to the candidates named.

The run ref and the retired refs are set in the same ref transaction as the branch
(the proposal did not set them: nothing was retired before approval), the
proposal's branch is deleted, and its commit is kept as ``refs/memgit/applied/<id>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pygit2

from memgit.apply import Decision, describe_decisions
from memgit.catalog import Catalog
from memgit.constants import (
    REFS_APPLIED,
    REFS_RETIRED,
    REFS_RUNS,
    TRAILER_APPROVED,
)
from memgit.errors import ConflictError, InvalidInputError, Problem, UsageError
from memgit.gate.contract import GateOutputError, keep_candidates
from memgit.governance.checks import Governance
from memgit.governance.retirements import retired_ids
from memgit.process import replayed_run, run_change
from memgit.proposals import Proposal, open_proposal, own_branch
from memgit.runrecord import RunRecord, read_coverage
from memgit.settings import Settings, gate_setting
from memgit.state.lookup import Lookup
from memgit.state.processing import DEFAULT_MAX_DEFERRALS, processing_state
from memgit.store.engine import Change, publish
from memgit.store.tree import diff_trees, read_blob
from memgit.trailers import render_message


@dataclass(frozen=True, slots=True, kw_only=True)
class Approval:
    run_id: str
    commit: str
    how: str  # "fast-forward", "merge" or "rebase"
    decisions: tuple[Decision, ...]


def approve(
    lookup: Lookup,
    settings: Settings,
    run_id: str,
    *,
    only: Sequence[str] = (),
    rebase: bool = False,
) -> Approval:
    git = lookup.repo
    proposal = open_proposal(git, run_id)
    record = proposal.record(git)
    if only:
        _check_only(record, only)
    how: list[str] = []
    applied: list[Decision] = []

    def plan(tip: pygit2.Commit | None) -> Change:
        if tip is None:  # head_branch refuses an unborn branch before publish plans
            raise ConflictError("the branch has no commits", code="unborn-branch")
        how.clear()
        if rebase or only:
            how.append("rebase")
            return _replay(lookup, settings, proposal, record, tip, only, applied)
        change, kind = _merge(lookup, settings, proposal, record, tip)
        how.append(kind)
        applied[:] = [_decision(d) for d in record.decisions]
        return change

    result = publish(git, plan, guard=Governance(lookup), author_fallback=settings.author)
    if result.commit is None:
        # A proposal's changes are not yet in the branch (it is open), so this is a bug.
        raise RuntimeError(f"approving {run_id} changed nothing")
    return Approval(run_id=run_id, commit=result.commit, how=how[0], decisions=tuple(applied))


def _check_only(record: RunRecord, only: Sequence[str]) -> None:
    known = {item["candidate_id"] for item in record.gate_output.get("candidates", ())}
    for name in only:
        if name not in known:
            raise UsageError(
                f"proposal {record.run_id} has no candidate {name!r}",
                code="unknown-candidate",
                field="--only",
                hint="`memgit review show ID` lists its candidates: " + ", ".join(sorted(known)),
            )


def _merge(
    lookup: Lookup,
    settings: Settings,
    proposal: Proposal,
    record: RunRecord,
    tip: pygit2.Commit,
) -> tuple[Change, str]:
    """The fast-forward or merge that brings ``proposal`` onto ``tip``, or the
    ``proposal-stale`` conflict when the branch changed what it writes."""
    git = lookup.repo
    commit = proposal.commit
    base_id = git.merge_base(tip.id, commit.id)
    base = git.get(base_id) if base_id is not None else None
    if not isinstance(base, pygit2.Commit):
        raise _stale(proposal, proposal.ref, "shares no history with the branch")
    touched = diff_trees(git, base.tree, commit.tree)
    if base.id != tip.id:
        moved = diff_trees(git, base.tree, tip.tree)
        clash = sorted(touched.keys() & moved.keys())
        if clash:
            raise _stale(proposal, clash[0], "changed on the branch since the proposal was made")
        max_deferrals = gate_setting(settings, "max_deferrals", DEFAULT_MAX_DEFERRALS)
        units = [unit for unit, _ in read_coverage(_record_data(git, proposal), path="")]
        decided = processing_state(lookup, tip.tree, max_deferrals=max_deferrals).closed(units)
        if decided:
            first = sorted(decided)[0]
            raise _stale(
                proposal, proposal.record_path, f"unit {first} was decided on the branch since"
            )
    files = {
        path: read_blob(git, entry[0]) if entry is not None else None
        for path, entry in touched.items()
    }
    refs = _refs(proposal, commit)
    if base.id == tip.id:
        message = f"review: approve run {proposal.run_id}"
        change = Change(
            files=files,
            message=message,
            refs=refs,
            expect=_reviewed(proposal),
            fast_forward=str(commit.id),
        )
        return change, "fast-forward"
    decisions = describe_decisions([_decision(d) for d in record.decisions])
    message = render_message(
        f"review: approve run {proposal.run_id} ({decisions})",
        [(TRAILER_APPROVED, proposal.run_id)],
    )
    change = Change(
        files=files,
        message=message,
        refs=refs,
        expect=_reviewed(proposal),
        merged=(str(commit.id),),
    )
    return change, "merge"


def _replay(
    lookup: Lookup,
    settings: Settings,
    proposal: Proposal,
    record: RunRecord,
    tip: pygit2.Commit,
    only: Sequence[str],
    applied: list[Decision],
) -> Change:
    """The run made again on ``tip`` from its record (``--rebase``, ``--only``)."""
    catalog = Catalog(lookup.repo, tip.tree)
    answer = keep_candidates(record.gate_output, only) if only else None
    try:
        spec = replayed_run(lookup, settings, record, catalog, answer=answer)
    except GateOutputError as refused:
        given = answer if answer is not None else record.gate_output
        gone = [
            str(item["target"])
            for item in given.get("candidates", ())
            if item.get("target") and catalog.state(str(item["target"])) != "active"
        ]
        if gone:
            raise ConflictError(
                f"proposal {proposal.run_id}: its target {gone[0]} is no longer an active "
                "memory on the branch",
                code="proposal-target-gone",
                path=proposal.ref,
                hint=f"reject it: memgit review reject {proposal.run_id} --reason TEXT",
            ) from refused
        headline = Problem(
            code="proposal-invalid",
            message=f"proposal {proposal.run_id} no longer passes the Gate checks on the branch",
            path=proposal.ref,
            hint="the lines below say why; reject it and process its turns again",
        )
        raise InvalidInputError.from_problems([headline, *refused.problems]) from refused
    change = run_change(lookup, settings, spec, catalog, tip, applied)
    if change is None:
        raise _stale(proposal, proposal.record_path, "has nothing left to decide on the branch")
    refs = {**change.refs, **_refs(proposal, None)}
    message = change.message.rstrip("\n") + f"\n{TRAILER_APPROVED}: {proposal.run_id}\n"
    return replace(change, refs=refs, message=message, expect=_reviewed(proposal))


def _reviewed(proposal: Proposal) -> dict[str, str | None]:
    """The proposal's ref must still be at the commit reviewed when approval deletes it
    (or, fetched, when the approval records it): a commit pushed to it meanwhile is
    someone's work, not approved with the rest."""
    return {proposal.ref: str(proposal.commit.id)}


def _refs(proposal: Proposal, commit: pygit2.Commit | None) -> dict[str, str | None]:
    """The refs approval sets: for the proposal's own commit (``commit``), its run ref and
    the retired refs (naming the commit each memory was last active in); always the
    applied ref, and the proposal branch deleted (when it is this clone's)."""
    refs: dict[str, str | None] = {
        **own_branch(proposal),
        f"{REFS_APPLIED}{proposal.run_id}": str(proposal.commit.id),
    }
    if commit is not None:
        refs[f"{REFS_RUNS}{proposal.run_id}"] = str(commit.id)
        for memory_id in retired_ids(commit.message):
            refs[f"{REFS_RETIRED}{memory_id}"] = str(commit.parents[0].id)
    return refs


def _stale(proposal: Proposal, path: str, what: str) -> ConflictError:
    return ConflictError(
        f"proposal {proposal.run_id}: {what}",
        code="proposal-stale",
        path=path,
        hint=f"`memgit review approve {proposal.run_id} --rebase` checks and applies "
        "its Gate answer again on the branch as it is now",
    )


def _record_data(git: pygit2.Repository, proposal: Proposal) -> bytes:
    entry = proposal.commit.tree[proposal.record_path]
    return read_blob(git, entry.id)


def _decision(data: dict[str, Any]) -> Decision:
    return Decision(
        action=data["action"],
        memory_id=data["memory_id"],
        path=data["path"],
        candidate_id=data.get("candidate_id"),
        target=data.get("target"),
    )
