"""The one validator behind every door: memgit's writes, pre-commit, and verify.

Each check reads a :class:`~memgit.governance.view.CommitView` (a tree, its
parent, and which paths changed) and yields :class:`~memgit.errors.Problem`
values. memgit's commit engine runs them on the tree it is about to commit;
the pre-commit hooks run them on the staged tree; ``memgit verify`` runs them
on every commit of a range.
"""
