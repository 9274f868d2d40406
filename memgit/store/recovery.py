"""Finish or discard what a killed writer left half done.

The writer lock's journal says what the previous holder was publishing. If it
died after moving the branch but before syncing the working tree, the branch
already holds the new commit and we bring the touched paths in line, but only
those whose index entry and working file are each still old or already new.
Git lock files the dead writer was holding (its branch's ref lock, the index
lock) are removed when they date from its operation; anything else is left for
a person to judge.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pygit2

from memgit.errors import MemgitError
from memgit.store.gitindex import open_index
from memgit.store.tree import blob_at, read_blob
from memgit.store.worktree import apply_to_worktree, working_blob

log = logging.getLogger(__name__)

# A lock file this much older than the journal entry was not made by that writer.
_CLOCK_SLACK = 2.0


def recover(repo: pygit2.Repository, journal: dict[str, Any] | None) -> None:
    if not journal or journal.get("op") != "publish":
        return
    git_dir = Path(repo.path)
    started = float(journal.get("at", 0))
    branch = str(journal.get("branch", ""))
    refs = dict(journal.get("refs", {}))
    for name in (branch, *refs):
        _remove_if_from(git_dir / f"{name}.lock", started, journal.get("pid"))
    _remove_if_from(git_dir / "index.lock", started, journal.get("pid"))
    new = journal.get("new")
    ref = repo.references.get(branch) if branch else None
    if ref is None or new is None or str(ref.target) != new:
        return
    commit = repo[pygit2.Oid(hex=new)]
    assert isinstance(commit, pygit2.Commit)
    old_tree = commit.parents[0].tree if commit.parents else None
    for name, target in refs.items():
        oid = commit.id if target == "HEAD" else pygit2.Oid(hex=target)
        existing = repo.references.get(name)
        if existing is None or existing.target != oid:
            repo.create_reference_direct(name, oid, True, message="memgit: recover")
    with open_index(repo) as index:
        paths = list(journal.get("paths", []))
        staged_entries = index.staged(paths)
        pending = {}
        for path in paths:
            before, after = blob_at(old_tree, path), blob_at(commit.tree, path)
            staged, working = staged_entries[path], working_blob(Path(repo.workdir), path)
            # The dead writer may have stopped anywhere between writing the file and
            # saving the index: each side is either still old or already new. Any
            # other content is a person's edit and is left alone.
            if {staged, working} <= {before, after} and (staged, working) != (after, after):
                pending[path] = read_blob(repo, after) if after is not None else None
        if pending:
            try:
                apply_to_worktree(repo, index, commit.tree, pending)
            except MemgitError:
                log.warning("could not finish syncing %s after a crash", sorted(pending))
    log.info("recovered from writer %s killed while publishing %s", journal.get("pid"), new)


def _remove_if_from(lock_file: Path, started: float, pid: object) -> None:
    try:
        mtime = lock_file.stat().st_mtime
    except FileNotFoundError:
        return
    if mtime >= started - _CLOCK_SLACK:
        os.unlink(lock_file)
        log.info("removed %s left by killed memgit writer %s", lock_file, pid)
