"""``memgit forget --purge --push``: the rewrite replaces the old history on each remote
that holds it, in one atomic push with leases on what the remote held; a remote that
moved, or holds commits this clone never fetched, is left exactly as it was."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from memgit import MemoryRepo

from support import everything_git_keeps, git, make_turn, memgit_cli, snapshot

SECRET = "Remember that the quokka cluster password rotates on Fridays."
KEPT = "Remember that deploys happen on Tuesdays."


@pytest.fixture(scope="module")
def _built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A bare remote holding two memories (one to purge) on its branch, memgit refs and
    an annotated tag; the clone that pushed them; the memory's id. Built once."""
    tmp_path = tmp_path_factory.mktemp("purge-push")
    seed = tmp_path / "seed"
    MemoryRepo.init(seed)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    clone = tmp_path / "a"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    with MemoryRepo.open(clone) as repo:
        repo.capture(make_turn(0, SECRET, session="sa"))
        assert repo.process(backend="rules").runs
        repo.capture(make_turn(1, KEPT, session="sa"))
        assert repo.process(backend="rules").runs
        repo.sync()
    git(clone, "tag", "-a", "v1", "-m", "release 1")
    git(clone, "push", "-q", "origin", "v1")
    memory = next(
        Path(path).stem
        for path in git(clone, "ls-files", "memories").split()
        if "quokka" in (clone / path).read_text("utf-8")
    )
    return tmp_path, memory


@pytest.fixture
def setup(_built: tuple[Path, str], tmp_path: Path) -> tuple[Path, Path, str]:
    """A copy of the remote and the clone for one test, the clone pointing at the copy."""
    built, memory = _built
    remote, clone = tmp_path / "remote.git", tmp_path / "a"
    shutil.copytree(built / "remote.git", remote, symlinks=True)
    shutil.copytree(built / "a", clone, symlinks=True)
    git(clone, "remote", "set-url", "origin", str(remote))
    return remote, clone, memory


def _remote_refs(remote: Path) -> dict[str, str]:
    rows = git(remote, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    return dict(row.split() for row in rows)


def _purge(clone: Path, memory: str, *extra: str):
    return memgit_cli(
        "forget", "--purge", memory, "--with-sources", "--push", "--json", *extra, cwd=clone
    )


def test_push_replaces_the_old_history_on_the_remote(setup: tuple[Path, Path, str]) -> None:
    remote, clone, memory = setup
    before = _remote_refs(remote)
    # A retired ref for the purged id on the remote: it must go, not be moved.
    retired = f"refs/memgit/retired/{memory}"
    git(remote, "update-ref", retired, before["refs/heads/main"])

    done = _purge(clone, memory)

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["remotes"] == []
    (pushed,) = report["pushed"]
    assert pushed["remote"] == "origin" and pushed["error"] is None
    moved = {move["ref"]: move for move in pushed["refs"]}
    assert moved[retired]["new"] is None
    assert moved["refs/heads/main"]["old"] == before["refs/heads/main"]
    assert "refs/tags/v1" in moved and any(name.startswith("refs/memgit/runs/") for name in moved)
    after = _remote_refs(remote)
    assert retired not in after
    ours = dict(
        row.split()
        for row in git(clone, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    )
    for name, oid in after.items():
        assert ours[name] == oid, name  # the remote holds exactly the rewrite
    assert "quokka" not in git(remote, "log", "--all", "-p", "--format=raw")
    # A bare remote keeps no reflog: once its owner prunes, the objects are gone there too.
    git(remote, "gc", "-q", "--prune=now")
    assert all(b"quokka" not in data for data in everything_git_keeps(remote).values())
    assert "Tuesdays" in git(remote, "log", "-p", "main")
    # sync no longer finds the replaced commits on the remote.
    synced = memgit_cli("sync", "--json", cwd=clone)
    assert synced.returncode == 0, synced.stderr


def test_a_remote_with_commits_this_clone_never_fetched_is_left_as_it_was(
    setup: tuple[Path, Path, str], tmp_path: Path
) -> None:
    remote, clone, memory = setup
    other = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    with MemoryRepo.open(other) as repo:
        repo.capture(make_turn(0, "Remember that the wiki lives on the intranet.", session="sb"))
        assert repo.process(backend="rules").runs
        repo.sync()
    before = _remote_refs(remote)

    done = _purge(clone, memory)

    assert done.returncode == 4, done.stderr
    assert b"error[remote-ahead]: origin: " in done.stderr and b"git fetch origin" in done.stderr
    report = json.loads(done.stdout)
    assert report["remotes"] == ["origin"] and report["pushed"][0]["refs"] == []
    assert _remote_refs(remote) == before
    # The purge itself is done here: one whole step further, never half of one.
    assert "quokka" not in git(clone, "log", "--all", "-p")


def test_a_remote_that_moves_during_the_push_keeps_what_it_had(
    setup: tuple[Path, Path, str], tmp_path: Path
) -> None:
    """The lease is on what ls-remote showed: another push landing between that and
    ours (here a receive-pack wrapper moves main first) refuses the whole push."""
    remote, clone, memory = setup
    racer = tmp_path / "racing-receive-pack"
    racer.write_text(
        "#!/bin/sh\n"
        'git --git-dir="$1" update-ref refs/heads/main refs/heads/main~1\n'
        'exec git-receive-pack "$@"\n',
        "utf-8",
    )
    os.chmod(racer, 0o755)
    git(clone, "config", "remote.origin.receivepack", str(racer))
    before = _remote_refs(remote)

    done = _purge(clone, memory)

    assert done.returncode == 4, done.stderr
    assert b"error[remote-moved]: origin: " in done.stderr
    after = _remote_refs(remote)
    main = "refs/heads/main"
    assert after[main] == git(remote, "rev-parse", f"{before[main]}~1").strip()
    assert {k: v for k, v in after.items() if k != main} == {
        k: v for k, v in before.items() if k != main
    }


def test_an_unreachable_remote_does_not_stop_the_others(
    setup: tuple[Path, Path, str], tmp_path: Path
) -> None:
    remote, clone, memory = setup
    git(clone, "remote", "add", "gone", str(tmp_path / "no-such-remote.git"))

    done = _purge(clone, memory)

    assert done.returncode == 5, done.stderr
    assert b"error[remote-failed]: gone: " in done.stderr
    report = json.loads(done.stdout)
    assert report["remotes"] == ["gone"]
    results = {pushed["remote"]: pushed for pushed in report["pushed"]}
    assert results["origin"]["error"] is None and results["origin"]["refs"]
    assert results["gone"]["error"]["code"] == "remote-failed"
    assert "quokka" not in git(remote, "log", "--all", "-p")


def test_push_needs_purge_and_changes_nothing_without_it(setup: tuple[Path, Path, str]) -> None:
    remote, clone, memory = setup
    before, remote_before = snapshot(clone), _remote_refs(remote)

    done = memgit_cli("forget", memory, "--push", cwd=clone)

    assert done.returncode == 2
    assert done.stderr.startswith(b"error[usage]: --push: --push needs --purge")
    assert snapshot(clone) == before and _remote_refs(remote) == remote_before


def test_text_output_names_each_ref_pushed(setup: tuple[Path, Path, str]) -> None:
    _, clone, memory = setup

    done = memgit_cli("forget", "--purge", memory, "--push", cwd=clone)

    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "pushed to origin: " in out and "refs/heads/main" in out.split("pushed to origin")[1]
    assert "still holding" not in out
