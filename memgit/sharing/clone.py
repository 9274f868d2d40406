"""What ``memgit init`` does with the remote of a clone: take the memory it holds.

A clone must share one history with its remote. ``git clone`` of a bare repository
whose HEAD names a branch that does not exist (made by a git whose default branch is
``master``, then sent ``main``) checks out nothing; if init then committed a new root,
the first sync would publish a second, unrelated branch and split the team. So init,
in a clone whose branch has no commit yet, fetches the remote's memory branch and
checks it out; in a clone of an empty remote it publishes :data:`MEMORY_BRANCH`, the
branch every memgit names, whatever ``init.defaultBranch`` says. In every clone it
fetches the ``refs/memgit/*`` the clone lacks, so its own hooks refuse a retired
memory before its first sync.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from memgit.errors import BackendError, ConflictError, UsageError, quote_foreign
from memgit.sharing import refs as memgit_refs
from memgit.sharing.remote import fetch, remote_error, run_git
from memgit.sharing.sync import upstream
from memgit.store.refs import set_refs
from memgit.store.repository import head_branch

MEMORY_BRANCH = "main"
HEADS = "refs/heads/"
PROPOSALS = "refs/heads/memgit/"


@dataclass(frozen=True, slots=True, kw_only=True)
class CloneSetup:
    """What init found on the remote a clone syncs with, and what it took.

    ``adopted`` is the commit checked out from the remote's branch (a clone that had
    none); ``publishes`` says the remote lacks the branch, so the first ``git push``
    or ``memgit sync`` creates it there; ``fetch_failed`` is git's complaint when the
    remote could not be reached (not made yet, or offline): init then goes on as in
    a repository without a remote, and says so.
    """

    remote: str
    branch: str
    adopted: str | None = None
    publishes: bool = False
    refs_fetched: tuple[str, ...] = ()
    fetch_failed: str | None = None


def set_up_clone(repo: pygit2.Repository) -> CloneSetup | None:
    """Join the clone to the remote ``memgit sync`` would use (None when there is no
    such remote, or HEAD is on no branch): its branch checked out if this one has no
    commit, the memgit refs the clone lacks fetched."""
    if repo.head_is_detached:
        return None
    branch = head_branch(repo, allow_unborn=True)
    try:
        remote, remote_branch = upstream(repo, branch, None)
    except UsageError:
        return None
    short = branch.removeprefix(HEADS)
    try:
        if repo.head_is_unborn:
            return _adopt(repo, remote)
        fetched = fetch(repo, remote, remote_branch)
    except BackendError as err:  # a remote not made yet, or offline: init goes on
        return CloneSetup(remote=remote, branch=short, fetch_failed=err.message)
    return CloneSetup(
        remote=remote,
        branch=short,
        publishes=fetched.tip is None,
        refs_fetched=_take_missing_refs(repo, fetched.refs),
    )


def _adopt(repo: pygit2.Repository, remote: str) -> CloneSetup:
    """A clone with no commit: check out the remote's memory branch, or, when the
    remote has none, make :data:`MEMORY_BRANCH` the branch init commits to."""
    heads, head = remote_heads(repo, remote)
    branch = choose_branch(heads, head, remote)
    fetched = fetch(repo, remote, HEADS + branch)
    if fetched.tip is None:
        _point_head(repo, branch)
        return CloneSetup(
            remote=remote,
            branch=branch,
            publishes=True,
            refs_fetched=_take_missing_refs(repo, fetched.refs),
        )
    refs = _take_missing_refs(repo, fetched.refs)
    done = run_git(repo, "checkout", "--quiet", "--no-track", "-b", branch, str(fetched.tip))
    if not done.ok:
        lines = [line for line in done.err.splitlines() if line.strip()]
        named = [line.strip() for line in lines if line.startswith("\t")]
        raise ConflictError(
            f"cannot check out {remote}'s branch {branch}: "
            + quote_foreign(lines[0] if lines else f"exit status {done.status}")
            + "".join(f" {quote_foreign(name)}" for name in named[:5]),
            code="local-edits",
            path=named[0] if named else str(repo.workdir),
            hint="move the files git names out of the way (a clone should start empty), "
            "then rerun memgit init",
        )
    config = repo.config
    if f"branch.{branch}.remote" not in config:
        config[f"branch.{branch}.remote"] = remote
        config[f"branch.{branch}.merge"] = HEADS + branch
    return CloneSetup(remote=remote, branch=branch, adopted=str(fetched.tip), refs_fetched=refs)


def remote_heads(repo: pygit2.Repository, remote: str) -> tuple[list[str], str | None]:
    """The remote's branches (short names, memgit's proposal branches left out) and the
    branch its HEAD names, if HEAD names one that exists."""
    done = run_git(repo, "ls-remote", "--symref", remote, "HEAD", "refs/heads/*")
    if not done.ok:
        raise remote_error("ls-remote", remote, done)
    heads: list[str] = []
    head = None
    for line in done.out.splitlines():
        value, _, name = line.partition("\t")
        if value.startswith("ref: ") and name == "HEAD":
            head = value.removeprefix("ref: ").removeprefix(HEADS)
        elif name.startswith(HEADS) and not name.startswith(PROPOSALS):
            heads.append(name.removeprefix(HEADS))
    return heads, head if head in heads else None


def choose_branch(heads: list[str], head: str | None, remote: str) -> str:
    """The branch a clone with no commit takes: the one the remote's HEAD names, else
    :data:`MEMORY_BRANCH`, else the remote's only branch; :data:`MEMORY_BRANCH` when
    the remote has none (it is the branch the clone will publish)."""
    if head is not None:
        return head
    if not heads or MEMORY_BRANCH in heads:
        return MEMORY_BRANCH
    if len(heads) == 1:
        return heads[0]
    raise UsageError(
        f"{remote} has branches {', '.join(sorted(heads)[:5])} and its HEAD names none "
        f"of them or no {MEMORY_BRANCH}: which holds the memory?",
        code="ambiguous-branch",
        path=remote,
        hint="check out the memory branch (`git switch BRANCH`), then rerun memgit init",
    )


def _take_missing_refs(repo: pygit2.Repository, fetched: dict[str, pygit2.Oid]) -> tuple[str, ...]:
    """Set the fetched ``refs/memgit/*`` this clone lacks (a ref it has already is
    left to ``memgit sync``, which settles a difference); their names."""
    mine = memgit_refs.local_refs(repo)
    missing = {name: oid for name, oid in fetched.items() if name not in mine}
    return tuple(sorted(set_refs(repo, missing, message="memgit: init takes the remote's refs")))


def _point_head(repo: pygit2.Repository, branch: str) -> None:
    """Make the branch HEAD names (it has no commit yet) ``branch``."""
    done = run_git(repo, "symbolic-ref", "HEAD", HEADS + branch)
    if not done.ok:
        raise ConflictError(
            f"cannot make HEAD name {branch}: " + quote_foreign(done.said),
            code="git-failed",
            path="HEAD",
            hint=f"`git symbolic-ref HEAD {HEADS}{branch}`, then rerun memgit init",
        )
