"""Existing memories related to a batch of units, given to the Gate as context.

Seeing them lets a backend choose UPDATE or SUPERSEDE over a near-duplicate
CREATE. They are found by the recall index (memories sharing the units' most
distinctive words, see :mod:`memgit.derived.similar`) and read from the tree the
run builds on through the index's fast reader: they are context for the
backend, not input memgit trusts (the hooks check every file that changes).
"""

from __future__ import annotations

from collections.abc import Sequence

import pygit2

from memgit.derived.lexical import LexicalIndex, Snapshot
from memgit.derived.search import MemoryRow
from memgit.derived.similar import similar_memories
from memgit.errors import MemgitError
from memgit.evidence import EvidenceUnit
from memgit.memory import Memory, read_memory
from memgit.store.tree import blob_at, read_blob


def related_memories(
    index: LexicalIndex,
    tree: pygit2.Tree | None,
    units: Sequence[EvidenceUnit],
    *,
    limit: int,
    as_of: pygit2.Commit | None = None,
) -> tuple[Memory, ...]:
    """Up to ``limit`` active memories of ``tree`` that best match the units' words;
    ``as_of``, the commit holding ``tree``, searches the index as that commit was (a
    replay asks what the run was asked, before later runs retired or added memories)."""
    text = " ".join(unit.text for unit in units)
    if limit <= 0 or tree is None or not text.strip():
        return ()

    def search(snap: Snapshot) -> tuple[str | None, list[MemoryRow]]:
        return snap.state.tree, similar_memories(snap.conn, text, limit=limit)

    # Only the memories are needed, as committed: no turns, no trace, no overlay.
    stamped, hits = index.read(search, as_of=as_of, use_overlay=False)
    found = []
    for memory in (hit.memory for hit in hits):
        # Stamped with the run's tree, the index names each file's blob.
        blob = memory.blob if stamped == str(tree.id) else blob_at(tree, memory.path)
        if blob is None:
            continue  # the index is stamped with another tree than the run's
        try:
            found.append(
                read_memory(
                    read_blob(index.repo, blob), path=memory.path, blob=str(blob), check=False
                )
            )
        except MemgitError:
            continue  # a broken file is memgit-schemas' business, not context
    return tuple(found)
