"""The memories of one tree, looked up by id, and which ids are retired.

A memory lives at ``memories/<scope>/<id[:2]>/<id>.md`` with its scope not
known in advance, so a lookup probes ``<id[:2]>/<id>.md`` in every scope folder
rather than listing every memory (100,000 memories mean 1,000 shard folders,
which a lookup never opens unless the first pass found nothing).
"""

from __future__ import annotations

from collections.abc import Iterable

import pygit2

from memgit.constants import MEMORIES_DIR, REFS_RETIRED
from memgit.errors import MemgitError
from memgit.memory import Memory, read_memory
from memgit.store.tree import read_blob, read_tree

_BLOB_MODES = {pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE}


class Catalog:
    """Looks memories of ``tree`` up by id; remembers what it found."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree | None) -> None:
        self.repo = repo
        self.tree = tree
        self._found: dict[str, tuple[str, pygit2.Oid] | None] = {}

    def find(self, memory_id: str) -> tuple[str, pygit2.Oid] | None:
        """(path, blob id) of the memory, or None when the tree has no such memory."""
        if memory_id not in self._found:
            self._found[memory_id] = (
                find_memory_file(self.repo, self.tree, memory_id) if self.tree else None
            )
        return self._found[memory_id]

    def load(self, memory_id: str) -> Memory | None:
        found = self.find(memory_id)
        if found is None:
            return None
        path, blob = found
        return read_memory(read_blob(self.repo, blob), path=path)

    def text(self, memory_id: str) -> str | None:
        """The memory's title and body (the Gate's ``target_text``); None when it is not
        in the tree or does not parse."""
        try:
            memory = self.load(memory_id)
        except MemgitError:
            return None
        return f"{memory.title}\n{memory.body}" if memory is not None else None

    def is_retired(self, memory_id: str) -> bool:
        return f"{REFS_RETIRED}{memory_id}" in self.repo.references

    def state(self, memory_id: str) -> str:
        """ "active", "retired" or "unknown", as the Gate contract's target check needs."""
        try:
            if self.find(memory_id) is not None:
                return "active"
        except MemgitError:
            return "unknown"
        return "retired" if self.is_retired(memory_id) else "unknown"


def find_memory_file(
    repo: pygit2.Repository, tree: pygit2.Tree, memory_id: str, scopes: Iterable[str] = ()
) -> tuple[str, pygit2.Oid] | None:
    """Where memory ``memory_id`` lives in ``tree``: known scopes first, then a walk.

    The walk looks for ``<shard>/<id>.md`` in every scope folder and does not
    open shard folders (two-character names) looking for sub-scopes unless the
    first pass found nothing.
    """
    leaf = f"{memory_id[:2]}/{memory_id}.md"
    for scope in scopes:
        path = f"{MEMORIES_DIR}/{scope}/{leaf}"
        try:
            entry = tree[path]
        except KeyError:
            continue
        if entry.filemode in _BLOB_MODES:
            return path, entry.id
    root = _memories(repo, tree)
    if root is None:
        return None
    for skip_shards in (True, False):
        stack: list[tuple[pygit2.Tree, str]] = [(root, MEMORIES_DIR)]
        while stack:
            folder, prefix = stack.pop()
            try:
                found: pygit2.Object | None = folder[leaf]
            except KeyError:
                found = None
            if found is not None and found.filemode in _BLOB_MODES:
                return f"{prefix}/{leaf}", found.id
            for child in folder:
                if child.filemode != pygit2.enums.FileMode.TREE:
                    continue
                if skip_shards and len(child.name or "") == 2:
                    continue
                stack.append((read_tree(repo, child.id), f"{prefix}/{child.name}"))
    return None


def _memories(repo: pygit2.Repository, tree: pygit2.Tree) -> pygit2.Tree | None:
    try:
        entry = tree[MEMORIES_DIR]
    except KeyError:
        return None
    if entry.filemode != pygit2.enums.FileMode.TREE:
        return None
    found = repo[entry.id]
    return found if isinstance(found, pygit2.Tree) else None
