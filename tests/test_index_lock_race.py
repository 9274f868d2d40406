"""memgit moves the branch only while it holds git's ``index.lock``, as ``git commit`` does.

When memgit moved the branch first and updated the index after, a person's ``git add``
holding the lock at that moment left the index lagging behind the branch, and the
person's next ``git commit`` (taking the lock as soon as the add let go) committed that
stale index: memgit's new files were removed again in the person's commit
(tests/test_concurrency.py saw 59 of 60 captures survive). memgit once learned whether
its git process held the lock from Linux's ``/proc``; it now takes the lock itself,
and a lock already there is another command's: it waits. So nothing depends on
``/proc`` (the ``hidden`` case runs with it unreadable).
"""

from __future__ import annotations

import builtins
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memgit import MemoryRepo
from memgit.store import worktree

from support import git, make_turn


def _hide_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every read under /proc fail, as on a platform without it."""

    def refusing(real: Any) -> Any:
        def call(path: Any, *args: Any, **kwargs: Any) -> Any:
            if str(os.fsdecode(path) if isinstance(path, bytes) else path).startswith("/proc"):
                raise FileNotFoundError(2, "No such file or directory", str(path))
            return real(path, *args, **kwargs)

        return call

    for name in ("listdir", "readlink", "scandir", "stat", "lstat"):
        monkeypatch.setattr(os, name, refusing(getattr(os, name)))
    monkeypatch.setattr(builtins, "open", refusing(builtins.open))


@pytest.mark.parametrize("proc", ["readable", "hidden"])
def test_a_commit_made_when_the_lock_is_released_keeps_memgits_capture(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch, proc: str
) -> None:
    if proc == "hidden":
        _hide_proc(monkeypatch)
    (repo_path / "note.txt").write_text("a person's note\n", "utf-8")
    git(repo_path, "add", "note.txt")
    lock = repo_path / ".git" / "index.lock"
    committed = threading.Event()

    def person_lets_go_and_commits() -> None:
        # The person's `git add` finishes, and their `git commit` follows at once (run
        # again while memgit holds the lock, as a person does when git says so).
        lock.unlink()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done = subprocess.run(
                ["git", "-C", str(repo_path), "commit", "-q", "--no-verify", "-m", "note"],
                capture_output=True,
                check=False,
            )
            if done.returncode == 0:
                committed.set()
                return
            time.sleep(0.01)

    real_enter = worktree.IndexLock.__enter__
    calls = []

    def taken_while_a_git_add_holds_it(self: worktree.IndexLock) -> worktree.IndexLock:
        if not calls:
            lock.write_bytes(b"")  # a person's `git add` takes the lock right now
            threading.Timer(1.0, person_lets_go_and_commits).start()
        calls.append(1)
        return real_enter(self)

    monkeypatch.setattr(worktree.IndexLock, "__enter__", taken_while_a_git_add_holds_it)
    monkeypatch.setattr(worktree, "LOCK_WAIT", 10.0)

    outcome = MemoryRepo.open(repo_path).capture(make_turn(0, "Remember the wiki moved."))

    assert committed.wait(15)
    tree = git(repo_path, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert outcome.path in tree, "the person's commit undid memgit's capture"
    assert "note.txt" in tree
    assert git(repo_path, "status", "--porcelain") == ""
    assert not lock.exists()
