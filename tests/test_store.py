"""The commit engine on real repositories: trees, compare-and-swap, work tree, recovery."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest

from memgit.errors import ConflictError, InvalidInputError
from memgit.store import worktree
from memgit.store.engine import Change, publish
from memgit.store.lock import WriterLock
from memgit.store.recovery import finish_dead_writer, unfinished_publish
from memgit.store.repository import open_repository
from memgit.store.tree import build_tree, diff_trees

from support import git, snapshot


@pytest.fixture(params=["split-after-write", "whole", "split"])
def plain_repo(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> pygit2.Repository:
    """A repository whose index is, for memgit, as large as gets split after the next
    write, small (kept whole), or already split."""
    if request.param == "split-after-write":
        monkeypatch.setattr(worktree, "SPLIT_INDEX_BYTES", 0)
    repo = _plain_repo(tmp_path)
    if request.param == "split":
        git(Path(repo.workdir), "update-index", "--split-index")
    return repo


def _plain_repo(tmp_path: Path) -> pygit2.Repository:
    path = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(path))
    (path / "README").write_text("hello\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "start")
    return open_repository(path)


def write(files: dict[str, bytes | None], message: str = "test: write\n"):
    return lambda tip: Change(files=files, message=message)


def test_build_tree_rewrites_only_changed_paths(plain_repo: pygit2.Repository) -> None:
    base_id = build_tree(plain_repo, None, {"a/x/1": b"1", "a/y/2": b"2", "b/3": b"3"})
    base = plain_repo[base_id]
    new = plain_repo[build_tree(plain_repo, base, {"a/x/4": b"4"})]
    assert new["b"].id == base["b"].id
    assert plain_repo[new["a"].id]["y"].id == plain_repo[base["a"].id]["y"].id
    assert new["a"].id != base["a"].id
    emptied = plain_repo[build_tree(plain_repo, base, {"b/3": None})]
    assert "b" not in emptied


def _git_tree(repo_path: Path, files: dict[str, str]) -> str:
    """Write ``files`` ("->target" makes a symlink, "+x" prefix an executable) as a tree."""
    index = repo_path / ".git" / "scratch-index"
    index.unlink(missing_ok=True)
    work = repo_path.parent / "scratch-work"
    subprocess.run(["rm", "-rf", str(work)], check=True)
    work.mkdir()
    for path, content in files.items():
        full = work / path
        full.parent.mkdir(parents=True, exist_ok=True)
        if content.startswith("->"):
            full.symlink_to(content[2:])
        else:
            full.write_text(content.removeprefix("+x"))
            full.chmod(0o755 if content.startswith("+x") else 0o644)
    env = {**os.environ, "GIT_INDEX_FILE": str(index), "GIT_WORK_TREE": str(work)}
    run = lambda *args: subprocess.run(  # noqa: E731
        ["git", "-C", str(repo_path), *args], env=env, check=True, capture_output=True, text=True
    )
    run("add", "-A", ".")
    return run("write-tree").stdout.strip()


def _random_files(rng: random.Random, base: dict[str, str]) -> dict[str, str]:
    files = dict(base)
    for _ in range(rng.randint(0, 6)):
        kind = rng.choice(["add", "delete", "modify", "exec", "link", "to-folder", "to-file"])
        names = sorted(files)
        if kind == "add" or not names:
            depth = rng.randint(1, 4)
            path = "/".join(rng.choice("abcd") for _ in range(depth)) + rng.choice(["", ".md"])
            if not any(p.startswith(f"{path}/") or path.startswith(f"{p}/") for p in files):
                files[path] = f"new {rng.random()}\n"
            continue
        path = rng.choice(names)
        if kind == "delete":
            del files[path]
        elif kind == "modify":
            files[path] = f"changed {rng.random()}\n"
        elif kind == "exec":
            files[path] = "+x" + files[path].removeprefix("+x")
        elif kind == "link":
            files[path] = "->elsewhere"
        elif kind == "to-folder":
            del files[path]
            files[f"{path}/inner"] = "inner\n"
        else:
            folder = path.rsplit("/", 1)[0] if "/" in path else None
            if folder is not None:
                for other in [p for p in files if p.startswith(f"{folder}/")]:
                    del files[other]
                files[folder] = "was a folder\n"
    return files


def test_diff_trees_agrees_with_git_diff_tree(plain_repo: pygit2.Repository) -> None:
    """Adds, deletions, edits, mode and type changes, files becoming folders and back."""
    rng = random.Random(7)
    path = Path(plain_repo.workdir)
    files = _random_files(rng, {})
    for _ in range(40):
        before = _git_tree(path, files)
        files = _random_files(rng, files)
        after = _git_tree(path, files)
        raw = git(path, "diff-tree", "-r", "--no-renames", "-z", before, after)
        fields = raw.split("\0")
        expected: dict[str, tuple[str, int] | None] = {}
        for meta, name in zip(fields[0::2], fields[1::2], strict=False):
            if not meta:
                continue
            _old_mode, new_mode, _old, new, status = meta.lstrip(":").split(" ")
            if status == "D":
                expected.setdefault(name, None)
            else:
                expected[name] = (new, int(new_mode, 8))
        found = diff_trees(plain_repo, plain_repo[before], plain_repo[after])
        assert {k: v and (str(v[0]), v[1]) for k, v in found.items()} == expected
    assert diff_trees(plain_repo, None, None) == {}


@pytest.mark.parametrize("bad", ["../x", "/abs", "a//b", "a/./b", "a\x00b", "a/.git/x", "a\nb"])
def test_unsafe_paths_are_refused(plain_repo: pygit2.Repository, bad: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        build_tree(plain_repo, None, {bad: b"x"})
    assert caught.value.code == "unsafe-path"


def test_commit_updates_branch_index_and_worktree(plain_repo: pygit2.Repository) -> None:
    path = Path(plain_repo.workdir)
    result = publish(plain_repo, write({"notes/a.txt": b"A\n"}), guard=None)
    assert result.commit == git(path, "rev-parse", "HEAD").strip()
    assert (path / "notes/a.txt").read_bytes() == b"A\n"
    assert git(path, "status", "--porcelain") == ""
    assert git(path, "ls-files", "notes") == "notes/a.txt\n"
    git(path, "fsck", "--strict")
    reflog = git(path, "reflog", "show", "--format=%gs", "main")
    assert reflog.splitlines()[0] == "memgit: test: write"


def test_deleting_a_file_removes_it_and_its_empty_folders(plain_repo: pygit2.Repository) -> None:
    path = Path(plain_repo.workdir)
    publish(plain_repo, write({"deep/er/a.txt": b"A"}), guard=None)
    publish(plain_repo, write({"deep/er/a.txt": None}), guard=None)
    assert not (path / "deep").exists()
    assert git(path, "status", "--porcelain") == ""


def test_no_op_change_makes_no_commit(plain_repo: pygit2.Repository) -> None:
    head = str(plain_repo.head.target)
    result = publish(plain_repo, write({"README": b"hello\n"}), guard=None)
    assert result.commit is None
    assert str(plain_repo.head.target) == head


def test_lost_race_is_reapplied_on_the_new_tip(plain_repo: pygit2.Repository) -> None:
    """Someone commits between our read of the tip and our ref update: nothing is lost."""
    path = Path(plain_repo.workdir)
    calls = []

    def plan(tip: pygit2.Commit | None) -> Change:
        calls.append(str(tip.id) if tip else None)
        if len(calls) == 1:
            (path / "theirs.txt").write_text("theirs\n")
            git(path, "add", "theirs.txt")
            git(path, "commit", "-q", "-m", "their commit")
        return Change(files={"ours.txt": b"ours\n"}, message="ours\n")

    result = publish(plain_repo, plan, guard=None)
    assert result.attempts == 2
    assert calls[1] == git(path, "rev-parse", "HEAD~1").strip()
    names = git(path, "ls-tree", "--name-only", "HEAD").split()
    assert names == ["README", "ours.txt", "theirs.txt"]
    assert git(path, "status", "--porcelain") == ""


def _stage_a_conflict(path: Path) -> None:
    """README with base, ours and theirs stages, as a failed merge leaves it."""
    blobs = [git(path, "hash-object", "-w", "--stdin", input=f"{n}\n").strip() for n in "123"]
    entries = "".join(f"100644 {blob} {n}\tREADME\n" for n, blob in zip("123", blobs, strict=True))
    git(path, "update-index", "--index-info", input="0 " + "0" * 40 + "\tREADME\n" + entries)


@pytest.mark.parametrize(
    ("prepare", "what"),
    [
        (lambda p: (p / "new.txt").write_text("mine"), "an untracked file"),
        (lambda p: (p / "README").write_text("edited"), "uncommitted changes"),
        (lambda p: (p / "README").unlink(), "a local deletion"),
        (
            lambda p: ((p / "README").write_text("staged"), git(p, "add", "README")),
            "staged changes",
        ),
        (lambda p: git(p, "rm", "-q", "--cached", "README"), "a staged deletion"),
        (
            lambda p: ((p / "new.txt").write_text("memgit"), git(p, "add", "new.txt")),
            "a staged new file",
        ),
        (_stage_a_conflict, "an unresolved merge conflict"),
    ],
)
def test_local_edits_are_never_clobbered(plain_repo: pygit2.Repository, prepare, what: str) -> None:
    path = Path(plain_repo.workdir)
    prepare(path)
    before = snapshot(path)
    with pytest.raises(ConflictError) as caught:
        publish(plain_repo, write({"new.txt": b"memgit", "README": b"memgit"}), guard=None)
    assert caught.value.code == "local-edits"
    assert what in caught.value.message
    assert snapshot(path) == before


def test_symlinked_folder_is_refused(plain_repo: pygit2.Repository, tmp_path: Path) -> None:
    path = Path(plain_repo.workdir)
    outside = tmp_path / "outside"
    outside.mkdir()
    (path / "inbox").symlink_to(outside)
    before = snapshot(path)
    with pytest.raises(InvalidInputError) as caught:
        publish(plain_repo, write({"inbox/a/b.yaml": b"x"}), guard=None)
    assert caught.value.code == "unsafe-path"
    assert list(outside.iterdir()) == []
    assert snapshot(path) == before


def test_file_where_a_folder_is_needed_is_a_conflict(plain_repo: pygit2.Repository) -> None:
    with pytest.raises(ConflictError) as caught:
        publish(plain_repo, write({"README/x": b"x"}), guard=None)
    assert caught.value.code == "path-conflict"


def test_detached_and_unborn_heads_are_refused(plain_repo: pygit2.Repository) -> None:
    path = Path(plain_repo.workdir)
    git(path, "checkout", "-q", "--detach")
    before = snapshot(path)
    with pytest.raises(ConflictError) as caught:
        publish(plain_repo, write({"a": b"a"}), guard=None)
    assert caught.value.code == "detached-head"
    assert snapshot(path) == before
    git(path, "checkout", "-q", "--orphan", "fresh")
    with pytest.raises(ConflictError) as caught:
        publish(plain_repo, write({"a": b"a"}), guard=None)
    assert caught.value.code == "unborn-branch"


def test_extra_refs_point_at_the_new_commit(plain_repo: pygit2.Repository) -> None:
    path = Path(plain_repo.workdir)
    change = Change(files={"a": b"a"}, message="run\n", refs={"refs/memgit/runs/r1": "HEAD"})
    result = publish(plain_repo, lambda tip: change, guard=None)
    assert git(path, "rev-parse", "refs/memgit/runs/r1").strip() == result.commit


HOLD_LOCK = """
import sys, time
from pathlib import Path
from memgit.store.lock import WriterLock
lock = WriterLock(Path(sys.argv[1]), timeout=5)
lock.acquire()
lock.write({})
print("locked", flush=True)
time.sleep(30)
"""


def test_busy_lock_names_the_live_holder(plain_repo: pygit2.Repository) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, plain_repo.path], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = snapshot(Path(plain_repo.workdir))
        with pytest.raises(ConflictError) as caught:
            publish(plain_repo, write({"a": b"a"}), lock_timeout=0.3, guard=None)
        assert caught.value.code == "lock-busy"
        assert f"memgit process {holder.pid}" in caught.value.message
        assert "(running)" in caught.value.message
        assert snapshot(Path(plain_repo.workdir)) == before
    finally:
        holder.kill()
        holder.wait()
    # The kernel released the lock with the process: the next writer goes ahead.
    assert publish(plain_repo, write({"a": b"a"}), lock_timeout=2, guard=None).commit


def _half_published(repo: pygit2.Repository) -> dict[str, object]:
    """What a writer killed between the ref update and the work-tree sync leaves:
    the branch at its commit, the index and work tree not, and its journal."""
    tip = repo.head.peel(pygit2.Commit)
    tree = build_tree(repo, tip.tree, {"orphan.txt": b"orphan\n"})
    sig = pygit2.Signature("x", "x@example.com", 0, 0)
    new = repo.create_commit(None, sig, sig, "half done\n", tree, [tip.id])
    journal = {
        "pid": 999999999,
        "host": "h",
        "at": time.time(),
        "op": "publish",
        "branch": "refs/heads/main",
        "old": str(tip.id),
        "new": str(new),
        "paths": ["orphan.txt"],
        "refs": {},
    }
    repo.references["refs/heads/main"].set_target(new)
    (Path(repo.path) / "memgit").mkdir(exist_ok=True)
    (Path(repo.path) / "memgit" / "lock").write_text(json.dumps(journal))
    assert git(Path(repo.workdir), "status", "--porcelain") == "D  orphan.txt\n"
    return journal


def test_writer_killed_after_moving_the_branch_is_finished_by_the_next(
    plain_repo: pygit2.Repository,
) -> None:
    path = Path(plain_repo.workdir)
    _half_published(plain_repo)
    publish(plain_repo, write({"next.txt": b"next\n"}), guard=None)
    assert (path / "orphan.txt").read_bytes() == b"orphan\n"
    assert git(path, "status", "--porcelain") == ""
    assert git(path, "log", "--format=%s").splitlines()[:2] == ["test: write", "half done"]


def test_a_reader_finishes_a_killed_writers_publish(plain_repo: pygit2.Repository) -> None:
    """Before a fix, the killed run's files stayed staged as deletions until the next
    memgit write, and a person's `git commit` committed the deletions."""
    path = Path(plain_repo.workdir)
    _half_published(plain_repo)
    finish_dead_writer(plain_repo)
    assert (path / "orphan.txt").read_bytes() == b"orphan\n"
    assert git(path, "status", "--porcelain") == ""
    assert (Path(plain_repo.path) / "memgit" / "lock").read_bytes() == b""
    finish_dead_writer(plain_repo)  # nothing left to do
    assert git(path, "status", "--porcelain") == ""


def test_a_killed_publish_to_a_branch_not_checked_out_leaves_the_checkout_alone(
    plain_repo: pygit2.Repository,
) -> None:
    """A writer killed after moving a proposal branch: recovery must not bring the
    checkout in line with that branch, and the hooks have nothing to refuse."""
    path = Path(plain_repo.workdir)
    (path / "README").write_text("my own edit\n")
    before = snapshot(path)
    branch = "refs/heads/memgit/proposals/p1"

    def killed_after_moving(
        repo: pygit2.Repository, moved: str, tip: object, new: pygit2.Oid, change: object
    ) -> bool:
        repo.create_reference_direct(moved, new, False)
        raise KeyboardInterrupt  # stands in for the kill: the journal stays

    from memgit.store import engine

    original = engine._move_refs
    engine._move_refs = killed_after_moving
    try:
        with pytest.raises(KeyboardInterrupt):
            publish(
                plain_repo,
                write({"proposed.txt": b"proposed\n"}),
                guard=None,
                ref=branch,
                allow_unborn=True,
            )
    finally:
        engine._move_refs = original
    journal = json.loads((Path(plain_repo.path) / "memgit" / "lock").read_bytes())
    assert journal["op"] == "publish" and journal["branch"] == branch
    assert unfinished_publish(plain_repo) is None
    finish_dead_writer(plain_repo)
    after = snapshot(path)
    assert {**after, "refs": None} == {**before, "refs": None}
    assert not (path / "proposed.txt").exists()


def test_a_reader_leaves_a_live_writers_publish_alone(
    plain_repo: pygit2.Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal under a held lock is a writer at work: a reader neither waits nor acts.
    A reader that waited like a writer would wait 600 s here; the bound is a hundred
    times any busy machine's time for the call, so only such a wait can cross it."""
    monkeypatch.setenv("MEMGIT_LOCK_TIMEOUT", "600")
    path = Path(plain_repo.workdir)
    journal = _half_published(plain_repo)
    lock = WriterLock(Path(plain_repo.path), timeout=0)
    lock.acquire()
    try:
        lock.write({k: v for k, v in journal.items() if k not in ("pid", "host", "at")})
        started = time.monotonic()
        finish_dead_writer(plain_repo)
        assert time.monotonic() - started < 60
        assert git(path, "status", "--porcelain") == "D  orphan.txt\n"
    finally:
        lock.release(clean=False)


def test_a_lock_a_git_command_took_after_the_crash_is_left(
    plain_repo: pygit2.Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recovery used to delete any git lock newer than the dead writer's journal, so a
    git command that had started since lost its lock. Only a lock holding what the dead
    writer was writing is removed; the index lock never is."""
    from memgit.store import engine

    journal = _half_published(plain_repo)
    git_dir = Path(plain_repo.path)
    index_lock = git_dir / "index.lock"
    index_lock.write_bytes(b"DIRC")  # a git command writing the index
    ref_lock = git_dir / "refs" / "heads" / "main.lock"
    ref_lock.write_text("0123456789012345678901234567890123456789\n")  # another id
    monkeypatch.setattr(engine, "REF_LOCK_WAIT", 0.2)
    monkeypatch.setattr(worktree, "LOCK_WAIT", 0.2)
    with pytest.raises(ConflictError) as caught:  # the dead writer's sync cannot finish
        publish(plain_repo, write({"a": b"a"}), guard=None)
    assert caught.value.code == "git-lock"
    finish_dead_writer(plain_repo)  # a reader cannot either, and goes on
    assert index_lock.read_bytes() == b"DIRC"
    assert ref_lock.exists()
    index_lock.unlink()
    ref_lock.write_text(f"{journal['new']}\n")  # the dead writer's, as libgit2 writes it
    assert publish(plain_repo, write({"a": b"a"}), guard=None).commit
    assert not ref_lock.exists()
    assert git(Path(plain_repo.workdir), "status", "--porcelain") == ""


def test_foreign_index_lock_is_reported_not_removed(
    plain_repo: pygit2.Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = Path(plain_repo.path) / "index.lock"
    lock.write_bytes(b"")
    os.utime(lock, (time.time() - 3600, time.time() - 3600))
    head = str(plain_repo.head.target)
    monkeypatch.setattr(worktree, "LOCK_WAIT", 0.2)
    with pytest.raises(ConflictError) as caught:
        publish(plain_repo, write({"a": b"a"}), guard=None)
    assert caught.value.code == "git-lock"
    assert lock.exists() and lock.read_bytes() == b""
    assert str(plain_repo.head.target) == head


def test_a_held_branch_lock_is_never_taken_for_a_dead_writers(
    plain_repo: pygit2.Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git process holds the branch's lock while memgit tries to commit: memgit gives
    up with git-lock, and its next write must not remove that live lock as if a killed
    memgit writer had left it."""
    from memgit.store import engine

    monkeypatch.setattr(engine, "REF_LOCK_WAIT", 0.2)
    lock = Path(plain_repo.path) / "refs" / "heads" / "main.lock"
    lock.write_bytes(b"")
    head = str(plain_repo.head.target)
    for _ in range(2):
        with pytest.raises(ConflictError) as caught:
            publish(plain_repo, write({"a": b"a"}), guard=None)
        assert caught.value.code == "git-lock"
        assert lock.exists()
    assert str(plain_repo.references["refs/heads/main"].target) == head
    lock.unlink()
    assert publish(plain_repo, write({"a": b"a"}), guard=None).commit


def test_the_branch_and_memgits_refs_move_together_or_not_at_all(
    plain_repo: pygit2.Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write's run ref is set in the same transaction as the branch: with that ref's
    lock held by someone else, neither moves (before, the branch moved and the ref was
    left for the next writer to create)."""
    from memgit.store import engine

    monkeypatch.setattr(engine, "REF_LOCK_WAIT", 0.2)
    path = Path(plain_repo.workdir)
    ref_lock = Path(plain_repo.path) / "refs" / "memgit" / "runs" / "r1.lock"
    ref_lock.parent.mkdir(parents=True)
    ref_lock.write_bytes(b"")
    before = snapshot(path)
    change = Change(files={"a": b"a"}, message="test: run\n", refs={"refs/memgit/runs/r1": "HEAD"})
    with pytest.raises(ConflictError) as caught:
        publish(plain_repo, lambda tip: change, guard=None)
    assert caught.value.code == "git-lock"
    assert caught.value.path == "refs/memgit/runs/r1"
    assert snapshot(path) == before
    assert "refs/memgit/runs/r1" not in plain_repo.references
    ref_lock.unlink()
    result = publish(plain_repo, lambda tip: change, guard=None)
    assert str(plain_repo.references["refs/memgit/runs/r1"].target) == result.commit
    assert git(path, "rev-parse", "HEAD") == f"{result.commit}\n"


def test_a_branch_not_checked_out_is_published_without_the_checkout(
    plain_repo: pygit2.Repository,
) -> None:
    """publish(ref=...) builds on that branch's tip and leaves index and work tree alone,
    local edits included: a proposal branch needs no checkout."""
    path = Path(plain_repo.workdir)
    (path / "README").write_text("my own edit\n")
    (path / "a").write_text("untracked, in the way of nothing\n")
    before = snapshot(path)
    head = git(path, "rev-parse", "HEAD")
    result = publish(
        plain_repo,
        write({"a": b"proposed\n"}),
        guard=None,
        ref="refs/heads/memgit/proposals/p1",
        allow_unborn=True,
    )
    assert result.parent is None and result.commit is not None
    again = publish(
        plain_repo, write({"b": b"more\n"}), guard=None, ref="refs/heads/memgit/proposals/p1"
    )
    assert again.parent == result.commit
    assert git(path, "rev-parse", "HEAD") == head
    after = snapshot(path)
    assert {**after, "refs": None} == {**before, "refs": None}
    shown = git(path, "ls-tree", "--name-only", "memgit/proposals/p1").split()
    assert shown == ["a", "b"]


def test_git_failing_on_the_index_is_reported_and_nothing_is_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unreadable index makes `git ls-files` fail before anything is published."""
    plain_repo = _plain_repo(tmp_path)
    path = Path(plain_repo.workdir)
    index_file = path / ".git" / "index"
    data = index_file.read_bytes()
    index_file.write_bytes(data[:4] + (99).to_bytes(4, "big") + data[8:])  # index version 99
    head = git(path, "rev-parse", "HEAD")
    with pytest.raises(ConflictError) as caught:
        publish(plain_repo, write({"notes/a.txt": b"A\n"}), guard=None)
    assert caught.value.code == "git-failed"
    assert "index" in caught.value.message
    assert git(path, "rev-parse", "HEAD") == head
    assert not (path / "notes").exists()


class _Refuse:
    def screen(self, files: object, message: str) -> None:
        pass

    def check(self, repo: object, tree: object, base: object, merged: object = ()) -> None:
        raise InvalidInputError("refused by the test", code="schema")


def test_a_refused_change_leaves_the_index_unlocked(plain_repo: pygit2.Repository) -> None:
    """memgit holds git's index.lock while it checks and publishes: a refusal (by the
    guard, or a local edit found under the lock) leaves no lock behind."""
    path = Path(plain_repo.workdir)
    head = str(plain_repo.head.target)
    with pytest.raises(InvalidInputError):
        publish(plain_repo, write({"notes/a.txt": b"A\n"}), guard=_Refuse())
    (path / "README").write_text("my own edit\n")
    with pytest.raises(ConflictError) as caught:
        publish(plain_repo, write({"README": b"memgit's\n"}), guard=None)
    assert caught.value.code == "local-edits"
    assert not (path / ".git" / "index.lock").exists()
    assert str(plain_repo.head.target) == head
    git(path, "add", "README")  # git can take the lock again


def _split_mode(path: Path) -> bool:
    """The index file links to a shared index (git's split mode)."""
    shared = list((path / ".git").glob("sharedindex.*"))
    return bool(shared) and b"link" in (path / ".git" / "index").read_bytes()


def _shared_indexes(path: Path) -> list[Path]:
    return sorted((path / ".git").glob("sharedindex.*"))


def test_a_large_index_is_kept_in_split_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first write splits a large index; later ones rewrite only the small part,
    until that part has grown large again (every entry's stat data refreshed)."""
    path = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(path))
    past = time.time() - 60  # no entry is "racily clean": git would keep it in the small part
    for number in range(300):
        (path / f"f{number:03}.txt").write_text(f"{number}\n")
        os.utime(path / f"f{number:03}.txt", (past, past))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "300 files")
    whole = (path / ".git" / "index").stat().st_size
    monkeypatch.setattr(worktree, "SPLIT_INDEX_BYTES", whole // 4)  # 300 files count as large
    repo = open_repository(path)
    assert not _split_mode(path)
    publish(repo, write({"notes/a.txt": b"A\n"}), guard=None)
    assert _split_mode(path)
    shared = _shared_indexes(path)
    assert len(shared) == 1
    assert (path / ".git" / "index").stat().st_size < whole // 4
    publish(repo, write({"notes/b.txt": b"B\n", "f000.txt": None}), guard=None)
    assert _shared_indexes(path) == shared  # only the small part was written
    assert (path / ".git" / "index").stat().st_size < whole // 4
    assert git(path, "status", "--porcelain") == ""
    files = git(path, "ls-files").split()
    assert len(files) == 301 and "notes/b.txt" in files and "f000.txt" not in files

    earlier = time.time() - 30
    for number in range(1, 300):
        os.utime(path / f"f{number:03}.txt", (earlier, earlier))
    git(path, "status", "--porcelain")  # refreshes all stat data into the small part
    assert (path / ".git" / "index").stat().st_size >= whole // 4
    publish(repo, write({"notes/c.txt": b"C\n"}), guard=None)
    assert len(_shared_indexes(path)) == 2  # the entries moved to a new shared index
    assert (path / ".git" / "index").stat().st_size < whole // 4
    assert git(path, "status", "--porcelain") == ""
    assert git(path, "config", "--get", "core.splitIndex", check=False) == ""


def test_a_failed_split_leaves_a_whole_index_and_the_write_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Splitting is only for speed: when git refuses it after the entries are saved,
    the write still succeeds, with a whole, correct index (it used to report a failed
    index update for a commit whose index was in line)."""
    monkeypatch.setattr(worktree, "SPLIT_INDEX_BYTES", 0)
    monkeypatch.setattr(worktree, "_SPLIT", ("update-index", "--no-such-option"))
    repo = _plain_repo(tmp_path)
    path = Path(repo.workdir)
    result = publish(repo, write({"notes/a.txt": b"A\n"}), guard=None)
    assert result.commit is not None
    assert not _split_mode(path)
    assert git(path, "status", "--porcelain") == ""
    assert "notes/a.txt" in git(path, "ls-files").split()


def test_core_split_index_false_keeps_the_index_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worktree, "SPLIT_INDEX_BYTES", 0)
    repo = _plain_repo(tmp_path)
    path = Path(repo.workdir)
    git(path, "config", "core.splitIndex", "false")
    publish(repo, write({"notes/a.txt": b"A\n"}), guard=None)
    assert not list((path / ".git").glob("sharedindex.*"))
    assert repo.index["notes/a.txt"].id == repo.head.peel(pygit2.Commit).tree["notes/a.txt"].id


@pytest.mark.parametrize("how", ["command", "config"])
def test_a_small_index_in_split_mode_is_handled(tmp_path: Path, how: str) -> None:
    """libgit2 cannot read a split index; memgit, asking git, handles one of any size."""
    repo = _plain_repo(tmp_path)
    path = Path(repo.workdir)
    if how == "command":
        git(path, "update-index", "--split-index")
    else:
        git(path, "config", "core.splitIndex", "true")
    (path / "notes").mkdir()
    (path / "notes" / "mine.txt").write_text("staged by hand\n")
    git(path, "add", "notes/mine.txt")
    assert _split_mode(path)
    with pytest.raises(pygit2.GitError):
        repo.index.read(True)
    with pytest.raises(ConflictError) as caught:  # a staged edit is still seen
        publish(repo, write({"notes/mine.txt": b"memgit's\n"}), guard=None)
    assert caught.value.code == "local-edits"
    publish(repo, write({"notes/a.txt": b"A\n"}), guard=None)
    assert git(path, "ls-files").split() == ["README", "notes/a.txt", "notes/mine.txt"]
    assert git(path, "status", "--porcelain") == "A  notes/mine.txt\n"
    assert _split_mode(path)


def test_a_change_can_merge_other_commits(plain_repo: pygit2.Repository) -> None:
    """A merge commit: the tip first, then the merged commits; the tree is the tip's plus
    the change, and the checkout follows it."""
    main_tip = plain_repo.head.target
    side = plain_repo.create_commit(
        "refs/heads/side",
        plain_repo.default_signature,
        plain_repo.default_signature,
        "side\n",
        build_tree(plain_repo, plain_repo[main_tip].peel(pygit2.Tree), {"side": b"s\n"}),
        [main_tip],
    )
    merged = publish(
        plain_repo,
        lambda tip: Change(files={"side": b"s\n"}, message="merge side\n", merged=(str(side),)),
        guard=None,
    )
    commit = plain_repo[pygit2.Oid(hex=merged.commit)]
    assert [str(p) for p in commit.parent_ids] == [str(main_tip), str(side)]
    workdir = Path(plain_repo.workdir)
    assert (workdir / "side").read_bytes() == b"s\n"
    assert git(workdir, "status", "--porcelain").strip() == ""
    # A merge that brings no new content is still a commit: the histories join.
    again = plain_repo.create_commit(
        "refs/heads/side2",
        plain_repo.default_signature,
        plain_repo.default_signature,
        "side2\n",
        commit.tree_id,
        [side],
    )
    joined = publish(
        plain_repo,
        lambda tip: Change(files={}, message="merge side2\n", merged=(str(again),)),
        guard=None,
    )
    assert joined.commit is not None
    assert len(plain_repo[pygit2.Oid(hex=joined.commit)].parent_ids) == 2


def test_a_change_can_fast_forward_to_a_descendant(plain_repo: pygit2.Repository) -> None:
    tip = plain_repo.head.target
    tree = build_tree(plain_repo, plain_repo[tip].peel(pygit2.Tree), {"new": b"n\n"})
    sig = plain_repo.default_signature
    ahead = plain_repo.create_commit(None, sig, sig, "ahead\n", tree, [tip])
    result = publish(
        plain_repo,
        lambda t: Change(files={"new": b"n\n"}, message="ff\n", fast_forward=str(ahead)),
        guard=None,
    )
    assert result.commit == str(ahead)
    assert plain_repo.head.target == ahead
    assert (Path(plain_repo.workdir) / "new").read_bytes() == b"n\n"
    # Not a descendant (or not the tip plus the change): refused, the branch stays.
    beside = build_tree(plain_repo, plain_repo[tip].peel(pygit2.Tree), {"other": b"o\n"})
    stray = plain_repo.create_commit(None, sig, sig, "stray\n", beside, [tip])
    with pytest.raises(ConflictError) as refused:
        publish(
            plain_repo,
            lambda t: Change(files={"other": b"o\n"}, message="ff\n", fast_forward=str(stray)),
            guard=None,
        )
    assert refused.value.code == "not-fast-forward"
    assert plain_repo.head.target == ahead


def test_a_new_branch_starts_from_the_commit_named(plain_repo: pygit2.Repository) -> None:
    """publish(ref=..., start=...) creates a branch off ``start`` (a proposal off the tip):
    the new commit's parent is ``start`` and its tree is start's plus the change; the
    checked-out branch does not move. A branch that appeared meanwhile is built on."""
    path = Path(plain_repo.workdir)
    head = git(path, "rev-parse", "HEAD").strip()
    ref = "refs/heads/memgit/proposals/p1"
    result = publish(plain_repo, write({"a": b"proposed\n"}), guard=None, ref=ref, start=head)
    assert result.parent == head
    assert git(path, "rev-parse", f"{ref}^") == f"{head}\n"
    assert git(path, "ls-tree", "--name-only", ref).split() == ["README", "a"]
    assert git(path, "rev-parse", "HEAD") == f"{head}\n"
    again = publish(plain_repo, write({"b": b"b\n"}), guard=None, ref=ref, start=head)
    assert again.parent == result.commit


def test_a_change_can_delete_refs_with_the_branch(plain_repo: pygit2.Repository) -> None:
    """A ref named with None is deleted in the same transaction the branch moves in."""
    path = Path(plain_repo.workdir)
    git(path, "branch", "memgit/proposals/p1")
    change = Change(
        files={"a": b"a\n"},
        message="test: approve\n",
        refs={"refs/heads/memgit/proposals/p1": None, "refs/memgit/runs/r1": "HEAD"},
    )
    result = publish(plain_repo, lambda tip: change, guard=None)
    assert "refs/heads/memgit/proposals/p1" not in plain_repo.references
    assert str(plain_repo.references["refs/memgit/runs/r1"].target) == result.commit


def test_an_empty_change_commits_only_when_allowed(plain_repo: pygit2.Repository) -> None:
    """``allow_empty`` makes a commit with the tip's tree, holding only its message (a
    rejection's reason); without it the same change is a no-op."""
    path = Path(plain_repo.workdir)
    head = git(path, "rev-parse", "HEAD").strip()
    ref = "refs/memgit/rejected/r1"
    plain = publish(
        plain_repo, lambda tip: Change(files={}, message="x\n"), guard=None, ref=ref, start=head
    )
    assert plain.commit is None and ref not in plain_repo.references
    result = publish(
        plain_repo,
        lambda tip: Change(files={}, message="test: reject\n\nwhy\n", allow_empty=True),
        guard=None,
        ref=ref,
        start=head,
    )
    assert result.parent == head
    assert git(path, "rev-parse", f"{ref}^{{tree}}") == git(path, "rev-parse", "HEAD^{tree}")
    assert git(path, "log", "-1", "--format=%B", ref).strip() == "test: reject\n\nwhy"
