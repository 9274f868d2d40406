"""``memgit sync`` between real clones of a real bare remote.

Each clone captures and processes its own turns; sync fetches, joins (a
fast-forward or a checked merge commit), and pushes the branch with the
``refs/memgit/*`` the remote lacks. A conflict or an unreachable remote leaves
the branch, the checkout and the remote exactly as they were.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from remotes import remote_and_clones

from memgit import MemoryRepo
from memgit.errors import BackendError, ConflictError, UsageError

from support import git, make_turn, memgit_cli, snapshot


def _remote_and_clones(tmp_path: Path, *names: str) -> tuple[Path, list[Path]]:
    return remote_and_clones(tmp_path, *names, init=False)


def _turns(session: str, texts: list[str]) -> list[dict[str, object]]:
    return [make_turn(i, text, session=session) for i, text in enumerate(texts)]


def _work(path: Path, session: str, texts: list[str]) -> None:
    with MemoryRepo.open(path) as repo:
        repo.capture_many(_turns(session, texts))
        assert repo.process(backend="rules").runs


def _sync(path: Path):
    with MemoryRepo.open(path) as repo:
        return repo.sync()


def _unchanged(path: Path) -> dict[str, object]:
    """What a failed sync must leave as it was: everything but what the fetch brought
    (remote-tracking refs and sync's own ``refs/memgit-sync/``)."""
    state = snapshot(path)
    refs = str(state["refs"]).splitlines()
    state["refs"] = [r for r in refs if r.startswith(("refs/heads/", "refs/memgit/"))]
    return state


def _memgit_refs(path: Path) -> str:
    return git(path, "for-each-ref", "--format=%(refname) %(objectname)", "refs/memgit/")


def test_two_clones_converge_through_a_bare_remote(tmp_path: Path) -> None:
    remote, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    _work(a, "sa", ["I prefer tabs over spaces in every Python file."])
    first = _sync(a)
    assert (first.joined, first.pushed) == ("ahead", True)
    _work(b, "sb", ["Always run the linter before every commit."])
    second = _sync(b)
    assert second.joined == "merge" and second.pushed
    third = _sync(a)
    assert third.joined == "fast-forward" and not third.pushed

    head = git(a, "rev-parse", "HEAD")
    assert head == git(b, "rev-parse", "HEAD") == git(remote, "rev-parse", "main")
    assert _memgit_refs(a) == _memgit_refs(b) == _memgit_refs(remote) != ""
    assert len(_memgit_refs(a).splitlines()) == 2  # one run ref from each clone
    for clone in (a, b):
        assert git(clone, "status", "--porcelain") == ""
        git(clone, "fsck", "--strict")
        done = memgit_cli("verify", "--all", cwd=clone)
        assert done.returncode == 0, done.stdout + done.stderr
    memories = git(a, "ls-tree", "-r", "--name-only", "HEAD", "memories")
    assert len(memories.splitlines()) == 2
    # Nothing left to sync: up to date, nothing pushed.
    again = _sync(b)
    assert (again.joined, again.pushed) == ("up-to-date", False)


def test_the_same_turns_processed_in_two_clones_sync_without_a_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    texts = ["I prefer tabs over spaces in every Python file."]
    _work(a, "same", texts)
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1764495600 +0000")  # ten minutes later
    _work(b, "same", texts)
    assert git(a, "rev-parse", "HEAD") != git(b, "rev-parse", "HEAD")
    _sync(a)
    result = _sync(b)
    assert result.joined == "merge"
    # Both made the run; both clones keep the ref the first to push set.
    assert result.refs_adopted == tuple(_memgit_refs(a).split()[0::2])
    _sync(a)
    assert git(a, "rev-parse", "HEAD^{tree}") == git(b, "rev-parse", "HEAD^{tree}")
    assert len(git(a, "ls-tree", "-r", "--name-only", "HEAD", "runs").splitlines()) == 1
    assert _memgit_refs(a) == _memgit_refs(b) == _memgit_refs(remote)


def test_a_conflict_changes_nothing_here_or_there(tmp_path: Path) -> None:
    remote, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    for clone, text in ((a, "ours\n"), (b, "theirs\n")):
        (clone / "NOTES.md").write_text(text)
        git(clone, "add", "NOTES.md")
        git(clone, "commit", "-q", "-m", "notes")
    _sync(a)
    before, remote_before = _unchanged(b), git(remote, "for-each-ref")
    with pytest.raises(ConflictError) as refused:
        _sync(b)
    assert refused.value.code == "sync-conflict" and refused.value.path == "NOTES.md"
    assert _unchanged(b) == before
    assert git(remote, "for-each-ref") == remote_before
    # The hint's merge works: the person resolves it, and sync pushes the result.
    done = git(b, "merge", "-q", "refs/memgit-sync/origin/branch", check=False)
    assert "CONFLICT" in done
    (b / "NOTES.md").write_text("ours and theirs\n")
    git(b, "commit", "-q", "-a", "--no-edit")
    assert _sync(b).joined == "ahead"
    assert git(remote, "show", "main:NOTES.md") == "ours and theirs\n"


def test_the_cli_reports_and_refuses_clearly(tmp_path: Path) -> None:
    _, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    _work(a, "sa", ["I prefer tabs over spaces in every Python file."])
    done = memgit_cli("sync", "--json", cwd=a)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pushed"] is True
    done = memgit_cli("sync", cwd=b)
    assert done.returncode == 0 and b"fast-forwarded to origin" in done.stdout

    done = memgit_cli("sync", "nowhere", cwd=a)
    assert done.returncode == 2 and done.stderr.startswith(b"error[no-remote]")

    git(a, "remote", "add", "broken", str(tmp_path / "missing.git"))
    before = _unchanged(a)
    done = memgit_cli("sync", "broken", cwd=a)
    assert done.returncode == 5 and done.stderr.startswith(b"error[remote-failed]")
    assert _unchanged(a) == before


def test_a_clone_with_no_remote_is_told_so(repo_path: Path) -> None:
    with MemoryRepo.open(repo_path) as repo, pytest.raises(UsageError) as refused:
        repo.sync()
    assert refused.value.code == "no-remote"


def test_a_remote_that_disappears_is_a_backend_error(tmp_path: Path) -> None:
    remote, (a,) = _remote_and_clones(tmp_path, "a")
    remote.rename(tmp_path / "gone.git")
    with pytest.raises(BackendError) as failed:
        _sync(a)
    assert failed.value.code == "remote-failed"


def _person_commits(path: Path, message: str) -> None:
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)


def test_a_forged_commit_is_not_pushed(tmp_path: Path) -> None:
    """A person's commit made without the hooks (a forged quote) is refused before the
    push, as the remote's pre-receive hook would refuse it."""
    remote, (a,) = _remote_and_clones(tmp_path, "a")
    _work(a, "sa", ["I prefer tabs over spaces in every Python file."])
    (memory,) = git(a, "ls-files", "memories").split()
    text = (a / memory).read_text("utf-8")
    (a / memory).write_text(text.replace("quote: I prefer tabs", "quote: I prefer TABS"), "utf-8")
    _person_commits(a, "forge a quote")
    before = git(remote, "for-each-ref")
    done = memgit_cli("sync", cwd=a)
    assert done.returncode == 1, done.stderr
    # The progress line may come first on a slow machine: the error is the first error.
    lines = done.stderr.decode().splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("error["))
    first, problems = lines[at], lines[at + 1 :]
    assert first.startswith("error[push-refused]: origin: 2 problem(s)"), lines
    assert any(line.startswith("error[quote-not-found]") for line in problems), problems
    assert git(remote, "for-each-ref") == before


def test_a_retired_memory_travels_and_cannot_come_back(tmp_path: Path) -> None:
    remote, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    _work(a, "sa", ["I prefer tabs over spaces in every Python file."])
    (memory,) = git(a, "ls-files", "memories").split()
    memory_id = Path(memory).stem
    _sync(a)
    _sync(b)
    last = git(a, "rev-parse", "HEAD").strip()
    git(a, "rm", "-q", memory)
    git(a, "commit", "-q", "-m", "retract")
    git(a, "update-ref", f"refs/memgit/retired/{memory_id}", last)
    assert _sync(a).pushed
    assert git(remote, "rev-parse", f"refs/memgit/retired/{memory_id}").strip() == last
    result = _sync(b)
    assert f"refs/memgit/retired/{memory_id}" in result.refs_adopted
    # B brings the memory back by hand: sync refuses to push it.
    git(b, "checkout", "-q", last, "--", memory)
    _person_commits(b, "bring it back")
    before = git(remote, "for-each-ref")
    done = memgit_cli("sync", cwd=b)
    assert done.returncode == 1 and b"retired" in done.stderr, done.stderr
    assert git(remote, "for-each-ref") == before


def test_near_identical_memories_made_apart_are_both_kept_and_reported(tmp_path: Path) -> None:
    _, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    _work(a, "sa", ["I prefer tabs over spaces in every Python file."])
    _work(b, "sb", ["I prefer tabs over spaces in every Python file!"])
    _sync(a)
    result = _sync(b)
    assert result.joined == "merge"
    ids = sorted(Path(p).stem for p in git(b, "ls-files", "memories").split())
    assert len(ids) == 2
    assert [sorted(pair) for pair in result.possible_duplicates] == [ids]
    done = memgit_cli("sync", cwd=a)
    assert b"Possible duplicate" not in done.stdout  # a fast-forward keeps nothing new


def test_an_executable_from_the_remote_is_left_to_git_not_flattened(tmp_path: Path) -> None:
    _, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    (a / "tool.sh").write_text("#!/bin/sh\n")
    (a / "tool.sh").chmod(0o755)
    _person_commits(a, "a script")
    _sync(a)
    before = _unchanged(b)
    with pytest.raises(ConflictError) as refused:
        _sync(b)
    assert refused.value.code == "sync-conflict" and refused.value.path == "tool.sh"
    assert _unchanged(b) == before
    git(b, "pull", "-q", "--no-rebase")
    assert _sync(b).joined == "up-to-date"


def _update_tags(path: Path, memory_id: str, session: str, text: str, tag: str) -> None:
    """A run that UPDATEs the memory, keeping its title and body, with one more tag and
    the source of this clone's new turn."""
    from test_process import answer  # the Gate-answer builder of the process tests

    with MemoryRepo.open(path) as repo:
        repo.capture(make_turn(1, text, session=session))
        old = next(m for m in repo.recall("staging", k=5).memories if m.memory.id == memory_id)
        unit = f"test-agent/{session}/1#0"
        candidate = {
            "action": "UPDATE",
            "target": memory_id,
            "type": old.memory.type,
            "scope": old.memory.scope,
            "title": old.memory.title,
            "body": "The staging database is reset every Monday.",
            "tags": [tag],
            "claims": [(unit, text.rstrip("."))],
        }
        assert repo.process(gate_output=answer(None, candidate, units=[unit])).runs


def test_a_memory_both_clones_updated_is_joined_and_passes_every_check(tmp_path: Path) -> None:
    """Both sides UPDATE one memory (new tags, new sources): the merge driver joins them,
    the joined memory is explained by the merge, and verify passes the merge commit."""
    _, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    for clone in (a, b):
        MemoryRepo.init(clone)  # registers the merge driver
    _work(a, "sa", ["Remember that the staging database is reset every Monday."])
    _sync(a)
    _sync(b)
    (memory,) = git(a, "ls-files", "memories").split()
    memory_id = Path(memory).stem
    _update_tags(a, memory_id, "sa", "Staging is reset on Mondays at six.", "ops")
    _update_tags(b, memory_id, "sb", "Mondays wipe the staging database.", "db")
    _sync(a)
    result = _sync(b)
    assert result.joined == "merge"
    joined = (b / memory).read_text("utf-8")
    assert "- db" in joined and "- ops" in joined
    assert "Mondays wipe the staging database" in joined and "reset on Mondays at six" in joined
    done = memgit_cli("verify", "--all", cwd=b)
    assert done.returncode == 0, done.stdout + done.stderr
    _sync(a)
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")


def test_a_forged_history_on_the_remote_is_not_joined(tmp_path: Path) -> None:
    """Someone pushed a forged quote with plain git, where no pre-receive hook checks:
    the next clone to sync refuses to join it and changes nothing."""
    _, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    _work(a, "sa", ["I prefer tabs over spaces in every Python file."])
    _sync(a)
    (memory,) = git(a, "ls-files", "memories").split()
    text = (a / memory).read_text("utf-8")
    (a / memory).write_text(text.replace("quote: I prefer tabs", "quote: I prefer TABS"), "utf-8")
    _person_commits(a, "forge a quote")
    git(a, "push", "-q", "origin", "main")
    before = _unchanged(b)
    done = memgit_cli("sync", cwd=b)
    assert done.returncode == 1
    assert done.stderr.startswith(b"error[incoming-refused]: origin: 2 problem(s)"), done.stderr
    assert b"quote-not-found" in done.stderr
    assert _unchanged(b) == before


def test_the_hook_checks_a_git_merge_as_a_merge(tmp_path: Path) -> None:
    """A person's own ``git merge`` of a memory both sides updated: the merge driver
    joins it, and the evidence hook (run as pre-commit runs it, during the merge)
    accepts the join instead of calling it unexplained."""
    _, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    for clone in (a, b):
        MemoryRepo.init(clone)
    _work(a, "sa", ["Remember that the staging database is reset every Monday."])
    _sync(a)
    _sync(b)
    (memory,) = git(a, "ls-files", "memories").split()
    _update_tags(a, Path(memory).stem, "sa", "Staging is reset on Mondays at six.", "ops")
    _update_tags(b, Path(memory).stem, "sb", "Mondays wipe the staging database.", "db")
    _sync(a)
    git(b, "fetch", "-q", "origin")
    git(b, "merge", "-q", "--no-commit", "origin/main")
    hook = subprocess.run(
        [sys.executable, "-m", "memgit.governance.evidence"],
        cwd=b,
        capture_output=True,
        check=False,
    )
    assert hook.returncode == 0, hook.stderr
    git(b, "commit", "-q", "--no-edit")
    done = memgit_cli("verify", "--all", cwd=b)
    assert done.returncode == 0, done.stdout + done.stderr


def test_sync_tells_each_step_as_it_goes(tmp_path: Path) -> None:
    _, (a,) = _remote_and_clones(tmp_path, "a")
    _work(a, "sa", ["I prefer tabs over spaces in every Python file."])
    heard: list[tuple[str, int, int]] = []
    with MemoryRepo.open(a) as repo:
        repo.sync(progress=lambda step, done, total: heard.append((step, done, total)))
    assert heard == [(s, d, 1) for s in ("fetch", "join", "push") for d in (0, 1)]


@pytest.mark.parametrize(
    "remote", ["--upload-pack=touch pwned", "-v", "origin\x1b[2J", "../../elsewhere", "x" * 5000]
)
def test_a_hostile_remote_name_runs_nothing_and_changes_nothing(
    tmp_path: Path, remote: str
) -> None:
    _, (a,) = _remote_and_clones(tmp_path, "a")
    before = snapshot(a)
    done = memgit_cli("sync", "--", remote, cwd=a)  # past click's options, to the argument
    assert done.returncode == 2 and done.stderr.startswith(b"error[no-remote]"), done.stderr
    assert b"\x1b" not in done.stderr
    assert not (a / "pwned").exists()
    assert snapshot(a) == before


def test_sync_never_takes_back_history_a_purge_replaced(tmp_path: Path) -> None:
    """After `memgit forget --purge`, the remote still holds the old history: a sync
    would merge the purged memory back. It is refused, and nothing changes."""
    remote, (a,) = _remote_and_clones(tmp_path, "a")
    _work(a, "sa", ["Remember that the quokka cluster password rotates on Fridays."])
    _sync(a)
    (memory,) = git(a, "ls-files", "memories").split()
    with MemoryRepo.open(a) as repo:
        repo.purge([Path(memory).stem], with_sources=True)
    before, remote_before = snapshot(a), git(remote, "for-each-ref")
    done = memgit_cli("sync", cwd=a)
    assert done.returncode == 4 and done.stderr.startswith(b"error[purged-history]"), done.stderr
    after = snapshot(a)
    # What the fetch brought is deleted again; nothing else moved.
    fetched = "refs/memgit-sync/"
    assert [r for r in str(before["refs"]).splitlines() if not r.startswith(fetched)] == str(
        after["refs"]
    ).splitlines()
    assert after["files"] == before["files"] and after["index"] == before["index"]
    assert git(remote, "for-each-ref") == remote_before
    assert "quokka" not in git(a, "log", "--all", "-p")  # nothing fetched stays reachable
