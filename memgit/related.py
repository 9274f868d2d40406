"""Existing memories related to a batch of units, given to the Gate as context.

Seeing them lets a backend choose UPDATE or SUPERSEDE over a near-duplicate
CREATE. They are found by the recall index (one BM25 query over the units'
words, memories only), then read from the tree the run builds on.
"""

from __future__ import annotations

from collections.abc import Sequence

import pygit2

from memgit.errors import InvalidInputError, MemgitError
from memgit.evidence import EvidenceUnit
from memgit.index.lexical import LexicalIndex, Snapshot
from memgit.index.search import MemoryRow, search_memories
from memgit.index.tokens import parse_query
from memgit.memory import Memory, parse_memory
from memgit.store.tree import blob_at


def related_memories(
    index: LexicalIndex,
    tree: pygit2.Tree | None,
    units: Sequence[EvidenceUnit],
    *,
    limit: int,
) -> tuple[Memory, ...]:
    """Up to ``limit`` active memories of ``tree`` that best match the units' words."""
    text = " ".join(unit.text for unit in units)
    if limit <= 0 or tree is None or not text.strip():
        return ()
    try:
        match = parse_query(text).fts()
    except InvalidInputError:
        return ()  # no searchable words in the units

    def search(snap: Snapshot) -> list[MemoryRow]:
        return search_memories(snap.conn, match, limit=limit)

    # Only the memories are needed, as committed: no turns, no trace, no overlay.
    found = []
    for hit in index.read(search, use_overlay=False):
        blob = blob_at(tree, hit.path)
        if blob is None:
            continue  # the index is stamped with another tree than the run's
        try:
            found.append(parse_memory(index.repo[blob].data, path=hit.path))
        except MemgitError:
            continue  # a broken file is memgit-schemas' business, not context
    return tuple(found)
