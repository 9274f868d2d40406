"""Git's index (the staging area) as memgit needs it: a few entries read, a few written.

memgit reaches the index only through git's own commands: ``git ls-files`` to read
the entries of the paths it is about to change, ``git update-index --index-info`` to
set them. ``update-index`` takes ``index.lock`` before it reads the index, so what it
writes is the index as it is under the lock plus memgit's entries: an entry a person
staged meanwhile, on any other path, is kept (reading the whole index in process and
writing it back later, as libgit2 does, dropped such entries:
docs/decisions/0006-index-through-git-only.md). Entries written through git carry no
stat data, so git re-reads those few files once on the next ``git status`` and finds
them clean.

The writer is started as soon as the entries have been read, before memgit moves the
branch: from then on no other git command can read an index that lags behind the
branch (a person's ``git commit`` waits for the lock and sees memgit's entries), and
git has read the index on the other core by the time it is handed the entries. But
``update-index`` reports a lock it could not take (a person's ``git add`` held it)
only after reading all its input, which comes after the branch moved; so before the
branch moves, :meth:`GitIndex.writer_holds_lock` looks at the writer's open files, and
memgit tries again once the lock is free rather than move the branch under a lagging
index.

A large index is put in split mode (the entries in a shared file written rarely, the
changes in a small ``.git/index``): 10 ms a write instead of 44 at 100k files
(docs/decisions/0005-split-index.md).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import pygit2

from memgit.errors import ConflictError, quote_foreign
from memgit.store.tree import Entry

log = logging.getLogger(__name__)

# From this size on the index is put in split mode after memgit's write.
SPLIT_INDEX_BYTES = 1_000_000
LOCK_WAIT = 5.0
# How long the writer may take to start and take index.lock (a loaded machine can take
# a second to start git); a lock held by another command is seen at once.
WRITER_LOCK_WAIT = 5.0
_NO_BLOB = "0" * 40


def open_index(repo: pygit2.Repository) -> GitIndex:
    """This repository's index, reached through git.

    A large ``.git/index`` is a whole one, or a split one whose own part has grown
    (a ``git status`` that refreshed every entry's stat data puts them all there):
    either way it is split after the next write, unless ``core.splitIndex`` says
    false (docs/decisions/0005-split-index.md).
    """
    git = shutil.which("git")
    if git is None:
        raise ConflictError(
            "git is not on PATH",
            code="git-missing",
            path="git",
            hint="install git (2.30 or newer) and retry; memgit updates the index through it",
        )
    try:
        size = (Path(repo.path) / "index").stat().st_size
    except FileNotFoundError:
        size = 0
    split = size >= SPLIT_INDEX_BYTES and _split_index_setting(repo) is not False
    return GitIndex(repo, git, make_split=split)


def _split_index_setting(repo: pygit2.Repository) -> bool | None:
    """``core.splitIndex`` as configured: True, False, or None when unset."""
    try:
        return repo.config.get_bool("core.splitIndex")
    except (KeyError, pygit2.GitError):
        return None


class GitIndex:
    """The index read and written by git's own commands; use as a context manager."""

    _LOOKUP = ("ls-files", "--stage", "-z", "--")
    _UPDATE = ("update-index", "-z", "--index-info")
    _SPLIT = ("update-index", "--split-index")

    def __init__(self, repo: pygit2.Repository, git: str, *, make_split: bool) -> None:
        """``make_split``: put the index in split mode after the write."""
        self.repo = repo
        self.git = git
        self.make_split = make_split
        self._lookup: tuple[tuple[str, ...], subprocess.Popen[bytes]] | None = None
        self._writer: tuple[subprocess.Popen[bytes], int] | None = None  # waiting for entries
        self._update: tuple[bytes, subprocess.Popen[bytes]] | None = None

    def __enter__(self) -> GitIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lookup is not None:
            self._lookup[1].communicate()  # an answer nobody asked for (the change was refused)
            self._lookup = None
        if self._writer is not None:
            # Refused or lost the race: no entries, so git leaves the index as it was.
            process, feed = self._writer
            self._writer = None
            os.close(feed)
            process.communicate()
        if self._update is not None:
            self._update[1].communicate()  # an exception came between start and finish
            self._update = None

    def prefetch(self, paths: Iterable[str]) -> None:
        """Run ``git ls-files`` in the background (on the other core, while memgit
        builds and checks the commit): its 14 ms at 100k files then cost nothing."""
        wanted = tuple(paths)
        if wanted:
            self._lookup = (wanted, self._start([*self._LOOKUP, *wanted]))

    def staged(self, paths: Iterable[str]) -> dict[str, pygit2.Oid | str | None]:
        """Each path's staged blob id, None if not staged, or a string for an odd entry;
        then start the writer (see the module docstring)."""
        wanted = tuple(paths)
        found: dict[str, pygit2.Oid | str | None] = dict.fromkeys(wanted)
        if not wanted:
            return found
        lookup, self._lookup = self._lookup, None
        if lookup is None or lookup[0] != wanted:
            if lookup is not None:
                lookup[1].communicate()  # paths other than those asked for now
            lookup = (wanted, self._start([*self._LOOKUP, *wanted]))
        listing = self._finish(lookup[1], self._LOOKUP[0], b"")
        if self._writer is None:
            self._writer = self._start_writer()
        for record in listing.split(b"\0"):
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

    def writer_holds_lock(self) -> bool:
        """Whether the writer :meth:`staged` started holds ``index.lock`` now (True when
        none was started). Read from the writer's open files under Linux's ``/proc``;
        where memgit cannot look (no ``/proc``, or a ptrace policy that hides them),
        True, as before it looked. A lock file the writer does not hold is another git
        command's: the writer cannot get it."""
        if self._writer is None:
            return True
        process = self._writer[0]
        fds = Path(f"/proc/{process.pid}/fd")
        lock = Path(self.repo.path) / "index.lock"
        target = os.path.realpath(lock)
        deadline = time.monotonic() + WRITER_LOCK_WAIT
        try:
            while process.poll() is None:
                if _holds(fds, target):
                    return True
                if lock.exists():
                    return _holds(fds, target)  # it may have taken the lock just now
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.002)
        except (PermissionError, NotADirectoryError):
            return True
        except FileNotFoundError:
            if not fds.parent.parent.is_dir():
                return True  # no /proc at all
            # else the writer has just exited: poll() says so below
        return False

    def start_write(self, entries: Mapping[str, Entry | None]) -> None:
        """Hand the entries to ``git update-index`` (started now unless ``staged``
        started it); it needs only blob ids, so it saves the index on the other core
        while memgit writes the files."""
        lines = []
        for path, entry in entries.items():
            mode, blob = (0, _NO_BLOB) if entry is None else (entry[1], str(entry[0]))
            lines.append(f"{mode:o} {blob}\t{path}\0".encode("utf-8", "surrogateescape"))
        data = b"".join(lines)
        process, feed = self._writer if self._writer is not None else self._start_writer()
        self._writer = None
        self._update = (data, process)
        try:
            # A blocking write is safe: git reads its input to the end before it
            # writes anything but a fatal error, and then it exits.
            with open(feed, "wb") as pipe:
                pipe.write(data)
        except BrokenPipeError:
            pass  # git stopped before reading (a held lock): finish_write says why

    def _start_writer(self) -> tuple[subprocess.Popen[bytes], int]:
        """``git update-index`` reading entries from a pipe (returned: its write end)."""
        read_end, write_end = os.pipe()
        try:
            return self._start(self._UPDATE, read_end), write_end
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)

    def finish_write(self) -> None:
        """Wait until the index is saved (and, for a large one, split)."""
        if self._update is None:
            return
        data, process = self._update
        self._update = None
        lock = Path(self.repo.path) / "index.lock"
        try:
            self._finish(process, self._UPDATE[0], None)
        except OSError:  # index.lock held by a git command: wait for it and write again
            retry_locked(lambda: self._run(self._UPDATE, data), lock)
        if self.make_split:
            # Rare: the index has grown to a size where a split one is cheaper to
            # write from now on. The index already holds the entries, so a failure
            # (the lock taken meanwhile) costs only speed: the next write splits it.
            self.make_split = False
            try:
                retry_locked(lambda: self._run(self._SPLIT, b""), lock)
            except ConflictError as err:
                log.info("left the index whole for now: %s", err.message)

    def _run(self, args: Sequence[str], stdin: bytes) -> bytes:
        return self._finish(self._start(args), args[0], stdin)

    def _start(self, args: Sequence[str], feed: int | None = None) -> subprocess.Popen[bytes]:
        env = {**os.environ, "GIT_DIR": self.repo.path, "GIT_WORK_TREE": self.repo.workdir}
        env.pop("GIT_INDEX_FILE", None)
        return subprocess.Popen(
            [self.git, "--literal-pathspecs", "-c", "core.quotePath=false", *args],
            stdin=subprocess.PIPE if feed is None else feed,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.repo.workdir,
            env=env,
        )

    def _finish(self, process: subprocess.Popen[bytes], command: str, stdin: bytes | None) -> bytes:
        stdout, stderr = process.communicate(stdin)
        if process.returncode != 0:
            message = stderr.decode("utf-8", "replace").strip()
            if "index.lock" in message:
                raise OSError(message)  # another git command is writing the index
            raise git_failed(
                command,
                message,
                hint="run `git status` to see what git says about the index, fix it, and "
                "retry; memgit's commit, if made, is kept and the next write finishes the sync",
            )
        return stdout


def _holds(fds: Path, target: str) -> bool:
    """Whether the process whose ``/proc/<pid>/fd`` is ``fds`` has ``target`` open
    (``os.listdir`` raises when memgit may not look)."""
    for fd in os.listdir(fds):
        try:
            if os.readlink(fds / fd) == target:
                return True
        except FileNotFoundError:
            continue  # closed between listing and reading
    return False


def git_failed(command: str, message: str, *, hint: str) -> ConflictError:
    """git's own complaint about the index, as memgit reports it (exit 4)."""
    return ConflictError(
        f"git {command} failed on the index: {quote_foreign(message)}",
        code="git-failed",
        path="index",
        hint=hint,
    )


def retry_locked(write: Callable[[], object], lock_file: Path) -> None:
    """Save the index, waiting briefly (``LOCK_WAIT``, read now) if a git command holds
    its lock."""
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            write()
            return
        except OSError as err:
            if time.monotonic() >= deadline:
                raise ConflictError(
                    "the commit is made but the index could not be updated: "
                    "another git process holds the index lock",
                    code="git-lock",
                    path=str(lock_file),
                    hint="when no git command is running, remove the lock file; the next "
                    "memgit write finishes the update",
                ) from err
            time.sleep(0.02)
