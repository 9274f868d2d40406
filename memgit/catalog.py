"""The active memories of one tree, by id, and which ids are retired."""

from __future__ import annotations

from functools import cached_property

import pygit2

from memgit.constants import MEMORIES_DIR, REFS_RETIRED
from memgit.memory import Memory, parse_memory
from memgit.pending import iter_blobs


class Catalog:
    """Looks memories up by id in ``tree``; walks ``memories/`` once, on first use."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree | None) -> None:
        self.repo = repo
        self.tree = tree

    @cached_property
    def paths(self) -> dict[str, tuple[str, str]]:
        """memory id -> (path, blob id)."""
        if self.tree is None:
            return {}
        found = {}
        for path, blob in iter_blobs(self.repo, self.tree, MEMORIES_DIR):
            if path.endswith(".md"):
                found[path.rsplit("/", 1)[1][: -len(".md")]] = (path, blob)
        return found

    def load(self, memory_id: str) -> Memory | None:
        entry = self.paths.get(memory_id)
        if entry is None:
            return None
        path, blob = entry
        return parse_memory(self.repo[pygit2.Oid(hex=blob)].data, path=path)

    def is_retired(self, memory_id: str) -> bool:
        return f"{REFS_RETIRED}{memory_id}" in self.repo.references

    def state(self, memory_id: str) -> str:
        """ "active", "retired" or "unknown", as the Gate contract's target check needs."""
        if memory_id in self.paths:
            return "active"
        return "retired" if self.is_retired(memory_id) else "unknown"
