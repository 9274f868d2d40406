"""``recall --as-of``: the memory as it was at a commit, before and after a supersession.

An index stamped with HEAD is taken back to an older commit by undoing the changes in
between, retired memories included; that path once called a method on a local list
(exit 70), so it is exercised here through the API and the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_process import answer, capture, open_repo, unit, user_turn

from memgit import MemoryRepo

from support import git, memgit_cli

OLD = "Remember that staging uses Postgres 16."
NEW = "Staging moved to Postgres 17 last night."


@pytest.fixture
def superseded(repo_path: Path) -> tuple[Path, str, str, str, str]:
    """(repo, commit before, commit after, old id, new id) around a SUPERSEDE."""
    capture(repo_path, user_turn(0, OLD))
    open_repo(repo_path).process()
    before = git(repo_path, "rev-parse", "HEAD").strip()
    (old,) = [m.memory.id for m in open_repo(repo_path).recall("Postgres").memories]
    capture(repo_path, user_turn(1, NEW))
    replace = {
        "action": "SUPERSEDE",
        "target": old,
        "type": "fact",
        "scope": "user",
        "title": "Staging uses Postgres 17",
        "body": "Staging runs Postgres 17.",
        "claims": [(unit(1), "Staging moved to Postgres 17")],
    }
    (run,) = open_repo(repo_path).process(gate_output=answer(repo_path, replace)).runs
    after = git(repo_path, "rev-parse", "HEAD").strip()
    (decision,) = run.decisions
    return repo_path, before, after, old, decision.memory_id


def active(pack: object) -> list[str]:
    return [hit.memory.id for hit in pack.memories if hit.status == "active"]  # type: ignore[attr-defined]


def test_as_of_before_and_after_a_supersession(
    superseded: tuple[Path, str, str, str, str],
) -> None:
    path, before, after, old, new = superseded
    repo = MemoryRepo.open(path)
    assert active(repo.recall("Postgres")) == [new]
    assert active(repo.recall("Postgres", as_of=before)) == [old]
    assert active(repo.recall("Postgres", as_of=after)) == [new]
    assert active(repo.recall("Postgres")) == [new]  # the present is untouched


@pytest.mark.parametrize("which", ["before", "after"])
def test_cli_as_of_around_a_supersession(
    superseded: tuple[Path, str, str, str, str], which: str
) -> None:
    path, before, after, old, new = superseded
    rev, expected = (before, old) if which == "before" else (after, new)
    done = memgit_cli("-C", str(path), "recall", "Postgres", "--as-of", rev, "--json")
    assert done.returncode == 0, done.stderr.decode()
    found = json.loads(done.stdout)["memories"]
    assert [hit["id"] for hit in found if hit["status"] == "active"] == [expected]
