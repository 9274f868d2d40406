"""What the checks ask of a tree's memories, answered from the recall index.

Finding every path of an id, or every memory of a type or scope, means reading
every memory of a tree (a third of a second or more at 100,000 memories). The
index already holds the memories of the tree it is stamped with, by id, type
and scope, so the checks that run on each commit ask it first, correct its
answer by the memory files that differ between that tree and the one they
check, and walk only when it is missing or its tree is gone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable
from pathlib import Path

import pygit2

from memgit.constants import CACHE_DIR, INDEX_FILE, MEMORIES_DIR
from memgit.errors import MemgitError
from memgit.index.documents import read_memory
from memgit.store.tree import Entry, diff_trees, read_blob


def indexed_memory_paths(repo: pygit2.Repository, tree_id: str, memory_id: str) -> list[str] | None:
    """Paths of ``memory_id`` in tree ``tree_id``, or None when the index cannot say.

    An index stamped with another tree (commits made with git since memgit last
    refreshed it) still answers: its paths, corrected by the memory files that
    differ between the two trees, found by a diff that skips equal folders. A
    changed file holds the id its name says, as for a commit's own changes."""
    answer = _stamped_rows(repo, "SELECT path FROM memory WHERE id = ?", [memory_id])
    if answer is None:
        return None
    stamp, rows = answer
    found = [str(row[0]) for row in rows]
    if stamp == tree_id:
        return found
    changed = _memories_changed(repo, stamp, tree_id)
    if changed is None:
        return None
    leaf = f"/{memory_id}.md"
    kept = [p for p in found if p not in changed]
    added = [p for p, entry in changed.items() if entry is not None and p.endswith(leaf)]
    return sorted({*kept, *added})


def indexed_memories_using(
    repo: pygit2.Repository, tree_id: str, *, types: Collection[str], scopes: Collection[str]
) -> list[tuple[str, str, str]] | None:
    """(path, type, scope) of each memory of tree ``tree_id`` whose type is one of
    ``types`` or whose scope starts with one of ``scopes``; None when the index cannot
    say. A stale index is corrected as for ids; changed files are read (a broken one
    is left to memgit-schemas)."""
    conditions: list[str] = []
    params: list[object] = []
    if types:
        conditions.append(f"type IN ({','.join('?' * len(types))})")
        params += list(types)
    for scope in scopes:
        conditions.append("(scope = ? OR substr(scope, 1, ?) = ?)")
        params += [scope, len(scope) + 1, f"{scope}/"]
    if not conditions:
        return []
    sql = f"SELECT path, type, scope FROM memory WHERE {' OR '.join(conditions)}"
    answer = _stamped_rows(repo, sql, params)
    if answer is None:
        return None
    stamp, rows = answer
    found = [(str(path), str(kind), str(scope)) for path, kind, scope in rows]
    if stamp == tree_id:
        return sorted(found)
    changed = _memories_changed(repo, stamp, tree_id)
    if changed is None:
        return None
    kept = [row for row in found if row[0] not in changed]
    files = ((path, str(entry[0])) for path, entry in changed.items() if entry is not None)
    return sorted(kept + memories_using(repo, files, types=types, scopes=scopes))


def memories_using(
    repo: pygit2.Repository,
    files: Iterable[tuple[str, str]],
    *,
    types: Collection[str],
    scopes: Collection[str],
) -> list[tuple[str, str, str]]:
    """(path, type, scope) of each memory file of ``files`` ((path, blob id) pairs)
    whose type is one of ``types`` or whose top-level scope is one of ``scopes``,
    read from the blobs (a broken file is left to memgit-schemas)."""
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
    return found


def _stamped_rows(
    repo: pygit2.Repository, sql: str, params: list[object]
) -> tuple[str, list[tuple[object, ...]]] | None:
    """The tree the index is stamped with, and the rows of ``sql`` (None: no index)."""
    path = Path(repo.path) / CACHE_DIR / INDEX_FILE
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            stamp = conn.execute("SELECT value FROM meta WHERE key = 'tree'").fetchone()
            if stamp is None:
                return None
            return str(stamp[0]), conn.execute(sql, params).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return None


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
