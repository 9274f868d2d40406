"""Two clones that process the same captures with the same answer write the same bytes.

The run's id, record and memories carry the captures' time, not the clock's, so
independent processing of the same turns merges with plain ``git merge`` and no
conflict; retention still counts from when the run was committed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memgit import MemoryRepo
from memgit.state.rows import run_time

from support import git, make_turn

TURNS = [
    make_turn(0, "I prefer tabs over spaces in every Python file."),
    make_turn(1, "We decided to deploy on Fridays only after the tests pass."),
    make_turn(2, "Always run the linter before every commit."),
]


def _clone(origin: Path, path: Path) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(path))
    return path


def _process_at(path: Path, date: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_COMMITTER_DATE", date)
    monkeypatch.setenv("GIT_AUTHOR_DATE", date)
    with MemoryRepo.open(path) as repo:
        result = repo.process(backend="rules")
    assert result.runs


def _blobs(path: Path, top: str) -> dict[str, str]:
    listing = git(path, "ls-tree", "-r", "HEAD", top)
    return {line.split("\t")[1]: line.split()[2] for line in listing.splitlines()}


def test_the_same_captures_processed_in_two_clones_are_the_same_files(
    repo_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MemoryRepo.open(repo_path) as repo:
        repo.capture_many(TURNS)
    other = _clone(repo_path, tmp_path / "other")
    _process_at(repo_path, "@1796036000 +0000", monkeypatch)
    _process_at(other, "@1796039600 +0100", monkeypatch)  # an hour later, elsewhere

    for top in ("memories", "runs"):
        assert _blobs(repo_path, top) == _blobs(other, top) != {}
    # The commits differ (their times do); the histories merge with no conflict.
    assert git(repo_path, "rev-parse", "HEAD") != git(other, "rev-parse", "HEAD")
    git(repo_path, "fetch", "-q", str(other), "main:refs/remotes/other/main")
    git(repo_path, "merge", "-q", "--no-edit", "other/main")
    assert git(repo_path, "status", "--porcelain") == ""
    assert _blobs(repo_path, "memories") == _blobs(other, "memories")


def test_the_same_turn_captured_in_two_clones_merges(
    repo_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _clone(repo_path, tmp_path / "other")
    for path, date in ((repo_path, "@1796036000 +0000"), (other, "@1796036500 +0000")):
        monkeypatch.setenv("GIT_COMMITTER_DATE", date)
        with MemoryRepo.open(path) as repo:
            repo.capture_many(TURNS[:2])
        _process_at(path, date, monkeypatch)
    git(repo_path, "fetch", "-q", str(other), "main:refs/remotes/other/main")
    git(repo_path, "merge", "-q", "--no-edit", "other/main")
    assert _blobs(repo_path, "inbox") == _blobs(other, "inbox")
    assert _blobs(repo_path, "runs") == _blobs(other, "runs")


def test_retention_counts_from_the_runs_commit_not_the_conversation(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversation of a year ago processed now: the run is named by the conversation's
    time, and counted from its commit (its run ref), so the turns stay their period."""
    old = make_turn(0, "I prefer tabs over spaces in every Python file.")
    old["timestamp"] = "2025-11-30T10:00:00Z"
    with MemoryRepo.open(repo_path) as repo:
        repo.capture(old)
    _process_at(repo_path, "@1796036000 +0000", monkeypatch)
    (record,) = _blobs(repo_path, "runs")
    assert record.startswith("runs/2025/11/20251130T100000Z-")
    assert run_time(MemoryRepo.open(repo_path).git, record) == 1796036000
    git(repo_path, "update-ref", "-d", f"refs/memgit/runs/{Path(record).stem}")
    # Without its ref (a clone that never fetched it), the run counts from its id.
    assert run_time(MemoryRepo.open(repo_path).git, record) == 1764496800
