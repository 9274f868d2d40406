"""The registry of checks, and the entry memgit's own commit path uses."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import pygit2

from memgit.errors import InvalidInputError, Problem
from memgit.governance.evidence import iter_evidence_problems
from memgit.governance.schemas import iter_schema_problems
from memgit.governance.secrets import (
    iter_message_secrets,
    iter_name_secrets,
    iter_secret_problems,
    iter_text_secrets,
)
from memgit.governance.supersession import iter_supersession_problems
from memgit.governance.view import CommitView, view_of_tree
from memgit.secrets.paths import without_secret_path
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
        merged: Sequence[pygit2.Commit] = (),
    ) -> None:
        check_tree(repo, tree, base, self.lookup, merged=merged)


def check_tree(
    repo: pygit2.Repository,
    tree: pygit2.Tree,
    base: pygit2.Commit | None,
    lookup: Lookup | None = None,
    *,
    merged: Sequence[pygit2.Commit] = (),
) -> None:
    """Refuse a tree about to be committed on ``base`` (merging ``merged``) that any
    published hook, or ``memgit verify``, would refuse."""
    view = view_of_tree(repo, tree, base, lookup, merged=merged)
    problems = [problem for _, problem in iter_all_problems(view)]
    if problems:
        raise InvalidInputError.from_problems(problems)
