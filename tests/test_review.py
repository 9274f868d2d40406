"""Review end to end: runs proposed on branches, listed, shown, approved, rejected, pushed.

Real repositories in tmp_path, checked with the git CLI; a bare repository as the
remote. The Gate is the host backend (answers built by test_process's helpers) or
the offline rules backend.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_process import (
    STAGING,
    answer,
    assert_clean,
    capture,
    configure,
    cpath,
    head,
    memories,
    open_repo,
    prompt_units,
    ref,
    refs,
    unit,
    user_turn,
)

from memgit import MemgitError, MemoryRepo
from memgit.memory import Memory

from support import everything_git_keeps, git, memgit_cli, memgit_in_process, snapshot

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


def process_json(path: Path, *args: str, input: bytes | None = None) -> dict[str, Any]:
    """`memgit process --json ARGS` (must succeed), its output parsed. The command line runs
    in this process (the same parser and error boundary, no interpreter start per call:
    these tests call it and `review` some 60 times); the program itself is run by
    docs/review.md (test_docs_run) and the verify calls here."""
    done = memgit_in_process("-C", str(path), "process", "--json", *args, input=input)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    return dict(json.loads(done.stdout))


def review_cli(path: Path, *args: str) -> Any:
    done = memgit_in_process("-C", str(path), "review", *args)
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


def review_run(path: Path, *args: str) -> Any:
    """`memgit review ARGS`, whatever its status (its command line, in this process)."""
    return memgit_in_process("-C", str(path), "review", *args)


def review_json(path: Path, *args: str) -> Any:
    done = review_run(path, *args, "--json")
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def assert_verified(path: Path) -> None:
    done = memgit_cli("-C", str(path), "verify", "--all")
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


def assert_error(done: Any, code: str, status: int, says: str) -> None:
    stderr = done.stderr.decode()
    assert done.returncode == status, stderr
    assert stderr.startswith(f"error[{code}]: "), stderr
    assert says in stderr.splitlines()[0], stderr
    assert "Traceback" not in stderr


def update(path: Path, old: Memory, seq: int) -> None:
    """Update ``old`` on the branch (UPDATE is not reviewed by the fixture's policy)."""
    capture(path, user_turn(seq, "Actually staging moved to port 6543 last week."))
    text = answer(
        path,
        {
            "action": "UPDATE",
            "target": old.id,
            "type": "fact",
            "scope": "user",
            "title": "The staging database listens on port 6543",
            "body": "Staging moved from 5433 to 6543.",
            "claims": [(unit(seq), "staging moved to port 6543")],
        },
    )
    (run,) = open_repo(path).process(gate_output=text).runs
    assert run.proposal is None


# ---------------------------------------------------------------- approve


def test_approve_on_the_proposals_base_fast_forwards(reviewed: tuple[Path, Memory]) -> None:
    """The branch is still the proposal's base: it moves to the proposal's commit, and the
    run ref, the retired ref and refs/memgit/applied/<id> are set with it."""
    path, old = reviewed
    run_id, _ = propose(path, old)
    proposal = ref(path, f"{PROPOSALS}{run_id}")
    base = head(path)
    data = review_json(path, "approve", run_id)
    assert data["commit"] == proposal and data["how"] == "fast-forward"
    assert head(path) == proposal
    assert ref(path, f"refs/memgit/runs/{run_id}") == proposal
    assert ref(path, f"refs/memgit/retired/{old.id}") == base
    assert ref(path, f"refs/memgit/applied/{run_id}") == proposal
    assert refs(path, PROPOSALS) == {}
    assert not (path / old.path).exists()
    assert review_json(path, "list") == []
    (shown,) = review_json(path, "list", "--all")
    assert shown["run_id"] == run_id and shown["state"] == "applied"
    assert_verified(path)
    assert_clean(path)


def test_approve_after_another_change_merges(reviewed: tuple[Path, Memory]) -> None:
    """The branch moved on, but not where the proposal writes: a merge commit whose
    first parent is the tip and whose tree is the tip plus the proposal's changes."""
    path, old = reviewed
    run_id, _ = propose(path, old)
    proposal = ref(path, f"{PROPOSALS}{run_id}")
    capture(path, user_turn(2, "From now on, write commit messages in English."))
    open_repo(path).process()
    tip = head(path)
    data = review_json(path, "approve", run_id)
    assert data["how"] == "merge"
    parents = git(path, "log", "-1", "--format=%P").split()
    assert parents == [tip, proposal]
    assert git(path, "diff", "--name-only", f"{tip}..{proposal}", "--", "memories") != ""
    expected = set(git(path, "ls-tree", "-r", "--name-only", tip).split())
    expected -= {old.path}
    expected |= set(git(path, "ls-tree", "-r", "--name-only", str(proposal)).split()) - {old.path}
    assert set(git(path, "ls-tree", "-r", "--name-only", "HEAD").split()) == expected
    assert ref(path, f"refs/memgit/runs/{run_id}") == proposal
    assert old.id not in memories(path)
    assert_verified(path)
    assert_clean(path)


def test_approve_after_the_target_changed_stops_then_rebase_applies(
    reviewed: tuple[Path, Memory],
) -> None:
    """Acceptance (issue 13): the proposal's target was updated on the branch since. The
    approve is a conflict naming the file, and leaves branch and proposal exactly as
    they were; --rebase replays the stored Gate answer on the new tip."""
    path, old = reviewed
    run_id, _ = propose(path, old)
    update(path, old, 2)
    before = snapshot(path)
    done = review_run(path, "approve", run_id)
    assert_error(done, "proposal-stale", 4, old.path)
    assert "--rebase" in done.stderr.decode()
    assert snapshot(path) == before
    tip = head(path)
    data = review_json(path, "approve", run_id, "--rebase")
    assert data["how"] == "rebase"
    assert git(path, "log", "-1", "--format=%P").split() == [tip]
    (new,) = memories(path).values()
    assert new.id != old.id and [(s.id, s.commit) for s in new.supersedes] == [(old.id, tip)]
    assert ref(path, f"refs/memgit/retired/{old.id}") == tip
    assert ref(path, f"refs/memgit/runs/{run_id}") == head(path)
    assert review_json(path, "list") == []
    assert_verified(path)
    assert_clean(path)


def test_rebase_onto_a_tip_without_the_target_is_a_clear_error(repo_path: Path) -> None:
    """The target was retracted on the branch since: replaying cannot supersede it."""
    capture(repo_path, user_turn(0, STAGING))
    open_repo(repo_path).process()
    configure(repo_path, review={"actions": ["SUPERSEDE"]})
    (old,) = memories(repo_path).values()
    run_id, _ = propose(repo_path, old)
    capture(repo_path, user_turn(2, "Forget what I said about the staging port, it was wrong."))
    text = answer(
        repo_path,
        {
            "action": "RETRACT",
            "target": old.id,
            "claims": [(unit(2), "what I said about the staging port")],
        },
    )
    open_repo(repo_path).process(gate_output=text)
    before = snapshot(repo_path)
    done = review_run(repo_path, "approve", run_id, "--rebase")
    assert_error(done, "proposal-target-gone", 4, old.id)
    assert snapshot(repo_path) == before


def test_approve_only_some_candidates_defers_the_rest(repo_path: Path) -> None:
    """--only applies the candidates named; the other's unit is DEFERRED, asked again."""
    configure(repo_path, review={"required": True})
    capture(repo_path, user_turn(0, "Remember that the staging database listens on port 5433."))
    capture(repo_path, user_turn(1, "Remember that I prefer dark roast coffee."))
    text = answer(
        repo_path,
        {
            "action": "CREATE",
            "type": "fact",
            "scope": "project",
            "title": "Staging listens on 5433",
            "body": "The staging database port.",
            "claims": [(unit(0), "the staging database listens on port 5433")],
        },
        {
            "action": "CREATE",
            "type": "preference",
            "scope": "user",
            "title": "Dark roast coffee",
            "body": "Prefers dark roast.",
            "claims": [(unit(1), "I prefer dark roast coffee")],
        },
    )
    data = process_json(repo_path, "--gate-output", "-", input=text.encode())
    run_id = data["runs"][0]["run_id"]
    result = review_json(repo_path, "approve", run_id, "--only", "c2")
    assert result["how"] == "rebase"
    assert [m.title for m in memories(repo_path).values()] == ["Dark roast coffee"]
    assert [u["unit_id"] for u in prompt_units(repo_path) if u["can_support"]] == [unit(0)]
    assert_verified(repo_path)
    assert_clean(repo_path)


def test_unknown_proposal_is_a_usage_error(reviewed: tuple[Path, Memory]) -> None:
    path, _ = reviewed
    before = snapshot(path)
    for args in (("approve", "nope"), ("show", "nope"), ("reject", "nope", "--reason", "x")):
        assert_error(review_run(path, *args), "unknown-proposal", 2, "nope")
    assert snapshot(path) == before


# ---------------------------------------------------------------- reject


def test_reject_keeps_the_proposal_and_its_reason(reviewed: tuple[Path, Memory]) -> None:
    """The branch moves under refs/memgit/rejected/<id> (its commit still reachable), the
    reason is recorded on top and listed; its units are asked again only when asked."""
    path, old = reviewed
    run_id, _ = propose(path, old)
    proposal = ref(path, f"{PROPOSALS}{run_id}")
    tip = head(path)
    data = review_json(path, "reject", run_id, "--reason", "Staging still exists.")
    rejected = f"refs/memgit/rejected/{run_id}"
    assert data["ref"] == rejected
    assert git(path, "rev-parse", f"{rejected}^").strip() == proposal
    assert git(path, "merge-base", "--is-ancestor", str(proposal), rejected, check=False) == ""
    assert refs(path, PROPOSALS) == {} and head(path) == tip
    assert review_json(path, "list") == []
    (shown,) = review_json(path, "list", "--all")
    assert (shown["state"], shown["reason"]) == ("rejected", "Staging still exists.")
    assert review_json(path, "show", run_id)["reason"] == "Staging still exists."
    assert process_json(path)["runs"] == []
    again = process_json(path, "--include-rejected")
    (run,) = again["runs"]
    assert run["captures"] == [cpath(1)]
    assert_verified(path)
    assert_clean(path)


# ---------------------------------------------------------------- show and list


def test_list_shows_counts_age_and_backend(reviewed: tuple[Path, Memory]) -> None:
    path, old = reviewed
    run_id, _ = propose(path, old)
    (item,) = review_json(path, "list")
    assert item["run_id"] == run_id and item["state"] == "open"
    assert item["counts"] == {"SUPERSEDE": 1} and item["backend"] == "host"
    assert isinstance(item["age_seconds"], int)
    text = review_run(path, "list").stdout.decode()
    assert run_id in text and "1 superseded" in text and "host" in text


def test_show_gives_memories_quotes_turns_and_the_diff(reviewed: tuple[Path, Memory]) -> None:
    path, old = reviewed
    run_id, _ = propose(path, old)
    data = review_json(path, "show", run_id)
    (decision,) = data["decisions"]
    assert decision["action"] == "SUPERSEDE" and decision["target"] == old.id
    assert decision["memory"]["title"] == "Every branch gets a preview environment"
    (source,) = decision["sources"]
    assert source["quote"] == "replaced staging with a preview environment per branch"
    assert source["turn"]["messages"][0]["content"].startswith("We replaced staging")
    assert f"-{old.path}".replace("-", "--- a/", 1) in data["diff"]
    assert "+title: Every branch gets a preview environment" in data["diff"]
    text = review_run(path, "show", run_id).stdout.decode()
    assert '"replaced staging with a preview environment per branch"' in text
    assert "user: We replaced staging" in text and "diff --git" in text


# ---------------------------------------------------------------- push and merge elsewhere


def shared_proposal(a: Path, old: Memory, tmp_path: Path) -> tuple[Path, str]:
    """A bare remote for clone ``a``, and a proposal superseding ``old`` pushed to it
    (``review push``) after the branch with the proposal's capture: (remote, run id)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(a, "remote", "add", "origin", str(remote))
    git(a, "push", "-q", "-u", "origin", "main")
    run_id, _ = propose(a, old)
    git(a, "push", "-q", "origin", "main")  # the proposal's capture
    review_json(a, "push", run_id)
    return remote, run_id


def clone(remote: Path, where: Path) -> Path:
    git(where.parent, "clone", "-q", str(remote), str(where))
    return where


def test_push_sends_the_proposal_branch(reviewed: tuple[Path, Memory], tmp_path: Path) -> None:
    path, old = reviewed
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(path, "remote", "add", "origin", str(remote))
    run_id, _ = propose(path, old)
    data = review_json(path, "push", run_id)
    assert data["remote"] == "origin"
    listed = git(remote, "for-each-ref", "--format=%(refname) %(objectname)")
    assert f"{PROPOSALS}{run_id} {ref(path, PROPOSALS + run_id)}" in listed
    before = snapshot(path)
    done = review_run(path, "push", run_id, "nowhere")
    assert_error(done, "remote-failed", 5, "nowhere")
    assert snapshot(path) == before


def test_a_proposal_merged_elsewhere_counts_as_applied(
    reviewed: tuple[Path, Memory], tmp_path: Path
) -> None:
    """Acceptance (issue 13): pushed from clone A, merged with plain `git merge --no-ff` in
    clone B and pushed, pulled back into A: applied, not open, its units not proposed
    again, and verify passes."""
    a, old = reviewed
    remote, run_id = shared_proposal(a, old, tmp_path)
    b = clone(remote, tmp_path / "b")
    assert prompt_units(b) == []  # B fetched A's proposal: its units are not asked again
    git(b, "fetch", "-q", "origin", f"memgit/proposals/{run_id}")
    git(b, "merge", "-q", "--no-ff", "-m", "Merge proposal", "FETCH_HEAD")
    git(b, "push", "-q", "origin", "main")
    git(a, "pull", "-q", "--no-rebase", "origin", "main")
    assert review_json(a, "list") == []
    (shown,) = review_json(a, "list", "--all")
    assert (shown["run_id"], shown["state"]) == (run_id, "applied")
    assert process_json(a)["runs"] == []
    assert prompt_units(a) == []
    assert_verified(a)
    assert_clean(a)


def test_review_refusals_change_nothing(reviewed: tuple[Path, Memory]) -> None:
    """A closed proposal, an unknown candidate, a bad reason and a reason holding a
    secret are refused by name; branch, proposal and refs stay as they were (the
    secret never reaches an object)."""
    path, old = reviewed
    run_id, _ = propose(path, old)
    before = snapshot(path)
    assert_error(review_run(path, "approve", run_id, "--only", "c9"), "unknown-candidate", 2, "c9")
    assert_error(review_run(path, "reject", run_id, "--reason", "  "), "invalid-reason", 3, "")
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    done = review_run(path, "reject", run_id, "--reason", f"token {secret}")
    assert_error(done, "secret-detected", 3, "")
    for where, data in everything_git_keeps(path).items():
        assert secret.encode() not in data, where
    assert snapshot(path) == before
    review_json(path, "approve", run_id)
    after = snapshot(path)
    assert_error(review_run(path, "approve", run_id), "proposal-closed", 4, run_id)
    assert_error(review_run(path, "reject", run_id, "--reason", "late"), "proposal-closed", 4, "")
    assert_error(review_run(path, "push", run_id), "proposal-closed", 4, run_id)
    assert snapshot(path) == after


def test_print_prompt_includes_rejected_units_only_when_asked(
    reviewed: tuple[Path, Memory],
) -> None:
    path, old = reviewed
    run_id, _ = propose(path, old)
    review_json(path, "reject", run_id, "--reason", "Staging still exists.")
    assert prompt_units(path) == []
    done = memgit_cli("-C", str(path), "process", "--print-prompt", "--json", "--include-rejected")
    assert done.returncode == 0, done.stderr.decode()
    units = json.loads(done.stdout)["units"]
    assert [u["unit_id"] for u in units if u["can_support"]] == [unit(1)]


def test_a_branch_that_is_no_proposal_is_listed_as_unreadable(
    reviewed: tuple[Path, Memory],
) -> None:
    """A person's branch under memgit/proposals/ holding no run record neither breaks
    the listing nor processing; approving it says why it cannot be."""
    path, old = reviewed
    run_id, _ = propose(path, old)
    git(path, "branch", "memgit/proposals/junk")
    listed = {item["run_id"]: item for item in review_json(path, "list")}
    assert listed[run_id]["counts"] == {"SUPERSEDE": 1}
    assert "no run record" in listed["junk"]["error"]
    assert "unreadable" in review_run(path, "list").stdout.decode()
    assert process_json(path)["runs"] == []
    assert_error(review_run(path, "approve", "junk"), "not-a-proposal", 2, "junk")


def test_the_hooks_check_a_merged_proposal_as_verify_checks_the_merge(
    reviewed: tuple[Path, Memory],
) -> None:
    """`git merge --no-ff --no-commit` of a proposal, then `git commit`: the pre-commit
    hooks see the staged merge (MERGE_HEAD) and check only what differs from both
    parents, so the proposal's memories are not refused as unexplained."""
    path, old = reviewed
    run_id, _ = propose(path, old)
    capture(path, user_turn(2, "From now on, write commit messages in English."))
    open_repo(path).process()
    git(path, "merge", "-q", "--no-ff", "--no-commit", f"memgit/proposals/{run_id}")
    staged = git(path, "diff", "--cached", "--name-only").split()
    assert any(name.startswith("memories/") for name in staged)
    for hook, names in [
        (hook, names)
        for hook in ("evidence", "supersession", "schemas", "secrets")
        for names in ([], staged)  # pre-commit passes the staged files' names
    ]:
        done = subprocess.run(
            [str(Path(sys.executable).parent / f"memgit-check-{hook}"), *names],
            cwd=path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (hook, done.stderr)
    git(path, "commit", "-q", "-m", "Merge proposal")
    assert review_json(path, "list") == []
    assert_verified(path)


def test_sync_records_the_refs_of_a_proposal_merged_on_the_host(
    reviewed: tuple[Path, Memory], tmp_path: Path
) -> None:
    """A proposal merged with a plain `git merge` (as a host's merge button does) comes
    without its run ref and retired ref; the next `memgit sync` records both, as approve
    would have, and pushes them so every clone has them."""
    a, old = reviewed
    remote, run_id = shared_proposal(a, old, tmp_path)
    proposal = ref(a, PROPOSALS + run_id)
    b = clone(remote, tmp_path / "b")
    git(b, "fetch", "-q", "origin", f"memgit/proposals/{run_id}")
    git(b, "merge", "-q", "--no-ff", "-m", "Merge proposal", "FETCH_HEAD")
    git(b, "push", "-q", "origin", "main")
    with MemoryRepo.open(a) as repo:
        result = repo.sync()
    retired = f"refs/memgit/retired/{old.id}"
    assert result.refs_recorded == tuple(sorted([f"refs/memgit/runs/{run_id}", retired]))
    assert ref(a, f"refs/memgit/runs/{run_id}") == proposal
    assert ref(a, retired) == git(a, "rev-parse", f"{proposal}^").strip()
    remote_refs = git(remote, "for-each-ref", "--format=%(refname)", "refs/memgit/")
    assert f"refs/memgit/runs/{run_id}" in remote_refs and retired in remote_refs
    assert_verified(a)


@pytest.mark.parametrize("verdict", ["approve", "reject"])
def test_a_commit_pushed_to_the_proposal_while_it_is_decided_is_not_lost(
    reviewed: tuple[Path, Memory], monkeypatch: pytest.MonkeyPatch, verdict: str
) -> None:
    """Approving or rejecting deletes the proposal branch. A commit someone pushed to it
    after memgit read it (here, just before memgit publishes) is not the reviewed
    proposal: nothing is published (ref-changed) and their commit stays on the branch."""
    import memgit.review.approve
    import memgit.review.reject
    import memgit.store.engine

    path, old = reviewed
    run_id, _ = propose(path, old)
    branch = f"{PROPOSALS}{run_id}"
    tip, before_refs = head(path), git(path, "for-each-ref", "refs/memgit/")
    pushed: list[str] = []

    def someone_pushes_first(*args: Any, **kwargs: Any) -> Any:
        tree = git(path, "rev-parse", f"{branch}^{{tree}}").strip()
        commit = git(path, "commit-tree", tree, "-p", branch, "-m", "a fix-up").strip()
        git(path, "update-ref", branch, commit)
        pushed.append(commit)
        return memgit.store.engine.publish(*args, **kwargs)

    module = memgit.review.approve if verdict == "approve" else memgit.review.reject
    monkeypatch.setattr(module, "publish", someone_pushes_first)
    repo = MemoryRepo.open(path)
    with pytest.raises(MemgitError) as refused:
        if verdict == "approve":
            repo.review_approve(run_id)
        else:
            repo.review_reject(run_id, reason="not now")
    assert refused.value.code == "ref-changed"
    assert git(path, "rev-parse", branch).strip() == pushed[0]
    assert head(path) == tip
    assert git(path, "for-each-ref", "refs/memgit/") == before_refs


def test_a_colleagues_fetched_proposal_is_listed_and_approved_here(
    reviewed: tuple[Path, Memory], tmp_path: Path
) -> None:
    """Clone A proposes and pushes the proposal; clone B, after a fetch, lists it (under
    its remote-tracking ref), shows it and approves it: the memory lands on B's branch,
    the applied ref records it, and B leaves the remote's ref to the remote."""
    a, old = reviewed
    remote, run_id = shared_proposal(a, old, tmp_path)
    b = clone(remote, tmp_path / "b")
    fetched = f"refs/remotes/origin/memgit/proposals/{run_id}"
    (listed,) = review_json(b, "list")
    assert (listed["run_id"], listed["state"], listed["ref"]) == (run_id, "open", fetched)
    assert review_json(b, "show", run_id)["run_id"] == run_id
    tip = git(b, "rev-parse", fetched).strip()

    review_json(b, "approve", run_id)

    assert git(b, "rev-parse", f"refs/memgit/applied/{run_id}").strip() == tip
    assert git(b, "rev-parse", fetched).strip() == tip  # the remote's to delete
    assert old.id not in {m.id for m in memories(b).values()}  # superseded here
    assert review_json(b, "list") == []
    assert_verified(b)
    assert_clean(b)
