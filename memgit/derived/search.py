"""Queries over the index: BM25-ranked memories, messages and retired memories.

Every MATCH expression comes from :meth:`memgit.tokens.Query.fts` (each
term a quoted FTS5 string), never from the user's text.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memgit.memory import Memory, Source, Supersedes
from memgit.tokens import quote_term
from memgit.turn import Message, Turn

# bm25() column weights. memory/retired: title, tags, body, type, scope, id.
# message: content, speaker/tool name, the message before it, the message after it.
# Message weights: the context weights (before, after) were chosen on LoCoMo
# conversations 0-4 and are reported on 5-9 (docs/performance.md); memory weights are
# a choice (title > tags > body) for want of a labelled benchmark of memories.
MEMORY_WEIGHTS = (4.0, 2.0, 1.0, 0.5, 0.5, 2.0)
# The memory columns that hold text (the rest are type, scope and id).
MEMORY_TEXT_COLUMNS = ("title", "tags", "body")
MESSAGE_WEIGHTS = (1.0, 0.5, 0.7, 0.4)
# Extra rows fetched past the limit so that ties in score are broken by path,
# the same way whatever order the rows were indexed in.
TIE_SLACK = 16

MEMORY_COLUMNS = (
    "m.rowid, m.path, m.blob, m.id, m.type, m.scope, m.title, m.tags, "
    "m.created, m.updated, m.sources, m.supersedes"
)
_MESSAGE_COLUMNS = (
    "m.rowid, m.path, m.idx, m.blob, m.source, m.session, m.seq, m.thread, "
    "m.timestamp, m.role, m.name, m.archived"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRow:
    """A memory read back from the index (no body), its rowid and BM25 score (higher is
    better); ``ref`` and ``target`` for a retired one: its ref and the commit it names."""

    rowid: int
    score: float
    memory: Memory
    blob: str  # the blob the index read it from (also memory.blob)
    ref: str | None = None
    target: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageRow:
    """One message read back from the index: its turn (no messages), its index in the
    capture file, the message (no content), and the commit that archived the capture."""

    rowid: int
    score: float
    turn: Turn
    blob: str  # the blob the index read it from (also turn.blob)
    index: int
    message: Message
    archived: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    """--scope (a scope and everything under it) and --type."""

    scope: str | None = None
    type: str | None = None

    @property
    def active(self) -> bool:
        return self.scope is not None or self.type is not None

    def sql(self) -> tuple[str, list[object]]:
        clauses: list[str] = []
        params: list[object] = []
        if self.scope is not None:
            scope = self.scope.strip("/")
            clauses.append("(m.scope = ? OR substr(m.scope, 1, ?) = ?)")
            params += [scope, len(scope) + 1, scope + "/"]
        if self.type is not None:
            clauses.append("m.type = ?")
            params.append(self.type)
        return " AND ".join(clauses) or "1", params

    def reasons(self, memory: Memory) -> list[str]:
        """Which of the filters leave ``memory`` out."""
        found = []
        if self.scope is not None:
            scope = self.scope.strip("/")
            if not (memory.scope == scope or memory.scope.startswith(scope + "/")):
                found.append("scope")
        if self.type is not None and memory.type != self.type:
            found.append("type")
        return found


def _bm25(table: str, weights: Sequence[float]) -> str:
    return f"bm25({table}_fts, {', '.join(str(w) for w in weights)})"


def memory_row(row: Sequence[Any], *, retired: bool = False) -> MemoryRow:
    memory = Memory(
        file=row[1],
        blob=row[2],
        id=row[3],
        type=row[4],
        scope=row[5],
        title=row[6],
        body="",
        tags=tuple(json.loads(row[7])),
        created=row[8],
        updated=row[9],
        sources=tuple(
            Source(capture=capture, unit=unit, quote=quote, blob=blob)
            for capture, unit, quote, blob in json.loads(row[10])
        ),
        supersedes=tuple(Supersedes(id=old, commit=commit) for old, commit in json.loads(row[11])),
    )
    return MemoryRow(
        rowid=row[0],
        score=-float(row[12]),
        memory=memory,
        blob=row[2],
        ref=row[13] if retired else None,
        target=row[14] if retired else None,
    )


def search_memories(
    conn: sqlite3.Connection,
    match: str,
    *,
    limit: int,
    offset: int = 0,
    filters: Filters | None = None,
    hidden: bool = False,
    weights: Sequence[float] | None = None,
) -> list[MemoryRow]:
    """Active memories matching ``match``, best first.

    With ``hidden``, the matches that ``filters`` leave out instead.
    """
    score = _bm25("memory", weights or MEMORY_WEIGHTS)
    if filters is None or not filters.active:
        sql = (
            f"SELECT {MEMORY_COLUMNS}, s.score FROM (SELECT rowid, {score} AS score "
            "FROM memory_fts WHERE memory_fts MATCH ? ORDER BY score LIMIT ?) s "
            "JOIN memory m ON m.rowid = s.rowid ORDER BY s.score, m.path LIMIT ? OFFSET ?"
        )
        params: list[object] = [match, offset + limit + TIE_SLACK, limit, offset]
    else:
        where, params = filters.sql()
        if hidden:
            where = f"NOT ({where})"
        sql = (
            f"SELECT {MEMORY_COLUMNS}, {score} AS score FROM memory_fts "
            "JOIN memory m ON m.rowid = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND {where} ORDER BY score, m.path LIMIT ? OFFSET ?"
        )
        params = [match, *params, limit, offset]
    return [memory_row(row) for row in conn.execute(sql, params)]


def count_hidden(conn: sqlite3.Connection, match: str, filters: Filters) -> int:
    where, params = filters.sql()
    sql = (
        "SELECT count(*) FROM memory_fts JOIN memory m ON m.rowid = memory_fts.rowid "
        f"WHERE memory_fts MATCH ? AND NOT ({where})"
    )
    return int(conn.execute(sql, [match, *params]).fetchone()[0])


def search_retired(
    conn: sqlite3.Connection, match: str, *, limit: int, weights: Sequence[float] | None = None
) -> list[MemoryRow]:
    score = _bm25("retired", weights or MEMORY_WEIGHTS)
    sql = (
        f"SELECT {MEMORY_COLUMNS}, s.score, m.ref, m.target FROM (SELECT rowid, {score} AS "
        "score FROM retired_fts WHERE retired_fts MATCH ? ORDER BY score LIMIT ?) s "
        "JOIN retired m ON m.rowid = s.rowid ORDER BY s.score, m.ref LIMIT ?"
    )
    params = (match, limit + TIE_SLACK, limit)
    return [memory_row(row, retired=True) for row in conn.execute(sql, params)]


def search_messages(
    conn: sqlite3.Connection,
    match: str,
    *,
    limit: int,
    offset: int = 0,
    exclude_thread: str | None = None,
    from_turn: int | None = None,
    weights: Sequence[float] | None = None,
) -> list[MessageRow]:
    score = _bm25("message", weights or MESSAGE_WEIGHTS)
    if exclude_thread is None:
        sql = (
            f"SELECT {_MESSAGE_COLUMNS}, s.score FROM (SELECT rowid, {score} AS score "
            "FROM message_fts WHERE message_fts MATCH ? ORDER BY score LIMIT ?) s "
            "JOIN message m ON m.rowid = s.rowid ORDER BY s.score, m.path, m.idx LIMIT ? OFFSET ?"
        )
        params: list[object] = [match, offset + limit + TIE_SLACK, limit, offset]
    else:
        sql = (
            f"SELECT {_MESSAGE_COLUMNS}, {score} AS score FROM message_fts "
            "JOIN message m ON m.rowid = message_fts.rowid WHERE message_fts MATCH ?1 "
            "AND NOT ((m.thread = ?2 OR m.session = ?2) AND m.seq >= ?3) "
            "ORDER BY score, m.path, m.idx LIMIT ?4 OFFSET ?5"
        )
        params = [match, exclude_thread, from_turn or 0, limit, offset]
    return [_message_row(row, -float(row[12])) for row in conn.execute(sql, params)]


def _message_row(row: Sequence[Any], score: float) -> MessageRow:
    turn = Turn(
        file=row[1],
        blob=row[3],
        source=row[4],
        session=row[5],
        seq=row[6],
        thread=row[7],
        timestamp=row[8],
        messages=(),
    )
    message = Message(role=row[9], content="", name=row[10])
    return MessageRow(
        rowid=row[0],
        score=score,
        turn=turn,
        blob=row[3],
        index=row[2],
        message=message,
        archived=row[11],
    )


def messages_at(
    conn: sqlite3.Connection,
    match: str,
    keys: Sequence[tuple[str, int]],
    *,
    weights: Sequence[float] | None = None,
) -> dict[tuple[str, int], MessageRow]:
    """The indexed messages at (capture path, message index) ``keys``, live or archived,
    each scored against ``match`` like :func:`search_messages` (0 where it does not
    match): the source turns of recalled memories."""
    found: dict[tuple[str, int], MessageRow] = {}
    rows = []
    for path, idx in dict.fromkeys(keys):
        row = conn.execute(
            f"SELECT {_MESSAGE_COLUMNS} FROM message m WHERE m.path = ? AND m.idx = ?",
            (path, idx),
        ).fetchone()
        if row is not None:
            rows.append(row)
    if not rows:
        return found
    marks = ",".join("?" * len(rows))
    score = _bm25("message", weights or MESSAGE_WEIGHTS)
    sql = f"SELECT rowid, {score} FROM message_fts WHERE message_fts MATCH ? AND rowid IN ({marks})"
    scores = dict(conn.execute(sql, [match, *(row[0] for row in rows)]).fetchall())
    for row in rows:
        found[(row[1], row[2])] = _message_row(
            row, -float(scores[row[0]]) if row[0] in scores else 0.0
        )
    return found


def message_texts(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, str]:
    """The indexed text of messages: the message itself unless it holds CJK
    (which the index stores segmented into characters and pairs)."""
    if not rowids:
        return {}
    marks = ",".join("?" * len(rowids))
    sql = f"SELECT rowid, content FROM message_fts WHERE rowid IN ({marks})"
    return dict(conn.execute(sql, list(rowids)).fetchall())


def count_excluded_messages(
    conn: sqlite3.Connection, match: str, thread: str, from_turn: int | None
) -> int:
    sql = (
        "SELECT count(*) FROM message_fts JOIN message m ON m.rowid = message_fts.rowid "
        "WHERE message_fts MATCH ?1 AND (m.thread = ?2 OR m.session = ?2) AND m.seq >= ?3"
    )
    return int(conn.execute(sql, (match, thread, from_turn or 0)).fetchone()[0])


def term_found(conn: sqlite3.Connection, table: str, term: str) -> bool:
    """Whether any row of ``table`` (memory, message, retired) holds ``term``."""
    sql = f"SELECT 1 FROM {table}_fts WHERE {table}_fts MATCH ? LIMIT 1"
    return conn.execute(sql, (quote_term(term),)).fetchone() is not None


def matched_terms(
    conn: sqlite3.Connection,
    table: str,
    terms: Sequence[str],
    rowids: Sequence[int],
    *,
    columns: Sequence[str] = (),
) -> dict[int, list[str]]:
    """For each of ``rowids``, the query terms it matched (in ``columns`` only, if
    given), in query order. One statement for all terms."""
    found: dict[int, set[int]] = {rowid: set() for rowid in rowids}
    if not rowids or not terms:
        return {rowid: [] for rowid in rowids}
    marks = ",".join("?" * len(rowids))
    prefix = "{" + " ".join(columns) + "} : " if columns else ""
    parts, params = [], []
    for number, term in enumerate(terms):
        parts.append(
            f"SELECT rowid, {number} FROM {table}_fts "
            f"WHERE {table}_fts MATCH ? AND rowid IN ({marks})"
        )
        params += [prefix + quote_term(term), *rowids]
    for rowid, number in conn.execute(" UNION ALL ".join(parts), params):
        found[rowid].add(number)
    return {rowid: [terms[n] for n in sorted(numbers)] for rowid, numbers in found.items()}


def successors(conn: sqlite3.Connection, memory_id: str) -> list[tuple[str, str, str, bool]]:
    """Memories whose ``supersedes`` names ``memory_id``: (id, title, path, active)."""
    rows = conn.execute(
        "SELECT m.id, m.title, m.path, 1 FROM supersession s JOIN memory m "
        "ON s.retired = 0 AND m.rowid = s.new_rowid WHERE s.old_id = ? "
        "UNION ALL SELECT r.id, r.title, r.path, 0 FROM supersession s JOIN retired r "
        "ON s.retired = 1 AND r.rowid = s.new_rowid WHERE s.old_id = ?",
        (memory_id, memory_id),
    ).fetchall()
    return [(row[0], row[1], row[2], bool(row[3])) for row in rows]


def capture_position(conn: sqlite3.Connection, path: str) -> tuple[str | None, str, int] | None:
    """(thread, session, seq) of an indexed capture file."""
    row = conn.execute(
        "SELECT thread, session, seq FROM message WHERE path = ? LIMIT 1", (path,)
    ).fetchone()
    return (row[0], row[1], row[2]) if row else None


def list_problems(conn: sqlite3.Connection, limit: int) -> tuple[list[tuple[str, str, str]], int]:
    rows = conn.execute(
        "SELECT path, code, message FROM problem ORDER BY path LIMIT ?", (limit,)
    ).fetchall()
    if len(rows) < limit:
        return [(row[0], row[1], row[2]) for row in rows], len(rows)
    total = conn.execute("SELECT count(*) FROM problem").fetchone()[0]
    return [(row[0], row[1], row[2]) for row in rows], int(total)


def has_retired(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM retired LIMIT 1").fetchone() is not None
