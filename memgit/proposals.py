"""Proposals as refs: which exist, in which state, and the units they hold back.

An open proposal is the branch ``memgit/proposals/<run-id>``: one run's commit
off the tip it was made on. It is *applied* once its run record is in the
branch's tree, however it got there (``memgit review approve``, ``git merge``,
a host's merge button); approved ones are kept under ``refs/memgit/applied/``,
rejected ones under ``refs/memgit/rejected/``, whose commit records the reason
on top of the proposal's. Nothing here is stored anywhere but in refs and trees.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pygit2

from memgit.constants import REFS_APPLIED, REFS_PROPOSALS, REFS_REJECTED, TRAILER_REJECTED
from memgit.errors import ConflictError, MemgitError, UsageError
from memgit.layout import run_path
from memgit.runrecord import RunRecord, parse_run_record, read_coverage
from memgit.store.repository import head_branch
from memgit.store.tree import blob_at, read_blob
from memgit.trailers import parse_trailers, render_message

OPEN, APPLIED, REJECTED = "open", "applied", "rejected"
_FETCHED = "/memgit/proposals/"  # inside refs/remotes/<remote>/


@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    """One proposed run, wherever it is kept now."""

    run_id: str
    state: str
    ref: str
    commit: pygit2.Commit  # the proposal's tip: the run's commit (a rejection's parent)
    reason: str | None = None

    @property
    def record_path(self) -> str:
        return run_path(self.run_id)

    def record(self, repo: pygit2.Repository) -> RunRecord:
        """The run record the proposal commits."""
        blob = blob_at(self.commit.tree, self.record_path)
        if blob is None:
            raise UsageError(
                f"proposal {self.run_id} holds no run record at {self.record_path}",
                code="not-a-proposal",
                path=self.ref,
                hint="a proposal branch holds one memgit run; see docs/review.md",
            )
        return parse_run_record(read_blob(repo, blob), path=self.record_path)

    def summary(self, repo: pygit2.Repository) -> dict[str, Any]:
        """What ``review list`` shows: ids, state, counts per action, age, backend."""
        record = self.record(repo)
        counts: dict[str, int] = {}
        for decision in record.decisions:
            counts[decision["action"]] = counts.get(decision["action"], 0) + 1
        return {
            "run_id": self.run_id,
            "state": self.state,
            "ref": self.ref,
            "commit": str(self.commit.id),
            "created": record.created,
            "backend": record.backend,
            "model": record.model,
            "counts": counts,
            "reason": self.reason,
        }


def branch_name(run_id: str) -> str:
    return f"{REFS_PROPOSALS}{run_id}"


def own_branch(proposal: Proposal) -> dict[str, str | None]:
    """What approving or rejecting ``proposal`` deletes: its branch here, when it is
    one. A fetched proposal's remote-tracking ref is the remote's to change (the
    applied or rejected ref tells every clone it is decided)."""
    return {proposal.ref: None} if proposal.ref.startswith(REFS_PROPOSALS) else {}


def iter_proposals(
    repo: pygit2.Repository, tree: pygit2.Tree | None, *, fetched: bool = False
) -> Iterator[Proposal]:
    """Every proposal kept in this repository, by run id; ``tree`` (the branch's)
    decides whether a proposal branch is open or already applied. With ``fetched``,
    also the proposals fetched from remotes (``refs/remotes/<remote>/memgit/proposals/``)
    that have no local ref. One pass over the ref names (50 ms at 100,000 refs:
    refs/memgit/runs/ grows by one per run)."""
    names = sorted(
        name
        for name in repo.listall_references()
        if name.startswith((REFS_APPLIED, REFS_REJECTED, REFS_PROPOSALS))
        or (fetched and name.startswith("refs/remotes/") and _FETCHED in name)
    )
    seen: set[str] = set()
    for name in names:
        commit = repo.references[name].peel(pygit2.Commit)
        if name.startswith(REFS_APPLIED):
            seen.add(name[len(REFS_APPLIED) :])
            yield Proposal(run_id=name[len(REFS_APPLIED) :], state=APPLIED, ref=name, commit=commit)
        elif name.startswith(REFS_REJECTED):
            seen.add(name[len(REFS_REJECTED) :])
            yield _rejected(name[len(REFS_REJECTED) :], name, commit)
    for name in names:
        if name.startswith(REFS_PROPOSALS):
            run_id = name[len(REFS_PROPOSALS) :]
        elif name.startswith("refs/remotes/"):
            run_id = name.split(_FETCHED, 1)[1]
        else:
            continue
        if run_id not in seen:
            seen.add(run_id)  # a local branch comes before the fetched ones (sorted)
            commit = repo.references[name].peel(pygit2.Commit)
            applied = tree is not None and blob_at(tree, run_path(run_id)) is not None
            yield Proposal(
                run_id=run_id, state=APPLIED if applied else OPEN, ref=name, commit=commit
            )


def _rejected(run_id: str, name: str, commit: pygit2.Commit) -> Proposal:
    """A rejected proposal: the ref's commit records the reason, its parent is the run's."""
    if not _is_rejection(commit.message) or not commit.parents:
        return Proposal(run_id=run_id, state=REJECTED, ref=name, commit=commit)
    return Proposal(
        run_id=run_id,
        state=REJECTED,
        ref=name,
        commit=commit.parents[0],
        reason=parse_rejection(commit.message),
    )


def render_rejection(run_id: str, reason: str) -> str:
    """The message of the commit that records a rejection: summary, reason, trailer."""
    return render_message(f"review: reject run {run_id}", [(TRAILER_REJECTED, run_id)], body=reason)


def parse_rejection(message: str) -> str | None:
    """The reason :func:`render_rejection` recorded in ``message``; None for a message
    that records no rejection, or no reason."""
    if not _is_rejection(message):
        return None
    paragraphs = message.strip().split("\n\n")
    return "\n\n".join(paragraphs[1:-1]).strip() or None


def _is_rejection(message: str) -> bool:
    return any(key == TRAILER_REJECTED for key, _ in parse_trailers(message))


def find_proposal(repo: pygit2.Repository, tree: pygit2.Tree | None, run_id: str) -> Proposal:
    """The proposal of ``run_id``, a fetched one too (``refs/remotes/<remote>/memgit/
    proposals/``: a colleague's, to review here); unknown: a usage error, exit 2."""
    for proposal in iter_proposals(repo, tree, fetched=True):
        if proposal.run_id == run_id:
            return proposal
    raise UsageError(
        f"no proposal {run_id!r}",
        code="unknown-proposal",
        field="ID",
        hint="`memgit review list --all` shows every proposal's run id",
    )


def open_proposal(
    repo: pygit2.Repository,
    run_id: str,
    *,
    closed: str = " already",
    hint: str = "`memgit review list --all` shows what happened to it",
) -> Proposal:
    """The proposal of ``run_id`` on the branch's tip, which approve, reject and push act
    on only while it is open: ``proposal-closed`` (a conflict) once it was decided."""
    tip = repo.references[head_branch(repo)].peel(pygit2.Commit)
    proposal = find_proposal(repo, tip.tree, run_id)
    if proposal.state != OPEN:
        raise ConflictError(
            f"proposal {run_id} is {proposal.state}{closed}",
            code="proposal-closed",
            path=proposal.ref,
            hint=hint,
        )
    return proposal


def held_units(
    repo: pygit2.Repository, tree: pygit2.Tree | None, *, include_rejected: bool
) -> frozenset[str]:
    """The units open proposals (and rejected ones, unless ``include_rejected``) decided,
    fetched ones included (another clone's proposal is not made again here): planning
    treats them as decided, so they are not proposed again; the checks do not, as no
    run in the tree decides them."""
    held: set[str] = set()
    for proposal in iter_proposals(repo, tree, fetched=True):
        if proposal.state == OPEN or (proposal.state == REJECTED and not include_rejected):
            blob = blob_at(proposal.commit.tree, proposal.record_path)
            if blob is None:
                continue
            try:
                rows = read_coverage(read_blob(repo, blob), path=proposal.record_path)
            except MemgitError:
                continue  # a broken proposal holds nothing back; review show says why
            held.update(unit_id for unit_id, _ in rows)
    return frozenset(held)
