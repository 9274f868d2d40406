"""Contradictions: two active memories that each replace the same earlier memory.

When two clones (or two runs on two branches) change their mind about one memory in two
different ways ("sessions live in Memcached now", "sessions live in Postgres now"), each
successor retires the same memory, and a merge keeps both: one question, two current
answers. Nothing is wrong with either commit, so no check refuses it; it is a decision for
a person. This module finds them in a tree, for ``memgit verify`` (a warning),
``memgit sync`` (a report) and ``memgit review`` (an open item to resolve).

A contradiction is named by the memory both replace: its id is the item's id in review.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import pygit2

from memgit.constants import MEMORIES_DIR
from memgit.errors import MemgitError
from memgit.jsonio import json_as
from memgit.memory import read_memory
from memgit.store.tree import iter_blobs, read_blob

# Only a file that names a replaced memory can be part of a contradiction: a byte search
# skips the others without parsing them.
_SUPERSEDES_KEY = b"\nsupersedes:"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rival:
    """One of the active memories that replace the same one."""

    id: str
    title: str
    path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Contradiction:
    """Active memories (two or more, sorted by id) that each replace ``replaced``."""

    replaced: str = field(metadata=json_as(before=("id",)))
    rivals: tuple[Rival, ...]

    @property
    def id(self) -> str:
        return self.replaced

    def describe(self) -> str:
        names = ", ".join(f"{rival.id} ({rival.title})" for rival in self.rivals)
        return f"{len(self.rivals)} active memories replace {self.replaced}: {names}"


def find_contradictions(
    repo: pygit2.Repository, tree: pygit2.Tree, *, only: Iterable[str] | None = None
) -> list[Contradiction]:
    """The contradictions ``tree`` holds, sorted by the id they replace; with ``only``,
    those about these replaced ids alone. A memory file that cannot be read takes part in
    none (the schema check reports it)."""
    wanted = set(only) if only is not None else None
    by_replaced: dict[str, dict[str, Rival]] = defaultdict(dict)
    for path, blob in iter_blobs(repo, tree, MEMORIES_DIR):
        if not path.endswith(".md"):
            continue
        data = read_blob(repo, blob)
        if _SUPERSEDES_KEY not in data:
            continue
        try:
            memory = read_memory(data, path=path, blob=blob, check=False)
        except MemgitError:
            continue
        for old in memory.supersedes:
            if wanted is None or old.id in wanted:
                by_replaced[old.id][memory.id] = Rival(id=memory.id, title=memory.title, path=path)
    return [
        Contradiction(replaced=replaced, rivals=tuple(rivals[key] for key in sorted(rivals)))
        for replaced, rivals in sorted(by_replaced.items())
        if len(rivals) > 1
    ]
