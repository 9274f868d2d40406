"""A memory branch forced back: what the push would drop, and whether the remote allows it.

A branch of a memory repository holds the captures, memories and run records that
every clone builds on. Forcing it to a commit that does not descend from its tip
(``git push --force``, a rebase pushed over it) drops what only the old history held,
and every clone that synced it then merges it back or loses it. So the remote refuses
one unless its own ``memgit.yaml`` (at the branch's current tip, which the push cannot
change) sets ``sharing.allow_rewrite: true``, the setting ``memgit forget --purge
--push`` needs. The refusal names what would be dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from memgit.constants import CONFIG_FILE, INBOX_DIR, MEMORIES_DIR, REFS_PROPOSALS, RUNS_DIR
from memgit.errors import MemgitError, Problem
from memgit.settings import parse_settings
from memgit.store.tree import blob_at, diff_trees, read_blob

BRANCHES = "refs/heads/"
# A branch whose tip holds any of these is a memory branch.
MEMGIT_PATHS = (CONFIG_FILE, INBOX_DIR, MEMORIES_DIR, RUNS_DIR)


@dataclass(frozen=True, slots=True, kw_only=True)
class Dropped:
    """What an old tip holds that the new one lacks: commits, and files by kind."""

    commits: int
    captures: tuple[str, ...]
    memories: tuple[str, ...]
    runs: tuple[str, ...]

    def describe(self) -> str:
        # The first path of each kind: one of each says more than three captures.
        files = [paths[0] for paths in (self.memories, self.runs, self.captures) if paths]
        more = len(self.captures) + len(self.memories) + len(self.runs) > len(files)
        shown = ", ".join(files) + (", ..." if more else "")
        return (
            f"{_count(self.commits, 'commit', 'commits')} and "
            f"{_count(len(self.captures), 'capture', 'captures')}, "
            f"{_count(len(self.memories), 'memory', 'memories')}, "
            f"{_count(len(self.runs), 'run', 'runs')}" + (f" ({shown})" if files else "")
        )


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def memory_branch_tip(repo: pygit2.Repository, name: str, old: str) -> pygit2.Commit | None:
    """The current tip of ``name`` when it is a memory branch: a branch (not a review
    proposal, which is rebased by design) whose tip holds any of memgit's files, or the
    branch the repository's HEAD names (a push that first removed them all would
    otherwise make the next one free to force it)."""
    if not name.startswith(BRANCHES) or name.startswith(REFS_PROPOSALS):
        return None
    tip = repo.get(old)
    if not isinstance(tip, pygit2.Commit):
        return None
    if _is_head(repo, name) or any(path in tip.tree for path in MEMGIT_PATHS):
        return tip
    return None


def _is_head(repo: pygit2.Repository, name: str) -> bool:
    head = repo.references.get("HEAD")
    return head is not None and head.target == name


def is_rewrite(repo: pygit2.Repository, name: str, old: pygit2.Commit, new: str | None) -> bool:
    """Whether moving branch ``name`` from ``old`` to ``new`` (None: deleting it) drops
    history: a move to a commit that does not descend from ``old``, or deleting the
    branch the repository's HEAD names (the one a clone gets)."""
    if new is None:
        return _is_head(repo, name)
    target = pygit2.Oid(hex=new)
    return target != old.id and not repo.descendant_of(target, old.id)


def allows_rewrite(repo: pygit2.Repository, tip: pygit2.Commit) -> bool:
    """Whether ``tip``'s memgit.yaml sets ``sharing.allow_rewrite: true`` (a broken one
    allows nothing)."""
    blob = blob_at(tip.tree, CONFIG_FILE)
    if blob is None:
        return False
    try:
        return parse_settings(read_blob(repo, blob)).allow_rewrite
    except MemgitError:
        return False


def dropped(repo: pygit2.Repository, old: pygit2.Commit, new: str | None) -> Dropped:
    """What moving a branch from ``old`` to ``new`` (None: deleting it) drops."""
    tip = repo.get(new) if new is not None else None
    walker = repo.walk(old.id, pygit2.enums.SortMode.NONE)
    if isinstance(tip, pygit2.Commit):
        walker.hide(tip.id)
    gone = sorted(
        path
        for path, entry in diff_trees(
            repo, old.tree, tip.tree if isinstance(tip, pygit2.Commit) else None
        ).items()
        if entry is None
    )
    return Dropped(
        commits=sum(1 for _ in walker),
        captures=tuple(p for p in gone if p.startswith(f"{INBOX_DIR}/")),
        memories=tuple(p for p in gone if p.startswith(f"{MEMORIES_DIR}/")),
        runs=tuple(p for p in gone if p.startswith(f"{RUNS_DIR}/")),
    )


def rewrite_problem(name: str, old: pygit2.Commit, new: str | None, lost: Dropped) -> Problem:
    """The refusal of a rewrite the remote does not allow."""
    how = "deleted" if new is None else f"forced to {new[:12]}, which does not descend from it"
    return Problem(
        code="branch-rewritten",
        message=f"the memory branch is {how}: the push drops {lost.describe()}",
        path=name,
        hint="push new commits on top instead (`memgit sync`, or `git pull` then `git push`); "
        "to let a history rewrite through (`memgit forget --purge --push` needs one), the "
        "remote's memgit.yaml must set `sharing: {allow_rewrite: true}` first",
    )
