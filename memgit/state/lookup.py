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
from collections.abc import Callable, Collection, Iterable
from typing import Generic, Protocol, TypeVar

import pygit2

from memgit.constants import INBOX_DIR, MEMORIES_DIR, RUNS_DIR
from memgit.errors import MemgitError
from memgit.layout import is_capture_path
from memgit.memory import read_memory
from memgit.runrecord import read_coverage
from memgit.state.rows import CaptureRow, CoverageRow, Inbox, capture_row, run_time
from memgit.store.tree import diff_trees, iter_blobs, read_blob

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
            doc = read_memory(read_blob(repo, blob), path=path, blob=blob, check=False)
        except MemgitError:
            continue
        if doc.type in types or doc.scope.split("/")[0] in scopes:
            found.append((path, doc.type, doc.scope))
    return sorted(found)


class _Folder(Generic[T]):
    """The files of one top folder as of the last tree asked about, each read once, and
    indexed by ``keys``: the next tree's are found by a diff from the last (``memgit
    verify`` asks of each commit of a history in turn, so each commit costs its change).
    A file that cannot be read raises, and the next question reads the folder afresh."""

    def __init__(
        self,
        repo: pygit2.Repository,
        top: str,
        read: Callable[[str, str], T | None],
        keys: Callable[[T], Iterable[str]],
    ) -> None:
        self.repo, self.top, self.read, self.keys = repo, top, read, keys
        self.folder: pygit2.Tree | None = None
        self.seen = False
        self.files: dict[str, T] = {}
        self.by_key: dict[str, dict[str, T]] = {}  # key -> {path: value}

    def of(self, tree: pygit2.Tree) -> _Folder[T]:
        folder = _subfolder(self.repo, tree, self.top)
        if self.seen and _same(self.folder, folder):
            return self
        base = self.folder if self.seen else None
        try:
            for name, entry in diff_trees(self.repo, base, folder).items():
                path = f"{self.top}/{name}"
                self._drop(path)
                if entry is not None and entry[1] in _FILE_MODES:
                    value = self.read(path, str(entry[0]))
                    if value is not None:
                        self._put(path, value)
        except BaseException:
            self.seen, self.folder, self.files, self.by_key = False, None, {}, {}
            raise
        self.folder, self.seen = folder, True
        return self

    def _put(self, path: str, value: T) -> None:
        self.files[path] = value
        for key in self.keys(value):
            self.by_key.setdefault(key, {})[path] = value

    def _drop(self, path: str) -> None:
        value = self.files.pop(path, None)
        if value is not None:
            for key in self.keys(value):
                self.by_key.get(key, {}).pop(path, None)


class TreeWalk:
    """Answers read from the tree itself (its folders as of the last tree asked about
    are kept, so the next tree's answer reads what differs)."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.kept = Kept()
        self._captures = _Folder(repo, INBOX_DIR, self._capture, _no_keys)
        self._records = _Folder(repo, RUNS_DIR, self._record, _record_units)
        self._memories = _Folder(repo, MEMORIES_DIR, _memory_id, _one_key)

    def inbox(self, tree: pygit2.Tree) -> Inbox:
        def walk() -> Inbox:
            captures = sorted(self._captures.of(tree).files.values(), key=lambda c: c.path)
            by_unit = self._records.of(tree).by_key
            units = {unit_id for capture in captures for unit_id in capture.supporting}
            coverage = [
                row
                for unit_id in sorted(units)
                for rows in by_unit.get(unit_id, {}).values()
                for row in rows
                if row.unit_id == unit_id
            ]
            return Inbox(captures, coverage)

        return self.kept.get("inbox", tree, walk)

    def deciding(self, tree: pygit2.Tree, unit_ids: Collection[str]) -> set[tuple[str, str]]:
        by_unit = self._records.of(tree).by_key
        return {
            (r.record, r.blob)
            for u in unit_ids
            for rows in by_unit.get(u, {}).values()
            for r in rows
        }

    def memory_paths(self, tree: pygit2.Tree, memory_id: str) -> list[str]:
        return sorted(self._memories.of(tree).by_key.get(memory_id, {}))

    def memories_using(
        self, tree: pygit2.Tree, *, types: Collection[str], scopes: Collection[str]
    ) -> list[MemoryUse]:
        files = list(iter_blobs(self.repo, tree, MEMORIES_DIR))
        return memories_in(self.repo, files, types=types, scopes=scopes)

    def _capture(self, path: str, blob: str) -> CaptureRow | None:
        if not is_capture_path(path):
            return None
        return capture_row(path, blob, read_blob(self.repo, blob))

    def _record(self, path: str, blob: str) -> tuple[CoverageRow, ...] | None:
        if not path.endswith(".json"):
            return None
        rows = read_coverage(read_blob(self.repo, blob), path=path)
        when = run_time(self.repo, path)
        return tuple(CoverageRow(unit_id, decision, path, blob, when) for unit_id, decision in rows)


_FILE_MODES = (0o100644, 0o100755)


def _subfolder(repo: pygit2.Repository, tree: pygit2.Tree, top: str) -> pygit2.Tree | None:
    try:
        found = repo[tree[top].id]
    except KeyError:
        return None
    return found if isinstance(found, pygit2.Tree) else None


def _same(old: pygit2.Tree | None, new: pygit2.Tree | None) -> bool:
    return (old.id if old is not None else None) == (new.id if new is not None else None)


def _no_keys(value: object) -> tuple[str, ...]:
    return ()


def _record_units(rows: tuple[CoverageRow, ...]) -> set[str]:
    return {row.unit_id for row in rows}


def _memory_id(path: str, blob: str) -> str | None:
    return path.rsplit("/", 1)[1][: -len(".md")] if path.endswith(".md") else None


def _one_key(memory_id: str) -> tuple[str]:
    return (memory_id,)


def _first_rows(records: dict[str, tuple[CoverageRow, ...]]) -> list[CoverageRow]:
    """One row of each of these records (each names its record)."""
    return [rows[0] for rows in records.values() if rows]
