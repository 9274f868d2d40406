"""Existing memories related to a batch of units, given to the Gate as context.

Seeing them lets a backend choose UPDATE or SUPERSEDE over a near-duplicate
CREATE. They are found by the recall index (one BM25 query over the units'
words), then read from the tree the run builds on.
"""

from __future__ import annotations

from collections.abc import Sequence

import pygit2

from memgit.errors import InvalidInputError, MemgitError
from memgit.evidence import EvidenceUnit
from memgit.index.lexical import LexicalIndex
from memgit.memory import Memory, parse_memory
from memgit.recall import RecallOptions, recall
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
        pack = recall(index, text, RecallOptions(k=limit), use_overlay=False)
    except InvalidInputError:
        return ()  # no searchable words in the units
    found = []
    for hit in pack.memories:
        blob = blob_at(tree, hit.path) if hit.status == "active" else None
        if blob is None:
            continue  # retired, or only in the working tree
        try:
            found.append(parse_memory(index.repo[blob].data, path=hit.path))
        except MemgitError:
            continue  # a broken file is memgit-schemas' business, not context
    return tuple(found)
