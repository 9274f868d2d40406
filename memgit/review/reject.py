"""``memgit review reject``: a proposal leaves review, and nothing of it is lost.

The proposal's branch moves under ``refs/memgit/rejected/<run-id>`` as one commit on
top of the proposal's: the same tree, and a message holding the reason (screened
for secrets like every commit message memgit writes). The proposal's commit stays
reachable from that ref, and ``memgit process`` does not ask about its units again
unless ``--include-rejected``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from memgit.constants import REFS_REJECTED
from memgit.errors import ConflictError, InvalidInputError
from memgit.governance.checks import Governance
from memgit.proposals import open_proposal, own_branch, render_rejection
from memgit.settings import Settings
from memgit.state.lookup import Lookup
from memgit.store.engine import Change, publish

MAX_REASON_CHARS = 4000


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejection:
    run_id: str
    ref: str
    commit: str
    reason: str


def reject(lookup: Lookup, settings: Settings, run_id: str, reason: str) -> Rejection:
    git = lookup.repo
    text = check_reason(reason)
    proposal = open_proposal(git, run_id)
    ref = f"{REFS_REJECTED}{run_id}"
    message = render_rejection(run_id, text)

    def plan(current: pygit2.Commit | None) -> Change:
        if current is None or current.id != proposal.commit.id:
            raise ConflictError(
                f"proposal {run_id} was rejected already",
                code="proposal-closed",
                path=ref,
                hint="`memgit review list --all` shows it",
            )
        return Change(
            files={},
            message=message,
            refs=own_branch(proposal),
            # The branch deleted must be the one rejected, not a commit pushed to it since.
            expect={proposal.ref: str(proposal.commit.id)},
            allow_empty=True,
        )

    result = publish(
        git,
        plan,
        guard=Governance(lookup),
        ref=ref,
        start=str(proposal.commit.id),
        author_fallback=settings.author,
    )
    if result.commit is None:  # allow_empty: a commit is always made
        raise RuntimeError(f"rejecting {run_id} made no commit")
    return Rejection(run_id=run_id, ref=ref, commit=result.commit, reason=text)


def check_reason(reason: str) -> str:
    """The reason as recorded: some text, not a wall of it, no control characters (it
    becomes part of a commit message that people read with git log)."""
    text = reason.strip()
    bad = next((c for c in text if ord(c) < 32 and c not in "\n\t"), None)
    if not text or len(text) > MAX_REASON_CHARS or bad is not None:
        raise InvalidInputError(
            f"a reason is 1 to {MAX_REASON_CHARS} characters of text without control characters",
            code="invalid-reason",
            field="--reason",
            hint="say in a sentence why the proposal is wrong",
        )
    return text
