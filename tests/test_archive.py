"""Archived turns: a capture that left the inbox stays recallable, from history.

Retention removes processed captures from the tree; recall keeps finding them, marked
archived with the commit that removed them, in the index refreshed step by step and in
one rebuilt from nothing, and ``--as-of`` sees each capture as it was at that commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_process import capture, configure, cpath, days_later, open_repo, user_turn

from memgit import MemoryRepo
from memgit.jsonio import json_data

from recall_fixtures import comparable
from support import git, memgit_cli

ROTATE = "The deploy key rotates every Thursday at noon."
# A question: the rules Gate keeps no memory of it, so the turn itself is what recall finds.
BUCKET = "Do backups go to the cold storage bucket in Frankfurt?"
OLD = "2025-09-30T10:00:00Z"  # two months before tests/conftest.py's fixed "now"
QUERIES = ("when does the deploy key rotate", "where do backups go", "Thursday Frankfurt")


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD").strip()


def archived_of(pack: object) -> dict[str, str | None]:
    """Capture path -> the commit that removed it (None: live) of each turn of ``pack``
    (a turn is found by its own words, or by the words of the turn before or after)."""
    return {hit.capture: hit.removed_in for hit in pack.turns}  # type: ignore[attr-defined]


def fresh(path: Path) -> list[str]:
    """Answers of an index rebuilt from nothing (from HEAD and its history)."""
    repo = MemoryRepo.open(path)
    repo.rebuild_index()
    return [comparable(repo.recall(query, k=5)) for query in QUERIES]


def answers(repo: MemoryRepo) -> list[str]:
    return [comparable(repo.recall(query, k=5)) for query in QUERIES]


@pytest.fixture
def expired(repo_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, str]:
    """(repo, the commit before retention removed both captures, the removing commit);
    the captures are dated two months back and processed on the fixed "now"."""
    configure(repo_path, inbox={"retention_days": 30})
    capture(repo_path, user_turn(0, ROTATE, timestamp=OLD), user_turn(1, BUCKET, timestamp=OLD))
    first = open_repo(repo_path).process()
    assert first.runs and first.expired == ()
    before = head(repo_path)
    days_later(monkeypatch, 31)
    later = open_repo(repo_path).process()
    assert later.expired == (cpath(0), cpath(1)) and later.cleanup_commit == head(repo_path)
    return repo_path, before, head(repo_path)


def test_processed_today_stays_and_processed_31_days_ago_is_recalled_as_archived(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An old conversation processed today stays in the tree (and recall, live); 31 days
    after processing it leaves the tree and recall still finds it, marked archived."""
    configure(repo_path, inbox={"retention_days": 30})
    capture(repo_path, user_turn(0, ROTATE, timestamp=OLD))
    repo = open_repo(repo_path)
    assert repo.process().expired == ()
    assert archived_of(repo.recall("deploy key rotate")) == {cpath(0): None}
    days_later(monkeypatch, 31)
    result = open_repo(repo_path).process()
    assert result.expired == (cpath(0),)
    assert git(repo_path, "ls-tree", "-r", "--name-only", "HEAD", "--", "inbox") == ""
    pack = repo.recall("deploy key rotate")  # the same index, refreshed by tree diff
    assert archived_of(pack) == {cpath(0): result.cleanup_commit}
    (hit,) = pack.turns
    assert hit.snippet and "rotates" in hit.snippet
    assert (
        hit.turn.blob
        == git(repo_path, "rev-parse", f"{result.cleanup_commit}~1:{cpath(0)}").strip()
    )
    data = json_data(pack)
    assert data["turns"][0]["archived"] is True
    assert data["turns"][0]["removed_in"] == result.cleanup_commit
    assert data["trace"]["archived_turns"] == 1


def test_archived_turns_are_rebuilt_from_history_and_counted(
    expired: tuple[Path, str, str],
) -> None:
    path, _, removal = expired
    repo = MemoryRepo.open(path)
    stepwise = answers(repo)
    assert fresh(path) == stepwise
    status = repo.index_status()
    assert status.counts["archived"] == 2 and status.counts["captures"] == 2
    assert archived_of(repo.recall("Frankfurt backups"))[cpath(1)] == removal


def test_as_of_sees_a_capture_as_of_its_commits(expired: tuple[Path, str, str]) -> None:
    path, before, removal = expired
    repo = MemoryRepo.open(path)
    assert archived_of(repo.recall("deploy key rotate", as_of=before))[cpath(0)] is None
    assert archived_of(repo.recall("deploy key rotate", as_of=removal))[cpath(0)] == removal
    first = git(path, "rev-list", "--max-parents=0", "HEAD").strip()
    assert archived_of(repo.recall("deploy key rotate", as_of=first)) == {}
    assert archived_of(repo.recall("deploy key rotate"))[cpath(0)] == removal


def test_cli_says_archived_in_text_and_json(expired: tuple[Path, str, str]) -> None:
    path, _, removal = expired
    done = memgit_cli("recall", "deploy", "key", "rotate", cwd=path)
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("utf-8")
    assert f"archived: removed from the inbox in {removal[:12]}" in text
    assert "archived (removed from the inbox, read from history): 2 turns" in text
    done = memgit_cli("recall", "deploy", "key", "rotate", "--json", cwd=path)
    first = json.loads(done.stdout)["turns"][0]
    assert (first["archived"], first["removed_in"], first["capture"]) == (True, removal, cpath(0))


def _revert(path: Path) -> None:
    git(path, "revert", "--no-edit", "HEAD")


def _reset_before_removal(path: Path) -> None:
    git(path, "reset", "-q", "--hard", "HEAD~1")


def _reset_before_capture(path: Path) -> None:
    first = git(path, "rev-list", "--max-parents=0", "HEAD").strip()
    git(path, "reset", "-q", "--hard", first)


def _amend_removal(path: Path) -> None:
    git(path, "commit", "-q", "--amend", "-m", "inbox: remove two captures, reworded")


def _hand_removal_on_a_branch(path: Path) -> None:
    git(path, "switch", "-q", "-c", "side", "HEAD~1")
    git(path, "rm", "-q", cpath(1))
    git(path, "commit", "-q", "-m", "remove one capture by hand")


def _capture_after(path: Path) -> None:
    capture(path, user_turn(2, "The deploy key is kept in the vault.", timestamp=OLD))


OPERATIONS = {
    "revert": (_revert, {cpath(0): None, cpath(1): None}),
    "reset-before-removal": (_reset_before_removal, {cpath(0): None, cpath(1): None}),
    "reset-before-capture": (_reset_before_capture, {}),
    "amend-removal": (_amend_removal, "amended"),
    "hand-removal-on-a-branch": (_hand_removal_on_a_branch, "branch"),
    "capture-after": (_capture_after, None),
}


@pytest.mark.parametrize("operation", OPERATIONS, ids=list(OPERATIONS))
def test_after_a_git_operation_the_archive_equals_a_rebuilt_one(
    expired: tuple[Path, str, str], operation: str
) -> None:
    """Whatever moves HEAD, the index refreshed step by step answers as one rebuilt
    from HEAD's history: a capture that comes back is live, one this history never had
    is gone, and an amended removal names the new commit."""
    path, _, removal = expired
    repo = MemoryRepo.open(path)
    assert archived_of(repo.recall("deploy key rotate"))[cpath(0)] == removal
    action, expected = OPERATIONS[operation]
    action(path)
    stepwise = answers(repo)
    found = archived_of(repo.recall("deploy key rotate"))
    if expected == "amended":
        assert found == {cpath(0): head(path), cpath(1): head(path)} and head(path) != removal
    elif expected == "branch":
        assert found == {cpath(0): None, cpath(1): head(path)}
    elif expected is None:
        assert found[cpath(0)] == removal
    else:
        assert found == expected
    assert fresh(path) == stepwise
