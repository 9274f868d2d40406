"""Rows of the index: memories, captured messages, retired memories, problems.

Every function runs inside the caller's transaction. Text goes through
:func:`memgit.tokens.index_text` (CJK segmentation) on its way in.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from memgit.derived.database import FTS_COLUMNS
from memgit.memory import Memory
from memgit.tokens import index_text
from memgit.turn import Turn

# Context given to a message from the messages before and after it, in characters.
CONTEXT_CHARS = 600


def _memory_values(memory: Memory) -> tuple[object, ...]:
    return (
        memory.path,
        memory.blob,
        memory.id,
        memory.type,
        memory.scope,
        memory.title,
        json.dumps(list(memory.tags), ensure_ascii=False),
        memory.created,
        memory.updated,
        json.dumps(
            [[s.capture, s.unit, s.quote, s.blob] for s in memory.sources], ensure_ascii=False
        ),
        json.dumps([[s.id, s.commit] for s in memory.supersedes]),
    )


def _fts_values(memory: Memory) -> tuple[str, ...]:
    return (
        index_text(memory.title),
        index_text(" ".join(memory.tags)),
        index_text(memory.body),
        memory.type,
        memory.scope.replace("/", " "),
        memory.id,
    )


def delete_memory(conn: sqlite3.Connection, path: str) -> None:
    row = conn.execute("SELECT rowid FROM memory WHERE path = ?", (path,)).fetchone()
    if row is None:
        return
    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", row)
    conn.execute("DELETE FROM supersession WHERE retired = 0 AND new_rowid = ?", row)
    conn.execute("DELETE FROM memory WHERE rowid = ?", row)


class BatchWriter:
    """Inserts memories and messages in batches (executemany), with rowids it assigns.

    Used inside one write (or scratch) transaction; no other writer can add rows
    meanwhile, so the next free rowid is known. Call :meth:`flush` at the end.
    """

    def __init__(self, conn: sqlite3.Connection, size: int = 1000) -> None:
        self.conn = conn
        self.size = size
        self.memories: list[Memory] = []
        self.turns: list[tuple[Turn, str, str, str | None]] = []
        self.next_memory = _next_rowid(conn, "memory")
        self.next_message = _next_rowid(conn, "message")

    def memory(self, memory: Memory) -> None:
        self.memories.append(memory)
        if len(self.memories) >= self.size:
            self.flush()

    def turn(
        self,
        turn: Turn,
        previous: str = "",
        following: str = "",
        *,
        archived: str | None = None,
    ) -> None:
        """One row per message, with its neighbours as context: ``previous`` is the
        text before the first message (the previous turn's last), ``following`` the
        text after the last (the next turn's first). ``archived`` is the commit that
        removed the capture from the tree, for a turn that is no longer in it."""
        self.turns.append((turn, previous, following, archived))
        if len(self.turns) >= self.size:
            self.flush()

    def flush(self) -> None:
        if self.memories:
            rows, texts, links = [], [], []
            for memory in self.memories:
                rowid, self.next_memory = self.next_memory, self.next_memory + 1
                rows.append((rowid, *_memory_values(memory)))
                texts.append((rowid, *_fts_values(memory)))
                links += [(old.id, rowid) for old in memory.supersedes]
            self.conn.executemany(
                "INSERT INTO memory (rowid, path, blob, id, type, scope, title, tags, created, "
                "updated, sources, supersedes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
            self.conn.executemany(
                f"INSERT INTO memory_fts (rowid, {FTS_COLUMNS}) VALUES (?,?,?,?,?,?,?)", texts
            )
            self.conn.executemany("INSERT INTO supersession VALUES (?, ?, 0)", links)
            self.memories.clear()
        if self.turns:
            rows, texts = [], []
            for turn, previous, following, archived in self.turns:
                contents = [message.content for message in turn.messages]
                for index, message in enumerate(turn.messages):
                    before = contents[index - 1] if index > 0 else previous
                    after = contents[index + 1] if index + 1 < len(contents) else following
                    rowid, self.next_message = self.next_message, self.next_message + 1
                    rows.append(
                        (
                            rowid,
                            turn.path,
                            index,
                            turn.blob,
                            turn.source,
                            turn.session,
                            turn.seq,
                            turn.thread,
                            turn.timestamp,
                            message.role,
                            message.name,
                            archived,
                        )
                    )
                    texts.append(
                        (
                            rowid,
                            index_text(message.content),
                            index_text(message.name or ""),
                            index_text(_tail(before)),
                            index_text(_head(after)),
                        )
                    )
            self.conn.executemany(
                "INSERT INTO message (rowid, path, idx, blob, source, session, seq, thread, "
                "timestamp, role, name, archived) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
            self.conn.executemany(
                "INSERT INTO message_fts (rowid, content, name, before, after) VALUES (?,?,?,?,?)",
                texts,
            )
            self.turns.clear()


def _next_rowid(conn: sqlite3.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT coalesce(max(rowid), 0) + 1 FROM {table}").fetchone()[0])


def _tail(text: str) -> str:
    return text[-CONTEXT_CHARS:] if CONTEXT_CHARS else ""


def _head(text: str) -> str:
    return text[:CONTEXT_CHARS] if CONTEXT_CHARS else ""


def delete_turn(conn: sqlite3.Connection, path: str) -> None:
    rows = conn.execute("SELECT rowid FROM message WHERE path = ?", (path,)).fetchall()
    if not rows:
        return
    conn.executemany("DELETE FROM message_fts WHERE rowid = ?", rows)
    conn.execute("DELETE FROM message WHERE path = ?", (path,))


def insert_retired(conn: sqlite3.Connection, ref: str, target: str, memory: Memory) -> None:
    values = _memory_values(memory)
    cursor = conn.execute(
        "INSERT INTO retired (ref, target, path, blob, id, type, scope, title, tags, created, "
        "updated, sources, supersedes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (ref, target, *values),
    )
    rowid = cursor.lastrowid
    conn.execute(
        f"INSERT INTO retired_fts (rowid, {FTS_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
        (rowid, *_fts_values(memory)),
    )
    conn.executemany(
        "INSERT INTO supersession VALUES (?, ?, 1)", [(old.id, rowid) for old in memory.supersedes]
    )


def delete_retired(conn: sqlite3.Connection, ref: str) -> None:
    row = conn.execute("SELECT rowid FROM retired WHERE ref = ?", (ref,)).fetchone()
    if row is None:
        return
    conn.execute("DELETE FROM retired_fts WHERE rowid = ?", row)
    conn.execute("DELETE FROM supersession WHERE retired = 1 AND new_rowid = ?", row)
    conn.execute("DELETE FROM retired WHERE rowid = ?", row)


def set_problem(
    conn: sqlite3.Connection, path: str, blob: str | None, code: str, message: str
) -> None:
    conn.execute("INSERT OR REPLACE INTO problem VALUES (?,?,?,?)", (path, blob, code, message))


def clear_problems(conn: sqlite3.Connection, paths: Iterable[str]) -> None:
    conn.executemany("DELETE FROM problem WHERE path = ?", [(path,) for path in paths])


def clear_retired(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM retired")
    conn.execute("DELETE FROM retired_fts")
    conn.execute("DELETE FROM supersession WHERE retired = 1")
