"""The processing state's rows in the derived store (``.git/memgit/index.sqlite``).

The recall index and the processing state are refreshed together, by the same
tree diff, under the same stamp (:mod:`memgit.derived.refresh`): ``capture``
holds the inbox's captures of the stamped tree, ``unit`` their supporting
units, and ``coverage`` the coverage rows of its run records (with the moment
of the run: :func:`~memgit.state.processing.run_time`). A capture whose every supporting unit a
record decided carries ``done_at``, when the last of them was decided: the
state then takes it as one row, without its units' rows (an inbox of processed
turns, kept for the retention period, costs little). ``done_at`` is brought up
to date in the same transaction as the rows it follows (:func:`settle`). This
module is the only one that writes or reads those tables.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from memgit.state.rows import CaptureRow, CoverageRow

SCHEMA = """
CREATE TABLE capture(
    path TEXT PRIMARY KEY, blob TEXT NOT NULL, timestamp TEXT NOT NULL, units TEXT NOT NULL,
    done_at REAL) WITHOUT ROWID;
CREATE INDEX capture_open ON capture(done_at);
CREATE TABLE unit(unit_id TEXT NOT NULL, capture TEXT NOT NULL);
CREATE INDEX unit_by_id ON unit(unit_id);
CREATE INDEX unit_by_capture ON unit(capture);
CREATE TABLE coverage(
    record TEXT NOT NULL, blob TEXT NOT NULL, unit_id TEXT NOT NULL, decision TEXT NOT NULL,
    moment REAL);
CREATE INDEX coverage_by_unit ON coverage(unit_id);
CREATE INDEX coverage_by_record ON coverage(record);
"""
# Unit ids per query: below SQLite's bound on bound parameters.
_CHUNK = 500


def put_capture(conn: sqlite3.Connection, row: CaptureRow) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO capture VALUES (?, ?, ?, ?, NULL)",
        (row.path, row.blob, row.timestamp, " ".join(row.supporting)),
    )
    conn.executemany("INSERT INTO unit VALUES (?, ?)", [(u, row.path) for u in row.supporting])


def delete_capture(conn: sqlite3.Connection, path: str) -> None:
    conn.execute("DELETE FROM capture WHERE path = ?", (path,))
    conn.execute("DELETE FROM unit WHERE capture = ?", (path,))


def put_record(
    conn: sqlite3.Connection,
    path: str,
    blob: str,
    rows: Sequence[tuple[str, str]],
    moment: float | None,
) -> None:
    conn.executemany(
        "INSERT INTO coverage VALUES (?, ?, ?, ?, ?)",
        [(path, blob, unit_id, decision, moment) for unit_id, decision in rows],
    )


def delete_record(conn: sqlite3.Connection, path: str) -> list[str]:
    """Remove the record's rows; the units they were for."""
    units = record_units(conn, [path])
    conn.execute("DELETE FROM coverage WHERE record = ?", (path,))
    return units


def record_units(conn: sqlite3.Connection, records: Iterable[str]) -> list[str]:
    """The units the table's rows of these records are for."""
    sql = "SELECT unit_id FROM coverage WHERE record IN ({})"
    return [str(unit_id) for (unit_id,) in _in_chunks(conn, sql, records)]


def settle(
    conn: sqlite3.Connection, *, captures: Iterable[str] = (), units: Iterable[str] = ()
) -> None:
    """Work ``done_at`` out again for these captures and the captures of these units
    (inside the caller's transaction): when the last of its units was first decided
    (infinity for a run with no moment: it never expires), NULL while one is open. A
    capture with no supporting unit stays NULL: the state gives it its own time."""
    _temp_paths(conn, "touched", captures)
    conn.executemany(
        "INSERT OR IGNORE INTO temp.touched SELECT capture FROM unit WHERE unit_id = ?",
        ((u,) for u in units),
    )
    _settle_where(conn, "path IN (SELECT path FROM temp.touched)")


def settle_all(conn: sqlite3.Connection) -> None:
    _settle_where(conn, "1")


def _settle_where(conn: sqlite3.Connection, where: str) -> None:
    conn.execute(
        "UPDATE capture SET done_at = ("
        " SELECT CASE WHEN count(*) > 0 AND count(decided) = count(*) THEN max(decided) END"
        " FROM (SELECT (SELECT min(coalesce(v.moment, 9e999)) FROM coverage AS v"
        "   WHERE v.unit_id = u.unit_id AND v.decision != 'DEFERRED') AS decided"
        "   FROM unit AS u WHERE u.capture = capture.path))"
        f" WHERE {where}"
    )


def open_captures(conn: sqlite3.Connection) -> list[CaptureRow]:
    """The captures not settled: with a unit still open, or none to decide."""
    return [
        CaptureRow(path, blob, timestamp, tuple(units.split()))
        for path, blob, timestamp, units in conn.execute(
            "SELECT path, blob, timestamp, units FROM capture WHERE done_at IS NULL"
        )
    ]


def settled(
    conn: sqlite3.Connection, *, excluding: Collection[str] = ()
) -> tuple[dict[str, float], frozenset[str]]:
    """The settled captures (but ``excluding``): each one's ``done_at``, and all their
    units, which are processed. Read as two columns and one string: at 2,000 processed
    captures, building a value per capture cost 7 ms."""
    where = "done_at IS NOT NULL"
    if excluding:
        _temp_paths(conn, "skipped", excluding)
        where += " AND path NOT IN (SELECT path FROM temp.skipped)"
    done = dict(conn.execute(f"SELECT path, done_at FROM capture WHERE {where}").fetchall())
    (units,) = conn.execute(
        f"SELECT group_concat(units, ' ') FROM capture WHERE {where}"
    ).fetchone()
    return done, frozenset((units or "").split())


def captures_of(conn: sqlite3.Connection, paths: Collection[str]) -> list[CaptureRow]:
    """The rows of these captures (the table's, settled or not)."""
    sql = "SELECT path, blob, timestamp, units FROM capture WHERE path IN ({})"
    return [
        CaptureRow(path, blob, timestamp, tuple(units.split()))
        for path, blob, timestamp, units in _in_chunks(conn, sql, paths)
    ]


def captures_of_units(conn: sqlite3.Connection, unit_ids: Collection[str]) -> set[str]:
    """The captures these units are of."""
    sql = "SELECT capture FROM unit WHERE unit_id IN ({})"
    return {str(path) for (path,) in _in_chunks(conn, sql, unit_ids)}


def coverage_of(conn: sqlite3.Connection, unit_ids: Collection[str]) -> list[CoverageRow]:
    """Every coverage row for one of ``unit_ids``."""
    sql = "SELECT unit_id, decision, record, blob, moment FROM coverage WHERE unit_id IN ({})"
    return [CoverageRow(*row) for row in _in_chunks(conn, sql, unit_ids)]


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


def _in_chunks(conn: sqlite3.Connection, sql: str, values: Iterable[str]) -> list[Any]:
    """The rows of ``sql`` (one ``IN ({})``) for every value, asked ``_CHUNK`` at a time."""
    wanted = sorted(values)
    rows: list[Any] = []
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        rows += conn.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall()
    return rows


def _temp_paths(conn: sqlite3.Connection, table: str, paths: Iterable[str]) -> None:
    """Fill the connection's temporary table ``table`` with exactly ``paths`` (only this
    connection sees it, so a read transaction may write it)."""
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table}(path TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.execute(f"DELETE FROM temp.{table}")
    conn.executemany(f"INSERT OR IGNORE INTO temp.{table} VALUES (?)", ((p,) for p in paths))
