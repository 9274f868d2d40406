"""memgit moves the branch only while its index writer holds ``index.lock``.

``git update-index`` takes the lock as it starts, but says it could not only after it
has read all its input, which memgit gives it after the branch moved. So when a
person's ``git add`` held the lock at that moment, the branch moved with the index
lagging behind, and the person's next ``git commit`` (taking the lock as soon as the
add let go) committed that stale index: memgit's new files were removed again in the
person's commit (tests/test_concurrency.py saw 59 of 60 captures survive).
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from memgit import MemoryRepo
from memgit.store import gitindex
from memgit.store.gitindex import GitIndex

from support import git, make_turn


def test_a_commit_made_when_the_lock_is_released_keeps_memgits_capture(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo_path / "note.txt").write_text("a person's note\n", "utf-8")
    git(repo_path, "add", "note.txt")
    lock = repo_path / ".git" / "index.lock"
    committed = threading.Event()

    def person_lets_go_and_commits() -> None:
        # The person's `git add` finishes, and their `git commit` follows at once.
        lock.unlink()
        subprocess.run(
            ["git", "-C", str(repo_path), "commit", "-q", "--no-verify", "-m", "note"],
            check=True,
            capture_output=True,
        )
        committed.set()

    start_writer = GitIndex._start_writer
    calls = []

    def writer_started_while_a_git_add_holds_the_lock(self: GitIndex):  # type: ignore[no-untyped-def]
        if not calls:
            lock.write_bytes(b"")  # a person's `git add` takes the lock right now
            threading.Timer(1.0, person_lets_go_and_commits).start()
        calls.append(1)
        return start_writer(self)

    monkeypatch.setattr(GitIndex, "_start_writer", writer_started_while_a_git_add_holds_the_lock)
    monkeypatch.setattr(gitindex, "LOCK_WAIT", 10.0)

    outcome = MemoryRepo.open(repo_path).capture(make_turn(0, "Remember the wiki moved."))

    assert committed.wait(10)
    tree = git(repo_path, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert outcome.path in tree, "the person's commit undid memgit's capture"
    assert "note.txt" in tree
    assert git(repo_path, "status", "--porcelain") == ""


def test_where_the_writers_files_cannot_be_read_memgit_writes_as_before(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ptrace policy (Yama's ptrace_scope 2 or 3) hides even a child's /proc/<pid>/fd:
    memgit cannot look, so it must move the branch as it did before it looked, not give
    every attempt up until 'the branch kept moving'."""
    listdir = gitindex.os.listdir

    def hidden(path: object) -> list[str]:
        if str(path).startswith("/proc/"):
            raise PermissionError(13, "Permission denied", str(path))
        return listdir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(gitindex.os, "listdir", hidden)
    outcome = MemoryRepo.open(repo_path).capture(make_turn(0, "Remember the wiki moved."))
    assert outcome.commit == git(repo_path, "rev-parse", "HEAD").strip()
    assert git(repo_path, "status", "--porcelain") == ""
