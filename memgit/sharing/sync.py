"""``memgit sync``: fetch, join, check, push, and again if the remote moved meanwhile.

One round: fetch the remote's branch and ``refs/memgit/*`` (into
``refs/memgit-sync/<remote>/``); check each fetched commit as ``memgit verify``
would, then join the branches through :func:`~memgit.store.engine.publish`, so the
checkout follows: a fast-forward when only the remote moved, a merge commit when
both did (path by path with no rename detection, memgit's files by the merge
driver's rules: :mod:`memgit.sharing.three_way`; the merge commit is checked as verify
checks a merge); adopt the
remote's memgit refs (:mod:`memgit.sharing.refs`); check what the remote lacks as
its pre-receive hook would; then push the branch and the refs the remote lacks, all
or none, each only if the remote still holds what was fetched. A push the remote
refused because it moved is a new round. A conflict or a refused check stops with
the branch and memgit's refs as they were; a remote that cannot be reached stops
before anything changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import pygit2

from memgit.constants import MEMORIES_DIR
from memgit.derived.archive import Progress
from memgit.errors import ChecksFailedError, ConflictError, Problem, UsageError, quote_foreign
from memgit.governance.checks import Governance
from memgit.governance.contradictions import Contradiction, find_contradictions
from memgit.governance.retired_join import retired_by_a_side
from memgit.governance.verify import (
    ZERO,
    Finding,
    RefUpdate,
    iter_findings,
    iter_ref_update_findings,
    walk_commits,
)
from memgit.settings import Settings
from memgit.sharing import refs as memgit_refs
from memgit.sharing.decided_apart import DecidedApart, decided_apart_in
from memgit.sharing.duplicates import possible_duplicates
from memgit.sharing.remote import SYNC_NAMESPACE, Fetched, fetch, forget_fetched, push
from memgit.sharing.three_way import file_content, merge_changes
from memgit.state.lookup import Lookup
from memgit.store.engine import Change, publish
from memgit.store.repository import head_branch
from memgit.store.rewrite import purged_commits
from memgit.store.tree import blob_at, build_tree, diff_trees
from memgit.trailers import render_message

MAX_ROUNDS = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncResult:
    remote: str
    branch: str
    joined: str  # "up-to-date", "ahead", "fast-forward" or "merge"
    commit: str | None  # the branch's tip after the sync
    pushed: bool
    refs_adopted: tuple[str, ...] = ()
    # Run and retired refs made for runs that arrived without them (a hosted merge).
    refs_recorded: tuple[str, ...] = ()
    refs_pushed: int = 0
    rounds: int = 1
    possible_duplicates: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    # Open in the branch after the sync: memories that replace the same one (a review item).
    contradictions: tuple[Contradiction, ...] = ()
    # Units whose runs on two sides of a merge this sync made, took or pushed disagree.
    decided_apart: tuple[DecidedApart, ...] = ()


def sync(
    git: pygit2.Repository,
    settings: Settings,
    lookup: Lookup,
    *,
    remote: str | None = None,
    progress: Progress | None = None,
) -> SyncResult:
    """Bring the checked-out branch and ``remote``'s together, and push the result.
    ``progress(step, done, total)`` is told as each step (``fetch``, ``join``,
    ``push``) begins (0 of 1) and ends (1 of 1)."""
    branch = head_branch(git)
    remote, remote_branch = upstream(git, branch, remote)
    step = progress if progress is not None else (lambda *_: None)
    # Over every round: a round the remote outran still took or made refs, and its
    # merge still kept the possible duplicates it found (the next round's merge,
    # based on that one, does not see them again).
    adopted: list[str] = []
    recorded: list[str] = []
    duplicates: dict[tuple[str, str], None] = {}
    start = git.references[branch].peel(pygit2.Commit).id
    for round_number in range(1, MAX_ROUNDS + 1):
        step("fetch", 0, 1)
        fetched = fetch(git, remote, remote_branch)
        step("fetch", 1, 1)
        _refuse_purged(git, remote, fetched, branch)
        step("join", 0, 1)
        before = git.references[branch].peel(pygit2.Commit).id
        joined, found = _join(git, settings, lookup, remote, fetched)
        duplicates.update(dict.fromkeys(found))
        adopted.extend(memgit_refs.adopt(git, fetched.refs))
        tip = git.references[branch].peel(pygit2.Commit).id
        arrived = _new_commits(git, [tip], [before]) if tip != before else []
        recorded.extend(memgit_refs.recorded(git, arrived, fetched.refs))
        step("join", 1, 1)
        step("push", 0, 1)
        updates: dict[str, tuple[pygit2.Oid, pygit2.Oid | None]] = {
            name: (oid, None) for name, oid in memgit_refs.to_push(git, fetched.refs).items()
        }
        if tip != fetched.tip:
            updates[remote_branch] = (tip, fetched.tip)
        _check_outgoing(git, lookup, fetched, updates, remote)
        accepted = push(git, remote, updates)
        step("push", 1, 1)
        if accepted:
            return SyncResult(
                remote=remote,
                branch=branch,
                joined=joined,
                commit=str(tip),
                pushed=bool(updates),
                refs_adopted=tuple(sorted(set(adopted))),
                refs_recorded=tuple(sorted(set(recorded))),
                refs_pushed=len([name for name in updates if name != remote_branch]),
                rounds=round_number,
                possible_duplicates=tuple(duplicates),
                contradictions=tuple(find_contradictions(git, git[tip].peel(pygit2.Tree))),
                decided_apart=tuple(_decided_apart(git, tip, [start, fetched.tip])),
            )
    raise ConflictError(
        f"{remote} kept moving; gave up after {MAX_ROUNDS} rounds",
        code="remote-moved",
        path=remote,
        hint="others are pushing continuously; run memgit sync again",
    )


def _decided_apart(
    git: pygit2.Repository, tip: pygit2.Oid, known: list[pygit2.Oid | None]
) -> list[DecidedApart]:
    """The units decided two ways that merges new to this clone (made here, or brought)
    or to the remote (pushed) join: everyone the merge reaches is told once."""
    seen: dict[pygit2.Oid, pygit2.Commit] = {}
    for before in known:
        if before is not None:  # an empty remote: its first push joins nothing there
            seen.update((commit.id, commit) for commit in _new_commits(git, [tip], [before]))
    merges = [commit for commit in seen.values() if len(commit.parents) > 1]
    return decided_apart_in(git, merges)


def _check_outgoing(
    git: pygit2.Repository,
    lookup: Lookup,
    fetched: Fetched,
    updates: dict[str, tuple[pygit2.Oid, pygit2.Oid | None]],
    remote: str,
) -> None:
    """Refuse to push what the remote's pre-receive hook would refuse: the commits it
    lacks (a person's commit made without the hooks) and the ref changes."""
    tips = [new for new, _ in updates.values() if isinstance(git.get(new), pygit2.Commit)]
    known = [oid for oid in [fetched.tip, *fetched.refs.values()] if oid is not None]
    ref_updates = [
        RefUpdate(old=str(old) if old is not None else ZERO, new=str(new), name=name)
        for name, (new, old) in sorted(updates.items())
    ]
    findings = [
        *iter_findings(git, _new_commits(git, tips, known), lookup),
        *iter_ref_update_findings(git, ref_updates),
    ]
    _refuse(
        findings,
        code="push-refused",
        message=f"problem(s) in the commits {remote} lacks; nothing was pushed",
        hint=f"see `memgit verify {SYNC_NAMESPACE}{remote}/branch..HEAD`, fix the commits "
        "(a commit made without the hooks), then sync again",
        path=remote,
    )


def _check_incoming(
    git: pygit2.Repository, lookup: Lookup, remote: str, theirs: pygit2.Oid, tip: pygit2.Oid
) -> None:
    """Refuse to join commits from the remote that ``memgit verify`` would refuse (a
    history forged elsewhere, pushed where no pre-receive hook checks)."""
    findings = list(iter_findings(git, _new_commits(git, [theirs], [tip]), lookup))
    _refuse(
        findings,
        code="incoming-refused",
        message=f"problem(s) in the commits fetched from {remote}; nothing was joined",
        hint=f"see `memgit verify HEAD..{SYNC_NAMESPACE}{remote}/branch`; whoever pushed them "
        "must fix them on the remote",
        path=remote,
    )


def _refuse_purged(git: pygit2.Repository, remote: str, fetched: Fetched, branch: str) -> None:
    """Refuse to take back history a purge here replaced: the remote's branch or memgit
    refs still reach a commit ``memgit forget --purge`` rewrote (docs/history.md)."""
    purged = purged_commits(git)
    if not purged:
        return
    tips = [oid for oid in [fetched.tip, *fetched.refs.values()] if oid is not None]
    mine = [git.references[branch].peel(pygit2.Commit).id, *memgit_refs.local_refs(git).values()]
    for commit in _new_commits(git, tips, mine):
        if str(commit.id) in purged:
            forget_fetched(git, remote)  # the purged content must not stay reachable here
            raise ConflictError(
                f"{remote} still holds history a purge here replaced (commit "
                f"{str(commit.id)[:12]}); joining it would bring the purged content back",
                code="purged-history",
                path=remote,
                hint="replace the history on the remote first (docs/history.md#purge), then sync",
            )


def _new_commits(
    git: pygit2.Repository, tips: list[pygit2.Oid], known: list[pygit2.Oid]
) -> list[pygit2.Commit]:
    """The commits reachable from ``tips`` and not from ``known``, oldest first."""
    if not tips:
        return []
    return walk_commits(
        git, tips, [oid for oid in known if isinstance(git.get(oid), pygit2.Commit)]
    )


def _refuse(findings: list[Finding], *, code: str, message: str, hint: str, path: str) -> None:
    """Raise one error listing every finding with its commit, if there are any."""
    if not findings:
        return
    summary = Problem(code=code, message=f"{len(findings)} {message}", path=path, hint=hint)
    found = tuple(
        replace(f.problem, message=f"{f.commit[:12]}: {f.problem.message}") for f in findings
    )
    raise ChecksFailedError(
        summary.message, code=code, path=path, hint=hint, problems=(summary, *found)
    )


def upstream(git: pygit2.Repository, branch: str, remote: str | None) -> tuple[str, str]:
    """The remote to sync with and its branch's full name: the branch's upstream
    (``branch.<name>.remote`` / ``.merge``) by default, else ``origin``, else the only
    remote; the same name on the remote when its upstream is elsewhere."""
    short = branch.removeprefix("refs/heads/")
    configured = _config(git, f"branch.{short}.remote")
    names = list(git.remotes.names())
    if remote is None:
        remote = configured or ("origin" if "origin" in names else None)
        if remote is None and len(names) == 1:
            remote = names[0]
    if remote is None or remote not in names:
        raise UsageError(
            f"no remote named {quote_foreign(remote)}" if remote else "this clone has no remote",
            code="no-remote",
            path=remote or "remote",
            hint="name one `git remote -v` lists, or add one: `git remote add origin URL`",
        )
    merge = _config(git, f"branch.{short}.merge") if configured == remote else None
    return remote, merge or branch


def _config(git: pygit2.Repository, key: str) -> str | None:
    try:
        value = git.config[key]
    except KeyError:
        return None
    return value if isinstance(value, str) and value else None


def _join(
    git: pygit2.Repository,
    settings: Settings,
    lookup: Lookup,
    remote: str,
    fetched: Fetched,
) -> tuple[str, list[tuple[str, str]]]:
    """Publish the branch joined with the fetched branch; how it was joined, and the
    possible duplicates a merge kept."""
    theirs = fetched.tip
    how = ["up-to-date"]
    duplicates: list[tuple[str, str]] = []

    def plan(tip: pygit2.Commit | None) -> Change | None:
        duplicates.clear()
        if tip is None or theirs is None or tip.id == theirs:
            how[0] = "up-to-date" if tip is None or tip.id == theirs else "ahead"
            return None
        if git.descendant_of(tip.id, theirs):
            how[0] = "ahead"
            return None
        other = git[theirs].peel(pygit2.Commit)
        _check_incoming(git, lookup, remote, theirs, tip.id)
        if git.descendant_of(theirs, tip.id):
            how[0] = "fast-forward"
            message = render_message(f"sync: fast-forward to {remote}")
            files = _changes(git, tip.tree, other.tree)
            return Change(files=files, message=message, fast_forward=str(theirs))
        how[0] = "merge"
        base = git.merge_base(tip.id, theirs)
        if base is None:
            raise ConflictError(
                f"{remote}'s branch shares no history with this one",
                code="sync-conflict",
                path="merge",
                hint="one history per team: docs/sharing.md#each-clone says how a clone "
                "takes the remote's",
            )
        base_tree = git[base].peel(pygit2.Tree)
        fetched_name = f"{SYNC_NAMESPACE}{remote}/branch"
        files = merge_changes(
            git,
            base_tree,
            tip.tree,
            other.tree,
            hint=f"merge by hand (`git merge {fetched_name}`, resolve, commit: the hooks "
            "check it), then run memgit sync again; nothing was changed",
        )
        tree = git[build_tree(git, tip.tree, files)].peel(pygit2.Tree)
        duplicates.extend(
            possible_duplicates(
                git,
                _added_memories(git, base_tree, tip.tree),
                _added_memories(git, base_tree, other.tree),
            )
        )
        sides = [(tip, memgit_refs.local_refs(git)), (other, fetched.refs)]
        for path in retired_by_a_side(git, tree, sides, base, forgotten=True):
            if blob_at(tip.tree, path) is None:
                files.pop(path, None)  # this side retired it: the other's copy stays out
            else:
                files[path] = None  # the other side retired it
        message = render_message(f"sync: merge {remote}")
        return Change(files=files, message=message, merged=(str(theirs),))

    publish(git, plan, guard=_JoinGuard(lookup), author_fallback=settings.author)
    return how[0], duplicates


class _JoinGuard(Governance):
    """The checks of a join. A merge commit is checked as ``memgit verify`` checks one.
    A fast-forward makes no commit: the commits it brings were each checked before it
    was planned (:func:`_check_incoming`), which a check of their sum as one commit
    would get wrong (a memory a merge among them joined would look unexplained)."""

    def check(
        self,
        repo: pygit2.Repository,
        tree: pygit2.Tree,
        base: pygit2.Commit | None,
        merged: Sequence[pygit2.Commit] = (),
    ) -> None:
        if merged:
            super().check(repo, tree, base, merged)


def _changes(git: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree) -> dict[str, bytes | None]:
    """The files that differ, as publish takes them: contents of regular files. memgit
    writes nothing else, so an executable, a symlink or a submodule the join would
    bring is left to git (``git pull``), not flattened into a plain file."""
    return {
        path: file_content(git, path, entry) for path, entry in diff_trees(git, old, new).items()
    }


def _added_memories(
    git: pygit2.Repository, base: pygit2.Tree | None, tree: pygit2.Tree
) -> list[tuple[str, pygit2.Oid]]:
    return [
        (path, entry[0])
        for path, entry in diff_trees(git, base, tree).items()
        if entry is not None and path.startswith(f"{MEMORIES_DIR}/") and path.endswith(".md")
    ]
