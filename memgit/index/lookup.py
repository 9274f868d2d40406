"""Memory ids to paths from the recall index, when it reflects the tree in question.

Finding every path of an id means listing every memory of a tree (a third of
a second at 100,000 memories). The index already holds HEAD's memories by id,
so the checks that run on each commit ask it first, and walk only when it is
missing or stamped with a tree the repository no longer has.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pygit2

from memgit.constants import CACHE_DIR, INDEX_FILE, MEMORIES_DIR
from memgit.store.tree import Entry, diff_trees


def indexed_memory_paths(repo: pygit2.Repository, tree_id: str, memory_id: str) -> list[str] | None:
    """Paths of ``memory_id`` in tree ``tree_id``, or None when the index cannot say.

    An index stamped with another tree (commits made with git since memgit last
    refreshed it) still answers: its paths, corrected by the memory files that
    differ between the two trees, found by a diff that skips equal folders. A
    changed file holds the id its name says, as for a commit's own changes."""
    path = Path(repo.path) / CACHE_DIR / INDEX_FILE
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            stamp = conn.execute("SELECT value FROM meta WHERE key = 'tree'").fetchone()
            if stamp is None:
                return None
            rows = conn.execute("SELECT path FROM memory WHERE id = ?", (memory_id,))
            found = [str(row[0]) for row in rows]
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    if stamp[0] == tree_id:
        return found
    changed = _memories_changed(repo, str(stamp[0]), tree_id)
    if changed is None:
        return None
    leaf = f"/{memory_id}.md"
    kept = [p for p in found if p not in changed]
    added = [p for p, entry in changed.items() if entry is not None and p.endswith(leaf)]
    return sorted({*kept, *added})


# The checks of one commit ask about several ids against the same two trees.
_last_diff: dict[tuple[str, str, str], dict[str, Entry | None] | None] = {}


def _memories_changed(
    repo: pygit2.Repository, old_id: str, new_id: str
) -> dict[str, Entry | None] | None:
    """The files under memories/ that differ from tree ``old_id`` to ``new_id`` (None
    if either tree is missing)."""
    key = (repo.path, old_id, new_id)
    if key not in _last_diff:
        _last_diff.clear()
        _last_diff[key] = _diff_memories(repo, old_id, new_id)
    return _last_diff[key]


def _diff_memories(
    repo: pygit2.Repository, old_id: str, new_id: str
) -> dict[str, Entry | None] | None:
    trees = []
    for tree_id in (old_id, new_id):
        try:
            found = repo.get(tree_id)
        except ValueError:
            return None
        if not isinstance(found, pygit2.Tree):
            return None
        try:
            folder = repo[found[MEMORIES_DIR].id]
        except KeyError:
            folder = None
        trees.append(folder if isinstance(folder, pygit2.Tree) else None)
    changes = diff_trees(repo, trees[0], trees[1])
    return {f"{MEMORIES_DIR}/{name}": entry for name, entry in changes.items()}
