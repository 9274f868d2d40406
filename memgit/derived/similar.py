"""Memories that share a text's most distinctive words, found at a bounded cost.

``memgit process`` shows the Gate the existing memories closest to a batch, so
that it can choose UPDATE over a near-duplicate CREATE. A plain BM25 query over
every word of the batch ranks every memory holding any common word: 87 ms at
100k memories when the words are in half of them. A near-duplicate shares the
batch's rare words, and BM25 ranks by them anyway, so this query keeps only
those. Each word's matches are counted up to ``POOL`` (cheap: the count stops
there); words are taken rarest first while their matches add up to at most
``POOL`` memories, which are then ranked in full. When every word is common,
the few first ones must all occur (AND), and the best of the first ``POOL``
memories holding them are returned: an approximation, bounded like the rest.
"""

from __future__ import annotations

import sqlite3

from memgit.derived.search import MEMORY_COLUMNS, MEMORY_WEIGHTS, MemoryRow, memory_row
from memgit.tokens import STOP_WORDS, index_text, iter_query_words, quote_term

POOL = 1000
MAX_WORDS = 64  # distinct words of the text considered, in order
MAX_TERMS = 8  # words in the final query
COMMON_TERMS = 3  # words that must all occur when every word is common


def similar_memories(
    conn: sqlite3.Connection, text: str, *, limit: int, pool: int = POOL
) -> list[MemoryRow]:
    """Up to ``limit`` active memories ranked by BM25 over ``text``'s distinctive words."""
    words = [w for w in dict.fromkeys(iter_query_words(text)) if w not in STOP_WORDS]
    counts = {word: _count(conn, word, pool) for word in words[:MAX_WORDS]}
    found = {word: n for word, n in counts.items() if n}
    if not found or limit <= 0:
        return []
    chosen: list[str] = []
    total = 0
    for word in sorted(found, key=found.__getitem__):  # stable: text order among ties
        if total + found[word] > pool or len(chosen) == MAX_TERMS:
            break
        chosen.append(word)
        total += found[word]
    if chosen:
        match = " OR ".join(quote_term(word) for word in chosen)
    else:
        match = " AND ".join(quote_term(word) for word in list(found)[:COMMON_TERMS])
    weights = ", ".join(str(w) for w in MEMORY_WEIGHTS)
    sql = (
        f"SELECT {MEMORY_COLUMNS}, s.score FROM (SELECT rowid, "
        f"bm25(memory_fts, {weights}) AS score FROM memory_fts WHERE memory_fts MATCH ? "
        "LIMIT ?) s JOIN memory m ON m.rowid = s.rowid ORDER BY s.score, m.path LIMIT ?"
    )
    return [memory_row(row) for row in conn.execute(sql, (match, pool, limit))]


def _count(conn: sqlite3.Connection, word: str, pool: int) -> int:
    """How many memories hold ``word``; ``pool + 1`` stands for "more than pool"."""
    sql = "SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)"
    return int(conn.execute(sql, (quote_term(word), pool + 1)).fetchone()[0])


def memories_holding(
    conn: sqlite3.Connection, text: str, *, column: str, limit: int
) -> list[MemoryRow]:
    """Up to ``limit`` active memories whose ``column`` holds ``text`` as one phrase (its
    words in order, as the index tokenises them), by path: the few that may be the very
    same memory, for the caller to compare in full."""
    phrase = quote_term(index_text(text))
    sql = (
        f"SELECT {MEMORY_COLUMNS}, 0.0 FROM memory_fts f JOIN memory m ON m.rowid = f.rowid "
        "WHERE memory_fts MATCH ? ORDER BY m.path LIMIT ?"
    )
    return [memory_row(row) for row in conn.execute(sql, (f"{{{column}}} : {phrase}", limit))]
