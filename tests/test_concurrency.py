"""Many real processes capturing (and processing, and recalling) into one repository at once
lose nothing and decide nothing twice.

The check that matters is counting: a writer that force-moves the branch
leaves a perfectly valid repository (``git fsck`` is clean) that is simply
missing other writers' commits. So the real test counts every capture in the
tree and in the history, and a second test runs a deliberately naive writer
under the same load to show that those counts do catch lost updates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from support import assert_fsck_clean, git, git_show_many

WORKERS = 8
TURNS_PER_WORKER = 50
TOTAL = WORKERS * TURNS_PER_WORKER
TIMEOUT = 300  # seconds for a whole group of processes: a hang fails, a loaded machine does not
NAIVE_WRITER = Path(__file__).with_name("naive_writer.py")

# One capturing process: wait at the barrier, then capture its turns one call
# (one commit) at a time, printing each outcome as a JSON line. Odd workers
# keep one MemoryRepo open for all their captures, even ones reopen it each time.
CAPTURE_WORKER = r"""
import json, sys, time
from pathlib import Path
from memgit import MemoryRepo
from memgit.jsonio import json_data

repo_path, worker, count, ready, go = sys.argv[1:6]
worker, count = int(worker), int(count)
kept = MemoryRepo.open(repo_path) if worker % 2 else None
Path(ready).touch()
deadline = time.monotonic() + 60
while not Path(go).exists():
    if time.monotonic() > deadline:
        sys.exit("never released")
    time.sleep(0.001)
for i in range(count):
    turn = {
        "source": "conc-agent",
        "session": f"s{worker % 2}",
        "seq": worker * 1000 + i,
        "timestamp": "2026-11-30T10:00:00Z",
        "messages": [{"role": "user", "content": f"worker {worker} turn {i}"}],
    }
    repo = kept if kept is not None else MemoryRepo.open(repo_path)
    started = time.monotonic()
    outcome = repo.capture(turn)
    record = json_data(outcome)
    record["key"] = f"conc-agent/s{worker % 2}/{worker * 1000 + i}"
    record["seconds"] = time.monotonic() - started
    print(json.dumps(record), flush=True)
"""


def captured_keys(path: Path) -> list[str]:
    """Every Memgit-Captured trailer in HEAD's history, one per captured turn."""
    log = git(path, "log", "--format=%(trailers:key=Memgit-Captured,valueonly)", "HEAD")
    return [line for line in log.splitlines() if line.strip()]


def inbox_files(path: Path, *, where: str = "HEAD") -> list[str]:
    """Capture files in HEAD's tree, or (``where="index"``) in the index."""
    if where == "index":
        return git(path, "ls-files", "inbox").splitlines()
    return git(path, "ls-tree", "-r", "--name-only", where, "--", "inbox").splitlines()


def run_released_together(commands: list[list[str]], tmp: Path) -> list[tuple[int, str, str]]:
    """Start every command, wait until all are ready, release them at once, collect output.

    Command ``n`` must touch ``tmp/ready-n`` when it is ready, then wait for
    ``tmp/go`` to appear before doing its work.
    """
    go = tmp / "go"
    procs = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ)
        )
        for command in commands
    ]
    try:
        deadline = time.monotonic() + TIMEOUT
        ready = [tmp / f"ready-{n}" for n in range(len(commands))]
        while not all(file.exists() for file in ready):
            assert time.monotonic() < deadline, "workers never got ready"
            assert all(proc.poll() is None for proc in procs), "a worker died before the start"
            time.sleep(0.01)
        go.touch()
        results = []
        for proc in procs:
            remaining = max(1.0, deadline - time.monotonic())
            out, err = proc.communicate(timeout=remaining)
            results.append((proc.returncode, out.decode(), err.decode()))
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


@pytest.mark.slow
def test_eight_processes_capturing_at_once_lose_nothing(
    repo_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 processes x 50 captures released together: 400 commits, every turn exactly once.

    Proves that the writer lock plus compare-and-swap serialise real concurrent
    processes without losing or duplicating a capture, without merges, and
    leave a valid repository with a clean working tree.
    """
    init_head = git(repo_path, "rev-parse", "HEAD").strip()
    commands = [
        [
            sys.executable,
            "-c",
            CAPTURE_WORKER,
            str(repo_path),
            str(worker),
            str(TURNS_PER_WORKER),
            str(tmp_path / f"ready-{worker}"),
            str(tmp_path / "go"),
        ]
        for worker in range(WORKERS)
    ]
    monkeypatch.setenv("MEMGIT_LOCK_TIMEOUT", "60")  # fairness is not under test here
    results = run_released_together(commands, tmp_path)

    outcomes = []
    for worker, (status, out, err) in enumerate(results):
        assert status == 0, f"worker {worker} failed:\n{err}"
        outcomes.extend(json.loads(line) for line in out.splitlines())
    assert len(outcomes) == TOTAL
    assert not any(outcome["duplicate"] for outcome in outcomes)
    reported_commits = {outcome["commit"] for outcome in outcomes}
    assert None not in reported_commits
    assert len(reported_commits) == TOTAL, "two captures reported the same commit"
    expected_keys = {outcome["key"] for outcome in outcomes}
    expected_paths = {outcome["path"] for outcome in outcomes}
    assert len(expected_keys) == len(expected_paths) == TOTAL

    # Every capture is its own commit on one linear history above init.
    assert git(repo_path, "rev-list", "--count", "HEAD").strip() == str(TOTAL + 1)
    assert git(repo_path, "rev-list", "--merges", "HEAD") == ""
    history = git(repo_path, "rev-list", "HEAD").split()
    assert history[-1] == init_head
    assert set(history[:-1]) == reported_commits

    # Every turn is present exactly once, in the tree and in the trailers.
    files = inbox_files(repo_path, where="index")
    assert len(files) == TOTAL and set(files) == expected_paths
    assert inbox_files(repo_path) == files
    keys = captured_keys(repo_path)
    assert len(keys) == TOTAL and set(keys) == expected_keys

    assert_fsck_clean(repo_path)
    assert git(repo_path, "status", "--porcelain") == ""


@pytest.mark.slow
def test_a_force_pushing_writer_loses_captures_under_the_same_load(
    repo_path: Path, tmp_path: Path
) -> None:
    """The counting above can fail: a lock-free, force-updating writer loses captures.

    8 processes of ``tests/naive_writer.py`` (read tip, build tree, commit,
    force the branch) run under the same barrier and load. Captures go
    missing from both the tree and the history, yet history is linear and
    ``git fsck --strict`` is clean: only counting reveals the lost updates.
    """
    commands = [
        [
            sys.executable,
            str(NAIVE_WRITER),
            str(repo_path),
            str(worker),
            str(TURNS_PER_WORKER),
            str(tmp_path / f"ready-{worker}"),
            str(tmp_path / "go"),
            "0.002",
        ]
        for worker in range(WORKERS)
    ]
    results = run_released_together(commands, tmp_path)
    for worker, (status, _, err) in enumerate(results):
        assert status == 0, f"naive worker {worker} failed:\n{err}"

    files = inbox_files(repo_path)  # HEAD's tree: the naive writer never syncs the index
    keys = captured_keys(repo_path)
    assert len(files) < TOTAL, "the naive writer lost nothing; make the load denser"
    assert len(keys) == len(files)
    assert len(set(keys)) == len(keys)
    assert git(repo_path, "rev-list", "--merges", "HEAD") == ""
    assert int(git(repo_path, "rev-list", "--count", "HEAD")) < TOTAL + 1
    assert_fsck_clean(repo_path)


# The whole loop at once: capture writers, two `memgit process` loops and a recall loop.
# Each loop runs until the file `captured` exists (the writers are done), then once more.
STATEMENT = "Remember that worker {worker} turn {i} listens on port {port}."
MEMORY_WRITER = r"""
import json, sys, time
from pathlib import Path
from memgit import MemoryRepo
from memgit.jsonio import json_data

repo_path, worker, count, ready, go = sys.argv[1:6]
worker, count = int(worker), int(count)
Path(ready).touch()
while not Path(go).exists():
    time.sleep(0.001)
repo = MemoryRepo.open(repo_path)
for i in range(count):
    text = STATEMENT.format(worker=worker, i=i, port=10000 + worker * 100 + i)
    outcome = repo.capture({
        "source": "conc-agent", "session": f"w{worker}", "seq": i,
        "timestamp": "2026-11-30T10:00:00Z",
        "messages": [{"role": "user", "content": text}],
    })
    print(json.dumps(json_data(outcome)), flush=True)
""".replace("STATEMENT", repr(STATEMENT))
LOOP = r"""
import json, sys, time
from pathlib import Path
from memgit import MemoryRepo

repo_path, kind, ready, go, captured = sys.argv[1:6]
Path(ready).touch()
while not Path(go).exists():
    time.sleep(0.001)
rounds = 0
while True:
    last = Path(captured).exists()
    repo = MemoryRepo.open(repo_path)
    if kind == "process":
        result = repo.process()
        print(json.dumps({"runs": len(result.runs), "remaining": result.remaining}), flush=True)
    else:
        pack = repo.recall("port", k=5)
        print(json.dumps({"hits": len(pack.memories) + len(pack.turns)}), flush=True)
    rounds += 1
    if last:
        break
"""


def memory_contents(path: Path) -> list[tuple[str, str, str]]:
    """(title, body, quoted text) of every memory in HEAD, sorted: what a run produced."""
    from memgit.memory import read_memory

    found = []
    names = git(path, "ls-tree", "-r", "--name-only", "HEAD", "--", "memories").split()
    for name, text in git_show_many(path, "HEAD", names).items():
        memory = read_memory(text, path=name)
        quotes = " | ".join(source.quote for source in memory.sources)
        found.append((memory.title, memory.body.strip(), quotes))
    return sorted(found)


@pytest.mark.slow
def test_capturing_processing_and_recalling_at_once_decides_each_unit_once(
    repo_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """12 capture writers, 2 process loops and a recall loop at once: every acknowledged
    capture is in the tree, every unit is decided by exactly one run record, the memories
    are those one serial run makes of the same captures, and fsck and verify are clean."""
    writers, per_writer = 12, 30
    monkeypatch.setenv("MEMGIT_LOCK_TIMEOUT", "120")  # fairness is not under test here
    go, captured = tmp_path / "go", tmp_path / "captured"
    writer_commands = [
        [
            *(sys.executable, "-c", MEMORY_WRITER, str(repo_path), str(w), str(per_writer)),
            *(str(tmp_path / f"ready-{w}"), str(go)),
        ]
        for w in range(writers)
    ]
    loop_commands = [
        [
            *(sys.executable, "-c", LOOP, str(repo_path), kind),
            *(str(tmp_path / f"ready-{n}"), str(go), str(captured)),
        ]
        for n, kind in enumerate(["process", "process", "recall"], start=writers)
    ]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for cmd in writer_commands + loop_commands
    ]
    try:
        deadline = time.monotonic() + 4 * TIMEOUT
        while not all((tmp_path / f"ready-{n}").exists() for n in range(len(procs))):
            assert time.monotonic() < deadline, "workers never got ready"
            assert all(p.poll() is None for p in procs), "a worker died before the start"
            time.sleep(0.01)
        go.touch()
        results = []
        for n, proc in enumerate(procs):
            if n == writers:
                captured.touch()  # every writer is done: the loops make their last round
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert proc.returncode == 0, f"worker {n} failed:\n{err.decode()}"
            results.append([json.loads(line) for line in out.decode().splitlines()])
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)

    acknowledged = {o["path"] for outcomes in results[:writers] for o in outcomes}
    assert len(acknowledged) == writers * per_writer
    assert set(inbox_files(repo_path)) == acknowledged
    assert sum(r["runs"] for loop in results[writers : writers + 2] for r in loop) >= 2
    assert all(r["hits"] >= 0 for r in results[-1]) and results[-1]

    from memgit import MemoryRepo

    MemoryRepo.open(repo_path).process()  # anything a loop left is processed serially
    decided: dict[str, int] = {}
    runs = git(repo_path, "ls-tree", "-r", "--name-only", "HEAD", "--", "runs").split()
    for text in git_show_many(repo_path, "HEAD", runs).values():
        record = json.loads(text)
        for row in record["gate_output"]["coverage"]:
            if row["decision"] != "DEFERRED":
                decided[row["unit_id"]] = decided.get(row["unit_id"], 0) + 1
    assert len(decided) == writers * per_writer
    assert {n for n in decided.values()} == {1}, "a unit was decided by two runs"

    serial = tmp_path / "serial"
    MemoryRepo.init(serial)
    turns = []
    for text in git_show_many(repo_path, "HEAD", sorted(acknowledged)).values():
        data = yaml.safe_load(text)
        turns.append({k: data[k] for k in ("source", "session", "seq", "timestamp", "messages")})
    MemoryRepo.open(serial).capture_many(turns)
    MemoryRepo.open(serial).process()
    assert memory_contents(repo_path) == memory_contents(serial)
    assert len(memory_contents(repo_path)) == writers * per_writer

    assert_fsck_clean(repo_path)
    assert git(repo_path, "status", "--porcelain") == ""
    done = subprocess.run(
        [sys.executable, "-m", "memgit.cli.main", "-C", str(repo_path), "verify", "--all"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# A person at the shell: stage a file of their own and commit it, again and again, as
# fast as git lets them; when git reports a lock (memgit is writing), try again.
PERSON_WORKER = r"""
import subprocess, sys, time
from pathlib import Path

repo_path, count, ready, go = sys.argv[1:5]
repo = Path(repo_path)
Path(ready).touch()
while not Path(go).exists():
    time.sleep(0.001)

def git(*args):
    deadline = time.monotonic() + 60
    while True:
        done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
        if done.returncode == 0:
            return
        if "lock" not in done.stderr or time.monotonic() > deadline:
            sys.exit(f"git {args}: {done.stdout}{done.stderr}")
        time.sleep(0.005)

(repo / "notes").mkdir(exist_ok=True)
for i in range(int(count)):
    (repo / "notes" / f"n{i:03}.txt").write_text(f"note {i}\n")
    git("add", f"notes/n{i:03}.txt")
    if i % 2:
        git("commit", "-q", "--no-verify", "-m", f"notes up to {i}")
print("done", flush=True)
"""


@pytest.mark.slow
def test_a_persons_git_add_survives_memgit_writes(
    repo_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person stages and commits files by hand while two processes capture.

    memgit read the index in process before it committed and wrote it back after:
    an entry staged in between was dropped (14 of 60 adds undone). Every staged file
    must end up committed or still staged, and every capture must stay in HEAD.
    """
    notes, turns = 60, 30
    commands = [
        [
            sys.executable,
            "-c",
            PERSON_WORKER,
            str(repo_path),
            str(notes),
            str(tmp_path / "ready-0"),
            str(tmp_path / "go"),
        ],
        *(
            [
                sys.executable,
                "-c",
                CAPTURE_WORKER,
                str(repo_path),
                str(worker),
                str(turns),
                str(tmp_path / f"ready-{worker}"),
                str(tmp_path / "go"),
            ]
            for worker in (1, 2)
        ),
    ]
    monkeypatch.setenv("MEMGIT_LOCK_TIMEOUT", "60")
    results = run_released_together(commands, tmp_path)
    for status, _out, err in results:
        assert status == 0, err
    staged = set(git(repo_path, "ls-files", "notes").split())
    committed = set(git(repo_path, "ls-tree", "-r", "--name-only", "HEAD", "--", "notes").split())
    expected = {f"notes/n{i:03}.txt" for i in range(notes)}
    assert staged == expected, f"unstaged by memgit: {sorted(expected - staged)}"
    assert committed >= {f"notes/n{i:03}.txt" for i in range(notes - 1)}
    assert len(inbox_files(repo_path)) == 2 * turns, "a person's commit undid a capture"
    assert Counter(captured_keys(repo_path)) == Counter(
        f"conc-agent/s{worker % 2}/{worker * 1000 + i}" for worker in (1, 2) for i in range(turns)
    )
    assert git(repo_path, "status", "--porcelain") == ""
    assert_fsck_clean(repo_path)
