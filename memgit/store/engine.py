"""The commit engine: every memgit write goes through :func:`publish`.

A write is a function from a branch tip to a :class:`Change`. Under the writer
lock the engine builds the commit in memory, runs the guard (the governance
checks) on it, and moves the branch and memgit's own refs (runs, retired
memories) in one ref transaction: the refs are locked, the branch is compared
with the tip the change was planned on, and only then are they all set. If the
branch moved (someone ran ``git commit`` meanwhile) it asks the function again
on the new tip, so a lost race is re-applied, never overwritten.

When the branch is the one checked out, the checkout is part of the write
(:mod:`memgit.store.worktree`): memgit holds git's ``index.lock`` while the refs
move, as ``git commit`` does; before they move, the person's index and working
tree must hold no edits to the touched paths; after, git brings the index and
working tree from the old tree to the new one. A branch that is not checked out (a proposal) is
published with no checkout at all.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pygit2

from memgit.errors import ConflictError
from memgit.store import recovery
from memgit.store.identity import signatures
from memgit.store.lock import WriterLock
from memgit.store.repository import head_branch
from memgit.store.tree import build_tree, read_tree
from memgit.store.worktree import IndexLock, check_untouched

MAX_ATTEMPTS = 20
REF_LOCK_WAIT = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """What one commit does: file contents by path (``None`` deletes) and a message.

    ``merged`` names commits the new commit merges (its parents after the tip): a
    merge commit, whose tree is still the tip's tree plus ``files``. ``fast_forward``
    names an existing commit that descends from the tip, to publish instead of a new
    one; ``files`` must then be what it changes from the tip (the paths the checkout
    brings in line), and ``message`` is only the reflog's.

    ``refs`` are set with the branch (``"HEAD"``: to the new commit; ``None``: deleted,
    as an approved proposal's branch is). ``expect`` names refs that must still hold
    these ids (``None``: not exist) when the refs move, compared under their locks, or
    nothing is published (``ref-changed``): a proposal branch deleted on approval must
    be the one reviewed. ``allow_empty`` commits even when the tree stays the tip's: a
    commit that only records its message (a rejection's reason).
    """

    files: Mapping[str, bytes | None]
    message: str
    refs: Mapping[str, str | None] = field(default_factory=dict)
    expect: Mapping[str, str | None] = field(default_factory=dict)
    merged: tuple[str, ...] = ()
    fast_forward: str | None = None
    allow_empty: bool = False


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

    def check(
        self,
        repo: pygit2.Repository,
        tree: pygit2.Tree,
        base: pygit2.Commit | None,
        merged: Sequence[pygit2.Commit] = (),
    ) -> None:
        """Look at the tree about to be committed on ``base``, merging ``merged``."""


def publish(
    repo: pygit2.Repository,
    plan: Planner,
    *,
    guard: Guard | None,
    ref: str | None = None,
    allow_unborn: bool = False,
    author_fallback: tuple[str, str] | None = None,
    lock_timeout: float | None = None,
    start: str | None = None,
) -> CommitResult:
    """Apply ``plan`` to the tip of ``ref`` (the checked-out branch by default) as one
    commit; see the module docstring. A ``ref`` that does not exist yet starts from
    commit ``start`` (a proposal branches off the tip), and is created only if it
    still does not exist when the refs move.

    ``guard`` screens the new contents before any object is written and checks
    the prepared tree before anything is published; memgit's flows pass the
    governance checks (the same ones the pre-commit hooks run).
    """
    git_dir = Path(repo.path)
    with WriterLock(git_dir, timeout=lock_timeout) as lock:
        recovery.recover(repo, lock.previous)
        lock.write({})
        branch = ref if ref is not None else head_branch(repo, allow_unborn=allow_unborn)
        checked_out = ref is None or _checked_out(repo) == ref
        for attempt in range(1, MAX_ATTEMPTS + 1):
            current = repo.references.get(branch)
            expected = current.peel(pygit2.Commit) if current is not None else None
            tip = expected if current is not None or start is None else _commit(repo, start)
            change = plan(tip)
            if change is None or not (change.files or _moves_anyway(change)):
                return _no_op(tip, branch, attempt)
            result = _publish_once(
                repo,
                lock,
                branch,
                tip,
                change,
                expected=expected,
                guard=guard,
                checked_out=checked_out,
                attempt=attempt,
                author_fallback=author_fallback,
            )
            if result is not None:
                return result
    raise ConflictError(
        f"the branch kept moving; gave up after {MAX_ATTEMPTS} attempts",
        code="ref-moved",
        path=branch,
        hint="another program is committing continuously; retry when it is done",
    )


def _moves_anyway(change: Change) -> bool:
    """Whether ``change`` moves the branch even when it leaves the tree as it is: a
    merge, a commit that records only its message, or a fast-forward (to a merge of
    identical work, say: that commit is someone's history, and a branch left behind it
    would be pushed back over it)."""
    return bool(change.merged or change.allow_empty or change.fast_forward)


def _commit(repo: pygit2.Repository, name: str) -> pygit2.Commit:
    found = repo.get(name)
    if not isinstance(found, pygit2.Commit):
        raise ConflictError(
            f"{name} is not a commit of this repository",
            code="unknown-commit",
            path=name,
            hint="fetch again and retry",
        )
    return found


def _checked_out(repo: pygit2.Repository) -> str | None:
    """The branch HEAD names, or None when HEAD is detached."""
    if repo.head_is_detached:
        return None
    name = repo.references["HEAD"].target
    return name if isinstance(name, str) else None


def _publish_once(
    repo: pygit2.Repository,
    lock: WriterLock,
    branch: str,
    tip: pygit2.Commit | None,
    change: Change,
    *,
    expected: pygit2.Commit | None,
    guard: Guard | None,
    checked_out: bool,
    attempt: int,
    author_fallback: tuple[str, str] | None,
) -> CommitResult | None:
    """Build, check and publish ``change`` on ``tip``; None when the branch moved first
    from ``expected`` (its tip, or None for a branch to create). ``checked_out``: bring
    the index and working tree along."""
    base_tree = tip.tree if tip is not None else None
    if guard is not None:
        guard.screen(change.files, change.message)
    tree_id = build_tree(repo, base_tree, change.files)
    if tip is not None and tree_id == tip.tree_id and not _moves_anyway(change):
        return _no_op(tip, branch, attempt)
    tree = read_tree(repo, tree_id)
    if guard is not None:
        merged = [repo[pygit2.Oid(hex=commit)].peel(pygit2.Commit) for commit in change.merged]
        guard.check(repo, tree, tip, merged)
    index = IndexLock(repo) if checked_out else None
    if index is not None:
        # Named before it is taken: a lock a killed writer left is known for its own.
        lock.write({"op": "publish", "index_lock": index.token})
    with index if index is not None else contextlib.nullcontext():
        if index is not None:
            check_untouched(repo, base_tree, change.files)
        new = _new_commit(repo, tip, tree_id, change, author_fallback)
        lock.write(
            {
                "op": "publish",
                "branch": branch,
                "old": str(expected.id) if expected is not None else None,
                "new": str(new),
                # The paths to bring in line after a crash: none for a branch not checked
                # out; and the index lock this writer holds, to release after a crash.
                "paths": sorted(change.files) if index is not None else [],
                "index_lock": index.token if index is not None else None,
                "refs": dict(change.refs),
            }
        )
        try:
            moved = _move_refs(repo, branch, expected, new, change)
        except ConflictError:
            # Nothing was published, and the lock in the way is not ours:
            # the next writer must not take it for a dead writer's.
            lock.write({})
            raise
        if not moved:
            return None
        if index is not None:
            index.checkout(base_tree, str(tree_id), change.files)
    lock.write({})
    return CommitResult(
        commit=str(new),
        parent=str(tip.id) if tip is not None else None,
        branch=branch,
        attempts=attempt,
    )


def _new_commit(
    repo: pygit2.Repository,
    tip: pygit2.Commit | None,
    tree_id: pygit2.Oid,
    change: Change,
    author_fallback: tuple[str, str] | None,
) -> pygit2.Oid:
    """The commit to publish: ``change.fast_forward`` when it names one (it must have
    exactly the tree built, and descend from the tip), else a new one."""
    if change.fast_forward is not None:
        existing = repo.get(change.fast_forward)
        descends = tip is None or (
            isinstance(existing, pygit2.Commit) and repo.descendant_of(existing.id, tip.id)
        )
        if not isinstance(existing, pygit2.Commit) or existing.tree_id != tree_id or not descends:
            raise ConflictError(
                f"{change.fast_forward} is not the tip plus the change",
                code="not-fast-forward",
                path=change.fast_forward,
                hint="fetch again and retry",
            )
        return existing.id
    author, committer = signatures(repo, author_fallback)
    parents = [tip.id] if tip is not None else []
    parents.extend(pygit2.Oid(hex=commit) for commit in change.merged)
    return repo.create_commit(None, author, committer, change.message, tree_id, parents)


def _check_expected(repo: pygit2.Repository, expect: Mapping[str, str | None]) -> None:
    """Refuse (nothing is set: the transaction ends with the error) when a ref named in
    ``expect`` no longer holds what the change was planned on."""
    for name, wanted in expect.items():
        ref = repo.references.get(name)
        held = str(ref.target) if ref is not None else None
        if held != wanted:
            raise ConflictError(
                f"{name} changed while memgit worked (it is at {held or 'nothing'}, "
                f"was {wanted or 'nothing'}); nothing was published",
                code="ref-changed",
                path=name,
                hint="someone else moved it meanwhile: look at it, then run the command again",
            )


def _no_op(tip: pygit2.Commit | None, branch: str, attempt: int) -> CommitResult:
    parent = str(tip.id) if tip is not None else None
    return CommitResult(commit=None, parent=parent, branch=branch, attempts=attempt)


def _reflog_message(message: str) -> str:
    return "memgit: " + message.split("\n", 1)[0]


def _move_refs(
    repo: pygit2.Repository,
    branch: str,
    tip: pygit2.Commit | None,
    new: pygit2.Oid,
    change: Change,
) -> bool:
    """Move ``branch`` from ``tip`` (None: create it) to ``new`` and set or delete
    ``change.refs``, all in one ref transaction; False if the branch no longer points
    at ``tip``.

    The branch is compared under its lock, so nothing can move it between the
    comparison and the update. A lock held by someone else is waited for briefly.
    The reflog entries name the repository's identity, as git's own would (pygit2
    1.21 cannot pass a signature to a transaction).
    """
    names = list(dict.fromkeys([branch, *change.refs, *change.expect]))
    message = _reflog_message(change.message)
    deadline = time.monotonic() + REF_LOCK_WAIT
    while True:
        try:
            with repo.transaction() as transaction:
                for name in names:
                    transaction.lock_ref(name)
                current = repo.references.get(branch)
                if (current.target if current is not None else None) != (
                    tip.id if tip is not None else None
                ):
                    return False  # the transaction ends with nothing set: the locks go
                _check_expected(repo, change.expect)
                transaction.set_target(branch, new, None, message)
                for name, target in change.refs.items():
                    if target is None:
                        if name in repo.references:
                            transaction.remove(name)
                        continue
                    oid = new if target == "HEAD" else pygit2.Oid(hex=target)
                    transaction.set_target(name, oid, None, message)
            return True
        except pygit2.GitError as err:
            # libgit2 reports a held lock as a plain GitError; by the time it is caught
            # the lock may be gone again, so any failure is retried until the deadline,
            # and named by the lock file still in the way, if there is one.
            if time.monotonic() < deadline:
                time.sleep(0.02)
                continue
            held = next((n for n in names if (Path(repo.path) / f"{n}.lock").exists()), None)
            if held is None:
                raise
            raise ConflictError(
                f"cannot lock {held}: another git process holds .git/{held}.lock",
                code="git-lock",
                path=held,
                hint=f"a git command may be running; if none is, remove .git/{held}.lock and retry",
            ) from err
