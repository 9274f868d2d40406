"""Running one check as a pre-commit hook over the staged tree."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pygit2

from memgit.errors import MemgitError, Problem
from memgit.governance.view import CommitView, view_of_tree
from memgit.secrets.paths import without_secret_path
from memgit.store.recovery import unfinished_publish
from memgit.store.repository import open_repository
from memgit.store.staging import staged_tree


def staged_view(start: Path, filenames: Sequence[str]) -> CommitView:
    """The staged tree against HEAD; with filenames (as pre-commit passes them), just those
    (of what the merge changes, when a merge is being committed)."""
    repo = open_repository(start)
    unfinished = unfinished_publish(repo)
    if unfinished is not None:
        raise unfinished
    base = None if repo.head_is_unborn else repo.head.peel(pygit2.Commit)
    merged = _merging(repo)
    view = view_of_tree(repo, staged_tree(repo, base), base, merged=merged)
    if not filenames:
        return view
    wanted = frozenset(name.replace("\\", "/").removeprefix("./") for name in filenames)
    present = frozenset(name for name in wanted if view.read(name) is not None)
    return replace(view, changed=present & view.changed if merged else present)


def _merging(repo: pygit2.Repository) -> list[pygit2.Commit]:
    """The commits a ``git merge`` in progress is joining (``.git/MERGE_HEAD``: a
    resolved conflict, ``git merge --no-commit``): the commit being made is a merge,
    checked as ``memgit verify`` checks one."""
    return [repo[oid].peel(pygit2.Commit) for oid in repo.listall_mergeheads()]


def run_hook(
    hook_id: str, check: Callable[[CommitView], Iterator[Problem]], filenames: Sequence[str]
) -> int:
    """Print every problem as ``error[code]: path: field: message``; 1 if any, else 0."""
    try:
        problems = list(check(staged_view(Path.cwd(), filenames)))
    except MemgitError as err:
        print(err.render(), file=sys.stderr)
        return int(err.exit_status)
    for problem in problems:
        print(without_secret_path(problem).render(), file=sys.stderr)
    if problems:
        print(f"{hook_id}: {len(problems)} problem(s); nothing was committed", file=sys.stderr)
    return 1 if problems else 0
