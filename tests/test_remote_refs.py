"""A shared remote with memgit's ``hooks/pre-receive`` keeps what matters: every
``refs/memgit/*`` ref is neither deleted nor moved and is created only at a commit that
holds what it claims, and the memory branch is not forced back unless the remote's
memgit.yaml allows it (which ``memgit forget --purge --push`` needs).

Each push is made with the plain ``git`` CLI from a clone, as a person would."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from governance_corpus import repos
from test_sync import _remote_and_clones, _sync, _work
from test_verify import VENV_BIN, install_pre_receive

from memgit import MemoryRepo

from support import git, make_turn, memgit_cli

templates = repos.templates  # the session fixture: memory repositories memgit built

REVIEWED = "Remember that releases are cut on Thursdays."
ALLOW = "\nsharing:\n  allow_rewrite: true\n"


@pytest.fixture(scope="module")
def _built(templates: repos.Templates, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare remote with pre-receive, holding memgit's ``processed`` repository (runs,
    a retired memory) plus a proposal that was rejected, with every memgit ref; and a
    clone that fetched them. Built once; each test works on a copy."""
    root = tmp_path_factory.mktemp("protect")
    with repos.fixed_identity(root / "home"):
        seed = templates.copy("processed", root / "seed")
        config = seed / "memgit.yaml"
        config.write_text(config.read_text("utf-8") + "review:\n  required: true\n", "utf-8")
        git(seed, "commit", "-q", "--no-verify", "-am", "review every run")
        with MemoryRepo.open(seed) as repo:
            repo.capture(make_turn(5, REVIEWED, session="s2"))
            (run,) = repo.process(backend="rules").runs
        done = memgit_cli("-C", str(seed), "review", "reject", run.run_id, "--reason", "no")
        assert done.returncode == 0, done.stderr
        bare = root / "remote.git"
        git(root, "clone", "-q", "--bare", str(seed), str(bare))
        git(seed, "push", "-q", str(bare), "refs/memgit/*:refs/memgit/*")
        install_pre_receive(bare)
        clone = root / "clone"
        git(root, "clone", "-q", str(bare), str(clone))
        git(clone, "fetch", "-q", "origin", "+refs/memgit/*:refs/memgit/*")
    return root


@pytest.fixture
def server(_built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """This test's copy of the remote and of the clone, the clone pointing at the copy."""
    bare, clone = tmp_path / "remote.git", tmp_path / "clone"
    shutil.copytree(_built / "remote.git", bare, symlinks=True)
    shutil.copytree(_built / "clone", clone, symlinks=True)
    git(clone, "remote", "set-url", "origin", str(bare))
    monkeypatch.setenv("MEMGIT", str(VENV_BIN / "memgit"))
    return bare, clone


def push(clone: Path, *refspecs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(clone), "push", "origin", *refspecs],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def refs(bare: Path) -> dict[str, str]:
    rows = git(bare, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    return dict(row.split() for row in rows)


def one(bare: Path, prefix: str) -> tuple[str, str]:
    """The first ref under ``prefix`` on the remote, and its commit."""
    return next((name, oid) for name, oid in sorted(refs(bare).items()) if name.startswith(prefix))


def refused(done: subprocess.CompletedProcess[str], line: str) -> None:
    """The push failed, and the remote said ``line`` (after git's ``remote: ``)."""
    assert done.returncode != 0, done.stderr
    assert f"remote: {line}" in done.stderr, done.stderr
    assert "pre-receive hook declined" in done.stderr


# --- memgit refs: no deletion, no move ----------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "what"),
    [
        ("refs/memgit/runs/", "a run's ref"),
        ("refs/memgit/rejected/", "a rejected proposal's ref"),
    ],
)
def test_deleting_a_memgit_ref_is_refused(
    server: tuple[Path, Path], prefix: str, what: str
) -> None:
    bare, clone = server
    before = refs(bare)
    name, oid = one(bare, prefix)
    done = push(clone, f":{name}")
    refused(done, f"error[memgit-ref-rewritten]: {oid[:12]}: {name}: {what} is deleted or moved")
    assert refs(bare) == before


def test_moving_a_run_ref_is_refused(server: tuple[Path, Path]) -> None:
    bare, clone = server
    before = refs(bare)
    name, oid = one(bare, "refs/memgit/runs/")
    other = next(o for n, o in before.items() if n.startswith("refs/memgit/runs/") and o != oid)
    done = push(clone, f"+{other}:{name}")
    refused(done, f"error[memgit-ref-rewritten]: {oid[:12]}: {name}: a run's ref is deleted")
    assert refs(bare) == before


# --- memgit refs: created only where the commit holds what they claim ---------------


def test_a_run_ref_is_created_only_at_its_runs_commit(server: tuple[Path, Path]) -> None:
    bare, clone = server
    name, oid = one(bare, "refs/memgit/runs/")
    git(bare, "update-ref", "-d", name)  # the server's owner removed it
    before = refs(bare)
    wrong = git(clone, "rev-parse", "origin/main").strip()
    assert wrong != oid
    done = push(clone, f"{wrong}:{name}")
    refused(
        done,
        f"error[memgit-ref-target]: {wrong[:12]}: {name}: a run's ref is set where it does "
        f"not belong: commit {wrong[:12]} is not run {name.rsplit('/', 1)[1]}'s",
    )
    assert refs(bare) == before
    done = push(clone, f"{oid}:{name}")
    assert done.returncode == 0, done.stderr
    assert refs(bare)[name] == oid


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("refs/memgit/runs/20261130T101500Z-0123456789ab", "a run's ref"),
        ("refs/memgit/applied/20261130T101500Z-0123456789ab", "an approved proposal's ref"),
        ("refs/memgit/rejected/20261130T101500Z-0123456789ab", "a rejected proposal's ref"),
        ("refs/memgit/runs/not-a-run", "a run's ref"),
    ],
)
def test_a_made_up_memgit_ref_is_refused(server: tuple[Path, Path], name: str, says: str) -> None:
    bare, clone = server
    before = refs(bare)
    done = push(clone, f"origin/main:{name}")
    refused(done, "error[memgit-ref-target]: ")
    assert f"{name}: {says} is set where it does not belong" in done.stderr
    assert refs(bare) == before


def test_a_retired_ref_needs_the_memory_and_a_branch_that_retired_it(
    server: tuple[Path, Path],
) -> None:
    """A retired ref pre-created for an active memory (or a made-up id) would make every
    clone that fetches it refuse that memory; the real one, re-created, is accepted."""
    bare, clone = server
    name, oid = one(bare, "refs/memgit/retired/")
    git(bare, "update-ref", "-d", name)
    before = refs(bare)
    tip = git(clone, "rev-parse", "origin/main").strip()
    active = next(
        Path(path).stem
        for path in git(clone, "ls-files", "memories").split()
        if Path(path).stem != name.rsplit("/", 1)[1]
    )
    earlier = git(clone, "rev-parse", "origin/main~1").strip()
    for ref, at, why in (
        (f"refs/memgit/retired/{active}", earlier, f"{active} is still active on every branch"),
        (f"refs/memgit/retired/{active}", tip, f"no branch descends from {tip[:12]}"),
        ("refs/memgit/retired/madeup000001", tip, f"commit {tip[:12]} holds no memory madeup"),
    ):
        done = push(clone, f"{at}:{ref}")
        refused(done, "error[memgit-ref-target]: ")
        assert f"{ref}: a retired memory's ref is set where it does not belong: {why}" in (
            done.stderr
        )
        assert refs(bare) == before
    done = push(clone, f"{oid}:{name}")
    assert done.returncode == 0, done.stderr
    assert refs(bare)[name] == oid


# --- the memory branch: no rewrite unless the remote allows it -----------------------


def forced_root(clone: Path) -> str:
    """A new root commit holding only memgit.yaml and .gitattributes: a history
    rewritten so that everything else is gone."""
    git(clone, "checkout", "-q", "--orphan", "rewritten")
    git(clone, "rm", "-r", "-q", "--cached", "inbox", "memories", "runs")
    git(clone, "commit", "-q", "--no-verify", "-m", "start over")
    return git(clone, "rev-parse", "HEAD").strip()


def allow_rewrite(clone: Path) -> None:
    """The remote's memgit.yaml allows rewriting: a commit on its branch, pushed."""
    git(clone, "checkout", "-q", "main")
    with (clone / "memgit.yaml").open("a", encoding="utf-8") as config:
        config.write(ALLOW)
    git(clone, "commit", "-q", "--no-verify", "-am", "allow rewriting the shared history")
    done = push(clone, "main")
    assert done.returncode == 0, done.stderr


def test_forcing_the_branch_back_is_refused_and_names_what_it_drops(
    server: tuple[Path, Path],
) -> None:
    bare, clone = server
    before = refs(bare)
    old = before["refs/heads/main"]
    held = git(clone, "ls-tree", "-r", "--name-only", old).split()
    captures = [p for p in held if p.startswith("inbox/")]
    memories = [p for p in held if p.startswith("memories/")]
    runs = [p for p in held if p.startswith("runs/")]
    commits = len(git(clone, "rev-list", old).split())
    new = forced_root(clone)
    done = push(clone, f"+{new}:refs/heads/main")
    refused(
        done,
        f"error[branch-rewritten]: {old[:12]}: refs/heads/main: the memory branch is forced "
        f"to {new[:12]}, which does not descend from it: the push drops {commits} commits "
        f"and {len(captures)} captures, {len(memories)} memories, {len(runs)} runs "
        f"({memories[0]}, {runs[0]}, {captures[0]}, ...)",
    )
    assert "sharing: {allow_rewrite: true}" in done.stderr
    assert "memgit forget --purge --push" in done.stderr
    assert refs(bare) == before


def test_a_remote_that_allows_rewriting_accepts_the_forced_branch(
    server: tuple[Path, Path],
) -> None:
    bare, clone = server
    allow_rewrite(clone)
    new = forced_root(clone)
    done = push(clone, f"+{new}:refs/heads/main")
    assert done.returncode == 0, done.stderr
    assert refs(bare)["refs/heads/main"] == new


def test_allowing_rewriting_in_the_same_push_is_not_enough(server: tuple[Path, Path]) -> None:
    """The setting is read at the branch's tip before the push: a push cannot allow itself."""
    bare, clone = server
    before = refs(bare)
    forced_root(clone)
    with (clone / "memgit.yaml").open("a", encoding="utf-8") as config:
        config.write(ALLOW)
    git(clone, "commit", "-q", "--no-verify", "-am", "allow it")
    done = push(clone, "+HEAD:refs/heads/main")
    refused(done, "error[branch-rewritten]: ")
    assert refs(bare) == before


def test_removing_memgit_yaml_first_does_not_free_the_branch(server: tuple[Path, Path]) -> None:
    """The branch HEAD names stays a memory branch without memgit.yaml at its tip."""
    bare, clone = server
    git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    git(clone, "rm", "-q", "memgit.yaml")
    git(clone, "commit", "-q", "--no-verify", "-m", "no settings")
    done = push(clone, "main")
    assert done.returncode == 0, done.stderr
    before = refs(bare)
    done = push(clone, f"+{forced_root(clone)}:refs/heads/main")
    refused(done, "error[branch-rewritten]: ")
    assert refs(bare) == before


def test_deleting_the_memory_branch_is_refused(server: tuple[Path, Path]) -> None:
    bare, clone = server
    before = refs(bare)
    git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    done = push(clone, ":refs/heads/main")
    refused(done, "error[branch-rewritten]: ")
    assert "refs/heads/main: the memory branch is deleted: the push drops " in done.stderr
    assert refs(bare) == before


def test_sync_never_pushes_the_branch_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two clones process the same turn; b's merge of a's identical run changes no file.
    a's next sync fast-forwards to it: it once stayed behind (a fast-forward with no file
    to change was taken for nothing to do) and pushed its old tip over b's merge."""
    remote, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    texts = ["I prefer tabs over spaces in every Python file."]
    _work(a, "same", texts)
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1764495600 +0000")
    _work(b, "same", texts)
    _sync(a)
    merged = _sync(b).commit
    assert _sync(a).joined == "fast-forward"
    assert git(remote, "rev-parse", "main").strip() == merged
    assert git(a, "rev-parse", "HEAD").strip() == merged


# --- memgit forget --purge --push -----------------------------------------------------


def purge(clone: Path) -> tuple[str, subprocess.CompletedProcess[bytes]]:
    """Purge the linter memory with ``--push``: the memory's id, and what memgit did."""
    git(clone, "checkout", "-q", "main")
    done = memgit_cli("-C", str(clone), "init")
    assert done.returncode == 0, done.stderr
    memory = next(
        Path(path).stem
        for path in git(clone, "ls-files", "memories").split()
        if "linter" in (clone / path).read_text("utf-8")
    )
    return memory, memgit_cli("-C", str(clone), "forget", "--purge", memory, "--push", "--json")


def test_a_purge_is_refused_where_the_remote_does_not_allow_rewriting(
    server: tuple[Path, Path],
) -> None:
    bare, clone = server
    before = refs(bare)
    _, done = purge(clone)
    report = json.loads(done.stdout)
    (pushed,) = report["pushed"]
    assert pushed["error"] is not None and pushed["refs"] == [], pushed
    assert "pre-receive hook declined" in pushed["error"]["message"]
    # The remote's own lines say why, quoted under memgit's message.
    assert 'remote: "error[branch-rewritten]: ' in pushed["error"]["message"]
    assert refs(bare) == before
    # What the remote said, as the same push made by hand shows it.
    done_by_hand = push(clone, "--force", "main:refs/heads/main")
    refused(done_by_hand, "error[branch-rewritten]: ")
    assert "memgit forget --purge --push" in done_by_hand.stderr
    assert refs(bare) == before


def test_a_purge_goes_through_where_the_remote_allows_rewriting(
    server: tuple[Path, Path],
) -> None:
    bare, clone = server
    allow_rewrite(clone)
    memory, done = purge(clone)
    report = json.loads(done.stdout)
    (pushed,) = report["pushed"]
    assert pushed["error"] is None, pushed
    assert refs(bare)["refs/heads/main"] == git(clone, "rev-parse", "main").strip()
    assert f"/{memory}.md" not in git(bare, "log", "--all", "--name-only", "--format=")
