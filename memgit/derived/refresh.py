"""Bring the index in line with Git: by tree diff, never by modification times.

The index records the tree it reflects (``meta.tree``) and the retired refs it
holds (``meta.retired``, a digest of every ``refs/memgit/retired/*`` name and
target). Before each query the flow compares them with HEAD's tree and the
current refs. When they differ, :func:`refresh` diffs the recorded tree
against the new one, where libgit2 skips every subtree whose id did not
change, and re-indexes only the paths that differ, in one transaction. So
after ``git pull``, ``checkout``, ``reset``, ``commit --amend``, a rebase or
any other way HEAD moves, the next query is right with no command to run.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import pygit2

from memgit.constants import INBOX_DIR, MEMORIES_DIR, RUNS_DIR
from memgit.derived import database as db
from memgit.derived import rows
from memgit.derived import state_rows as state_table
from memgit.derived.archive import (
    Archived,
    ArchiveLookup,
    archive_changes,
    archive_of,
    write_changes,
)
from memgit.derived.archive import Progress as Progress
from memgit.derived.retired import read_retired_refs, sync_retired
from memgit.errors import InvalidInputError
from memgit.layout import is_capture_path, is_memory_path
from memgit.memory import read_memory
from memgit.runrecord import read_coverage
from memgit.state.rows import capture_row_of, run_time
from memgit.store.tree import diff_trees, read_blob, read_tree
from memgit.turn import Turn, read_capture

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_BLOB_MODES = {pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE}
_SEQ_LEAF = re.compile(r"([0-9]{6,})\.yaml")
# Above this share of the indexed rows changing, dropping and rebuilding is cheaper.
_REBUILD_SHARE = 0.5
_PROGRESS_EVERY = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class GitState:
    """What the index should reflect: a tree, and the retired refs."""

    tree: str
    commit: str | None
    retired: tuple[tuple[str, str], ...]

    @property
    def retired_digest(self) -> str:
        text = "\n".join(f"{name} {target}" for name, target in self.retired)
        return hashlib.sha1(text.encode("utf-8")).hexdigest()


@dataclass(slots=True, kw_only=True)
class RefreshStats:
    """What one refresh did."""

    full: bool = False
    paths: int = 0
    retired: int = 0
    reason: str | None = None
    problems: list[tuple[str, str, str]] = field(default_factory=list)


def read_git_state(repo: pygit2.Repository, commit: pygit2.Commit | None = None) -> GitState:
    """HEAD's (or ``commit``'s) tree and the current retired refs."""
    if commit is None and not repo.head_is_unborn:
        commit = repo.head.peel(pygit2.Commit)
    tree = str(commit.tree_id) if commit is not None else EMPTY_TREE
    return GitState(
        tree=tree,
        commit=str(commit.id) if commit is not None else None,
        retired=read_retired_refs(repo),
    )


def is_current(conn: sqlite3.Connection, state: GitState) -> bool:
    """Whether the index reflects ``state``: its tree, and its commit too, whose
    history decides the archived turns (memgit.derived.archive)."""
    stamp = dict(
        conn.execute("SELECT key, value FROM meta WHERE key IN ('tree', 'commit', 'retired')")
    )
    return (
        stamp.get("tree") == state.tree
        and stamp.get("commit") == state.commit
        and stamp.get("retired") == state.retired_digest
    )


# -- file views ---------------------------------------------------------------


class TreeView:
    """Files of a committed tree, by path; ``known`` maps paths to blob ids already
    found (by a tree diff), which saves a path lookup through every tree level.
    Captures that left the tree are read from ``archive`` (see memgit.derived.archive)."""

    def __init__(
        self,
        repo: pygit2.Repository,
        tree: pygit2.Tree | None,
        known: Mapping[str, pygit2.Oid | None] | None = None,
        archive: Mapping[str, Archived] | None = None,
    ) -> None:
        self.repo = repo
        self.tree = tree
        self.known = known or {}
        self.archive = archive or {}

    def _oid(self, path: str) -> pygit2.Oid | None:
        if path in self.known:
            return self.known[path]
        if self.tree is None:
            return None
        try:
            entry = self.tree[path]
        except KeyError:
            return None
        return entry.id if entry.filemode in _BLOB_MODES else None

    def get(self, path: str) -> tuple[str, bytes] | None:
        oid = self._oid(path)
        if oid is not None:
            return str(oid), read_blob(self.repo, oid)
        entry = self.archive.get(path)
        if entry is None:
            return None
        try:
            return entry.blob, read_blob(self.repo, entry.blob)
        except KeyError:  # not in this clone, or purged
            return None

    def exists(self, path: str) -> bool:
        return self._oid(path) is not None or path in self.archive

    def archived(self, path: str) -> str | None:
        """The commit that removed ``path``, when it is read from the archive."""
        if self._oid(path) is not None:
            return None
        entry = self.archive.get(path)
        return entry.commit if entry is not None else None


class OverlayView(TreeView):
    """A committed tree with some paths replaced by working-tree contents (None: absent)."""

    def __init__(
        self,
        repo: pygit2.Repository,
        tree: pygit2.Tree | None,
        files: Mapping[str, bytes | None],
    ) -> None:
        super().__init__(repo, tree)
        self.files = files

    def get(self, path: str) -> tuple[str, bytes] | None:
        if path in self.files:
            data = self.files[path]
            return None if data is None else (str(pygit2.hash(data)), data)
        return super().get(path)

    def exists(self, path: str) -> bool:
        if path in self.files:
            return self.files[path] is not None
        return super().exists(path)

    def archived(self, path: str) -> str | None:
        return None if path in self.files else super().archived(path)


# -- applying changes ---------------------------------------------------------


def apply_paths(
    conn: sqlite3.Connection,
    view: TreeView,
    paths: Iterable[str],
    *,
    fresh: bool = False,
    progress: Progress | None = None,
    stats: RefreshStats | None = None,
) -> int:
    """Re-index ``paths`` from ``view`` (inside the caller's transaction).

    A changed capture also re-indexes the turns before and after it in its
    session, whose context columns hold the changed turn's messages.
    """
    records = sorted(path for path in paths if is_run_path(path))
    wanted = {path for path in paths if is_memory_path(path) or is_capture_path(path)}
    for path in list(wanted):
        for step in (-1, +1):
            neighbour = _sibling(path, step)
            if neighbour is not None and neighbour not in wanted and view.exists(neighbour):
                wanted.add(neighbour)
    ordered = sorted(wanted)
    total = len(ordered)
    touched: set[str] = set()  # units whose coverage rows changed
    turns = _TurnCache(view)
    writer = rows.BatchWriter(conn)
    for done, path in enumerate(ordered, 1):
        if progress is not None and done % _PROGRESS_EVERY == 0:
            progress("index", done, total)
        if is_memory_path(path):
            if not fresh:
                rows.delete_memory(conn, path)
                rows.clear_problems(conn, [path])
            found = view.get(path)
            if found is None:
                continue
            try:
                doc = read_memory(found[1], path=path, blob=found[0], check=False)
            except InvalidInputError as err:
                _problem(conn, stats, path, found[0], err)
                continue
            writer.memory(doc)
        else:
            if not fresh:
                rows.delete_turn(conn, path)
                state_table.delete_capture(conn, path)
                rows.clear_problems(conn, [path])
            found = view.get(path)
            if found is None:
                continue
            try:
                turn = read_capture(found[1], path=path, blob=found[0], check=False)
            except InvalidInputError as err:
                _problem(conn, stats, path, found[0], err)
                continue
            turns.put(path, turn)
            before = turns.get(_sibling(path, -1))
            after = turns.get(_sibling(path, +1))
            archived = view.archived(path)
            writer.turn(
                turn,
                before.messages[-1].content if before else "",
                after.messages[0].content if after else "",
                archived=archived,
            )
            if archived is None:
                state_table.put_capture(conn, capture_row_of(turn, path=path, blob=found[0]))
    writer.flush()
    for path in records:
        touched.update(_apply_record(conn, view, path, fresh=fresh, stats=stats))
    if fresh:
        state_table.settle_all(conn)
    else:
        captures = (path for path in ordered if is_capture_path(path))
        state_table.settle(conn, captures=captures, units=touched)
    if progress is not None and total:
        progress("index", total, total)
    return total


def _apply_record(
    conn: sqlite3.Connection,
    view: TreeView,
    path: str,
    *,
    fresh: bool,
    stats: RefreshStats | None,
) -> list[str]:
    """Keep the coverage rows of the run record at ``path`` (the processing state's);
    the units whose rows changed."""
    touched = []
    if not fresh:
        touched = state_table.delete_record(conn, path)
        rows.clear_problems(conn, [path])
    found = view.get(path)
    if found is None:
        return touched
    try:
        coverage = read_coverage(found[1], path=path)
    except InvalidInputError as err:
        _problem(conn, stats, path, found[0], err)
        return touched
    state_table.put_record(conn, path, found[0], coverage, run_time(view.repo, path))
    return touched + [unit_id for unit_id, _ in coverage]


def is_run_path(path: str) -> bool:
    return path.startswith(f"{RUNS_DIR}/") and path.endswith(".json")


def _problem(
    conn: sqlite3.Connection,
    stats: RefreshStats | None,
    path: str,
    blob: str,
    err: InvalidInputError,
) -> None:
    message = err.message if not err.field else f"{err.field}: {err.message}"
    rows.set_problem(conn, path, blob, err.code, message)
    if stats is not None:
        stats.problems.append((path, err.code, message))


def _sibling(path: str, step: int) -> str | None:
    """The capture path of the turn ``step`` away in the same session folder."""
    if not is_capture_path(path):
        return None
    folder, _, leaf = path.rpartition("/")
    match = _SEQ_LEAF.fullmatch(leaf)
    if match is None:
        return None
    seq = int(match.group(1)) + step
    if seq < 0:
        return None
    return f"{folder}/{seq:0{len(match.group(1))}d}.yaml"


class _TurnCache:
    """Recently read captures by path, so neighbours are parsed once in a full build."""

    def __init__(self, view: TreeView, size: int = 64) -> None:
        self.view = view
        self.size = size
        self.turns: OrderedDict[str, Turn | None] = OrderedDict()

    def put(self, path: str, turn: Turn | None) -> None:
        self.turns[path] = turn
        self.turns.move_to_end(path)
        if len(self.turns) > self.size:
            self.turns.popitem(last=False)

    def get(self, path: str | None) -> Turn | None:
        if path is None:
            return None
        if path not in self.turns:
            found = self.view.get(path)
            turn = None
            if found is not None:
                try:
                    turn = read_capture(found[1], path=path, blob=found[0], check=False)
                except InvalidInputError:
                    turn = None
            self.put(path, turn)
        return self.turns[path]


def iter_tree_changes(
    repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree | None
) -> dict[str, pygit2.Oid | None]:
    """Paths under memories/, inbox/ and runs/ whose blobs differ between two trees,
    with each one's blob id in ``new`` (None where it is gone or not a file)."""
    changed: dict[str, pygit2.Oid | None] = {}
    for top in (MEMORIES_DIR, INBOX_DIR, RUNS_DIR):
        before = subtree(repo, old, top)
        after = subtree(repo, new, top)
        for path, entry in diff_trees(repo, before, after).items():
            blob = entry[0] if entry is not None and entry[1] in _BLOB_MODES else None
            changed[f"{top}/{path}"] = blob
    return changed


def subtree(repo: pygit2.Repository, tree: pygit2.Tree | None, name: str) -> pygit2.Tree | None:
    if tree is None:
        return None
    try:
        entry = tree[name]
    except KeyError:
        return None
    if entry.filemode != pygit2.enums.FileMode.TREE:
        return None
    return read_tree(repo, entry.id)


def tree_of(repo: pygit2.Repository, tree_id: str | None) -> pygit2.Tree | None:
    if tree_id is None or tree_id == EMPTY_TREE:
        return None
    obj = repo.get(tree_id)
    return obj if isinstance(obj, pygit2.Tree) else None


def _tree_missing(repo: pygit2.Repository, tree_id: str) -> bool:
    return tree_id != EMPTY_TREE and not isinstance(repo.get(tree_id), pygit2.Tree)


# -- the refresh --------------------------------------------------------------


def refresh(
    conn: sqlite3.Connection,
    repo: pygit2.Repository,
    state: GitState,
    *,
    progress: Progress | None = None,
) -> RefreshStats | None:
    """Make the committed layer reflect ``state``; None when it already did.

    One write transaction: concurrent refreshers queue on SQLite's lock, and
    each checks the stamp again once it holds it, so two processes never index
    the same change twice.
    """
    with db.write_transaction(conn):
        if is_current(conn, state):
            return None
        return _update(conn, repo, state, progress, force=False)


def rebuild(
    conn: sqlite3.Connection,
    repo: pygit2.Repository,
    state: GitState,
    progress: Progress | None = None,
) -> RefreshStats:
    """Build the committed layer for ``state`` from nothing, in one write transaction."""
    with db.write_transaction(conn):
        return _update(conn, repo, state, progress, force=True)


def _update(
    conn: sqlite3.Connection,
    repo: pygit2.Repository,
    state: GitState,
    progress: Progress | None,
    *,
    force: bool,
) -> RefreshStats:
    """Inside the caller's transaction: bring the layer to ``state`` (rebuilt if ``force``,
    or when it has no stamp to diff from, or most files changed)."""
    stats = RefreshStats()
    indexed = db.get_meta(conn, "tree")
    new_tree = tree_of(repo, state.tree)
    if force or indexed is None or _tree_missing(repo, indexed):
        stats.reason = "forced" if force else "no usable stamp"
        _build(conn, repo, new_tree, stats, progress, _commit(repo, state.commit))
    elif indexed != state.tree or db.get_meta(conn, "commit") != state.commit:
        changed = iter_tree_changes(repo, tree_of(repo, indexed), new_tree)
        commit = _commit(repo, state.commit)
        moved = archive_changes(conn, repo, db.get_meta(conn, "commit"), commit, new_tree, changed)
        paths = set(changed) | set(moved)
        # (Counting rows scans the turn table: only worth it for a large change.)
        if len(paths) > 1000 and len(paths) > _row_count(conn) * _REBUILD_SHARE:
            stats.reason = f"{len(paths)} changed paths"
            _build(conn, repo, new_tree, stats, progress, commit)
        else:
            write_changes(conn, moved)
            view = TreeView(repo, new_tree, changed, ArchiveLookup(conn))
            stats.paths = apply_paths(conn, view, paths, progress=progress, stats=stats)
    if stats.full or db.get_meta(conn, "retired") != state.retired_digest:
        stats.retired = sync_retired(conn, repo, state.retired)
    db.set_meta(conn, "tree", state.tree)
    db.set_meta(conn, "commit", state.commit)
    db.set_meta(conn, "retired", state.retired_digest)
    if stats.full:
        if progress is not None:
            progress("optimize", 0, 1)
        db.optimize(conn)
        if progress is not None:
            progress("optimize", 1, 1)
    return stats


def _row_count(conn: sqlite3.Connection) -> int:
    memories = conn.execute("SELECT count(*) FROM memory").fetchone()[0]
    captures = conn.execute("SELECT count(DISTINCT path) FROM message").fetchone()[0]
    return int(memories) + int(captures)


def _build(
    conn: sqlite3.Connection,
    repo: pygit2.Repository,
    tree: pygit2.Tree | None,
    stats: RefreshStats,
    progress: Progress | None,
    commit: pygit2.Commit | None,
) -> None:
    """Index ``tree`` and the captures ``commit``'s history removed, from nothing."""
    stats.full = True
    db.recreate_schema(conn)
    build_into(conn, repo, tree, commit, progress=progress, stats=stats)


def build_into(
    conn: sqlite3.Connection,
    repo: pygit2.Repository,
    tree: pygit2.Tree | None,
    commit: pygit2.Commit | None,
    *,
    progress: Progress | None = None,
    stats: RefreshStats | None = None,
) -> int:
    """Fill an empty index with ``tree``'s files and ``commit``'s archived captures."""
    archive = archive_of(repo, commit, tree, progress)
    write_changes(conn, archive)
    paths = iter_tree_changes(repo, None, tree)
    wanted = [*paths, *archive]
    if progress is not None:
        progress("index", 0, len(wanted))
    done = apply_paths(
        conn,
        TreeView(repo, tree, paths, archive),
        wanted,
        fresh=True,
        progress=progress,
        stats=stats,
    )
    if stats is not None:
        stats.paths = done
    return done


def _commit(repo: pygit2.Repository, commit_id: str | None) -> pygit2.Commit | None:
    found = repo.get(commit_id) if commit_id is not None else None
    return found if isinstance(found, pygit2.Commit) else None
