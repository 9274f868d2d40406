"""Git's index (the staging area) as memgit needs it: a few entries read, a few written.

libgit2 reads and writes the whole index file and hashes it twice with SHA-1DC
on a read and once on a write: 92 ms for the 7.8 MB index of 100k files, the
largest single cost of a ``memgit process`` run there. git itself reads the
index without verifying that hash and rewrites it in 44 ms, but costs a
process start (about 4 ms). So a small index is handled in process by
libgit2 and a large one by ``git ls-files`` and ``git update-index``
(docs/decisions/0004-large-index-through-git.md). Both give the same entries;
entries written through git carry no stat data, so git re-reads those few
files once on the next ``git status`` and finds them clean.

git's first write of a large index puts it in split mode (the entries in a
shared file written rarely, the changes in a small ``.git/index``): 10 ms a
write instead of 44 (docs/decisions/0005-split-index.md). libgit2 cannot read
a split index, so one is always reached through git.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import pygit2

from memgit.errors import ConflictError, quote_foreign
from memgit.store.tree import Entry

# From this index size on git reaches the index: its two commands run on the other
# core beside memgit's work, while libgit2's read and write add to it (at 10k files,
# a 1 MB index: a run 58 -> 46 ms; at 1k files, 115 KB: the same either way).
GIT_INDEX_BYTES = 300_000
# From this size on git's next write puts the index in split mode.
SPLIT_INDEX_BYTES = 1_000_000
SHARED_INDEX_PREFIX = "sharedindex."
LOCK_WAIT = 5.0
_NO_BLOB = "0" * 40


class IndexEntries(Protocol):
    """The entries of the index that memgit compares and replaces."""

    def __enter__(self) -> IndexEntries: ...

    def __exit__(self, *exc: object) -> None:
        """Wait for anything started in the background."""

    def prefetch(self, paths: Iterable[str]) -> None:
        """Start looking up these paths, so ``staged`` finds the answer ready."""

    def staged(self, paths: Iterable[str]) -> dict[str, pygit2.Oid | str | None]:
        """Each path's staged blob id, None if not staged, or a string for an odd entry."""

    def start_write(self, entries: Mapping[str, Entry | None]) -> None:
        """Set (or, for None, remove) these entries and start saving the index."""

    def finish_write(self) -> None:
        """Wait until the index is saved."""


def open_index(repo: pygit2.Repository) -> IndexEntries:
    """The cheaper way to reach this repository's index, by its size and mode.

    A large index file is put in split mode by the next write, unless
    ``core.splitIndex`` says false (docs/decisions/0005-split-index.md).
    """
    gitdir = Path(repo.path)
    try:
        size = (gitdir / "index").stat().st_size
    except FileNotFoundError:
        size = 0
    shared = any(name.startswith(SHARED_INDEX_PREFIX) for name in os.listdir(gitdir))
    wanted = _split_index_setting(repo)
    git = shutil.which("git")
    if git is None:
        return LibgitIndex(repo)
    if shared or wanted or size >= GIT_INDEX_BYTES:
        # A large .git/index is a whole one, or a split one whose own part has grown
        # (a `git status` that refreshed every entry's stat data puts them all there):
        # either way the next write moves the entries to a new shared index.
        return GitIndex(repo, git, make_split=wanted is not False and size >= SPLIT_INDEX_BYTES)
    return LibgitIndex(repo)


def _split_index_setting(repo: pygit2.Repository) -> bool | None:
    """``core.splitIndex`` as configured: True, False, or None when unset."""
    try:
        return repo.config.get_bool("core.splitIndex")
    except (KeyError, pygit2.GitError):
        return None


class LibgitIndex:
    """The index loaded in process by libgit2 (cheap while it is small)."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.index = repo.index
        self.index.read(False)
        self._entries: dict[str, Entry | None] = {}

    def __enter__(self) -> LibgitIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def prefetch(self, paths: Iterable[str]) -> None:
        """Nothing to start: the index is already loaded."""

    def staged(self, paths: Iterable[str]) -> dict[str, pygit2.Oid | str | None]:
        found: dict[str, pygit2.Oid | str | None] = {}
        conflicts = self.index.conflicts
        for path in paths:
            if conflicts is not None and path in conflicts:
                found[path] = "an unresolved merge conflict"
            else:
                found[path] = self.index[path].id if path in self.index else None
        return found

    def start_write(self, entries: Mapping[str, Entry | None]) -> None:
        """Remember the entries: libgit2 takes the stat data from the files, written next."""
        self._entries = dict(entries)

    def finish_write(self) -> None:
        for path, entry in self._entries.items():
            if entry is None:
                if path in self.index:
                    self.index.remove(path)
                continue
            blob, mode = entry
            self.index.add(path)  # the stat data of the file just written
            if self.index[path].id != blob or self.index[path].mode != mode:
                # Clean/smudge filters changed the hash: record the committed blob.
                self.index.add(pygit2.IndexEntry(path, blob, pygit2.enums.FileMode(mode)))
        self._entries = {}
        _retry_locked(self.index.write, Path(self.repo.path) / "index.lock")


class GitIndex:
    """The index read and written by git's own commands (cheap while it is large)."""

    _LOOKUP = ("ls-files", "--stage", "-z", "--")
    _UPDATE = ("update-index", "-z", "--index-info")
    _SPLIT_UPDATE = ("update-index", "--split-index", "-z", "--index-info")

    def __init__(self, repo: pygit2.Repository, git: str, *, make_split: bool) -> None:
        """``make_split``: put the index in split mode with the next write."""
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
        if self._writer is None and not self.make_split:
            # The other core is free again: ``git update-index`` takes the index lock
            # and reads the index (15 ms at 100k files) while memgit publishes the
            # commit, and has only the writing left when ``start_write`` feeds it.
            # (Going split rewrites the index even with no entries: that writer is
            # started by ``start_write``, so a refused change leaves the index as it was.)
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
        # In split mode git rewrites only the small index file, not all the entries.
        args = self._SPLIT_UPDATE if self.make_split else self._UPDATE
        self.make_split = False
        read_end, write_end = os.pipe()
        try:
            return self._start(args, read_end), write_end
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)

    def finish_write(self) -> None:
        if self._update is None:
            return
        data, process = self._update
        self._update = None
        try:
            self._finish(process, self._UPDATE[0], None)
        except OSError:  # index.lock held by a git command: wait for it and write again
            lock = Path(self.repo.path) / "index.lock"
            _retry_locked(lambda: self._run(self._UPDATE, data), lock)

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


def git_failed(command: str, message: str, *, hint: str) -> ConflictError:
    """git's own complaint about the index, as memgit reports it (exit 4)."""
    return ConflictError(
        f"git {command} failed on the index: {quote_foreign(message)}",
        code="git-failed",
        path="index",
        hint=hint,
    )


def _retry_locked(write: Callable[[], object], lock_file: Path, timeout: float = LOCK_WAIT) -> None:
    """Save the index, waiting briefly if a git command holds its lock."""
    deadline = time.monotonic() + timeout
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
