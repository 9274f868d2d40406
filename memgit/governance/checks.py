"""The registry of checks, and the entry memgit's own commit path uses."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import pygit2

from memgit.errors import InvalidInputError, Problem
from memgit.governance.evidence import iter_evidence_problems
from memgit.governance.schemas import iter_schema_problems
from memgit.governance.secrets import (
    iter_message_secrets,
    iter_name_secrets,
    iter_secret_problems,
    iter_text_secrets,
    without_secret_path,
)
from memgit.governance.supersession import iter_supersession_problems
from memgit.governance.view import CommitView, merge_view, view_of_tree
from memgit.state.lookup import Lookup

Check = Callable[[CommitView], Iterator[Problem]]

# Hook id -> check, in the order they run and report.
CHECKS: dict[str, Check] = {
    "memgit-schemas": iter_schema_problems,
    "memgit-evidence": iter_evidence_problems,
    "memgit-secrets": iter_secret_problems,
    "memgit-supersession": iter_supersession_problems,
}


def iter_all_problems(view: CommitView) -> Iterator[tuple[str, Problem]]:
    """(hook id, problem) for every check over ``view``."""
    for hook_id, check in CHECKS.items():
        for problem in check(view):
            yield hook_id, without_secret_path(problem)


class Governance:
    """The commit engine's guard: refuse what any published hook would refuse.

    ``lookup`` answers the checks' questions about whole trees: memgit's commands
    pass the derived store's (:class:`~memgit.derived.lookup.IndexLookup`)."""

    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup

    def screen(self, files: Mapping[str, bytes | None], message: str) -> None:
        """Secrets are refused before a blob, tree or commit holding them exists."""
        problems = list(iter_message_secrets(message))
        for path, data in files.items():
            problems.extend(iter_name_secrets(path))
            if data is not None:
                problems.extend(iter_text_secrets(path, data))
        if problems:
            raise InvalidInputError.from_problems(problems)

    def check(
        self,
        repo: pygit2.Repository,
        tree: pygit2.Tree,
        base: pygit2.Commit | None,
        merged: tuple[pygit2.Commit, ...] = (),
    ) -> None:
        check_tree(repo, tree, base, self.lookup, merged)


def check_tree(
    repo: pygit2.Repository,
    tree: pygit2.Tree,
    base: pygit2.Commit | None,
    lookup: Lookup | None = None,
    merged: tuple[pygit2.Commit, ...] = (),
) -> None:
    """Refuse a tree about to be committed on ``base`` that any published hook would refuse;
    a merge of ``merged`` is checked as ``memgit verify`` checks one (:func:`merge_view`)."""
    view = merge_view(repo, view_of_tree(repo, tree, base, lookup), [c.tree for c in merged])
    problems = [problem for _, problem in iter_all_problems(view)]
    if problems:
        raise InvalidInputError.from_problems(problems)
