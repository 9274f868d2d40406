"""What the processing state and the governance checks ask of a tree, answered two ways.

:class:`TreeWalk` (here) reads the tree itself: every capture, run record or
memory the question needs. The hooks and ``memgit verify`` use it, so what CI
and a pre-receive hook check depends on the repository alone.

:class:`~memgit.derived.lookup.IndexLookup` answers from the derived store
(which holds the rows of the tree it is stamped with) corrected by the files
that differ between that tree and the one asked about. memgit's own commands
use it: a run's checks then cost what its change costs, not what the history
holds.

Both read files with the same readers and give the same answers; neither
writes anything while answering. A lookup keeps the answers for the last few
trees it was asked about (a tree never changes), so it is made per command.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection
from typing import Protocol, TypeVar

import pygit2

from memgit.constants import INBOX_DIR, MEMORIES_DIR, RUNS_DIR
from memgit.derived.documents import is_capture_path, read_memory
from memgit.errors import MemgitError
from memgit.runrecord import read_coverage
from memgit.state.processing import CoverageRow, Inbox, capture_row
from memgit.store.tree import iter_blobs, read_blob

T = TypeVar("T")
MemoryUse = tuple[str, str, str]  # (path, type, scope)
_KEPT_TREES = 4


class Kept:
    """The answers for the last few trees, by (question, tree id)."""

    def __init__(self) -> None:
        self.answers: OrderedDict[tuple[str, str], object] = OrderedDict()

    def get(self, question: str, tree: pygit2.Tree, compute: Callable[[], T]) -> T:
        key = (question, str(tree.id))
        if key not in self.answers:
            self.answers[key] = compute()
            while len(self.answers) > _KEPT_TREES * 4:
                self.answers.popitem(last=False)
        return self.answers[key]  # type: ignore[return-value]


class Lookup(Protocol):
    """The questions; each raises InvalidInputError for a file it cannot read."""

    repo: pygit2.Repository
    kept: Kept  # answers for the last few trees, by question

    def inbox(self, tree: pygit2.Tree) -> Inbox:
        """The captures of the tree's inbox, with the coverage rows of its run records for
        their supporting units (or known to be settled)."""

    def deciding(self, tree: pygit2.Tree, unit_ids: Collection[str]) -> set[tuple[str, str]]:
        """(path, blob id) of each run record in the tree with a row for one of ``unit_ids``."""

    def memory_paths(self, tree: pygit2.Tree, memory_id: str) -> list[str]:
        """Every path of the tree holding memory ``memory_id``, sorted."""

    def memories_using(
        self, tree: pygit2.Tree, *, types: Collection[str], scopes: Collection[str]
    ) -> list[MemoryUse]:
        """Each memory whose type is one of ``types`` or whose top scope is one of
        ``scopes``, sorted (a memory that cannot be read is memgit-schemas' to report)."""


def memories_in(
    repo: pygit2.Repository,
    files: Collection[tuple[str, str]],
    *,
    types: Collection[str],
    scopes: Collection[str],
) -> list[MemoryUse]:
    """Of ``files`` ((path, blob id) pairs), the memories using ``types`` or ``scopes``."""
    found = []
    for path, blob in files:
        if not path.endswith(".md"):
            continue
        try:
            doc = read_memory(read_blob(repo, blob), path=path, blob=blob)
        except MemgitError:
            continue
        if doc.type in types or doc.scope.split("/")[0] in scopes:
            found.append((path, doc.type, doc.scope))
    return sorted(found)


class TreeWalk:
    """Answers read from the tree itself."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.kept = Kept()

    def inbox(self, tree: pygit2.Tree) -> Inbox:
        def walk() -> Inbox:
            captures = [
                capture_row(path, blob, read_blob(self.repo, blob))
                for path, blob in iter_blobs(self.repo, tree, INBOX_DIR)
                if is_capture_path(path)
            ]
            units = {unit_id for capture in captures for unit_id in capture.supporting}
            return Inbox(captures, [row for row in self._records(tree) if row.unit_id in units])

        return self.kept.get("inbox", tree, walk)

    def deciding(self, tree: pygit2.Tree, unit_ids: Collection[str]) -> set[tuple[str, str]]:
        wanted = frozenset(unit_ids)
        return {(r.record, r.blob) for r in self._records(tree) if r.unit_id in wanted}

    def memory_paths(self, tree: pygit2.Tree, memory_id: str) -> list[str]:
        def walk() -> dict[str, list[str]]:
            found: dict[str, list[str]] = {}
            for path, _ in iter_blobs(self.repo, tree, MEMORIES_DIR):
                if path.endswith(".md"):
                    found.setdefault(path.rsplit("/", 1)[1][: -len(".md")], []).append(path)
            return found

        return sorted(self.kept.get("memory-paths", tree, walk).get(memory_id, []))

    def memories_using(
        self, tree: pygit2.Tree, *, types: Collection[str], scopes: Collection[str]
    ) -> list[MemoryUse]:
        files = list(iter_blobs(self.repo, tree, MEMORIES_DIR))
        return memories_in(self.repo, files, types=types, scopes=scopes)

    def _records(self, tree: pygit2.Tree) -> list[CoverageRow]:
        def walk() -> list[CoverageRow]:
            return [
                CoverageRow(unit_id, decision, path, blob)
                for path, blob in iter_blobs(self.repo, tree, RUNS_DIR)
                if path.endswith(".json")
                for unit_id, decision in read_coverage(read_blob(self.repo, blob), path=path)
            ]

        return self.kept.get("records", tree, walk)
