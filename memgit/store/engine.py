"""The commit engine: every memgit write goes through :func:`commit_change`.

A write is a function from the current branch tip to a :class:`Change`. Under
the writer lock the engine builds the commit in memory, checks that the
person's index and working tree do not hold edits to the touched paths, then
moves the branch by compare-and-swap. If the branch moved (someone ran
``git commit`` meanwhile) it asks the function again on the new tip, so a lost
race is re-applied, never overwritten. Finally it brings exactly the touched
paths of the index and working tree in line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pygit2

from memgit.errors import ConflictError
from memgit.store import recovery
from memgit.store.gitindex import IndexEntries, open_index
from memgit.store.identity import signatures
from memgit.store.lock import WriterLock
from memgit.store.repository import head_branch
from memgit.store.tree import build_tree
from memgit.store.worktree import apply_to_worktree, check_untouched

MAX_ATTEMPTS = 20
REF_LOCK_WAIT = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """What one commit does: file contents by path (``None`` deletes) and a message."""

    files: Mapping[str, bytes | None]
    message: str
    refs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitResult:
    """The commit made (None when the change turned out to be a no-op) and its parent."""

    commit: str | None
    parent: str | None
    branch: str
    attempts: int


Planner = Callable[[pygit2.Commit | None], Change | None]


class Guard(Protocol):
    """What must hold before memgit commits; each method raises to refuse."""

    def screen(self, files: Mapping[str, bytes | None], message: str) -> None:
        """Look at the new contents and the commit message before any object exists
        (secrets never reach one)."""

    def check(self, repo: pygit2.Repository, tree: pygit2.Tree, base: pygit2.Commit | None) -> None:
        """Look at the tree about to be committed on ``base``."""


def commit_change(
    repo: pygit2.Repository,
    plan: Planner,
    *,
    guard: Guard | None,
    allow_unborn: bool = False,
    author_fallback: tuple[str, str] | None = None,
    lock_timeout: float | None = None,
    meanwhile: Callable[[pygit2.Tree], None] | None = None,
) -> CommitResult:
    """Apply ``plan`` to the branch tip as one commit; see the module docstring.

    ``guard`` screens the new contents before any object is written and checks
    the prepared tree before anything is published; memgit's flows pass the
    governance checks (the same ones the pre-commit hooks run). ``meanwhile``
    runs on the new tree once the commit is published, while the index is being
    saved (for a large index, git saves it on the other core).
    """
    git_dir = Path(repo.path)
    with WriterLock(git_dir, timeout=lock_timeout) as lock:
        recovery.recover(repo, lock.previous)
        lock.write({})
        branch = head_branch(repo, allow_unborn=allow_unborn)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            ref = repo.references.get(branch)
            tip = ref.peel(pygit2.Commit) if ref is not None else None
            change = plan(tip)
            if change is None or not change.files:
                return _no_op(tip, branch, attempt)
            wait_for_git_lock(git_dir / "index.lock")
            with open_index(repo) as index:
                # Looking up the touched paths' index entries (a git process for a
                # large index) overlaps building and checking the commit.
                index.prefetch(change.files)
                result = _publish(
                    repo,
                    lock,
                    ref,
                    branch,
                    tip,
                    change,
                    guard=guard,
                    index=index,
                    attempt=attempt,
                    author_fallback=author_fallback,
                    meanwhile=meanwhile,
                )
            if result is not None:
                return result
    raise ConflictError(
        f"the branch kept moving; gave up after {MAX_ATTEMPTS} attempts",
        code="ref-moved",
        path=branch,
        hint="another program is committing continuously; retry when it is done",
    )


def _publish(
    repo: pygit2.Repository,
    lock: WriterLock,
    ref: pygit2.Reference | None,
    branch: str,
    tip: pygit2.Commit | None,
    change: Change,
    *,
    guard: Guard | None,
    index: IndexEntries,
    attempt: int,
    author_fallback: tuple[str, str] | None,
    meanwhile: Callable[[pygit2.Tree], None] | None,
) -> CommitResult | None:
    """Build, check and publish ``change`` on ``tip``; None when the branch moved first."""
    base_tree = tip.tree if tip is not None else None
    if guard is not None:
        guard.screen(change.files, change.message)
    tree_id = build_tree(repo, base_tree, change.files)
    if tip is not None and tree_id == tip.tree_id:
        return _no_op(tip, branch, attempt)
    tree = repo[tree_id]
    assert isinstance(tree, pygit2.Tree)
    if guard is not None:
        guard.check(repo, tree, tip)
    check_untouched(repo, index, base_tree, change.files)
    author, committer = signatures(repo, author_fallback)
    parents = [tip.id] if tip is not None else []
    new = repo.create_commit(None, author, committer, change.message, tree_id, parents)
    lock.write(
        {
            "op": "publish",
            "branch": branch,
            "old": str(tip.id) if tip is not None else None,
            "new": str(new),
            "paths": sorted(change.files),
            "refs": dict(change.refs),
        }
    )
    try:
        moved = _move_branch(repo, ref, branch, new, change.message)
    except ConflictError:
        # Nothing was published, and the lock in the way is not ours:
        # the next writer must not take it for a dead writer's.
        lock.write({})
        raise
    if not moved:
        return None
    try:
        _write_extra_refs(repo, change.refs, new, change.message)
    except (OSError, pygit2.GitError) as err:
        # The commit is published: keep the work tree in line with it, and
        # leave the journal so the next writer creates the missing refs.
        apply_to_worktree(repo, index, tree, change.files)
        raise ConflictError(
            f"committed {str(new)[:12]}, but a ref could not be written: {err}",
            code="git-lock",
            path=branch,
            hint="another git process may hold the ref's lock; the next memgit "
            "write creates the missing ref",
        ) from err
    apply_to_worktree(repo, index, tree, change.files, meanwhile=meanwhile)
    lock.write({})
    return CommitResult(
        commit=str(new),
        parent=str(tip.id) if tip is not None else None,
        branch=branch,
        attempts=attempt,
    )


def wait_for_git_lock(lock_file: Path, timeout: float = REF_LOCK_WAIT) -> None:
    """Wait briefly for a git command holding ``lock_file`` to finish."""
    deadline = time.monotonic() + timeout
    while lock_file.exists():
        if time.monotonic() >= deadline:
            raise ConflictError(
                "another git process holds this lock",
                code="git-lock",
                path=str(lock_file),
                hint="if no git command is running, the lock is stale: remove the file and retry",
            )
        time.sleep(0.02)


def _no_op(tip: pygit2.Commit | None, branch: str, attempt: int) -> CommitResult:
    parent = str(tip.id) if tip is not None else None
    return CommitResult(commit=None, parent=parent, branch=branch, attempts=attempt)


def _reflog_message(message: str) -> str:
    return "memgit: " + message.split("\n", 1)[0]


def _move_branch(
    repo: pygit2.Repository,
    ref: pygit2.Reference | None,
    branch: str,
    new: pygit2.Oid,
    message: str,
) -> bool:
    """Compare-and-swap the branch to ``new``; False if it moved since it was read."""
    deadline = time.monotonic() + REF_LOCK_WAIT
    while True:
        try:
            if ref is None:
                repo.create_reference_direct(branch, new, False, message=_reflog_message(message))
            else:
                ref.set_target(new, _reflog_message(message))
            return True
        except pygit2.AlreadyExistsError:
            return False
        except pygit2.GitError as err:
            if "does not match" in str(err) or "modified" in str(err) or "exists" in str(err):
                return False
            raise
        except OSError as err:
            # libgit2 reports a ref lock held by someone else as OSError.
            if time.monotonic() >= deadline:
                raise ConflictError(
                    f"cannot lock {branch}: {err}",
                    code="git-lock",
                    path=branch,
                    hint=f"a git command may be running; if none is, remove "
                    f".git/{branch}.lock and retry",
                ) from err
            time.sleep(0.02)


def _write_extra_refs(
    repo: pygit2.Repository, refs: Mapping[str, str], commit: pygit2.Oid, message: str
) -> None:
    """Point memgit's own refs (runs, retired memories) at their commits."""
    for name, target in refs.items():
        oid = commit if target == "HEAD" else pygit2.Oid(hex=target)
        repo.create_reference_direct(name, oid, True, message=_reflog_message(message))
