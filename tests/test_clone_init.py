"""``memgit init`` in a clone joins the remote's history and takes its memgit refs.

Issue 24 items 4 and 8, with the git CLI as a person runs it and a real bare remote
made by a git whose default branch is ``master``: ``git clone`` of it checks out
nothing, and a clone that committed a root of its own split the team. A clone of an
empty remote publishes ``main`` whatever the local git would name its branch; a
fresh clone's own hooks refuse a retired memory before its first sync.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from governance_corpus import repos
from remotes import bare_remote

from support import git, memgit_cli

CORPUS = Path(__file__).parent / "governance_corpus"


@pytest.fixture
def master_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A git whose default branch is ``master``, as a stock git without config has."""
    config = tmp_path / "master.gitconfig"
    config.write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = master\n",
        "utf-8",
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))


def ok(done: subprocess.CompletedProcess[bytes]) -> str:
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    return done.stdout.decode("utf-8")


def heads(path: Path) -> list[str]:
    return git(path, "for-each-ref", "--format=%(refname)", "refs/heads/").split()


def memgit_refs(path: Path) -> dict[str, str]:
    listed = git(path, "for-each-ref", "--format=%(refname) %(objectname)", "refs/memgit/")
    return dict(line.split(" ") for line in listed.splitlines())


def roots(path: Path) -> list[str]:
    return git(path, "rev-list", "--max-parents=0", "HEAD").split()


def capture_and_process(path: Path, seq: int, text: str) -> None:
    turn = {
        "source": "cli",
        "session": path.name,
        "seq": seq,
        "timestamp": "2026-11-30T10:00:00Z",
        "messages": [{"role": "user", "content": text}],
    }
    ok(memgit_cli("capture", cwd=path, input=json.dumps(turn).encode()))
    ok(memgit_cli("process", "--backend", "rules", cwd=path))


def shared_memory(tmp_path: Path) -> tuple[Path, Path]:
    """A memory repository (branch ``main``, with a retired memory) pushed, as
    docs/sharing.md says, to a bare remote whose HEAD names ``master``."""
    work = tmp_path / "work"
    repos.build(work, "processed")
    remote = bare_remote(tmp_path / "memory.git")
    assert git(remote, "symbolic-ref", "HEAD").strip() == "refs/heads/master"
    git(work, "remote", "add", "origin", str(remote))
    ok(memgit_cli("init", "--no-hooks", cwd=work))
    git(work, "push", "-q")
    return work, remote


@pytest.mark.usefixtures("master_git")
def test_init_in_an_empty_checkout_adopts_the_remotes_main(tmp_path: Path) -> None:
    work, remote = shared_memory(tmp_path)
    clone = tmp_path / "clone"
    cloned = subprocess.run(
        ["git", "clone", str(remote), str(clone)], capture_output=True, text=True, check=True
    )
    assert "remote HEAD refers to nonexistent ref" in cloned.stderr
    out = ok(memgit_cli("init", "--no-hooks", cwd=clone))
    tip = git(work, "rev-parse", "main").strip()
    assert git(clone, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(clone, "rev-parse", "HEAD").strip() == tip
    assert f"Checked out main from origin ({tip[:12]})" in out
    assert "Committed" not in out
    assert git(clone, "status", "--porcelain") == ""
    assert git(clone, "rev-parse", "--abbrev-ref", "main@{upstream}").strip() == "origin/main"
    assert memgit_refs(clone) == memgit_refs(work) != {}

    # The clone works and syncs on the one shared history; the next clone joins it.
    capture_and_process(clone, 0, "Remember that the build server is called tundra.")
    ok(memgit_cli("sync", cwd=clone))
    assert heads(remote) == ["refs/heads/main"]
    later = tmp_path / "later"
    git(tmp_path, "clone", "-q", str(remote), str(later))
    ok(memgit_cli("init", "--no-hooks", cwd=later))
    ok(memgit_cli("sync", cwd=work))
    assert roots(work) == roots(clone) == roots(later) and len(roots(work)) == 1
    tips = {git(path, "rev-parse", "main") for path in (work, clone, later, remote)}
    assert len(tips) == 1
    assert heads(remote) == ["refs/heads/main"]


@pytest.mark.usefixtures("master_git")
def test_init_in_a_clone_of_an_empty_remote_publishes_main(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "memory.git")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    out = ok(memgit_cli("init", "--no-hooks", cwd=clone))
    ok(memgit_cli("sync", cwd=clone))
    assert heads(remote) == ["refs/heads/main"]
    assert git(clone, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert "origin has no branch main yet: this clone publishes main there" in out
    assert git(remote, "rev-parse", "main") == git(clone, "rev-parse", "HEAD")

    # A second clone takes that history, whatever branch its git would name.
    second = tmp_path / "second"
    git(tmp_path, "clone", "-q", str(remote), str(second))
    ok(memgit_cli("init", "--no-hooks", cwd=second))
    assert git(second, "rev-parse", "HEAD") == git(clone, "rev-parse", "HEAD")


@pytest.mark.usefixtures("master_git")
def test_a_fresh_clones_hooks_refuse_a_retired_memory_before_any_sync(tmp_path: Path) -> None:
    """Item 8: `git clone` + `memgit init` + `git commit` of a retired memory's file,
    before any fetch or sync: the clone's own hook refuses it."""
    work, remote = shared_memory(tmp_path)
    retired = next(name for name in memgit_refs(work) if "/retired/" in name)
    memory_id = retired.rsplit("/", 1)[1]
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "-b", "main", str(remote), str(clone))
    out = ok(memgit_cli("init", cwd=clone))
    # A person's memory (valid as such) under the retired id.
    text = (CORPUS / "valid" / "human-memory.md").read_text("utf-8").partition("\n")[2]
    revived = clone / "memories" / "user" / memory_id[:2] / f"{memory_id}.md"
    revived.parent.mkdir(parents=True, exist_ok=True)
    revived.write_text(text.replace("tabs4ever001", memory_id), "utf-8")
    git(clone, "add", "-A")
    before = git(clone, "rev-parse", "HEAD")
    done = subprocess.run(
        ["git", "commit", "-q", "-m", "bring it back"],
        cwd=clone,
        env={
            **os.environ,
            "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
            "PRE_COMMIT_COLOR": "never",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0, done.stdout + done.stderr
    assert "error[retired-id" in done.stdout + done.stderr
    assert git(clone, "rev-parse", "HEAD") == before
    assert retired in memgit_refs(clone)
    assert "memgit ref" in out


@pytest.mark.usefixtures("master_git")
def test_an_untracked_file_in_the_way_stops_init_and_is_kept(tmp_path: Path) -> None:
    """The empty checkout holds a file of the person's where the remote's branch has
    one: init names it, overwrites nothing and commits nothing."""
    seed = tmp_path / "seed"
    ok(memgit_cli("init", "--no-hooks", str(seed)))
    remote = bare_remote(tmp_path / "memory.git")
    git(seed, "push", "-q", str(remote), "main")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    (clone / "memgit.yaml").write_text("mine: 1\n", "utf-8")
    done = memgit_cli("init", "--no-hooks", cwd=clone)
    assert done.returncode == 4
    assert done.stderr.decode().startswith("error[local-edits]: memgit.yaml: cannot check out")
    assert (clone / "memgit.yaml").read_text("utf-8") == "mine: 1\n"
    assert git(clone, "rev-parse", "--verify", "-q", "HEAD", check=False) == ""
