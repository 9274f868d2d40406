"""Shared fixtures: isolated git configuration, fixed identities and dates, real repos."""

from __future__ import annotations

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
