"""Keep the index and working tree in line with memgit's commits, path by path.

memgit never checks out whole trees: it touches only the paths it changed, and
only after proving that the person's index entry and working file for each of
those paths still equal the parent commit. Anything else is a local edit that
must not be clobbered.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import pygit2

from memgit.constants import CACHE_DIR
from memgit.errors import ConflictError, InvalidInputError
from memgit.store.gitindex import GitIndex
from memgit.store.tree import Entry, blob_at


def check_no_symlinks(workdir: Path, path: str) -> None:
    """Refuse a path whose folders include a symlink (it could point outside the repo)."""
    current = workdir
    for part in path.split("/")[:-1]:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return
        where = str(current.relative_to(workdir))
        if stat.S_ISLNK(mode):
            raise InvalidInputError(
                f"{where} is a symlink in the working tree",
                code="unsafe-path",
                path=where,
                hint="memgit writes only into real folders inside the repository; "
                "restore the folder (e.g. `git checkout -- <folder>`) and retry",
            )
        if not stat.S_ISDIR(mode):
            raise ConflictError(
                f"{where} is a file in the working tree where memgit needs a folder",
                code="path-conflict",
                path=where,
                hint="move the file away and retry",
            )


def working_blob(workdir: Path, path: str) -> pygit2.Oid | str | None:
    """Blob id of the working file, None if absent, or a string describing an odd entry."""
    full = workdir / path
    try:
        mode = os.lstat(full).st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return "blocked by a file"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    return pygit2.hashfile(str(full))


def check_untouched(
    repo: pygit2.Repository, index: GitIndex, base: pygit2.Tree | None, paths: Iterable[str]
) -> None:
    """Raise unless each path's index entry and working file equal ``base``."""
    workdir = Path(repo.workdir)
    paths = list(paths)
    staged_entries = index.staged(paths)
    for path in paths:
        check_no_symlinks(workdir, path)
        expected = blob_at(base, path)
        staged = staged_entries[path]
        working = working_blob(workdir, path)
        if isinstance(working, pygit2.Oid) and working != expected:
            # A clone may check a file out converted (.gitattributes: text, eol, ident):
            # then it is untouched if git's clean filter gives back the blob. Only on a
            # mismatch, so the common case pays for no attribute lookup.
            with contextlib.suppress(pygit2.GitError):  # core.safecrlf refusing: an edit
                working = repo.hashfile(str(workdir / path))
        if staged != expected:
            what = "staged changes" if staged is not None else "a staged deletion"
            if isinstance(staged, str):
                what = staged
            elif expected is None:
                what = "a staged new file"
            raise _local_edit(path, what)
        if working != expected:
            if isinstance(working, str):
                what = working
            elif expected is None:
                what = "an untracked file"
            elif working is None:
                what = "a local deletion"
            else:
                what = "uncommitted changes"
            raise _local_edit(path, what)


def _local_edit(path: str, what: str) -> ConflictError:
    return ConflictError(
        f"{what} in the working tree would be overwritten",
        code="local-edits",
        path=path,
        hint="commit, stash or remove your change to this file, then retry; "
        "memgit never overwrites local edits",
    )


def sync_checkout(
    repo: pygit2.Repository,
    index: GitIndex,
    tree: pygit2.Tree,
    changes: Mapping[str, bytes | None],
) -> None:
    """Bring the checkout from the parent to ``tree`` for the ``changes`` paths (which
    :func:`check_untouched` proved untouched): start saving their index entries
    through git, write each changed file (atomically), and wait for the index.
    Entries a person staged on other paths are kept, as git itself updates them.

    The index update needs only blob ids, so for a large index git writes it on
    the other core while memgit writes the files. Temporary files go to
    ``.git/memgit/tmp`` so a crash mid-write leaves nothing in the working tree
    for ``git status`` to show.
    """
    workdir = Path(repo.workdir)
    scratch = Path(repo.path) / CACHE_DIR / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    entries: dict[str, Entry | None] = {}
    for path, data in changes.items():
        entry = tree[path] if data is not None else None
        entries[path] = (entry.id, entry.filemode) if entry is not None else None
    for path, data in changes.items():
        if data is not None:
            check_no_symlinks(workdir, path)
    index.start_write(entries)
    for path, data in changes.items():
        full = workdir / path
        if data is None:
            full.unlink(missing_ok=True)
            _remove_empty_parents(workdir, full.parent)
            continue
        full.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(full, data, scratch)
    index.finish_write()


def _atomic_write(full: Path, data: bytes, scratch: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=scratch, prefix=f"{full.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, full)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _remove_empty_parents(workdir: Path, folder: Path) -> None:
    while folder != workdir and workdir in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
