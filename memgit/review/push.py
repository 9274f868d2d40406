"""``memgit review push``: the proposal's branch to a remote, where a hosted Git service
shows it as a pull request. git's own push does it (its transports, credentials and
configuration); memgit only names the branch."""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from memgit.errors import UsageError, quote_foreign
from memgit.proposals import open_proposal
from memgit.sharing.remote import remote_error, run_git


@dataclass(frozen=True, slots=True, kw_only=True)
class Pushed:
    run_id: str
    remote: str
    branch: str
    commit: str


def push_proposal(repo: pygit2.Repository, run_id: str, remote: str) -> Pushed:
    proposal = open_proposal(
        repo,
        run_id,
        closed="; only open proposals are pushed",
        hint="`memgit review list` shows the open ones",
    )
    if remote.startswith("-"):
        raise UsageError(f"{quote_foreign(remote)} is not a remote", code="usage", field="REMOTE")
    spec = f"{proposal.ref}:{proposal.ref}"
    done = run_git(repo, "push", "--porcelain", remote, spec)
    if not done.ok:
        raise remote_error("push", remote, done)
    return Pushed(
        run_id=run_id,
        remote=remote,
        branch=proposal.ref.removeprefix("refs/heads/"),
        commit=str(proposal.commit.id),
    )
