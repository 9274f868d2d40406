"""Shared fixtures: isolated git configuration, fixed identities and dates, real repos."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

FIXED_DATE = "@1764495000 +0000"


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the machine's git config; every commit has a fixed author and time."""
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
        "utf-8",
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test Person")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.com")
        monkeypatch.setenv(f"GIT_{role}_DATE", FIXED_DATE)
    monkeypatch.setenv("MEMGIT_LOCK_TIMEOUT", "10")


def git(path: Path, *args: str, check: bool = True) -> str:
    """Run the git CLI as a user would and return its stdout."""
    done = subprocess.run(
        ["git", "-C", str(path), *args], capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def memgit_cli(
    *args: str, cwd: Path | None = None, input: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``memgit`` command in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "memgit.cli.main", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env={**os.environ, **(env or {})},
        check=False,
        timeout=120,
    )


def snapshot(path: Path) -> dict[str, object]:
    """Everything a failed command must leave unchanged: refs, index, working tree."""
    refs = git(path, "for-each-ref", "--format=%(refname) %(objectname)")
    head = git(path, "symbolic-ref", "-q", "HEAD", check=False) + git(
        path, "rev-parse", "-q", "--verify", "HEAD", check=False
    )
    index = (path / ".git" / "index").read_bytes() if (path / ".git" / "index").exists() else b""
    files = {
        str(p.relative_to(path)): p.read_bytes() if p.is_file() and not p.is_symlink() else "link"
        for p in sorted(path.rglob("*"))
        if ".git" not in p.relative_to(path).parts and not p.is_dir()
    }
    return {"refs": refs, "head": head, "index": index, "files": files}


def make_turn(seq: int = 0, content: str = "hello", **fields: object) -> dict[str, object]:
    turn: dict[str, object] = {
        "source": "test-agent",
        "session": "s1",
        "seq": seq,
        "timestamp": "2026-11-30T10:00:00Z",
        "messages": [{"role": "user", "content": content}],
    }
    turn.update(fields)
    return turn


@pytest.fixture
def repo_path(tmp_path: Path) -> Path:
    from memgit import MemoryRepo

    path = tmp_path / "memory"
    MemoryRepo.init(path)
    return path


@pytest.fixture
def memrepo(repo_path: Path) -> Iterator[object]:
    from memgit import MemoryRepo

    yield MemoryRepo.open(repo_path)
