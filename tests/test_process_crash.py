"""SIGKILLed ``memgit process`` runs never leave a partial run on the branch.

A repository with 30 captured turns (most holding memory statements) and
``gate.batch_size: 3`` takes ten runs to process. A real ``memgit process``
subprocess is killed at seeded random moments, then started again, twenty
times. After every kill the history holds only whole runs: each commit that
touches ``runs/`` adds exactly one run record plus exactly the memory files its
decisions name, its Memgit-Run trailer has its ref, and ``git fsck --strict``
is clean. Finally, processing to the end gives exactly the memories (ids and
file contents) and run records of an uninterrupted run on an identical copy:
ids derive from content and timestamps from the fixed committer date.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_process import configure, pending_units, trailers, turn, user_turn

import memgit.store.engine as engine
from memgit import MemoryRepo
from memgit.errors import ConflictError

from support import assert_fsck_clean, git, git_show_many

SEED = int(os.environ.get("MEMGIT_PROCESS_CRASH_SEED", "20261201"))  # vary it to explore
KILLS = 20
TURN_COUNT = 30
PROC_TIMEOUT = 60

TEMPLATES = [
    "Remember that server {n} runs Debian {v}.",
    "From now on, tag release {n} with the build date.",
    "I prefer layout {n} for the dashboard.",
    "记住：第{n}号会议室在{v}楼。",
    "What is the weather like in city {n}?",
    "Never deploy service {n} on a Friday.",
    "Thanks, that fixed ticket {n}.",
]


def crash_turns() -> list[dict[str, Any]]:
    turns = []
    for seq in range(TURN_COUNT):
        text = TEMPLATES[seq % len(TEMPLATES)].format(n=seq, v=seq % 7 + 3)
        if seq % 4 == 0:
            turns.append(turn(seq, ("user", text), ("assistant", f"Remember that I said {seq}.")))
        else:
            turns.append(user_turn(seq, text))
    return turns


def start_process(path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memgit.cli.main", "-C", str(path), "process", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def process_to_end(path: Path) -> None:
    proc = start_process(path)
    _, err = proc.communicate(timeout=PROC_TIMEOUT)
    assert proc.returncode == 0, err.decode()


def tree_files(path: Path, prefix: str) -> dict[str, str]:
    """path -> content of every file under ``prefix`` at HEAD."""
    names = git(path, "ls-tree", "-r", "--name-only", "HEAD", "--", prefix).split()
    return git_show_many(path, "HEAD", names)


def blob_exists(path: Path, rev: str, name: str) -> bool:
    done = subprocess.run(
        ["git", "-C", str(path), "cat-file", "-e", f"{rev}:{name}"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def publishing(path: Path) -> dict[str, Any]:
    """What the writer lock's journal says a killed writer was publishing (empty if none)."""
    lock = path / ".git" / "memgit" / "lock"
    raw = lock.read_bytes().strip() if lock.exists() else b""
    journal = json.loads(raw) if raw else {}
    return journal if journal.get("op") == "publish" else {}


def assert_only_whole_runs(path: Path, *, just_killed: bool = False) -> int:
    """Every run commit is complete; returns how many run commits the branch has.

    Right after a kill, the newest run's ref may still be missing if the writer
    died between moving the branch and writing the ref, but only when its lock
    journal names that ref for the next writer to recover.
    """
    run_refs = dict(
        line.split(" ", 1)[::-1]
        for line in git(
            path, "for-each-ref", "--format=%(objectname) %(refname)", "refs/memgit/runs/"
        ).splitlines()
    )
    commits = git(path, "log", "--format=%H", "HEAD", "--", "runs").split()
    seen_runs = set()
    for commit in commits:
        changes = [
            tuple(line.split("\t", 1))
            for line in git(
                path, "diff-tree", "--no-commit-id", "--no-renames", "-r", "--name-status", commit
            ).splitlines()
        ]
        records = [name for status, name in changes if name.startswith("runs/")]
        assert len(records) == 1 and ("A", records[0]) in changes, (commit, changes)
        record = json.loads(git(path, "show", f"{commit}:{records[0]}"))
        run_id = record["run_id"]
        assert run_id not in seen_runs
        seen_runs.add(run_id)
        expected = {records[0]}
        for decision in record["decisions"]:
            if decision["action"] in ("CREATE", "UPDATE", "SUPERSEDE"):
                assert blob_exists(path, commit, decision["path"]), decision
                expected.add(decision["path"])
        assert {name for _, name in changes} == expected, (commit, changes)
        found = dict(trailers(path, commit))
        assert found["Memgit-Run"] == run_id
        name = f"refs/memgit/runs/{run_id}"
        if just_killed and name not in run_refs and commit == commits[0]:
            journal = publishing(path)
            assert journal.get("new") == commit and name in journal.get("refs", {}), journal
            run_refs[name] = commit  # recoverable: the next writer creates it
        assert run_refs.get(name) == commit, run_id
    # every trailer on the branch has its ref, and every run ref is a run on the branch
    log = git(path, "log", "--format=%H %(trailers:key=Memgit-Run,valueonly,separator=)")
    tagged = {
        line.split()[1]: line.split()[0] for line in log.splitlines() if len(line.split()) == 2
    }
    assert {f"refs/memgit/runs/{run_id}": c for run_id, c in tagged.items()} == run_refs
    return len(commits)


def wait_for_branch_move(path: Path, tip: str, proc: subprocess.Popen[bytes]) -> None:
    """Poll the branch's loose ref file until it no longer names ``tip`` (or the process ends)."""
    ref_file = path / ".git" / "refs" / "heads" / "main"
    deadline = time.monotonic() + PROC_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if ref_file.read_text().strip() != tip:
                return
        except FileNotFoundError:
            pass
        time.sleep(0.0005)


def copy_repo(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


@pytest.mark.slow
def test_sigkilled_process_runs_leave_only_whole_runs(tmp_path: Path) -> None:
    """Twenty seeded SIGKILLs of `memgit process`, each followed by a rerun, converge on the
    uninterrupted result with no partial run ever on the branch."""
    pristine = tmp_path / "pristine"
    MemoryRepo.init(pristine)
    configure(pristine, gate={"batch_size": 3})
    MemoryRepo.open(pristine).capture_many(crash_turns())

    reference = copy_repo(pristine, tmp_path / "reference")
    started = time.monotonic()
    process_to_end(reference)
    full = time.monotonic() - started
    total_runs = assert_only_whole_runs(reference)
    assert total_runs == TURN_COUNT // 3
    started = time.monotonic()
    process_to_end(reference)  # a no-op: what starting up costs
    startup = time.monotonic() - started
    per_run = max(full - startup, 0.05) / total_runs
    expected_memories = tree_files(reference, "memories")
    expected_runs = tree_files(reference, "runs")
    assert len(expected_memories) >= 15

    rng = random.Random(SEED)
    copies = [copy_repo(pristine, tmp_path / "crash-0")]
    interrupted = partial = 0
    for kill in range(KILLS):
        current = copies[-1]
        before = assert_only_whole_runs(current, just_killed=True)
        tip = git(current, "rev-parse", "HEAD").strip()
        proc = start_process(current)
        if kill % 2:
            # right after a commit lands: the window between moving the branch and
            # writing the run ref and the work tree
            wait_for_branch_move(current, tip, proc)
            time.sleep(rng.uniform(0.0, 0.02))
        else:
            # any moment within this process's expected life: start-up plus the runs left
            time.sleep(rng.uniform(0.0, startup + (total_runs - before) * per_run))
        if proc.poll() is None:
            interrupted += 1
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=PROC_TIMEOUT)
        after = assert_only_whole_runs(current, just_killed=True)
        assert_fsck_clean(current)
        partial += before < after < total_runs
        if after == total_runs and kill < KILLS - 1:
            copies.append(copy_repo(pristine, tmp_path / f"crash-{kill + 1}"))

    print(f"kills: {interrupted} interrupted, {partial} between runs, {len(copies)} copies")
    assert interrupted >= KILLS // 2, f"only {interrupted} kills hit a running process"
    assert partial >= KILLS // 4, f"only {partial} kills landed between two runs"
    for current in copies:
        process_to_end(current)
        assert assert_only_whole_runs(current) == total_runs
        assert_fsck_clean(current)
        assert git(current, "status", "--porcelain") == ""
        assert pending_units(current) == []
        assert tree_files(current, "memories") == expected_memories
        assert tree_files(current, "runs") == expected_runs


def _run_id_of_first_run(pristine: Path, scratch: Path) -> str:
    """The (deterministic) id the first run will get, found on a throw-away copy."""
    copy = copy_repo(pristine, scratch)
    return MemoryRepo.open(copy).process(max_batches=1).runs[0].run_id


@pytest.fixture
def one_run(tmp_path: Path) -> tuple[Path, str]:
    """A repository with one pending run's worth of turns, and that run's id."""
    pristine = tmp_path / "pristine"
    MemoryRepo.init(pristine)
    MemoryRepo.open(pristine).capture_many(crash_turns()[:3])
    run_id = _run_id_of_first_run(pristine, tmp_path / "scratch")
    return copy_repo(pristine, tmp_path / "repo"), run_id


def run_cli(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memgit.cli.main", "-C", str(path), "process"],
        capture_output=True,
        text=True,
        timeout=PROC_TIMEOUT,
        check=False,
    )


def test_a_held_run_ref_lock_fails_cleanly(
    one_run: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock held on the new run's ref: a conflict (not an internal error), and nothing
    moved, since the branch and the run's ref are set in one transaction.

    The point is the error and the untouched repository, so the run is made through the
    API with memgit's wait for a git lock cut from 5 s to 0.2 s.
    """
    path, run_id = one_run
    head = git(path, "rev-parse", "HEAD")
    lock = path / ".git" / "refs" / "memgit" / "runs" / f"{run_id}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    monkeypatch.setattr(engine, "REF_LOCK_WAIT", 0.2)
    with pytest.raises(ConflictError) as caught:
        MemoryRepo.open(path).process()
    assert (caught.value.code, caught.value.exit_status) == ("git-lock", 4)
    assert caught.value.path == f"refs/memgit/runs/{run_id}"
    assert lock.exists()
    assert git(path, "rev-parse", "HEAD") == head
    assert git(path, "status", "--porcelain") == ""
    assert not publishing(path)


# A process run that SIGKILLs itself inside its ref transaction, holding the locks.
KILLED_IN_THE_REF_TRANSACTION = r"""
import os, signal, sys
import memgit.store.engine as engine
from memgit import MemoryRepo

def die_holding_the_locks(repo, branch, tip, new, change):
    transaction = repo.transaction()
    for name in [branch, *change.refs]:
        transaction.lock_ref(name)
    os.kill(os.getpid(), signal.SIGKILL)

engine._move_refs = die_holding_the_locks
MemoryRepo.open(sys.argv[1]).process()
"""


def test_ref_locks_left_by_a_writer_killed_in_its_transaction_are_recovered(
    one_run: tuple[Path, str],
) -> None:
    """A writer killed while its ref transaction held the branch's and the run ref's
    (still empty) locks: the next `memgit process` removes them and succeeds."""
    path, run_id = one_run
    head = git(path, "rev-parse", "HEAD")
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_IN_THE_REF_TRANSACTION, str(path)],
        capture_output=True,
        timeout=PROC_TIMEOUT,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert f"refs/memgit/runs/{run_id}" in publishing(path).get("refs", {})
    assert (path / ".git" / "refs" / "memgit" / "runs" / f"{run_id}.lock").read_bytes() == b""
    assert (path / ".git" / "refs" / "heads" / "main.lock").exists()
    assert git(path, "rev-parse", "HEAD") == head

    done = run_cli(path)
    assert done.returncode == 0, done.stderr
    assert git(path, "rev-parse", f"refs/memgit/runs/{run_id}") == git(path, "rev-parse", "HEAD")
    assert git(path, "status", "--porcelain") == ""
    assert not list((path / ".git" / "refs").rglob("*.lock"))
    assert_only_whole_runs(path)
