"""LexicalIndex: the recall index of one repository, kept current before every read.

``snapshot()`` is the one way to read it. It checks the recorded tree and
retired refs against Git (refreshing the committed layer if they differ),
then opens a transaction that is always rolled back, applies the working-tree
overlay (or, for ``--as-of``, the difference to that commit's tree) inside
it, and hands out the connection. Readers in other processes never see those
temporary rows, and the committed layer's stamp never changes because of them.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pygit2

from memgit.constants import CACHE_DIR, INDEX_FILE
from memgit.derived import database as db
from memgit.derived import overlay
from memgit.derived.archive import Archived, archive_as_of, load_archive, write_changes
from memgit.derived.refresh import (
    EMPTY_TREE,
    GitState,
    OverlayView,
    Progress,
    RefreshStats,
    TreeView,
    apply_paths,
    build_into,
    is_current,
    iter_tree_changes,
    read_git_state,
    rebuild,
    refresh,
    tree_of,
)
from memgit.derived.retired import sync_retired
from memgit.derived.rows import delete_retired
from memgit.errors import ConflictError, MemgitError
from memgit.jsonio import json_as
from memgit.store.tree import read_commit

T = TypeVar("T")
_AS_OF_REBUILD_SHARE = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexStatus:
    """What ``memgit index status`` reports."""

    path: str
    exists: bool
    size: int
    schema_version: int | None
    expected_version: int
    problem: str | None
    indexed_tree: str | None
    indexed_commit: str | None
    head_tree: str
    head_commit: str | None
    tree_current: bool = field(metadata=json_as(before=("stale",)))
    retired_current: bool
    counts: dict[str, int]

    @property
    def stale(self) -> bool:
        return self.problem is not None or not (self.tree_current and self.retired_current)


@dataclass(slots=True, kw_only=True)
class Snapshot:
    """One consistent view to query: the committed layer plus a temporary layer."""

    conn: sqlite3.Connection
    repo: pygit2.Repository
    state: GitState
    as_of: str | None = None
    refreshed: RefreshStats | None = None
    rebuilt_reason: str | None = None
    overlay_paths: tuple[str, ...] = ()
    overlay_checked: float | None = None
    problems: list[tuple[str, str, str]] = field(default_factory=list)
    files: dict[str, bytes | None] = field(default_factory=dict)

    def data(self, path: str, blob: str) -> bytes | None:
        """The bytes recall indexed for ``path``: the working file if overlaid, else the blob."""
        if path in self.files:
            return self.files[path]
        obj = self.repo.get(blob)
        return obj.data if isinstance(obj, pygit2.Blob) else None


class LexicalIndex:
    """The index of one repository; keep one per process for warm queries."""

    def __init__(self, repo: pygit2.Repository, *, path: Path | None = None) -> None:
        self.repo = repo
        self.path = path or Path(repo.path) / CACHE_DIR / INDEX_FILE
        self._conn: sqlite3.Connection | None = None
        self._rebuilt_reason: str | None = None
        self._overlay: overlay.Overlay | None = None
        self._overlay_thread: threading.Thread | None = None
        self.in_memory = False
        # (start commit, path, blob) -> the commit that last changed it; see memgit.recall.
        self.commit_cache: dict[tuple[str, str, str], str | None] = {}

    # -- the connection ------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        try:
            self._conn, self._rebuilt_reason = db.open_database(self.path)
        except (OSError, sqlite3.OperationalError):
            # A read-only .git: keep a private index in memory for this process.
            return self._use_memory()
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __del__(self) -> None:
        # A connection sits in a reference cycle (sqlite3's statement cache), so it is
        # freed only by the cyclic collector: close it with the index that owns it, or
        # a dropped MemoryRepo keeps the file open (and its WAL locks held) for a while.
        if getattr(self, "_conn", None) is not None:  # (an __init__ that failed set none)
            self.close()

    def _recover(self, err: sqlite3.DatabaseError) -> None:
        """Replace a database that turned out corrupt while in use."""
        self.close()
        if not self.in_memory:
            db.replace_corrupt(self.path)
        self._rebuilt_reason = f"corrupt ({err})"

    def _retrying(self, action: Callable[[], T]) -> T:
        try:
            return action()
        except sqlite3.DatabaseError as err:
            if db.is_corruption(err):
                self._recover(err)
            elif _unwritable(err) and not self.in_memory:
                self._use_memory()
            else:
                raise
            return action()

    def _use_memory(self) -> sqlite3.Connection:
        """The index file cannot be written (a read-only .git): keep a private one."""
        self.close()
        conn = db.connect(":memory:")
        db.reset_schema(conn)
        self._conn, self.in_memory = conn, True
        return conn

    # -- refresh -------------------------------------------------------------

    def refresh(self, progress: Progress | None = None) -> RefreshStats | None:
        """Bring the committed layer in line with HEAD and the retired refs."""
        return self._retrying(lambda: self._refresh(progress))

    def warm(self) -> None:
        """Refresh in passing (``memgit process`` calls this once its runs are committed),
        so the next command's query starts from a current index. A failure is left for
        that query, which refreshes or rebuilds as it must."""
        try:
            self.refresh()
        except MemgitError:
            return

    def rebuild(self, progress: Progress | None = None) -> RefreshStats:
        return self._retrying(
            lambda: rebuild(self.connection(), self.repo, read_git_state(self.repo), progress)
        )

    def _refresh(self, progress: Progress | None) -> RefreshStats | None:
        conn = self.connection()
        state = read_git_state(self.repo)
        if is_current(conn, state):
            return None
        return refresh(conn, self.repo, state, progress=progress)

    # -- reading -------------------------------------------------------------

    def read(
        self,
        action: Callable[[Snapshot], T],
        *,
        as_of: pygit2.Commit | None = None,
        use_overlay: bool = True,
        progress: Progress | None = None,
    ) -> T:
        """``action(snapshot)`` on a consistent view of HEAD plus the working tree
        (or of ``as_of``); run again once if the index file turns out corrupt."""

        def run() -> T:
            with self.snapshot(as_of=as_of, use_overlay=use_overlay, progress=progress) as snap:
                return action(snap)

        return self._retrying(run)

    def snapshot(
        self,
        *,
        as_of: pygit2.Commit | None = None,
        use_overlay: bool = True,
        progress: Progress | None = None,
    ) -> contextlib.AbstractContextManager[Snapshot]:
        """The view :meth:`read` uses, as a context manager (no retry)."""
        return self._snapshot(as_of, use_overlay, progress)

    @contextlib.contextmanager
    def _snapshot(
        self, as_of: pygit2.Commit | None, use_overlay: bool, progress: Progress | None
    ) -> Iterator[Snapshot]:
        conn = self.connection()
        refreshed = None
        state = read_git_state(self.repo)
        for _ in range(5):
            if not is_current(conn, state):
                refreshed = refresh(conn, self.repo, state, progress=progress) or refreshed
            if as_of is not None:
                with self._as_of(conn, state, as_of, progress) as snap:
                    snap.refreshed, snap.rebuilt_reason = refreshed, self._rebuilt_reason
                    yield snap
                return
            seen = self._current_overlay() if use_overlay else None
            files = seen.files if seen else {}
            problems = seen.problems if seen else []
            with db.scratch_transaction(conn, write=bool(files)):
                if not is_current(conn, state):
                    # HEAD moved again between the refresh and this transaction.
                    state = read_git_state(self.repo)
                    continue
                snap = Snapshot(
                    conn=conn,
                    repo=self.repo,
                    state=state,
                    refreshed=refreshed,
                    rebuilt_reason=self._rebuilt_reason,
                    overlay_paths=tuple(sorted(files)),
                    overlay_checked=seen.checked_at if seen else None,
                    problems=list(problems),
                    files=files,
                )
                if files:
                    stats = RefreshStats()
                    view = OverlayView(self.repo, tree_of(self.repo, state.tree), files)
                    apply_paths(conn, view, files, stats=stats)
                yield snap
            return
        raise ConflictError(
            "HEAD kept moving while recall read the index",
            code="index-busy",
            hint="another program is committing continuously; retry when it is done",
        )

    def _current_overlay(self) -> overlay.Overlay:
        """The uncommitted files: scanned now on the first query (or on every query
        with a TTL of 0); afterwards the last scan is used while a background
        thread rescans once it is older than the TTL (stale-while-revalidate)."""
        ttl = overlay.overlay_ttl()
        seen = self._overlay
        if seen is None or ttl == 0:
            seen = self._overlay = self._scan()
        elif time.monotonic() - seen.checked_at >= ttl and not self._scanning():
            self._overlay_thread = threading.Thread(
                target=self._rescan, name="memgit-overlay", daemon=True
            )
            self._overlay_thread.start()
        return seen

    def _scan(self) -> overlay.Overlay:
        return overlay.scan(Path(self.repo.path), Path(self.repo.workdir))

    def _rescan(self) -> None:
        with contextlib.suppress(Exception):  # the next query scans again
            self._overlay = self._scan()

    def _scanning(self) -> bool:
        return self._overlay_thread is not None and self._overlay_thread.is_alive()

    def wait_for_overlay(self, timeout: float | None = None) -> None:
        """Wait for a background working-tree scan to finish (tests, benchmarks)."""
        if self._overlay_thread is not None:
            self._overlay_thread.join(timeout)

    @contextlib.contextmanager
    def _as_of(
        self,
        conn: sqlite3.Connection,
        head: GitState,
        commit: pygit2.Commit,
        progress: Progress | None,
    ) -> Iterator[Snapshot]:
        """The index as of ``commit``: HEAD's index with the tree difference applied
        in a rolled-back transaction, or, when most files differ, a private build."""
        target = read_git_state(self.repo, commit)
        tree = tree_of(self.repo, target.tree)
        changed = iter_tree_changes(self.repo, tree_of(self.repo, head.tree), tree)
        head_commit = read_commit(self.repo, head.commit) if head.commit is not None else None
        archive = archive_as_of(conn, self.repo, head_commit, commit, tree)
        have = load_archive(conn)
        moved: dict[str, Archived | None] = {path: None for path in have if path not in archive}
        moved.update((path, entry) for path, entry in archive.items() if have.get(path) != entry)
        paths = set(changed) | set(moved)
        rows = conn.execute("SELECT count(*) FROM memory").fetchone()[0]
        rows += conn.execute("SELECT count(*) FROM message").fetchone()[0]
        if len(paths) > 1000 and len(paths) > rows * _AS_OF_REBUILD_SHARE:
            private = db.connect(":memory:")
            try:
                db.reset_schema(private)
                with db.write_transaction(private):
                    build_into(private, self.repo, tree, commit, progress=progress)
                    sync_retired(private, self.repo, target.retired)
                with db.scratch_transaction(private, write=True):
                    _retired_as_of(private, self.repo, commit)
                    yield Snapshot(conn=private, repo=self.repo, state=target, as_of=str(commit.id))
            finally:
                private.close()
            return
        with db.scratch_transaction(conn, write=True):
            write_changes(conn, moved)
            apply_paths(conn, TreeView(self.repo, tree, changed, archive), paths)
            _retired_as_of(conn, self.repo, commit)
            yield Snapshot(conn=conn, repo=self.repo, state=target, as_of=str(commit.id))

    # -- status --------------------------------------------------------------

    def status(self) -> IndexStatus:
        """Report on the index file without changing it."""
        state = read_git_state(self.repo)
        exists = self.path.exists()
        base: dict[str, Any] = {
            "path": str(self.path),
            "exists": exists,
            "size": _size(self.path),
            "expected_version": db.SCHEMA_VERSION,
            "head_tree": state.tree,
            "head_commit": state.commit,
        }
        if not exists:
            return IndexStatus(
                **base,
                schema_version=None,
                problem="missing; the next recall builds it",
                indexed_tree=None,
                indexed_commit=None,
                tree_current=False,
                retired_current=False,
                counts={},
            )
        try:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
        except sqlite3.Error as err:
            return _broken_status(base, f"cannot open: {err}")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            problem = db.schema_problem(conn)
            if problem is not None:
                return _broken_status(base, f"{problem}; the next recall rebuilds it", version)
            tree = db.get_meta(conn, "tree")
            counts = {
                "memories": _count(conn, "SELECT count(*) FROM memory"),
                "captures": _count(conn, "SELECT count(DISTINCT path) FROM message"),
                "messages": _count(conn, "SELECT count(*) FROM message"),
                "archived": _count(conn, "SELECT count(*) FROM archive"),
                "retired": _count(conn, "SELECT count(*) FROM retired"),
                "problems": _count(conn, "SELECT count(*) FROM problem"),
            }
            return IndexStatus(
                **base,
                schema_version=version,
                problem=None if tree is not None else "empty; the next recall builds it",
                indexed_tree=tree,
                indexed_commit=db.get_meta(conn, "commit"),
                # The commit too: its history decides the archived captures.
                tree_current=tree == state.tree and db.get_meta(conn, "commit") == state.commit,
                retired_current=db.get_meta(conn, "retired") == state.retired_digest,
                counts=counts,
            )
        except sqlite3.DatabaseError as err:
            return _broken_status(base, f"corrupt ({err}); the next recall rebuilds it")
        finally:
            conn.close()


_UNWRITABLE_CODES = {sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR}


def _unwritable(err: sqlite3.DatabaseError) -> bool:
    """By SQLite's primary result code: the file cannot be written (or opened) here."""
    code = getattr(err, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _UNWRITABLE_CODES


def _retired_as_of(
    conn: sqlite3.Connection, repo: pygit2.Repository, commit: pygit2.Commit
) -> None:
    """Keep the retired memories that were retired by ``commit``: their ref's target
    is an ancestor of it and the memory is not active in its tree."""
    retired = conn.execute("SELECT ref, target, id FROM retired").fetchall()
    active = {row[0] for row in conn.execute("SELECT id FROM memory")}
    for ref, target, memory_id in retired:
        try:
            earlier = target != str(commit.id) and repo.descendant_of(commit.id, target)
        except (pygit2.GitError, ValueError, KeyError):
            earlier = False
        if not earlier or memory_id in active:
            delete_retired(conn, ref)


def _size(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += path.with_name(path.name + suffix).stat().st_size
    return total


def _count(conn: sqlite3.Connection, sql: str) -> int:
    return int(conn.execute(sql).fetchone()[0])


def _broken_status(base: dict[str, Any], problem: str, version: int | None = None) -> IndexStatus:
    return IndexStatus(
        **base,
        schema_version=version,
        problem=problem,
        indexed_tree=None,
        indexed_commit=None,
        tree_current=False,
        retired_current=False,
        counts={},
    )


__all__ = ["EMPTY_TREE", "IndexStatus", "LexicalIndex", "Snapshot"]
