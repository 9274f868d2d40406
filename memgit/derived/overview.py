"""The numbers behind ``memgit map``, read from the index in one snapshot."""

from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import dataclass

from memgit.tokens import CJK_RUN, STOP_WORDS

_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Overview:
    memories: int
    captures: int
    retired: int
    problems: int
    scopes: list[tuple[str, int]]
    types: list[tuple[str, int]]
    recent: list[tuple[str, str, str, str, str | None, str]]
    terms: list[tuple[str, int]]


def read_overview(conn: sqlite3.Connection, *, recent: int, terms: int) -> Overview:
    """Counts by scope and type (all of them, largest first), the ``recent``
    latest memories (id, title, type, scope, updated, path) and ``terms``
    distinctive terms."""
    memories = _one(conn, "SELECT count(*) FROM memory")
    return Overview(
        memories=memories,
        captures=_one(conn, "SELECT count(DISTINCT path) FROM message"),
        retired=_one(conn, "SELECT count(*) FROM retired"),
        problems=_one(conn, "SELECT count(*) FROM problem"),
        scopes=_grouped(conn, "scope"),
        types=_grouped(conn, "type"),
        recent=conn.execute(
            "SELECT id, title, type, scope, updated, path FROM memory "
            "ORDER BY updated DESC, id LIMIT ?",
            (recent,),
        ).fetchall(),
        terms=_distinctive_terms(conn, memories, terms),
    )


def _one(conn: sqlite3.Connection, sql: str) -> int:
    return int(conn.execute(sql).fetchone()[0])


def _grouped(conn: sqlite3.Connection, column: str) -> list[tuple[str, int]]:
    sql = f"SELECT {column}, count(*) AS n FROM memory GROUP BY {column} ORDER BY n DESC, {column}"
    return [(row[0], row[1]) for row in conn.execute(sql)]


def _distinctive_terms(conn: sqlite3.Connection, total: int, limit: int) -> list[tuple[str, int]]:
    """Terms that say most about the repository: document frequency times idf.

    df x log(N/df) favours words that many memories share but not all do. Only
    titles, tags and bodies count. The index stores stems ("databas"); each is
    shown as the commonest title word it stands for, when there is one.
    """
    if total == 0 or limit == 0:
        return []
    scored = []
    rows = conn.execute(
        "SELECT term, max(doc) FROM memory_vocab WHERE col IN ('title', 'tags', 'body') "
        "GROUP BY term"
    )
    for term, docs in rows:
        shortest = 2 if CJK_RUN.match(term) else 3
        if len(term) < shortest or term.isdigit() or term in STOP_WORDS or docs < 2:
            continue
        scored.append((docs * math.log(total / docs), term, docs))
    scored.sort(key=lambda item: (-item[0], item[1]))
    words = _title_words(conn) if scored else {}
    return [(_surface(term, words), docs) for _, term, docs in scored[:limit]]


def _title_words(conn: sqlite3.Connection, sample: int = 20_000) -> dict[str, int]:
    """How often each lower-case word occurs in (a sample of) titles and tags."""
    counts: dict[str, int] = {}
    for title, tags in conn.execute("SELECT title, tags FROM memory LIMIT ?", (sample,)):
        for word in _WORD.findall(f"{title} {tags}".lower()):
            counts[word] = counts.get(word, 0) + 1
    return counts


def _surface(stem: str, words: dict[str, int]) -> str:
    """A word as people write it for an index term ("databas" -> "database"): the
    commonest title word that starts with the stem (less a final "i" or "e", which
    Porter adds: "everi" for "every", "tune" for "tuning"); else the stem."""
    if CJK_RUN.match(stem) or len(stem) < 3:
        return stem
    stub = stem[:-1] if stem[-1] in "ie" else stem
    found = [(count, word) for word, count in words.items() if word.startswith(stub)]
    return max(found)[1] if found else stem
