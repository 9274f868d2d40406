"""Keep the index and working tree in line with memgit's commits, through git itself.

memgit takes git's own ``index.lock`` (created exclusively, as git does) before it
looks at the index, and holds it while it moves the branch, as ``git commit`` does:
no git command can stage, commit or check out meanwhile, so a person's ``git add``
cannot land between memgit's look and its write, and a person's ``git commit``
cannot commit an index that lags behind the branch. A lock already there is
another git command's (its existence is all memgit needs to know): memgit waits
for it, or gives up with nothing published.

Under the lock, the touched paths' index entries (``git ls-files``) and working
files must equal the parent commit; anything else is a local edit that must not
be clobbered. After the branch moved, ``git read-tree -m -u OLD NEW`` brings the
index and working tree from the parent's tree to the new one, writing a copy of
the index (``GIT_INDEX_FILE``) that memgit then renames over the index before it
removes the lock, as git commits a lock: paths memgit did not touch keep whatever a person
staged, and git itself refuses to overwrite a file edited since memgit looked.
(docs/decisions/0013-one-git-runner.md)
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import stat
import time
from collections.abc import Iterable
from pathlib import Path

import pygit2

from memgit import git
from memgit.constants import CACHE_DIR
from memgit.errors import ConflictError, InvalidInputError
from memgit.store.tree import blob_at

log = logging.getLogger(__name__)

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# From this size on the index is put in split mode after memgit's write
# (docs/decisions/0005-split-index.md).
SPLIT_INDEX_BYTES = 1_000_000
LOCK_WAIT = 5.0
_NEXT_INDEX = "index.next"
_SPLIT = ("update-index", "--split-index")


class IndexLock:
    """git's ``index.lock``, held by memgit; use as a context manager. Leaving the block
    removes it: after :meth:`checkout` put the new index in place, as git commits a
    lock, or with the index as it was."""

    def __init__(self, repo: pygit2.Repository) -> None:
        """``token`` is what the lock will hold: the writer's journal names it before
        the lock is taken, so a lock left by a killed writer is known for its own."""
        self.repo = repo
        self.path = Path(repo.path) / "index.lock"
        self.token = f"memgit {os.getpid()} {secrets.token_hex(8)}\n"
        self._held = False

    def __enter__(self) -> IndexLock:
        # The lock appears with its token in it (a hard link is created exclusively,
        # as git creates its lock): never empty, so never mistaken for a git command's.
        scratch = Path(self.repo.path) / CACHE_DIR
        scratch.mkdir(exist_ok=True)
        ready = scratch / f"index.lock.{self.token.split()[-1]}"
        ready.write_text(self.token, "ascii")
        deadline = time.monotonic() + LOCK_WAIT
        try:
            while True:
                try:
                    os.link(ready, self.path)
                    break
                except FileExistsError:
                    if time.monotonic() >= deadline:
                        raise ConflictError(
                            "another git process holds this lock",
                            code="git-lock",
                            path=str(self.path),
                            hint="if no git command is running, the lock is stale: "
                            "remove the file and retry",
                        ) from None
                    time.sleep(0.02)
        finally:
            ready.unlink()
        self._held = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._held:
            self._held = False
            release_index_lock(self.repo, self.token)

    def checkout(self, old: pygit2.Tree | None, new: str, paths: Iterable[str]) -> None:
        """Bring index and working tree from tree ``old`` (None: none) to tree ``new``
        (they differ at ``paths``, which :func:`check_untouched` proved as ``old`` has
        them) with git's two-way merge, then put the new index in place."""
        git_dir = Path(self.repo.path)
        scratch = git_dir / CACHE_DIR
        scratch.mkdir(exist_ok=True)
        following = scratch / _NEXT_INDEX
        # Left by a git killed with a writer before (this one holds both locks now).
        following.unlink(missing_ok=True)
        (scratch / f"{_NEXT_INDEX}.lock").unlink(missing_ok=True)
        with contextlib.suppress(FileNotFoundError):  # no index yet: git starts empty
            shutil.copyfile(git_dir / "index", following)
        # read-tree tells an edit of the paths it changes by their stat data alone: stale
        # data (a copied checkout, an entry git left "racily clean") would read as one.
        tracked = [path for path in paths if blob_at(old, path) is not None]
        if tracked:
            git.run(self.repo.workdir, "update-index", "--", *tracked, index=following)
        merge = ("read-tree", "-m", "-u", str(old.id) if old is not None else EMPTY_TREE, new)
        done = git.run(self.repo.workdir, *merge, index=following)
        if not done.ok:
            following.unlink(missing_ok=True)
            raise _index_failed(done, committed=True)
        if _wants_split(self.repo):
            # Only for speed: a failure leaves a whole index holding the entries.
            split = git.run(self.repo.workdir, *_SPLIT, index=following)
            if not split.ok:
                log.info("left the index whole for now: %s", split.said)
        os.replace(following, git_dir / "index")


def staged_entries(
    repo: pygit2.Repository, paths: Iterable[str]
) -> dict[str, pygit2.Oid | str | None]:
    """Each path's staged blob id, None if not staged, or a string for an odd entry."""
    wanted = tuple(paths)
    found: dict[str, pygit2.Oid | str | None] = dict.fromkeys(wanted)
    if not wanted:
        return found
    done = git.run(repo.workdir, "ls-files", "--stage", "-z", "--", *wanted)
    if not done.ok:
        raise _index_failed(done, committed=False)
    for record in done.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        _mode, blob, stage = meta.split(b" ")
        path = raw_path.decode("utf-8", "surrogateescape")
        if path not in found:
            continue  # a file inside a folder named like a wanted path
        if stage != b"0" or isinstance(found[path], pygit2.Oid):
            found[path] = "an unresolved merge conflict"
        else:
            found[path] = pygit2.Oid(hex=blob.decode("ascii"))
    return found


def restore(repo: pygit2.Repository, commit: str, paths: Iterable[str]) -> None:
    """Set ``paths`` in the index and working tree to ``commit``'s (removed where it
    has none), whatever they hold: for crash recovery, which has proved they hold
    no person's edit."""
    listed = b"".join(path.encode("utf-8", "surrogateescape") + b"\0" for path in paths)
    restoring = ("restore", f"--source={commit}", "--staged", "--worktree")
    done = git.run(
        repo.workdir, *restoring, "--pathspec-from-file=-", "--pathspec-file-nul", stdin=listed
    )
    if done.ok:
        return
    lock = Path(repo.path) / "index.lock"
    if lock.exists():
        raise ConflictError(
            "another git process holds this lock",
            code="git-lock",
            path=str(lock),
            hint="when no git command is running, remove the lock file; the next memgit "
            "command finishes the checkout",
        )
    raise _index_failed(done, committed=True)


def release_index_lock(repo: pygit2.Repository, token: object) -> None:
    """Remove ``index.lock`` if it is the one memgit wrote ``token`` into (a writer's,
    live or killed); a lock holding anything else is a git command's and stays."""
    lock = Path(repo.path) / "index.lock"
    try:
        if not isinstance(token, str) or lock.read_text("ascii") != token:
            return
    except (OSError, UnicodeDecodeError):
        return
    lock.unlink(missing_ok=True)
    (Path(repo.path) / CACHE_DIR / _NEXT_INDEX).unlink(missing_ok=True)


def _wants_split(repo: pygit2.Repository) -> bool:
    """A large ``.git/index`` is split after the write unless ``core.splitIndex`` says
    false: a whole one, or a split one whose own part has grown (a ``git status`` that
    refreshed every entry's stat data puts them all there)."""
    try:
        size = (Path(repo.path) / "index").stat().st_size
    except FileNotFoundError:
        return False
    if size < SPLIT_INDEX_BYTES:
        return False
    try:
        return repo.config.get_bool("core.splitIndex") is not False
    except (KeyError, pygit2.GitError):
        return True


def _index_failed(done: git.Ran, *, committed: bool) -> ConflictError:
    if committed:
        return git.failed(
            done,
            path="index",
            what=" to check out memgit's commit (the commit is made; the index and "
            "working tree are as they were)",
            hint="run `git status` to see what is in the way, fix it, and run any memgit "
            "command: it finishes the checkout",
        )
    return git.failed(
        done,
        path="index",
        what=" on the index (nothing was committed)",
        hint="run `git status` to see what git says about the index, fix it, and retry",
    )


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
    repo: pygit2.Repository, base: pygit2.Tree | None, paths: Iterable[str]
) -> None:
    """Raise unless each path's index entry and working file equal ``base`` (held:
    the :class:`IndexLock`, so no git command changes the index meanwhile)."""
    workdir = Path(repo.workdir)
    paths = list(paths)
    entries = staged_entries(repo, paths)
    for path in paths:
        check_no_symlinks(workdir, path)
        expected = blob_at(base, path)
        staged = entries[path]
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
