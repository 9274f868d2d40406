"""``memgit forget --purge``: the history of every local ref is rewritten so a memory (or a
leaked string) is gone from every object git keeps; unrelated files keep their blob ids;
refused when it is not safe; a SIGKILLed purge leaves the old or the new history."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memgit import MemoryRepo
from memgit.jsonio import json_data
from memgit.store.lock import WriterLock

from support import (
    assert_fsck_clean,
    everything_git_keeps,
    git,
    make_turn,
    memgit_cli,
    memgit_in_process,
    snapshot,
)

SECRET_WORD = b"quokkadb"
STAGING = "Remember that the staging database is called quokkadb."
CACHE = "Remember that the build cache lives on the volume named kestrel."
DEPLOY = "Remember that deploys happen on Tuesdays."
ADDRESS = "By the way, my home is at 12 Wombatlane Street."


def turn(seq: int, text: str) -> dict[str, object]:
    return make_turn(seq, messages=[{"role": "user", "content": text}])


def memory_paths(path: Path, rev: str = "HEAD") -> dict[str, tuple[str, str]]:
    """(path, blob id) of each memory in ``rev``, by a word of its file."""
    found = {}
    for row in git(path, "ls-tree", "-r", rev, "memories").splitlines():
        blob, name = row.split()[2], row.split("\t", 1)[1]
        text = git(path, "cat-file", "blob", blob)
        word = next(w for w in ("quokkadb", "kestrel", "Tuesdays") if w in text)
        found[word] = (name, blob)
    return found


def tree_blobs(path: Path, rev: str, top: str) -> dict[str, str]:
    rows = git(path, "ls-tree", "-r", rev, top).splitlines()
    return {row.split("\t", 1)[1]: row.split()[2] for row in rows}


def refs(path: Path) -> dict[str, str]:
    rows = git(path, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    return dict(row.split() for row in rows)


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    """Three runs, one memory each; the quokkadb memory is on every kind of ref: a side
    branch, an annotated tag, a proposal and applied ref, a sync ref, a remote."""
    path = tmp_path / "memory"
    MemoryRepo.init(path)
    for seq, text in enumerate([STAGING, CACHE]):
        MemoryRepo.open(path).capture(turn(seq, text))
        MemoryRepo.open(path).process()
    git(path, "branch", "side")
    name, _ = memory_paths(path)["quokkadb"]
    title = MemoryRepo.open(path).show(name.rsplit("/", 1)[1].removesuffix(".md")).text
    title = next(line for line in title.splitlines() if line.startswith("title: "))[7:]
    git(path, "tag", "-a", "v1", "-m", f"release\n\nit knows: {title.strip(chr(39))}")
    git(path, "update-ref", "refs/heads/memgit/proposals/r1", "HEAD~1")
    git(path, "update-ref", "refs/memgit/applied/r1", "HEAD~1")
    git(path, "update-ref", "refs/memgit-sync/origin/runs/r1", "HEAD")
    MemoryRepo.open(path).capture(turn(2, DEPLOY))
    MemoryRepo.open(path).capture(turn(3, ADDRESS))
    MemoryRepo.open(path).process()
    git(path, "commit", "-q", "--allow-empty", "-m", "note: Wombatlane Street is my home")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(path, "remote", "add", "origin", str(remote))
    git(path, "push", "-q", "origin", "main", "side")
    git(path, "fetch", "-q", "origin")
    assert sorted(memory_paths(path)) == ["Tuesdays", "kestrel", "quokkadb"]
    return path


def quokkadb_id(path: Path) -> str:
    name, _ = memory_paths(path)["quokkadb"]
    return name.rsplit("/", 1)[1].removesuffix(".md")


def assert_gone(path: Path, word: bytes) -> None:
    """No object, commit message, ref, reflog or cache of ``path`` holds ``word``."""
    for what, data in everything_git_keeps(path).items():
        assert word.lower() not in data.lower(), what
    all_refs = git(path, "for-each-ref", "--format=%(refname)").split()
    grep = subprocess.run(
        ["git", "-C", str(path), "grep", "-i", "-e", word.decode(), *all_refs],
        capture_output=True,
        check=False,
    )
    assert grep.returncode == 1 and grep.stdout == b"", grep.stdout


def test_purge_removes_the_memory_from_everything_git_keeps(memory: Path) -> None:
    memory_id = quokkadb_id(memory)
    before_refs = refs(memory)
    unrelated = {w: memory_paths(memory)[w] for w in ("kestrel", "Tuesdays")}
    captures = tree_blobs(memory, "HEAD", "inbox")
    runs = tree_blobs(memory, "HEAD", "runs")
    done = memgit_cli("forget", "--purge", "--with-sources", memory_id, "--json", cwd=memory)
    assert done.returncode == 0, done.stderr.decode()
    data = json.loads(done.stdout)
    after_refs = refs(memory)
    moved = {row["ref"]: (row["old"], row["new"]) for row in data["refs"]}
    # Every ref moved is reported with its old and new id; the others did not move.
    for name, old in before_refs.items():
        if name in moved:
            assert moved[name][0] == old and after_refs.get(name) == moved[name][1]
        else:
            assert after_refs[name] == old
    for name in (
        "refs/heads/main",
        "refs/heads/side",
        "refs/tags/v1",
        "refs/heads/memgit/proposals/r1",
        "refs/memgit/applied/r1",
        "refs/memgit-sync/origin/runs/r1",
        "refs/remotes/origin/main",
    ):
        assert name in moved, name
    assert data["remotes"] == ["origin"]
    assert_gone(memory, SECRET_WORD)
    assert_fsck_clean(memory)
    # Unrelated memories, captures and runs keep their blob ids.
    assert {w: memory_paths(memory)[w] for w in ("kestrel", "Tuesdays")} == unrelated
    after_captures = tree_blobs(memory, "HEAD", "inbox")
    (gone,) = set(captures) - set(after_captures)
    assert {p: b for p, b in captures.items() if p != gone} == after_captures
    after_runs = tree_blobs(memory, "HEAD", "runs")
    assert set(after_runs) == set(runs)
    assert sum(runs[p] != after_runs[p] for p in runs) == 1  # the run that created it
    # The checkout follows, and the remote was not touched.
    assert git(memory, "status", "--porcelain") == ""
    assert SECRET_WORD.decode() in git(memory.parent / "remote.git", "log", "--all", "-p")
    assert git(memory, "reflog", "--all") == ""
    # memgit goes on working on the new history.
    MemoryRepo.open(memory).capture(turn(4, "Remember that the printer is on floor two."))
    MemoryRepo.open(memory).process()
    repo = MemoryRepo.open(memory)
    assert json_data(repo.recall("quokkadb"))["memories"] == []
    assert [hit["id"] for hit in json_data(repo.recall("kestrel"))["memories"]] == [
        Path(unrelated["kestrel"][0]).stem
    ]
    assert_fsck_clean(memory)


def test_purge_prints_each_ref_and_the_remotes(memory: Path) -> None:
    memory_id = quokkadb_id(memory)
    before = refs(memory)
    done = memgit_in_process("forget", "--purge", memory_id, cwd=memory)
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    after = refs(memory)
    moved = [name for name in before if before[name] != after.get(name)]
    assert lines[0] == f"rewrote {len(moved)} refs"
    for name in moved:
        assert f"  {name}  {before[name][:12]} -> {after[name][:12]}" in lines
    assert "still holding the old history: origin" in lines


def test_purge_text_replaces_a_leaked_string_everywhere(memory: Path) -> None:
    unrelated = memory_paths(memory)
    done = memgit_in_process("forget", "--purge", "--purge-text", "Wombatlane Street", cwd=memory)
    assert done.returncode == 0, done.stderr.decode()
    assert_gone(memory, b"Wombatlane")
    assert memory_paths(memory) == unrelated
    assert "(purged)" in git(memory, "log", "--all", "--format=%B")
    assert_fsck_clean(memory)
    assert git(memory, "status", "--porcelain") == ""


def test_purge_of_a_retired_memory_removes_its_ref(memory: Path) -> None:
    memory_id = quokkadb_id(memory)
    MemoryRepo.open(memory).forget([memory_id])
    git(memory, "update-ref", f"refs/memgit/retired/{memory_id}", "HEAD~1")
    done = memgit_in_process("forget", "--purge", memory_id, "--with-sources", cwd=memory)
    assert done.returncode == 0, done.stderr.decode()
    assert f"refs/memgit/retired/{memory_id}" not in refs(memory)
    assert_gone(memory, SECRET_WORD)


@pytest.mark.parametrize(
    ("args", "code", "status"),
    [
        (("zzzzzzzzzzzz",), "unknown-memory", 2),
        (("../memgit",), "invalid-id", 3),
        (("ab\x1b[31mc",), "invalid-id", 3),
        (("--purge-text", "ab"), "invalid-purge-text", 3),
        ((), "usage", 2),
    ],
)
def test_bad_purges_are_refused_and_change_nothing(
    memory: Path, args: tuple[str, ...], code: str, status: int
) -> None:
    before = snapshot(memory)
    kept = everything_git_keeps(memory)
    done = memgit_in_process("forget", "--purge", *args, cwd=memory)
    assert done.returncode == status, done.stderr.decode()
    assert done.stderr.decode().startswith(f"error[{code}]: ")
    assert snapshot(memory) == before
    after = everything_git_keeps(memory)
    own = {name for name in {*kept, *after} if name.startswith(".git/memgit/")}
    assert {k: v for k, v in after.items() if k not in own} == {
        k: v for k, v in kept.items() if k not in own
    }


def test_purge_text_without_purge_is_a_usage_error(memory: Path) -> None:
    before = snapshot(memory)
    done = memgit_in_process(
        "forget", "--purge-text", "Wombatlane", quokkadb_id(memory), cwd=memory
    )
    assert done.returncode == 2 and done.stderr.startswith(b"error[usage]: ")
    assert snapshot(memory) == before


def test_purge_refuses_uncommitted_changes(memory: Path) -> None:
    config = memory / "memgit.yaml"
    config.write_text(config.read_text("utf-8") + "# mine\n", "utf-8")
    before = snapshot(memory)
    done = memgit_in_process("forget", "--purge", quokkadb_id(memory), cwd=memory)
    assert done.returncode == 4 and done.stderr.startswith(b"error[local-edits]: memgit.yaml")
    assert snapshot(memory) == before


def test_purge_refuses_while_another_writer_holds_the_lock(memory: Path) -> None:
    memory_id = quokkadb_id(memory)
    before = snapshot(memory)
    with WriterLock(memory / ".git"):
        done = memgit_cli("forget", "--purge", memory_id, cwd=memory)
    assert done.returncode == 4 and done.stderr.startswith(b"error[lock-busy]: ")
    assert snapshot(memory) == before


# A purge that SIGKILLs itself at one point: after the new objects are built but before
# the plan is journaled, or with half of the refs moved (as a transaction killed while
# renaming its lock files onto the refs leaves them).
KILL_ITSELF = r"""
import os, signal, sys
import pygit2
import memgit.store.rewrite as rewrite
from memgit import MemoryRepo

repo_path, point, memory_id = sys.argv[1:4]

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

def move_half(repo, moves):
    for move in moves[: len(moves) // 2]:
        repo.references[move.name].set_target(pygit2.Oid(hex=move.new))
    die()

if point == "before-journal":
    rewrite.publish_rewrite = die
    import memgit.purge
    memgit.purge.publish_rewrite = die
elif point == "half-moved":
    rewrite._move = move_half
MemoryRepo.open(repo_path).purge([memory_id], with_sources=True)
"""


def purged_copy(memory: Path, memory_id: str) -> dict[str, str]:
    """The refs a completed purge of ``memory_id`` leaves (on a copy: a purge is
    deterministic, so the killed one's new ids are these)."""
    copy = memory.parent / "copy"
    shutil.copytree(memory, copy, symlinks=True)
    done = memgit_in_process("forget", "--purge", "--with-sources", memory_id, cwd=copy)
    assert done.returncode == 0, done.stderr.decode()
    return refs(copy)


@pytest.mark.parametrize(("point", "finished"), [("before-journal", False), ("half-moved", True)])
def test_a_purge_killed_at_a_known_point_leaves_old_or_new_history(
    memory: Path, point: str, finished: bool
) -> None:
    memory_id = quokkadb_id(memory)
    old = refs(memory)
    new = purged_copy(memory, memory_id)
    done = subprocess.run(
        [sys.executable, "-c", KILL_ITSELF, str(memory), point, memory_id],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    if point == "half-moved":
        mixed = refs(memory)
        assert mixed != old and mixed != new  # git sees a mix until the next memgit
    # The next memgit command (here a read) finishes what the killed one journaled.
    assert memgit_in_process("map", cwd=memory).returncode == 0
    assert refs(memory) == (new if finished else old)
    assert git(memory, "status", "--porcelain") == ""
    assert_fsck_clean(memory)
    if finished:
        assert_gone(memory, SECRET_WORD)


def test_purges_killed_at_random_moments_leave_old_or_new_history(memory: Path) -> None:
    """Real ``memgit forget --purge`` processes SIGKILLed after 0 s to 1.4 s (and one left
    to finish): after the next memgit command, every ref is at its old id or every ref at
    its new one."""
    memory_id = quokkadb_id(memory)
    pristine = memory.parent / "pristine"
    shutil.copytree(memory, pristine, symlinks=True)
    old = refs(memory)
    new = purged_copy(memory, memory_id)
    outcomes = []
    for attempt, delay in enumerate([0.0, 0.3, 0.5, 0.7, 0.9, 1.1, 1.4, None]):
        trial = memory.parent / f"trial{attempt}"
        shutil.copytree(pristine, trial, symlinks=True)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memgit.cli.main",
                "forget",
                "--purge",
                "--with-sources",
                memory_id,
            ],
            cwd=trial,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if delay is not None:
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=120)
        time.sleep(0.5)  # a git gc the kill orphaned finishes on its own
        recovered = memgit_in_process("map", cwd=trial)
        assert recovered.returncode == 0, recovered.stderr.decode()
        state = refs(trial)
        assert state in (old, new), attempt
        outcomes.append(state == new)
        assert git(trial, "status", "--porcelain") == ""
        assert_fsck_clean(trial)
    assert outcomes[0] is False and outcomes[-1] is True, outcomes


def test_purge_refuses_a_detached_head(memory: Path) -> None:
    """A detached HEAD at an old commit would keep the old objects alive through gc."""
    git(memory, "checkout", "-q", "--detach", "HEAD~1")
    before = snapshot(memory)
    done = memgit_in_process("forget", "--purge", quokkadb_id(memory), cwd=memory)
    assert done.returncode == 4 and done.stderr.startswith(b"error[detached-head]: ")
    assert snapshot(memory) == before


def test_purge_refuses_linked_worktrees(memory: Path) -> None:
    """Another worktree's HEAD and index would keep the old objects alive through gc."""
    git(memory, "worktree", "add", "-q", str(memory.parent / "other"), "side")
    before = snapshot(memory)
    done = memgit_in_process("forget", "--purge", quokkadb_id(memory), cwd=memory)
    assert done.returncode == 4, done.stderr.decode()
    assert done.stderr.startswith(b"error[linked-worktrees]: ")
    assert snapshot(memory) == before
