"""A person's ``git rm`` of a memory is recorded as a retraction by the hooks ``memgit
init`` installs (commit-msg: the trailer; post-commit: the retired ref), so the id
cannot come back and recall still knows what became of it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_sharing_setup import without_venv

from memgit import MemoryRepo

from support import git, make_turn, memgit_cli


def _commit(path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", "-q", *args],
        cwd=path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.fixture
def memory(tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """A repository set up by ``memgit init`` with one memory; its id; a shell's env."""
    path = tmp_path / "memory"
    MemoryRepo.init(path, install_hooks=True)
    with MemoryRepo.open(path) as repo:
        repo.capture(make_turn(0, "Remember that the staging host is called kestrel."))
        assert repo.process(backend="rules").runs
    (memory_file,) = git(path, "ls-files", "memories").split()
    return path, Path(memory_file).stem, without_venv(tmp_path)


def test_a_hand_removal_becomes_a_retraction(memory: tuple[Path, str, dict[str, str]]) -> None:
    path, memory_id, env = memory
    (memory_file,) = git(path, "ls-files", "memories").split()
    before = git(path, "rev-parse", "HEAD").strip()
    git(path, "rm", "-q", memory_file)

    done = _commit(path, env, "-m", "drop the staging note")

    assert done.returncode == 0, done.stdout + done.stderr
    message = git(path, "log", "-1", "--format=%B")
    assert message.splitlines()[0] == "drop the staging note"
    assert f"Memgit-Retracted: {memory_id}" in message.splitlines()
    assert git(path, "rev-parse", f"refs/memgit/retired/{memory_id}").strip() == before
    (history,) = MemoryRepo.open(path).log(memory_id)
    assert history.versions[0].change == "retracted"
    recalled = memgit_cli("-C", str(path), "recall", "kestrel", "--include-retired", "--json")
    assert b'"retracted": true' in recalled.stdout, recalled.stdout
    assert memgit_cli("-C", str(path), "verify", "--all").returncode == 0
    # The id stays retired: the same memory put back by hand is refused.
    git(path, "checkout", "-q", before, "--", memory_file)
    refused = _commit(path, env, "-m", "bring it back")
    assert refused.returncode != 0
    assert "retired-id-active" in refused.stdout + refused.stderr
    assert git(path, "rev-parse", "HEAD~1").strip() == before


def test_a_moved_memory_or_a_named_forget_is_left_as_written(
    memory: tuple[Path, str, dict[str, str]],
) -> None:
    path, memory_id, env = memory
    (memory_file,) = git(path, "ls-files", "memories").split()
    scope = memory_file.split("/")[1]
    other = "user" if scope == "project" else "project"
    moved = memory_file.replace(f"memories/{scope}/", f"memories/{other}/")
    (path / moved).parent.mkdir(parents=True, exist_ok=True)
    text = (path / memory_file).read_text("utf-8").replace(f"scope: {scope}", f"scope: {other}")
    text = text.replace("origin: memgit", "origin: human\nauthor: Sam")
    (path / moved).write_text(text, "utf-8")
    git(path, "rm", "-q", memory_file)
    git(path, "add", moved)

    done = _commit(path, env, "-m", "it belongs to the other scope")

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Memgit-" not in git(path, "log", "-1", "--format=%B")
    assert git(path, "for-each-ref", "refs/memgit/retired/") == ""

    git(path, "rm", "-q", moved)
    done = _commit(path, env, "-m", f"forget it\n\nMemgit-Forgotten: {memory_id}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Memgit-Retracted" not in git(path, "log", "-1", "--format=%B")
    assert git(path, "for-each-ref", "refs/memgit/retired/") == ""


def test_the_trailer_lands_above_the_scissors_of_commit_v(
    memory: tuple[Path, str, dict[str, str]], tmp_path: Path
) -> None:
    """``git commit -v`` puts the diff below a scissors line that git cuts off: a
    trailer appended after it would be lost."""
    path, memory_id, env = memory
    (memory_file,) = git(path, "ls-files", "memories").split()
    git(path, "rm", "-q", memory_file)
    message = tmp_path / "message"
    message.write_text("drop it\n", "utf-8")

    done = _commit(path, {**env, "GIT_EDITOR": "true"}, "-v", "-e", "-F", str(message))

    assert done.returncode == 0, done.stdout + done.stderr
    assert git(path, "log", "-1", "--format=%B").strip().splitlines() == [
        "drop it",
        "",
        f"Memgit-Retracted: {memory_id}",
    ]


def test_a_merge_or_pull_records_the_refs_its_commits_come_without(
    memory: tuple[Path, str, dict[str, str]],
) -> None:
    """Commits that arrive by `git merge` or `git pull` (a proposal merged with a host's
    button, a colleague's retraction) bring no refs/memgit/ refs: the post-merge hook
    records the run and retired refs their trailers name, as memgit sync would."""
    path, memory_id, env = memory
    (memory_file,) = git(path, "ls-files", "memories").split()
    git(path, "checkout", "-q", "-b", "side")
    git(path, "rm", "-q", memory_file)
    assert _commit(path, env, "-m", "drop it").returncode == 0
    retracted = git(path, "rev-parse", "HEAD").strip()
    with MemoryRepo.open(path) as repo:
        repo.capture(make_turn(1, "Remember that the wiki moved to the intranet."))
        (run,) = repo.process(backend="rules").runs
    # As if they came from another clone: the commits without their refs.
    git(path, "update-ref", "-d", f"refs/memgit/retired/{memory_id}")
    git(path, "update-ref", "-d", f"refs/memgit/runs/{run.run_id}")
    git(path, "checkout", "-q", "main")

    merged = subprocess.run(
        ["git", "merge", "-q", "--ff-only", "side"],
        cwd=path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )

    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert (
        git(path, "rev-parse", f"refs/memgit/retired/{memory_id}").strip()
        == git(path, "rev-parse", f"{retracted}~1").strip()
    )
    assert git(path, "rev-parse", f"refs/memgit/runs/{run.run_id}").strip() == run.commit
