"""The staged tree: what ``git commit`` would commit now (for the pre-commit hooks)."""

from __future__ import annotations

import pygit2

from memgit.errors import ConflictError


def staged_tree(repo: pygit2.Repository) -> pygit2.Tree:
    """Write the index as tree objects (as git commit does) and return the tree."""
    index = repo.index
    index.read(False)
    if index.conflicts is not None:
        raise ConflictError(
            "the index has unresolved merge conflicts",
            code="merge-conflict",
            path="index",
            hint="resolve the conflicts and stage the result first",
        )
    tree = repo[index.write_tree()]
    assert isinstance(tree, pygit2.Tree)
    return tree
