"""What the processing state needs of captures and run records, kept in
``.git/memgit/coverage.sqlite``.

What is still to process is derived from every capture in the inbox and every
run record on the branch. Reading them all for each ``memgit process`` grows
with the inbox (2,000 processed captures within the retention period: 70 ms)
and with the history (10,000 run records: 0.4 s), even from the parse cache.
So each file is read once, by path and blob id: a capture's timestamp and
supporting unit ids, a run record's coverage rows. A folder of captures is also
kept whole (its latest version, by path and tree id), so listing an inbox of
unchanged session folders costs a row per folder. A ``runs/`` tree is marked
ingested once every record in it is in the table; a tree not seen before is
ingested by diffing it against the last one (only new records are read), or in
full when there is none. A question then asks only about the units in the
inbox, and keeps only rows whose record the tree still holds at that path, so
records that were removed, or belong to another branch, never count.

A folder kept whole whose every supporting unit is processed is also marked
settled, with the run records that processed its units (its witnesses). While
the folder is unchanged and each witness is still in the tree at its path, its
units are processed: the next state takes the folder as one row, without
reading its captures or asking about their units. So a long inbox of processed
sessions (kept for the retention period) costs little more than a short one.

Rows are only added, never changed: a blob's content never changes. This is
derived data: a file that is not a database of this version is replaced, and
when it cannot be used the tables live in memory for the process.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pygit2

from memgit.constants import CACHE_DIR, INBOX_DIR, RUNS_DIR
from memgit.store.tree import diff_trees

SCHEMA_VERSION = 6
APPLICATION_ID = 0x6D67636F  # "mgco"
COVERAGE_FILE = "coverage.sqlite"
BUSY_TIMEOUT_MS = 60_000
# Unit ids per query: below SQLite's bound on bound parameters.
_CHUNK = 500
_GITLINK = 0o160000
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE capture(
    path TEXT NOT NULL, blob TEXT NOT NULL, timestamp TEXT NOT NULL, units TEXT NOT NULL,
    PRIMARY KEY (path, blob)) WITHOUT ROWID;
CREATE TABLE folder(path TEXT PRIMARY KEY, tree TEXT NOT NULL, summaries TEXT NOT NULL)
    WITHOUT ROWID;
CREATE TABLE record(path TEXT NOT NULL, blob TEXT NOT NULL, PRIMARY KEY (path, blob))
    WITHOUT ROWID;
CREATE TABLE unit(
    unit_id TEXT NOT NULL, path TEXT NOT NULL, blob TEXT NOT NULL, decision TEXT NOT NULL);
CREATE INDEX unit_by_id ON unit(unit_id);
CREATE TABLE ingested(tree TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE settled(
    path TEXT PRIMARY KEY, tree TEXT NOT NULL, oldest REAL NOT NULL, witnesses TEXT NOT NULL,
    processed TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX ingested_by_seq ON ingested(seq);
"""


@dataclass(frozen=True, slots=True)
class CaptureSummary:
    """What the processing state needs of a capture that may be long processed."""

    path: str
    blob: str
    timestamp: str
    supporting: tuple[str, ...]  # ids of the units that can support a memory (no spaces)


@dataclass(frozen=True, slots=True)
class SettledFolder:
    """A folder of captures whose supporting units are all processed, by run records
    still in the tree: its captures are read only when someone asks for them."""

    path: str
    oldest: float  # the earliest time one of its captures was processed (epoch seconds)
    listing: str  # its captures' summaries, as the folder table keeps them
    processed: str  # JSON: capture path -> when it was processed (epoch seconds)

    def captures(self) -> list[CaptureSummary]:
        return _summaries_from(self.listing)

    def processed_at(self) -> dict[str, float]:
        """Capture path -> when the run that finished it was made."""
        found: dict[str, float] = json.loads(self.processed)
        return found


@dataclass(slots=True)
class Inbox:
    """The captures of an inbox: those to look at, and the settled folders."""

    captures: list[CaptureSummary]
    settled: list[SettledFolder]
    # Folders kept whole, not settled (yet): path -> (tree id, their captures).
    whole: dict[str, tuple[str, list[CaptureSummary]]]


Summarize = Callable[[str, str], CaptureSummary]
"""(capture path, blob id) -> its summary (raises if the capture is broken)."""
RowsOf = Callable[[str, str], Iterable[tuple[str, str]]]
"""(record path, blob id) -> the record's (unit id, decision) coverage rows."""


@contextlib.contextmanager
def state_tables(repo: pygit2.Repository) -> Iterator[StateTables]:
    tables = StateTables(repo)
    try:
        yield tables
    finally:
        tables.conn.close()


class StateTables:
    """The tables of one repository, for one computation of a processing state."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.path = Path(repo.path) / CACHE_DIR / COVERAGE_FILE
        self.conn = _open(self.path)

    def captures(self, tree: pygit2.Tree, summarize: Summarize) -> Inbox:
        """The summary of every capture (``.yaml``) in the tree's inbox, but for the
        settled folders, which are taken whole.

        A folder holding only files is kept whole, its latest version by path, so an
        unchanged session folder costs one row, not a row per capture."""
        inbox = Inbox(captures=[], settled=[], whole={})
        witnessed = _Witnesses(self.repo, tree)
        folder = _folder(self.repo, tree, INBOX_DIR)
        level = [(INBOX_DIR, folder)] if folder is not None else []
        while level:
            known = self._safely(functools.partial(_known_folders, level=level))
            below: list[tuple[str, pygit2.Tree]] = []
            for path, folder in level:
                tree_id = str(folder.id)
                if (path, tree_id) in known:
                    listing, settled = known[path, tree_id]
                    if settled is not None and witnessed.hold(settled[1]):
                        oldest, _, processed = settled
                        inbox.settled.append(SettledFolder(path, oldest, listing, processed))
                        continue
                    summaries = _summaries_from(listing)
                    inbox.whole[path] = (tree_id, summaries)
                    inbox.captures += summaries
                    continue
                files = []
                for item in folder:
                    if item.type_str == "tree":
                        subfolder = self.repo[item.id]
                        assert isinstance(subfolder, pygit2.Tree)
                        below.append((f"{path}/{item.name}", subfolder))
                    elif item.type_str == "blob" and (item.name or "").endswith(".yaml"):
                        files.append((f"{path}/{item.name}", str(item.id)))
                summaries = self.summaries(files, summarize)
                if len(files) == len(folder):  # files only: keep them as one row
                    self._safely(functools.partial(_keep_folder, row=(path, folder, summaries)))
                    inbox.whole[path] = (tree_id, summaries)
                inbox.captures += summaries
            level = below
        return inbox

    def settle(
        self,
        tree: pygit2.Tree,
        folders: Iterable[tuple[str, str, list[CaptureSummary]]],
        witnesses: Mapping[str, tuple[str, str]],
        processed_at: Mapping[str, float],
    ) -> None:
        """Mark these (path, tree id, captures) folders settled: every supporting unit
        of their captures is processed by the record ``witnesses`` names for it
        ((path, blob id) in ``tree``), each capture finished at ``processed_at``."""
        rows = []
        for path, tree_id, summaries in folders:
            kept: dict[str, dict[str, str]] = {}
            for capture in summaries:
                for unit_id in capture.supporting:
                    record, blob = witnesses[unit_id]
                    folder, _, name = record.rpartition("/")
                    kept.setdefault(folder, {})[name] = blob
            marks = {
                folder: [_tree_id(self.repo, tree, folder), names] for folder, names in kept.items()
            }
            done = {c.path: processed_at[c.path] for c in summaries}
            oldest = min(done.values(), default=0)
            rows.append(
                (
                    path,
                    tree_id,
                    oldest,
                    json.dumps(marks, separators=(",", ":")),
                    json.dumps(done, separators=(",", ":")),
                )
            )
        if rows:
            self._safely(
                lambda conn: conn.executemany(
                    "INSERT OR REPLACE INTO settled VALUES (?, ?, ?, ?, ?)", rows
                )
            )

    def ingest(self, tree: pygit2.Tree, rows_of: RowsOf) -> None:
        """Take in the run records of ``tree`` now (a run does it for its own commit, so
        that the next process finds the tree ingested)."""
        runs = _folder(self.repo, tree, RUNS_DIR)
        if runs is not None:
            self._safely(lambda conn: _ingest(conn, self.repo, runs, rows_of))

    def summaries(
        self, listed: list[tuple[str, str]], summarize: Summarize
    ) -> list[CaptureSummary]:
        """The summary of each (capture path, blob id), from the table or ``summarize``."""
        if not listed:
            return []
        return self._safely(functools.partial(_captures, listed=listed, summarize=summarize))

    def unit_coverage(
        self, tree: pygit2.Tree, unit_ids: Collection[str], rows_of: RowsOf
    ) -> list[tuple[str, str, str, str]]:
        """(unit id, decision, record path, record blob) of each coverage row the run
        records in ``tree`` hold for ``unit_ids``; ``rows_of`` reads a record (and
        raises if it is broken)."""
        runs = _folder(self.repo, tree, RUNS_DIR)
        if runs is None or not unit_ids:
            return []
        rows = self._safely(lambda conn: _rows(conn, self.repo, runs, unit_ids, rows_of))
        folders: dict[str, dict[str, str]] = {}  # folder -> {file name: blob id}
        found = []
        for row in rows:
            folder, _, name = row[2].rpartition("/")
            if folder not in folders:
                folders[folder] = _files_in(self.repo, tree, folder)
            if folders[folder].get(name) == row[3]:
                found.append(row)
        return found

    def _safely(self, query: Callable[[sqlite3.Connection], T]) -> T:
        """``query`` on the file; if the file fails, on fresh tables in memory."""
        try:
            return query(self.conn)
        except sqlite3.Error as err:  # a file we cannot write or trust: do without it
            self.conn.close()
            if not isinstance(err, sqlite3.OperationalError):
                _remove(self.path)
            self.conn = _create(_connect(":memory:"))
            return query(self.conn)


def _files_in(repo: pygit2.Repository, tree: pygit2.Tree, folder: str) -> dict[str, str]:
    """File name -> blob id of the files directly in ``folder`` (none if it is missing)."""
    try:
        found = repo[tree[folder].id]
    except KeyError:
        return {}
    if not isinstance(found, pygit2.Tree):
        return {}
    return {str(item.name): str(item.id) for item in found if item.type_str == "blob"}


Settled = tuple[float, dict[str, list[Any]], str]
"""A settled folder's earliest processing time, its witnesses (record folder -> [its
tree id then, {record file name: blob id}]), and when each capture was processed."""


def _known_folders(
    conn: sqlite3.Connection, level: list[tuple[str, pygit2.Tree]]
) -> dict[tuple[str, str], tuple[str, Settled | None]]:
    """The summaries kept for these folders (as kept), and whether they are settled, by
    (path, tree id)."""
    wanted = {path: str(folder.id) for path, folder in level}
    known: dict[tuple[str, str], tuple[str, Settled | None]] = {}
    paths = sorted(wanted)
    for start in range(0, len(paths), _CHUNK):
        chunk = paths[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for path, tree_id, listing, oldest, witnesses, processed in conn.execute(
            "SELECT f.path, f.tree, f.summaries, s.oldest, s.witnesses, s.processed "
            "FROM folder AS f "
            "LEFT JOIN settled AS s ON s.path = f.path AND s.tree = f.tree "
            f"WHERE f.path IN ({marks})",
            chunk,
        ):
            if wanted[path] == tree_id:
                settled = (
                    (oldest, json.loads(witnesses), processed) if witnesses is not None else None
                )
                known[path, tree_id] = (listing, settled)
    return known


def _summaries_from(listing: str) -> list[CaptureSummary]:
    return [
        CaptureSummary(file, blob, timestamp, tuple(units.split()))
        for file, blob, timestamp, units in json.loads(listing)
    ]


class _Witnesses:
    """Whether the run records that settled a folder are still in ``tree``."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree) -> None:
        self.repo = repo
        self.tree = tree
        self.folders: dict[str, tuple[str | None, dict[str, str] | None]] = {}

    def hold(self, witnesses: dict[str, list[Any]]) -> bool:
        for folder, (then, names) in witnesses.items():
            if folder not in self.folders:
                self.folders[folder] = (_tree_id(self.repo, self.tree, folder), None)
            now, files = self.folders[folder]
            if now == then:
                continue  # the same records as when the folder settled
            if files is None:
                files = _files_in(self.repo, self.tree, folder)
                self.folders[folder] = (now, files)
            if any(files.get(name) != blob for name, blob in names.items()):
                return False
        return True


def _tree_id(repo: pygit2.Repository, tree: pygit2.Tree, folder: str) -> str | None:
    try:
        entry = tree[folder]
    except KeyError:
        return None
    return str(entry.id) if entry.type_str == "tree" else None


def _keep_folder(
    conn: sqlite3.Connection, row: tuple[str, pygit2.Tree, list[CaptureSummary]]
) -> None:
    path, folder, summaries = row
    rows = [[c.path, c.blob, c.timestamp, " ".join(c.supporting)] for c in summaries]
    conn.execute(
        "INSERT OR REPLACE INTO folder VALUES (?, ?, ?)",
        (path, str(folder.id), json.dumps(rows, separators=(",", ":"))),
    )


def _folder(repo: pygit2.Repository, tree: pygit2.Tree, name: str) -> pygit2.Tree | None:
    try:
        found = repo[tree[name].id]
    except KeyError:
        return None
    return found if isinstance(found, pygit2.Tree) else None


def _captures(
    conn: sqlite3.Connection, listed: list[tuple[str, str]], summarize: Summarize
) -> list[CaptureSummary]:
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS listed(path TEXT, blob TEXT)")
    conn.execute("DELETE FROM temp.listed")
    conn.executemany("INSERT INTO temp.listed VALUES (?, ?)", listed)
    known = {
        (path, blob): CaptureSummary(path, blob, timestamp, tuple(units.split()))
        for path, blob, timestamp, units in conn.execute(
            "SELECT c.path, c.blob, c.timestamp, c.units FROM temp.listed AS l "
            "JOIN capture AS c ON c.path = l.path AND c.blob = l.blob"
        )
    }
    missing = [summarize(path, blob) for path, blob in listed if (path, blob) not in known]
    if missing:
        conn.executemany(
            "INSERT OR IGNORE INTO capture VALUES (?, ?, ?, ?)",
            [(c.path, c.blob, c.timestamp, "\n".join(c.supporting)) for c in missing],
        )
        known.update({(c.path, c.blob): c for c in missing})
    return [known[key] for key in listed]


def _rows(
    conn: sqlite3.Connection,
    repo: pygit2.Repository,
    runs: pygit2.Tree,
    unit_ids: Collection[str],
    rows_of: RowsOf,
) -> list[tuple[str, str, str, str]]:
    """(unit id, decision, path, blob) of every ingested row for ``unit_ids``."""
    _ingest(conn, repo, runs, rows_of)
    wanted = sorted(unit_ids)
    rows: list[tuple[str, str, str, str]] = []
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        rows += conn.execute(
            f"SELECT unit_id, decision, path, blob FROM unit WHERE unit_id IN ({marks})", chunk
        ).fetchall()
    return rows


def _ingest(
    conn: sqlite3.Connection, repo: pygit2.Repository, runs: pygit2.Tree, rows_of: RowsOf
) -> None:
    """Make sure every record of ``runs`` is in the table (one transaction)."""
    if _is_ingested(conn, str(runs.id)):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        base = _last_ingested(conn, repo)
        for name, entry in diff_trees(repo, base, runs).items():
            if entry is None or entry[1] == _GITLINK or not name.endswith(".json"):
                continue
            path, blob = f"{RUNS_DIR}/{name}", str(entry[0])
            if conn.execute(
                "SELECT 1 FROM record WHERE path = ? AND blob = ?", (path, blob)
            ).fetchone():
                continue
            conn.executemany(
                "INSERT INTO unit VALUES (?, ?, ?, ?)",
                [(unit_id, path, blob, decision) for unit_id, decision in rows_of(path, blob)],
            )
            conn.execute("INSERT INTO record VALUES (?, ?)", (path, blob))
        seq = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM ingested").fetchone()[0]
        conn.execute("INSERT OR IGNORE INTO ingested VALUES (?, ?)", (str(runs.id), seq))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _is_ingested(conn: sqlite3.Connection, tree_id: str) -> bool:
    return conn.execute("SELECT 1 FROM ingested WHERE tree = ?", (tree_id,)).fetchone() is not None


def _last_ingested(conn: sqlite3.Connection, repo: pygit2.Repository) -> pygit2.Tree | None:
    """The tree ingested last that the repository still has (None: ingest in full)."""
    for (tree_id,) in conn.execute("SELECT tree FROM ingested ORDER BY seq DESC LIMIT 8"):
        with contextlib.suppress(KeyError, ValueError):
            found = repo[tree_id]
            if isinstance(found, pygit2.Tree):
                return found
    return None


def _open(path: Path) -> sqlite3.Connection:
    """The table at ``path``, replaced if it is not ours; in memory if it cannot be written."""
    for _ in range(2):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = _connect(str(path))
        except (OSError, sqlite3.Error):
            break
        try:
            if _usable(conn):
                return conn
        except sqlite3.DatabaseError:
            pass
        conn.close()
        _remove(path)
    return _create(_connect(":memory:"))


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            Path(f"{path}{suffix}").unlink()


def _connect(target: str) -> sqlite3.Connection:
    conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, timeout=0)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if target != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _usable(conn: sqlite3.Connection) -> bool:
    """True for a table of this version (an empty new file is given the schema)."""
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if (app, version) == (APPLICATION_ID, SCHEMA_VERSION):
        conn.execute("SELECT count(*) FROM ingested").fetchone()
        return True
    if (app, version) == (0, 0) and not conn.execute("SELECT 1 FROM sqlite_master").fetchone():
        conn.execute("BEGIN IMMEDIATE")
        if conn.execute("PRAGMA user_version").fetchone()[0] == 0:  # nobody beat us to it
            _create(conn, transaction=False)
        conn.execute("COMMIT")
        return True
    return False


def _create(conn: sqlite3.Connection, *, transaction: bool = True) -> sqlite3.Connection:
    if transaction:
        conn.execute("BEGIN")
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    if transaction:
        conn.execute("COMMIT")
    return conn
