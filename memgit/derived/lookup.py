"""The derived store's answers to the processing state's and the checks' questions.

The store holds the rows of the tree it is stamped with (memories by id, type
and scope; the inbox's captures and the run records' coverage rows). A
question about another tree (the tip a run commits on, the parent of the tree
a check looks at) is answered from those rows, corrected by the files that
differ between the two trees, found by a diff that skips equal folders. See
:mod:`memgit.state.lookup` for the questions and the tree walk that answers
them without the store.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING

import pygit2

from memgit.constants import INBOX_DIR, MEMORIES_DIR, RUNS_DIR
from memgit.derived import state_rows as table
from memgit.errors import InvalidInputError
from memgit.layout import is_capture_path
from memgit.runrecord import read_coverage
from memgit.state.lookup import Kept, MemoryUse, TreeWalk, memories_in
from memgit.state.rows import CoverageRow, Inbox, capture_row, run_time
from memgit.store.tree import blob_at, diff_trees, read_blob

if TYPE_CHECKING:
    from memgit.derived.lexical import LexicalIndex

Changes = dict[str, str | None]  # path -> its blob id in the tree asked about, None: gone


class IndexLookup:
    """Answers from the derived store, corrected by the files that differ between its
    stamp and the tree asked about. Made by memgit's commands, which may write the
    store: when it has no usable stamp, it is refreshed first (once, when made)."""

    def __init__(self, index: LexicalIndex) -> None:
        self.repo = index.repo
        self.index = index
        self.kept = Kept()
        self._walk = TreeWalk(index.repo)
        with self._read() as (_, stamp):
            usable = stamp is not None
        if not usable:
            index.refresh()

    def inbox(self, tree: pygit2.Tree) -> Inbox:
        return self.kept.get("inbox", tree, lambda: self._inbox(tree))

    def _inbox(self, tree: pygit2.Tree) -> Inbox:
        with self._read() as (conn, stamp):
            inbox = self._changes(stamp, tree, INBOX_DIR)
            runs = self._changes(stamp, tree, RUNS_DIR)
            if inbox is None or runs is None:
                return self._walk.inbox(tree)
            _raise_problems(conn, tree, set(inbox) | set(runs), (INBOX_DIR, RUNS_DIR))
            captures = table.open_captures(conn)
            again: set[str] = set()
            if inbox or runs:
                # A capture that changed, or whose units a changed record decides, is
                # counted again from its rows; the others are as the table has them.
                changed_rows = self._changed_rows(runs)
                units = set(table.record_units(conn, runs)) | {r.unit_id for r in changed_rows}
                again = table.captures_of_units(conn, units) | set(inbox)
                captures = [c for c in captures if c.path not in again]
                captures += [
                    c for c in table.captures_of(conn, again - set(inbox)) if c.path not in inbox
                ]
                for path, blob in inbox.items():
                    if blob is not None and is_capture_path(path):
                        captures.append(capture_row(path, blob, read_blob(self.repo, blob)))
            done, processed = table.settled(conn, excluding=again)
            wanted = {unit_id for row in captures for unit_id in row.supporting}
            coverage = self._coverage(conn, wanted, runs)
            if runs:
                coverage += [row for row in changed_rows if row.unit_id in wanted]
        return Inbox(sorted(captures, key=lambda row: row.path), coverage, done, processed)

    def deciding(self, tree: pygit2.Tree, unit_ids: Collection[str]) -> set[tuple[str, str]]:
        with self._read() as (conn, stamp):
            runs = self._changes(stamp, tree, RUNS_DIR)
            if runs is None:
                return self._walk.deciding(tree, unit_ids)
            _raise_problems(conn, tree, set(runs), (RUNS_DIR,))
            wanted = set(unit_ids)
            rows = self._coverage(conn, wanted, runs)
            rows += [row for row in self._changed_rows(runs) if row.unit_id in wanted]
        return {(row.record, row.blob) for row in rows}

    def highest_seq(self, folder: str) -> int | None:
        """The highest seq of the captures the store holds in a session's inbox folder
        (``inbox/<source>/<shard>/<session>``): those of its tree and those retention or a
        person removed, which recall keeps as archived. Capture numbers past it, so a
        removed capture's path and unit ids are never given to another turn."""
        with self._read() as (conn, _):
            row = conn.execute(
                "SELECT MAX(seq) FROM message WHERE path >= ? AND path < ?",
                (f"{folder}/", f"{folder}0"),  # "0" is the character after "/"
            ).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else None

    def memory_paths(self, tree: pygit2.Tree, memory_id: str) -> list[str]:
        with self._read() as (conn, stamp):
            changed = self._changes(stamp, tree, MEMORIES_DIR)
            if changed is None:
                return self._walk.memory_paths(tree, memory_id)
            found = [
                str(path)
                for (path,) in conn.execute("SELECT path FROM memory WHERE id = ?", (memory_id,))
            ]
        leaf = f"/{memory_id}.md"
        kept = [path for path in found if path not in changed]
        added = [p for p, blob in changed.items() if blob is not None and p.endswith(leaf)]
        return sorted({*kept, *added})

    def memories_using(
        self, tree: pygit2.Tree, *, types: Collection[str], scopes: Collection[str]
    ) -> list[MemoryUse]:
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
        with self._read() as (conn, stamp):
            changed = self._changes(stamp, tree, MEMORIES_DIR)
            if changed is None:
                return self._walk.memories_using(tree, types=types, scopes=scopes)
            rows = conn.execute(
                f"SELECT path, type, scope FROM memory WHERE {' OR '.join(conditions)}", params
            ).fetchall()
        kept = [(str(p), str(t), str(s)) for p, t, s in rows if p not in changed]
        files = [(path, blob) for path, blob in changed.items() if blob is not None]
        return sorted(kept + memories_in(self.repo, files, types=types, scopes=scopes))

    def _coverage(
        self, conn: sqlite3.Connection, units: Collection[str], runs: Changes
    ) -> list[CoverageRow]:
        """The table's rows for ``units``, but for the records that differ."""
        return [row for row in table.coverage_of(conn, units) if row.record not in runs]

    def _changed_rows(self, runs: Changes) -> list[CoverageRow]:
        """Every row of the records that differ, read from the tree."""
        rows = []
        for path, blob in sorted(runs.items()):
            if blob is None or not path.endswith(".json"):
                continue
            when = run_time(self.repo, path)
            for unit_id, decision in read_coverage(read_blob(self.repo, blob), path=path):
                rows.append(CoverageRow(unit_id, decision, path, blob, when))
        return rows

    def _changes(self, stamp: str | None, tree: pygit2.Tree, top: str) -> Changes | None:
        """The files under ``top`` that differ from the stamped tree to ``tree`` (None when
        the stamped tree is not in the repository)."""
        if stamp is None:
            return None
        if stamp == str(tree.id):
            return {}
        try:
            old = self.repo.get(stamp)
        except ValueError:
            return None
        if not isinstance(old, pygit2.Tree):
            return None
        key = f"changes:{stamp}:{top}"
        return self.kept.get(key, tree, lambda: _diff_folder(self.repo, old, tree, top))

    @contextlib.contextmanager
    def _read(self) -> Iterator[tuple[sqlite3.Connection, str | None]]:
        """The store's connection and stamp, in one read transaction (one snapshot)."""
        conn = self.index.connection()
        opened = not conn.in_transaction
        if opened:
            conn.execute("BEGIN")
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'tree'").fetchone()
            yield conn, str(row[0]) if row is not None else None
        finally:
            if opened:
                conn.execute("COMMIT")


def _diff_folder(repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree, top: str) -> Changes:
    folders = []
    for tree in (old, new):
        try:
            found = repo[tree[top].id]
        except KeyError:
            found = None
        folders.append(found if isinstance(found, pygit2.Tree) else None)
    changes: Changes = {}
    for name, entry in diff_trees(repo, folders[0], folders[1]).items():
        is_file = entry is not None and entry[1] in (0o100644, 0o100755)
        changes[f"{top}/{name}"] = str(entry[0]) if entry is not None and is_file else None
    return changes


def _raise_problems(
    conn: sqlite3.Connection, tree: pygit2.Tree, changed: set[str], tops: tuple[str, ...]
) -> None:
    """A capture or run record of ``tree`` the refresh could not read is an error here,
    as the tree walk finds it (a changed one is read again by the caller)."""
    for path, blob, code, message in table.problems_under(conn, *tops):
        if path not in changed and str(blob_at(tree, path)) == blob:
            raise InvalidInputError(message, code=code, path=path)
