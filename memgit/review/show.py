"""``memgit review show`` and ``review list``: what a proposal would change, and why.

Each decision comes with the memory it writes (or, for a RETRACT, the one it
removes), the quotes the Gate gave for it and the captured turns they come from
(as ``recall --evidence`` shows them), and the whole proposal as a ``git diff``
from its base (where it left the branch) to its commit.
"""

from __future__ import annotations

import time
from calendar import timegm
from dataclasses import dataclass
from typing import Any

import pygit2

from memgit.errors import MemgitError
from memgit.evidence import units_of
from memgit.jsonio import json_data
from memgit.memory import Memory, Source, read_memory
from memgit.pack import SourceEvidence, source_evidence
from memgit.proposals import OPEN, Proposal, find_proposal, iter_proposals
from memgit.runrecord import RunRecord
from memgit.store.tree import blob_at, read_blob
from memgit.turn import read_capture


@dataclass(frozen=True, slots=True, kw_only=True)
class ProposedDecision:
    decision: dict[str, Any]
    memory: Memory | None
    sources: tuple[SourceEvidence, ...]

    def to_dict(self) -> dict[str, Any]:
        """The decision's record entry flattened, with the memory as its file would hold it."""
        return {
            **self.decision,
            "memory": {**self.memory.front_matter(), "body": self.memory.body}
            if self.memory is not None
            else None,
            "sources": json_data(self.sources),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ProposalView:
    summary: dict[str, Any]
    base: str
    decisions: tuple[ProposedDecision, ...]
    diff: str

    def to_dict(self) -> dict[str, Any]:
        """The run's summary flattened beside the base, decisions and diff."""
        return {
            **self.summary,
            "base": self.base,
            "decisions": json_data(self.decisions),
            "diff": self.diff,
        }


def list_proposals(
    repo: pygit2.Repository, tip: pygit2.Commit, *, everything: bool
) -> list[dict[str, Any]]:
    """The open proposals (with ``everything``, applied and rejected ones too), oldest
    first, each as :meth:`Proposal.summary` gives it plus its age in seconds."""
    found = []
    for proposal in iter_proposals(repo, tip.tree, fetched=True):
        if everything or proposal.state == OPEN:
            try:
                found.append(_with_age(proposal.summary(repo)))
            except MemgitError as err:
                found.append(_unreadable(proposal, err))
    return sorted(found, key=lambda item: (item["created"], item["run_id"]))


def _unreadable(proposal: Proposal, err: MemgitError) -> dict[str, Any]:
    """A proposal whose run record cannot be read is listed with the reason, not hidden
    (and not allowed to hide the others)."""
    return {
        "run_id": proposal.run_id,
        "state": proposal.state,
        "ref": proposal.ref,
        "commit": str(proposal.commit.id),
        "created": "",
        "age_seconds": None,
        "backend": None,
        "model": None,
        "counts": {},
        "reason": proposal.reason,
        "error": err.render().splitlines()[0],
    }


def _with_age(summary: dict[str, Any]) -> dict[str, Any]:
    created = timegm(time.strptime(summary["created"], "%Y-%m-%dT%H:%M:%SZ"))
    return {**summary, "age_seconds": max(0, int(time.time()) - created)}


def show_proposal(repo: pygit2.Repository, tip: pygit2.Commit, run_id: str) -> ProposalView:
    proposal = find_proposal(repo, tip.tree, run_id)
    record = proposal.record(repo)
    base = _base(repo, tip, proposal)
    sources = _claims(repo, record)
    decisions = []
    for decision in record.decisions:
        memory = _memory(repo, proposal, base, decision)
        quoted = sources.get(str(decision.get("candidate_id")), ())
        decisions.append(
            ProposedDecision(
                decision=decision,
                memory=memory,
                sources=tuple(source_evidence(repo, source) for source in quoted),
            )
        )
    patch = repo.diff(base, proposal.commit).patch or ""
    return ProposalView(
        summary=_with_age(proposal.summary(repo)),
        base=str(base.id),
        decisions=tuple(decisions),
        diff=patch,
    )


def _base(repo: pygit2.Repository, tip: pygit2.Commit, proposal: Proposal) -> pygit2.Commit:
    """Where the proposal left the branch: the commit its run was made on."""
    commit = proposal.commit
    if proposal.state == OPEN:
        found = repo.merge_base(tip.id, commit.id)
        if found is not None and found != commit.id:
            base = repo.get(found)
            if isinstance(base, pygit2.Commit):
                return base
    return commit.parents[0] if commit.parents else commit


def _memory(
    repo: pygit2.Repository, proposal: Proposal, base: pygit2.Commit, decision: dict[str, Any]
) -> Memory | None:
    """The memory the decision writes, or the one a RETRACT removes (from the base)."""
    tree = base.tree if decision["action"] == "RETRACT" else proposal.commit.tree
    path = str(decision["path"])
    blob = blob_at(tree, path)
    if blob is None:
        return None
    try:
        return read_memory(read_blob(repo, blob), path=path)
    except MemgitError:
        return None


def _claims(repo: pygit2.Repository, record: RunRecord) -> dict[str, tuple[Source, ...]]:
    """candidate id -> the quotes the Gate bound to it, as sources of the captures read."""
    where: dict[str, tuple[str, str]] = {}
    for item in record.inputs:
        try:
            turn = read_capture(
                read_blob(repo, item.blob), path=item.path, blob=item.blob, check=False
            )
        except (MemgitError, KeyError):
            continue
        for unit in units_of(turn, capture=item.path, blob=item.blob):
            where[unit.id] = (item.path, item.blob)
    found: dict[str, tuple[Source, ...]] = {}
    for binding in record.gate_output.get("evidence_bindings", ()):
        sources = []
        for claim in binding.get("claims", ()):
            capture, blob = where.get(claim["unit_id"], ("?", "0" * 40))
            sources.append(
                Source(capture=capture, unit=claim["unit_id"], quote=claim["quote"], blob=blob)
            )
        found[str(binding["candidate_id"])] = tuple(sources)
    return found
