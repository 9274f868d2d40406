"""Archived turns: captures that left the inbox, found in first-parent history.

Retention (and a person's ``git rm``) removes processed captures from the tree,
never from history, and recall keeps finding them: the index holds, for HEAD,
every capture path that a commit on HEAD's first-parent chain deleted from
``inbox/`` and that HEAD's tree does not hold again, with the blob it had and
the commit that removed it. That set is a function of HEAD's history alone, so
an index refreshed step by step equals one rebuilt from nothing:

- a capture that comes back (a revert, a reset to before its removal) is live;
- a reset or branch switch to a commit whose history never had a capture
  leaves it out, as it leaves out everything else that commit never had;
- a merge counts as removing what its first parent had and it lacks.

A walk looks at most :data:`MAX_HISTORY` first-parent commits; removals further
back are not found. Each step costs one subtree id comparison, plus a tree diff
of ``inbox/`` where that changed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import pygit2

from memgit.constants import INBOX_DIR
from memgit.layout import is_capture_path
from memgit.store.tree import diff_trees

MAX_HISTORY = 100_000
# A refresh walks back from the new HEAD at most this far looking for the commit
# the index reflects; past that (or off the chain) it walks the whole history.
FAST_FORWARD_LIMIT = 1_000
_PROGRESS_EVERY = 1_000

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Archived:
    """A capture that left the tree: its blob then, and the commit that removed it."""

    blob: str
    commit: str


def inbox_tree(repo: pygit2.Repository, tree: pygit2.Tree | None) -> pygit2.Tree | None:
    if tree is None:
        return None
    try:
        entry = tree[INBOX_DIR]
    except KeyError:
        return None
    found = repo[entry.id]
    return found if isinstance(found, pygit2.Tree) else None


def iter_removals(
    repo: pygit2.Repository,
    start: pygit2.Commit,
    *,
    limit: int = MAX_HISTORY,
    progress: Progress | None = None,
) -> Iterator[tuple[str, Archived]]:
    """(capture path, its removal) for each capture file a commit on ``start``'s
    first-parent chain deleted, newest first, looking at most ``limit`` commits."""
    commit: pygit2.Commit | None = start
    walked = 0
    while commit is not None and walked < limit:
        walked += 1
        if progress is not None and walked % _PROGRESS_EVERY == 0:
            progress("history", walked, 0)
        yield from removed_by(repo, commit)
        commit = commit.parents[0] if commit.parents else None


def removed_by(repo: pygit2.Repository, commit: pygit2.Commit) -> Iterator[tuple[str, Archived]]:
    """The capture files ``commit`` deleted from its first parent's tree, by path."""
    if not commit.parents:
        return
    before = inbox_tree(repo, commit.parents[0].tree)
    after = inbox_tree(repo, commit.tree)
    if before is None or (after is not None and after.id == before.id):
        return
    for path, entry in sorted(diff_trees(repo, before, after).items()):
        full = f"{INBOX_DIR}/{path}"
        if entry is None and is_capture_path(full):
            yield full, Archived(blob=str(before[path].id), commit=str(commit.id))


def commits_since(
    start: pygit2.Commit, stop: str, limit: int = FAST_FORWARD_LIMIT
) -> list[pygit2.Commit] | None:
    """The commits on ``start``'s first-parent chain after ``stop``, newest first;
    None when ``stop`` is not within ``limit`` commits of it."""
    found: list[pygit2.Commit] = []
    commit: pygit2.Commit | None = start
    while commit is not None and len(found) <= limit:
        if str(commit.id) == stop:
            return found
        found.append(commit)
        commit = commit.parents[0] if commit.parents else None
    return None


def archive_of(
    repo: pygit2.Repository,
    commit: pygit2.Commit | None,
    tree: pygit2.Tree | None,
    progress: Progress | None = None,
) -> dict[str, Archived]:
    """Every archived capture as of ``commit`` (whose tree is ``tree``)."""
    found: dict[str, Archived] = {}
    if commit is None:
        return found
    for path, removal in iter_removals(repo, commit, progress=progress):
        if path not in found and not _in_tree(tree, path):
            found[path] = removal
    return found


def archive_as_of(
    conn: sqlite3.Connection,
    repo: pygit2.Repository,
    head: pygit2.Commit | None,
    commit: pygit2.Commit,
    tree: pygit2.Tree | None,
) -> dict[str, Archived]:
    """The archived captures as of ``commit``. When it is on HEAD's first-parent chain
    (a date, ``HEAD~N``), HEAD's archive without the removals made after it: no tree is
    diffed. A capture removed, captured again and removed again after ``commit`` then
    counts as not yet captured. Any other commit walks its own history."""
    after = commits_since(head, str(commit.id), MAX_HISTORY) if head is not None else None
    if after is None:
        return archive_of(repo, commit, tree)
    later = {str(item.id) for item in after}
    return {
        path: entry
        for path, entry in load_archive(conn).items()
        if entry.commit not in later and not _in_tree(tree, path)
    }


def archive_changes(
    conn: sqlite3.Connection,
    repo: pygit2.Repository,
    old_commit: str | None,
    new_commit: pygit2.Commit | None,
    tree: pygit2.Tree | None,
    live: Mapping[str, pygit2.Oid | None],
) -> dict[str, Archived | None]:
    """What changes in the archive table when HEAD moves from ``old_commit`` to
    ``new_commit``: path -> its new entry, or None where it leaves the archive.
    ``live`` holds the paths the tree diff found, with their new blob (None: gone).

    Moving forward along first parents (the usual case: memgit's own commits) only
    adds the removals in between; anything else recomputes the set from history.
    """
    if new_commit is None:
        return dict.fromkeys(_paths(conn), None)
    between = commits_since(new_commit, old_commit) if old_commit is not None else None
    if between is None:
        wanted = archive_of(repo, new_commit, tree)
        have = load_archive(conn)
        changes: dict[str, Archived | None] = dict.fromkeys(set(have) - set(wanted))
        changes.update((path, entry) for path, entry in wanted.items() if have.get(path) != entry)
        return changes
    changes = {}
    for commit in between:
        for path, removal in removed_by(repo, commit):
            if path not in changes and not _in_tree(tree, path):
                changes[path] = removal
    returned = [path for path, blob in live.items() if blob is not None and is_capture_path(path)]
    for path in _archived_among(conn, returned):
        changes[path] = None
    return changes


def _in_tree(tree: pygit2.Tree | None, path: str) -> bool:
    if tree is None:
        return False
    try:
        tree[path]
    except KeyError:
        return False
    return True


def load_archive(conn: sqlite3.Connection) -> dict[str, Archived]:
    rows = conn.execute("SELECT path, blob, commit_id FROM archive").fetchall()
    return {path: Archived(blob=blob, commit=commit) for path, blob, commit in rows}


def _paths(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT path FROM archive")]


def _archived_among(conn: sqlite3.Connection, paths: list[str]) -> list[str]:
    found = []
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT path FROM archive WHERE path IN ({marks})"
        found += [row[0] for row in conn.execute(sql, chunk)]
    return found


def write_changes(conn: sqlite3.Connection, changes: Mapping[str, Archived | None]) -> None:
    """Apply ``changes`` to the archive table (inside the caller's transaction)."""
    conn.executemany(
        "DELETE FROM archive WHERE path = ?",
        [(path,) for path, entry in changes.items() if entry is None],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO archive VALUES (?, ?, ?)",
        [(path, e.blob, e.commit) for path, e in changes.items() if e is not None],
    )


class ArchiveLookup(Mapping[str, Archived]):
    """The archive table as a mapping, read row by row (a refresh touches few paths)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __getitem__(self, path: str) -> Archived:
        row = self.conn.execute(
            "SELECT blob, commit_id FROM archive WHERE path = ?", (path,)
        ).fetchone()
        if row is None:
            raise KeyError(path)
        return Archived(blob=row[0], commit=row[1])

    def __iter__(self) -> Iterator[str]:
        return iter(_paths(self.conn))

    def __len__(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM archive").fetchone()[0])
