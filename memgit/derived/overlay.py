"""Uncommitted edits under memories/ and inbox/: what recall must see on top of HEAD.

Finding them means comparing every file's stat data with Git's index: about
0.3 s with the git command and 0.9 s with libgit2 at 100,000 files on our
machine (docs/decisions/0002-working-tree-overlay.md). So the flow runs this
on a process's first query (waiting for it) and then at most once per
``MEMGIT_OVERLAY_TTL`` seconds in a background thread, and never changes the
committed index with what it finds.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

import pygit2

from memgit import git
from memgit.constants import DEFAULT_OVERLAY_TTL, INBOX_DIR, MEMORIES_DIR, OVERLAY_TTL_ENV
from memgit.errors import MemgitError
from memgit.layout import is_capture_path, is_memory_path

# A working file larger than this is reported, not read.
MAX_OVERLAY_FILE = 8 * 1024 * 1024
_CLEAN = {pygit2.enums.FileStatus.CURRENT, pygit2.enums.FileStatus.IGNORED}


def overlay_ttl() -> float:
    """Seconds between working-tree checks in one process (``MEMGIT_OVERLAY_TTL``)."""
    raw = os.environ.get(OVERLAY_TTL_ENV)
    if raw is None:
        return DEFAULT_OVERLAY_TTL
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_OVERLAY_TTL
    return value if value >= 0 else DEFAULT_OVERLAY_TTL


@dataclass(frozen=True, slots=True, kw_only=True)
class Overlay:
    """The working tree's differences from HEAD under memories/ and inbox/."""

    files: dict[str, bytes | None]
    problems: list[tuple[str, str, str]]
    checked_at: float


def scan(git_dir: Path, workdir: Path) -> Overlay:
    """Find and read the uncommitted files (safe to run in a background thread:
    it opens its own repository handle when it needs one)."""
    paths = changed_paths(git_dir, workdir)
    files, problems = read_working_files(workdir, paths)
    return Overlay(files=files, problems=problems, checked_at=time.monotonic())


def changed_paths(git_dir: Path, workdir: Path) -> list[str]:
    """Paths under memories/ and inbox/ that differ from HEAD in the index or working tree."""
    paths = _git_status(git_dir, workdir)
    if paths is None:
        repo = pygit2.Repository(str(git_dir))
        paths = [
            path
            for path, flags in repo.status(untracked_files="all").items()
            if flags not in _CLEAN and path.split("/", 1)[0] in (MEMORIES_DIR, INBOX_DIR)
        ]
    return sorted(path for path in paths if is_memory_path(path) or is_capture_path(path))


def _git_status(git_dir: Path, workdir: Path) -> list[str] | None:
    """Ask git (fast: threaded lstat, untracked cache, fsmonitor if configured); None on failure."""
    command = [
        f"--git-dir={git_dir}",
        f"--work-tree={workdir}",
        "--no-optional-locks",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=all",
        "--",
        MEMORIES_DIR,
        INBOX_DIR,
    ]
    try:
        done = git.run(workdir, *command, timeout=120)
    except MemgitError:
        return None
    if not done.ok:
        return None
    paths = []
    for entry in done.stdout.split(b"\0"):
        if len(entry) > 3:
            paths.append(os.fsdecode(entry[3:]))
    return paths


def read_working_files(
    workdir: Path, paths: list[str]
) -> tuple[dict[str, bytes | None], list[tuple[str, str, str]]]:
    """Each path's bytes in the working tree (None where there is no regular file
    to read), and (path, code, message) for files that were skipped."""
    files: dict[str, bytes | None] = {}
    problems: list[tuple[str, str, str]] = []
    for path in paths:
        full = workdir / path
        try:
            info = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            files[path] = None
            continue
        if not stat.S_ISREG(info.st_mode):
            files[path] = None
        elif info.st_size > MAX_OVERLAY_FILE:
            files[path] = None
            message = f"{info.st_size:,} bytes; recall reads files up to {MAX_OVERLAY_FILE:,}"
            problems.append((path, "too-large", message))
        else:
            try:
                files[path] = full.read_bytes()
            except OSError as err:
                files[path] = None
                problems.append((path, "unreadable", err.strerror or str(err)))
    return files, problems
