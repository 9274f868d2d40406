"""Finish or discard what a killed writer left half done.

The writer lock's journal says what the previous holder was publishing. If it
died after moving the branch but before syncing the working tree, the branch
already holds the new commit and we bring the touched paths in line, but only
those whose index entry and working file are each still old or already new.

Every writer recovers when it takes the lock, and so does every command that
reads the working tree (recall, map, verify: :func:`finish_dead_writer`), so a
person never sees the killed run's files as staged deletions. A pre-commit
hook cannot recover (``git commit`` holds the index lock), so it refuses the
commit instead (:func:`unfinished_publish`).

A git lock file is removed only when memgit can prove it is its own: a ref's
``.lock`` holding exactly the id the dead writer was writing there, or one still
empty a second after it was made (no live writer leaves a lock empty), and an
``index.lock`` holding the token the dead writer's journal names (any other is a
git command's, running or for a person to judge).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pygit2

from memgit.constants import CACHE_DIR, LOCK_FILE
from memgit.errors import ConflictError
from memgit.store.lock import WriterLock
from memgit.store.rewrite import JOURNAL_OP, finish_rewrite, planned_moves
from memgit.store.tree import blob_at
from memgit.store.worktree import release_index_lock, restore, staged_entries, working_blob

log = logging.getLogger(__name__)

# How old an empty ref lock must be before it is taken for a dead writer's.
_EMPTY_LOCK_AGE = 1.0


def finish_dead_writer(repo: pygit2.Repository) -> None:
    """Recover now if a writer died mid-publish and no writer holds the lock.

    Cheap when there is nothing to do (one read of the journal, no lock taken);
    a live writer is left alone: it finishes its own publish.
    """
    op = _peek_journal(repo).get("op")
    if repo.is_bare or repo.workdir is None or op not in ("publish", JOURNAL_OP):
        return
    try:
        with WriterLock(Path(repo.path), timeout=0) as lock:
            recover(repo, lock.previous)
    except ConflictError as err:
        # Held by a live writer, or the index locked by a git command: the journal
        # stays, and the next writer or reader finishes the publish. Reading goes on.
        log.info("left a killed writer's publish for later: %s", err.message)


def unfinished_publish(repo: pygit2.Repository) -> ConflictError | None:
    """The error for a pre-commit hook when a dead writer's commit is on the branch
    but not yet in the index and working tree (committing now would undo it)."""
    journal = _peek_journal(repo)
    if journal.get("op") != "publish" or journal.get("new") is None or not journal.get("paths"):
        return None
    ref = repo.references.get(str(journal.get("branch", "")))
    if ref is None or str(ref.target) != journal["new"]:
        return None
    return ConflictError(
        f"memgit was stopped while publishing {str(journal['new'])[:12]}: its files are "
        "not yet in the index, so this commit would delete them",
        code="unfinished-publish",
        path="index",
        hint="run any memgit command (e.g. `memgit map`) to finish it, then commit again",
    )


def _peek_journal(repo: pygit2.Repository) -> dict[str, Any]:
    """The journal as it stands, read without the lock (a hint, never acted on alone)."""
    try:
        raw = (Path(repo.path) / CACHE_DIR / LOCK_FILE).read_bytes()
        data = json.loads(raw) if raw.strip() else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recover(repo: pygit2.Repository, journal: dict[str, Any] | None) -> None:
    """Finish the dead writer's publish (or history rewrite) that ``journal`` describes
    (held: the writer lock)."""
    if journal and journal.get("op") == JOURNAL_OP:
        planned = planned_moves(repo)
        for move in planned[1] if planned is not None else ():
            # A transaction killed while it committed leaves the locks of the refs it
            # had not renamed yet: empty, or holding the new id.
            if move.new is not None:
                _remove_own_ref_lock(Path(repo.path), move.name, move.new, journal.get("pid"))
        finish_rewrite(repo)
        return
    if not journal or journal.get("op") != "publish":
        return
    # The dead writer's index lock (held while it checked, moved the branch, checked out).
    release_index_lock(repo, journal.get("index_lock"))
    git_dir = Path(repo.path)
    branch = str(journal.get("branch", ""))
    refs = dict(journal.get("refs", {}))
    new = journal.get("new")
    if new is not None:
        _remove_own_ref_lock(git_dir, branch, str(new), journal.get("pid"))
        for name, target in refs.items():
            if target is not None:
                _remove_own_ref_lock(git_dir, name, new if target == "HEAD" else target, None)
    ref = repo.references.get(branch) if branch else None
    if ref is None or new is None or str(ref.target) != new:
        return
    commit = repo.get(new)
    if not isinstance(commit, pygit2.Commit):
        return
    old_tree = commit.parents[0].tree if commit.parents else None
    for name, target in refs.items():
        existing = repo.references.get(name)
        if target is None:
            if existing is not None:
                existing.delete()
            continue
        oid = commit.id if target == "HEAD" else pygit2.Oid(hex=target)
        if existing is None or existing.target != oid:
            repo.create_reference_direct(name, oid, True, message="memgit: recover")
    paths = list(journal.get("paths", []))
    entries = staged_entries(repo, paths)
    pending = []
    for path in paths:
        before, after = blob_at(old_tree, path), blob_at(commit.tree, path)
        entry, working = entries[path], working_blob(Path(repo.workdir), path)
        # The dead writer may have stopped anywhere between writing the files and
        # saving the index: each side is either still old or already new. Any
        # other content is a person's edit and is left alone.
        if {entry, working} <= {before, after} and (entry, working) != (after, after):
            pending.append(path)
    if pending:
        # A failure (a git command holds the index lock) keeps the journal:
        # the next writer or reader tries again.
        restore(repo, new, pending)
    log.info("recovered from writer %s killed while publishing %s", journal.get("pid"), new)


def _remove_own_ref_lock(git_dir: Path, name: str, target: str, pid: object) -> None:
    """Remove ``name``'s ``.lock`` when it can only be the dead writer's.

    libgit2 creates the lock, then writes the new id into it and renames it onto
    the ref: a lock holding just ``target`` was being written by the dead writer.
    An empty one was left between the first two steps; git and libgit2 both fill
    a lock within microseconds, so one that is still empty once it is a second old
    has no live writer either.
    """
    lock_file = git_dir / f"{name}.lock"
    try:
        content = lock_file.read_bytes()
        if not content:
            first = lock_file.stat()
            time.sleep(max(0.0, first.st_mtime + _EMPTY_LOCK_AGE - time.time()))
            again = lock_file.stat()
            if lock_file.read_bytes() or (again.st_ino, again.st_mtime) != (
                first.st_ino,
                first.st_mtime,
            ):
                return
        elif content.strip() != target.encode("ascii"):
            return
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return
    lock_file.unlink(missing_ok=True)
    log.info("removed %s left by killed memgit writer %s", lock_file, pid)
