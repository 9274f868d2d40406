"""Review end to end: runs proposed on branches, listed, shown, approved, rejected, pushed.

Real repositories in tmp_path, checked with the git CLI; a bare repository as the
remote. The Gate is the host backend (answers built by test_process's helpers) or
the offline rules backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_process import (
    STAGING,
    answer,
    assert_clean,
    capture,
    configure,
    head,
    memories,
    open_repo,
    process_json,
    prompt_units,
    ref,
    refs,
    unit,
    user_turn,
)

from memgit.memory import Memory

from support import git, memgit_cli, snapshot

PROPOSALS = "refs/heads/memgit/proposals/"


@pytest.fixture
def reviewed(repo_path: Path) -> tuple[Path, Memory]:
    """One memory (a rules CREATE, not reviewed), then SUPERSEDE and RETRACT reviewed."""
    capture(repo_path, user_turn(0, STAGING))
    open_repo(repo_path).process()
    configure(repo_path, review={"actions": ["SUPERSEDE", "RETRACT"]})
    (memory,) = memories(repo_path).values()
    return repo_path, memory


def supersede(path: Path, old: Memory, seq: int = 1) -> str:
    """Capture turn ``seq`` and the Gate answer superseding ``old`` with it."""
    capture(path, user_turn(seq, "We replaced staging with a preview environment per branch."))
    return answer(
        path,
        {
            "action": "SUPERSEDE",
            "target": old.id,
            "type": "fact",
            "scope": "project",
            "title": "Every branch gets a preview environment",
            "body": "Staging was replaced by per-branch previews.",
            "claims": [(unit(seq), "replaced staging with a preview environment per branch")],
        },
    )


def propose(path: Path, old: Memory) -> tuple[str, dict[str, Any]]:
    """Propose superseding ``old``: the run id and `memgit process --json`'s output."""
    text = supersede(path, old)
    data = process_json(path, "--gate-output", "-", input=text.encode())
    (run,) = data["runs"]
    return str(run["run_id"]), data


def review_cli(path: Path, *args: str) -> Any:
    done = memgit_cli("-C", str(path), "review", *args)
    assert done.returncode == 0, done.stderr.decode()
    return done


# ---------------------------------------------------------------- proposing


def test_a_covered_run_is_proposed_and_the_branch_stays(reviewed: tuple[Path, Memory]) -> None:
    """A SUPERSEDE under `actions: [SUPERSEDE, RETRACT]` commits on
    memgit/proposals/<run-id> off the tip; the branch, the checkout, the retired ref and
    the run ref are as they were, and the proposal passes verify."""
    path, old = reviewed
    text = supersede(path, old)
    tip = head(path)
    before = snapshot(path)
    data = process_json(path, "--gate-output", "-", input=text.encode())
    run_id = data["runs"][0]["run_id"]
    assert data["proposed"] == 1
    assert data["runs"][0]["proposal"] == f"memgit/proposals/{run_id}"
    branch = f"{PROPOSALS}{run_id}"
    assert git(path, "rev-parse", f"{branch}~1").strip() == tip
    after = snapshot(path)
    assert {**after, "refs": None} == {**before, "refs": None}
    assert set(refs(path)) - set(refs(path, PROPOSALS)) == set(
        line.split(" ", 1)[0] for line in str(before["refs"]).splitlines()
    )
    assert ref(path, f"refs/memgit/retired/{old.id}") is None
    assert ref(path, f"refs/memgit/runs/{run_id}") is None
    assert old.id in memories(path) and old.id not in memories(path, branch)
    done = memgit_cli("-C", str(path), "verify", f"HEAD..{branch}")
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    assert_clean(path)


def test_a_run_the_policy_does_not_cover_commits_to_the_branch(
    reviewed: tuple[Path, Memory],
) -> None:
    path, _ = reviewed
    capture(path, user_turn(1, "From now on, write commit messages in English."))
    data = process_json(path)
    assert data["proposed"] == 0 and data["runs"][0]["proposal"] is None
    assert refs(path, PROPOSALS) == {}
    assert len(memories(path)) == 2


def test_units_of_an_open_proposal_are_not_proposed_again(
    reviewed: tuple[Path, Memory],
) -> None:
    path, old = reviewed
    propose(path, old)
    assert prompt_units(path) == []
    assert process_json(path)["runs"] == []
    capture(path, user_turn(2, "From now on, write commit messages in English."))
    assert [u["unit_id"] for u in prompt_units(path) if u["can_support"]] == [unit(2)]
