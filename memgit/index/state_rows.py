"""The processing state's rows in the derived store (``.git/memgit/index.sqlite``).

The recall index and the processing state are refreshed together, by the same
tree diff, under the same stamp (:mod:`memgit.index.refresh`): ``capture``
holds the inbox's captures of the stamped tree, ``unit`` their supporting
units, and ``coverage`` the coverage rows of its run records. This module is
the only one that writes or reads those tables.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence

from memgit.state.processing import CaptureRow, CoverageRow

SCHEMA = """
CREATE TABLE capture(
    path TEXT PRIMARY KEY, blob TEXT NOT NULL, timestamp TEXT NOT NULL, units TEXT NOT NULL)
    WITHOUT ROWID;
CREATE TABLE unit(unit_id TEXT NOT NULL, capture TEXT NOT NULL);
CREATE INDEX unit_by_id ON unit(unit_id);
CREATE INDEX unit_by_capture ON unit(capture);
CREATE TABLE coverage(
    record TEXT NOT NULL, blob TEXT NOT NULL, unit_id TEXT NOT NULL, decision TEXT NOT NULL);
CREATE INDEX coverage_by_unit ON coverage(unit_id);
CREATE INDEX coverage_by_record ON coverage(record);
"""
# Unit ids per query: below SQLite's bound on bound parameters.
_CHUNK = 500


def put_capture(conn: sqlite3.Connection, row: CaptureRow) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO capture VALUES (?, ?, ?, ?)",
        (row.path, row.blob, row.timestamp, " ".join(row.supporting)),
    )
    conn.executemany("INSERT INTO unit VALUES (?, ?)", [(u, row.path) for u in row.supporting])


def delete_capture(conn: sqlite3.Connection, path: str) -> None:
    conn.execute("DELETE FROM capture WHERE path = ?", (path,))
    conn.execute("DELETE FROM unit WHERE capture = ?", (path,))


def put_record(
    conn: sqlite3.Connection, path: str, blob: str, rows: Sequence[tuple[str, str]]
) -> None:
    conn.executemany(
        "INSERT INTO coverage VALUES (?, ?, ?, ?)",
        [(path, blob, unit_id, decision) for unit_id, decision in rows],
    )


def delete_record(conn: sqlite3.Connection, path: str) -> None:
    conn.execute("DELETE FROM coverage WHERE record = ?", (path,))


def captures(conn: sqlite3.Connection) -> list[CaptureRow]:
    return [
        CaptureRow(path, blob, timestamp, tuple(units.split()))
        for path, blob, timestamp, units in conn.execute(
            "SELECT path, blob, timestamp, units FROM capture"
        )
    ]


def inbox_coverage(conn: sqlite3.Connection) -> list[CoverageRow]:
    """Every coverage row for a supporting unit of a capture in the table."""
    return [
        CoverageRow(*row)
        for row in conn.execute(
            "SELECT v.unit_id, v.decision, v.record, v.blob FROM coverage AS v "
            "WHERE v.unit_id IN (SELECT unit_id FROM unit)"
        )
    ]


def coverage_of(conn: sqlite3.Connection, unit_ids: Collection[str]) -> list[CoverageRow]:
    """Every coverage row for one of ``unit_ids``."""
    wanted = sorted(unit_ids)
    found: list[CoverageRow] = []
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        found += [
            CoverageRow(*row)
            for row in conn.execute(
                f"SELECT unit_id, decision, record, blob FROM coverage WHERE unit_id IN ({marks})",
                chunk,
            )
        ]
    return found


def problems_under(conn: sqlite3.Connection, *tops: str) -> list[tuple[str, str, str, str]]:
    """(path, blob, code, message) of each file under ``tops`` the refresh could not read."""
    clauses = " OR ".join("substr(path, 1, ?) = ?" for _ in tops)
    params: list[object] = []
    for top in tops:
        params += [len(top) + 1, f"{top}/"]
    return [
        (str(path), str(blob), str(code), str(message))
        for path, blob, code, message in conn.execute(
            f"SELECT path, blob, code, message FROM problem WHERE {clauses}", params
        )
    ]
