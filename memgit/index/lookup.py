"""Memory ids to paths from the recall index, when it reflects the tree in question.

Finding every path of an id means listing every memory of a tree (a third of
a second at 100,000 memories). The index already holds HEAD's memories by id,
so the checks that run on each commit ask it first and walk only when it is
missing or stamped with another tree.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pygit2

from memgit.constants import CACHE_DIR, INDEX_FILE


def indexed_memory_paths(repo: pygit2.Repository, tree_id: str, memory_id: str) -> list[str] | None:
    """Paths of ``memory_id`` in tree ``tree_id``, or None when the index cannot say."""
    path = Path(repo.path) / CACHE_DIR / INDEX_FILE
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            stamp = conn.execute("SELECT value FROM meta WHERE key = 'tree'").fetchone()
            if stamp is None or stamp[0] != tree_id:
                return None
            rows = conn.execute("SELECT path FROM memory WHERE id = ?", (memory_id,))
            return [str(row[0]) for row in rows]
        finally:
            conn.close()
    except sqlite3.Error:
        return None
