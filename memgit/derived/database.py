"""The SQLite file behind recall: schema, opening it safely, and row operations.

The index is a cache in ``.git/memgit/index.sqlite``. It is never trusted
blindly: a file that is not an SQLite database, is corrupt, or carries another
schema version (older or newer) is reset or replaced, and the next refresh
rebuilds it from Git. WAL mode lets readers go on while one writer refreshes;
every refresh is one transaction, so no reader ever sees half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from memgit.derived import state_rows as state_table
from memgit.errors import ConflictError
from memgit.tokens import FTS_TOKENIZER

SCHEMA_VERSION = 4
APPLICATION_ID = 0x6D656D67  # "memg"
BUSY_TIMEOUT_MS = 60_000

FTS_COLUMNS = "title, tags, body, type, scope, ident"
_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE memory(
    rowid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, blob TEXT NOT NULL,
    id TEXT NOT NULL, type TEXT NOT NULL, scope TEXT NOT NULL, title TEXT NOT NULL,
    tags TEXT NOT NULL, created TEXT, updated TEXT,
    sources TEXT NOT NULL, supersedes TEXT NOT NULL);
CREATE INDEX memory_id ON memory(id);
CREATE INDEX memory_updated ON memory(updated);
CREATE VIRTUAL TABLE memory_fts USING fts5({FTS_COLUMNS}, tokenize='{FTS_TOKENIZER}');
CREATE VIRTUAL TABLE memory_vocab USING fts5vocab(memory_fts, 'col');
CREATE TABLE supersession(
    old_id TEXT NOT NULL, new_rowid INTEGER NOT NULL, retired INTEGER NOT NULL);
CREATE INDEX supersession_old ON supersession(old_id);
CREATE INDEX supersession_new ON supersession(retired, new_rowid);
CREATE TABLE message(
    rowid INTEGER PRIMARY KEY, path TEXT NOT NULL, idx INTEGER NOT NULL, blob TEXT NOT NULL,
    source TEXT NOT NULL, session TEXT NOT NULL, seq INTEGER NOT NULL, thread TEXT,
    timestamp TEXT NOT NULL, role TEXT NOT NULL, name TEXT, archived TEXT);
CREATE INDEX message_path ON message(path);
CREATE TABLE archive(
    path TEXT PRIMARY KEY, blob TEXT NOT NULL, commit_id TEXT NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE message_fts USING fts5(
    content, name, before, after, tokenize='{FTS_TOKENIZER}');
CREATE TABLE retired(
    rowid INTEGER PRIMARY KEY, ref TEXT NOT NULL UNIQUE, target TEXT NOT NULL,
    path TEXT NOT NULL, blob TEXT NOT NULL, id TEXT NOT NULL, type TEXT NOT NULL,
    scope TEXT NOT NULL, title TEXT NOT NULL, tags TEXT NOT NULL, created TEXT, updated TEXT,
    sources TEXT NOT NULL, supersedes TEXT NOT NULL);
CREATE VIRTUAL TABLE retired_fts USING fts5({FTS_COLUMNS}, tokenize='{FTS_TOKENIZER}');
CREATE TABLE problem(
    path TEXT PRIMARY KEY, blob TEXT, code TEXT NOT NULL, message TEXT NOT NULL) WITHOUT ROWID;
"""
_CORRUPT_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}


class IndexCorrupt(Exception):
    """The file cannot be used as our index; replace it."""


def is_corruption(err: sqlite3.Error) -> bool:
    """Classified by SQLite's (primary) result code, never by the message's words."""
    code = getattr(err, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _CORRUPT_CODES


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection with memgit's settings; autocommit, transactions are explicit."""
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=0)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if str(path) != ":memory:":
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA cache_size = -32000")
    return conn


def schema_problem(conn: sqlite3.Connection) -> str | None:
    """Why this database is not a usable index of this version, or None."""
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if app == 0 and version == 0:
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        return "empty" if tables == 0 else "not a memgit index"
    if app != APPLICATION_ID:
        return "not a memgit index"
    if version > SCHEMA_VERSION:
        return (
            f"written by a newer memgit (index schema {version}, "
            f"this memgit reads {SCHEMA_VERSION})"
        )
    if version != SCHEMA_VERSION:
        return f"index schema {version} is older than {SCHEMA_VERSION}"
    return None


def reset_schema(conn: sqlite3.Connection) -> None:
    """Drop everything and create an empty index of this version, in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if schema_problem(conn) is not None:
            recreate_schema(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def recreate_schema(conn: sqlite3.Connection) -> None:
    """Inside the caller's transaction: drop every table and create empty ones."""
    _drop_all(conn)
    for statement in (_SCHEMA + state_table.SCHEMA).split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


def _drop_all(conn: sqlite3.Connection) -> None:
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
    ).fetchall()
    # Virtual tables first: dropping one drops its shadow tables.
    rows.sort(key=lambda row: 0 if (row[2] or "").upper().startswith("CREATE VIRTUAL") else 1)
    for kind, name, _ in rows:
        if kind not in ("table", "view", "index", "trigger"):
            continue
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute(f'DROP {kind.upper()} IF EXISTS "{name.replace(chr(34), chr(34) * 2)}"')


def open_database(path: Path) -> tuple[sqlite3.Connection, str | None]:
    """Open (creating, resetting or replacing as needed) the index at ``path``.

    Returns the connection and, when the file was not usable, why it was
    reset or replaced (``None`` when it was fine).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    reason: str | None = None
    for _ in range(3):
        try:
            existed = path.exists() and path.stat().st_size > 0
            conn = connect(path)
            try:
                problem = schema_problem(conn)
                if problem is None:
                    conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
                    return conn, reason
                if existed and problem != "empty":
                    reason = problem
                reset_schema(conn)
                return conn, reason
            except BaseException:
                conn.close()
                raise
        except sqlite3.DatabaseError as err:
            if not is_corruption(err):
                raise
            reason = f"corrupt ({err})"
            replace_corrupt(path)
    raise IndexCorrupt(f"cannot create a usable index at {path}")


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created if needed), released on exit or death."""
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def replace_corrupt(path: Path) -> None:
    """Swap an unreadable index file for an empty valid one, atomically.

    Under a lock file, so two processes do not replace it at once; the file is
    checked again inside the lock, in case another process just replaced it.
    The WAL and shared-memory files of the corrupt database go first: a stale
    WAL next to a new database would be replayed into it.
    """
    with file_lock(path.with_name(path.name + ".lock")):
        if _usable(path):
            return
        fresh = path.with_name(f"{path.name}.new-{os.getpid()}")
        fresh.unlink(missing_ok=True)
        conn = sqlite3.connect(str(fresh), isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = DELETE")
            reset_schema(conn)
            conn.execute("PRAGMA journal_mode = WAL")
        finally:
            conn.close()
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        os.replace(fresh, path)


def _usable(path: Path) -> bool:
    if not path.exists():
        return False
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            if schema_problem(conn) is not None:
                return False
            conn.execute("PRAGMA quick_check(1)").fetchall()
            return int(conn.execute("SELECT count(*) FROM meta").fetchone()[0]) > 0
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def _begin(conn: sqlite3.Connection, statement: str) -> None:
    try:
        conn.execute(statement)
    except sqlite3.OperationalError as err:
        if (err.sqlite_errorcode & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            raise ConflictError(
                f"another process held the recall index for {BUSY_TIMEOUT_MS // 1000} s",
                code="index-busy",
                hint="wait for it to finish (a full build of a large repository "
                "takes a while) and retry",
            ) from err
        raise


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on any exception); waits for other writers."""
    _begin(conn, "BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextlib.contextmanager
def scratch_transaction(conn: sqlite3.Connection, *, write: bool) -> Iterator[None]:
    """A transaction that is always rolled back: a consistent snapshot to read,
    optionally with temporary changes (the working-tree overlay, ``--as-of``)
    that no other process ever sees."""
    _begin(conn, "BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")


# -- meta ------------------------------------------------------------------


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: sqlite3.Connection, key: str, value: str | None) -> None:
    if value is None:
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
    else:
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def optimize(conn: sqlite3.Connection) -> None:
    for table in ("memory_fts", "message_fts", "retired_fts"):
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
