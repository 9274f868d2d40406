"""SIGKILLed ``memgit capture`` processes never corrupt or block the repository.

A killed writer may leave a capture committed or not, but never half made: what
the command reported is in the history, the next writer is not blocked, it
finishes the dead writer's work-tree sync, and capturing the same turns again
converges on every turn present exactly once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memgit import MemoryRepo
from memgit.constants import CACHE_DIR, LOCK_FILE
from memgit.layout import capture_path

from support import assert_fsck_clean, git, make_turn

SEED = int(os.environ.get("MEMGIT_CRASH_SEED", "20261130"))  # vary it to explore
KILLS = 50
PROC_TIMEOUT = 60  # seconds any one memgit process may take before the test fails
SOURCE = "crash-agent"


def assert_linear(path: Path) -> None:
    assert git(path, "rev-list", "--merges", "HEAD") == ""


def head_files(path: Path) -> list[str]:
    return git(path, "ls-tree", "-r", "--name-only", "HEAD", "--", "inbox").splitlines()


def captured_keys(path: Path) -> list[str]:
    log = git(path, "log", "--format=%(trailers:key=Memgit-Captured,valueonly)", "HEAD")
    return [line for line in log.splitlines() if line.strip()]


def crash_turn(seq: int) -> dict[str, object]:
    return make_turn(seq, f"crash test turn {seq}", source=SOURCE, session="crash")


@dataclass
class Attempt:
    """One ``memgit capture`` run: its turn, its process and what became of it."""

    seq: int
    proc: subprocess.Popen[bytes]
    started: float
    killed: bool = False
    in_lock_wait: bool = False
    status: int | None = None
    stdout: str = ""
    stderr: str = ""


class Runner:
    """Starts real ``memgit capture --json`` processes, one distinct turn each."""

    def __init__(self, repo: Path, tmp: Path) -> None:
        self.repo = repo
        self.turns = tmp / "turns"
        self.turns.mkdir()
        self.lock_file = repo / ".git" / CACHE_DIR / LOCK_FILE
        self.next_seq = 0
        self.attempts: list[Attempt] = []

    def start(self) -> Attempt:
        seq = self.next_seq
        self.next_seq += 1
        turn_file = self.turns / f"{seq}.json"
        turn_file.write_text(json.dumps(crash_turn(seq)), "utf-8")
        with turn_file.open("rb") as stdin:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "memgit.cli.main",
                    "-C",
                    str(self.repo),
                    "capture",
                    "--json",
                ],
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        attempt = Attempt(seq=seq, proc=proc, started=time.monotonic())
        self.attempts.append(attempt)
        return attempt

    def kill(self, attempt: Attempt) -> bool:
        """SIGKILL the process if it still runs; True if the kill landed."""
        if attempt.proc.poll() is not None:
            return False
        attempt.in_lock_wait = self.holds_lock_file_open(attempt) and not self.is_holder(attempt)
        attempt.proc.send_signal(signal.SIGKILL)
        attempt.killed = True
        return True

    def finish(self, attempt: Attempt) -> None:
        out, err = attempt.proc.communicate(timeout=PROC_TIMEOUT)
        attempt.status = attempt.proc.returncode
        attempt.stdout, attempt.stderr = out.decode(), err.decode()

    def journal(self) -> dict[str, object]:
        try:
            raw = self.lock_file.read_bytes()
            return json.loads(raw) if raw.strip() else {}
        except (FileNotFoundError, ValueError):
            return {}

    def is_holder(self, attempt: Attempt) -> bool:
        return self.journal().get("pid") == attempt.proc.pid

    def holds_lock_file_open(self, attempt: Attempt) -> bool:
        """Whether the process has the writer lock file open (waiting for or holding it)."""
        fds = Path(f"/proc/{attempt.proc.pid}/fd")
        try:
            return any(os.readlink(fd) == str(self.lock_file) for fd in fds.iterdir())
        except OSError:
            return False

    def wait_until_holder(self, attempt: Attempt) -> float | None:
        """Poll until the process holds the writer lock; when it did, or None if it exited."""
        deadline = time.monotonic() + PROC_TIMEOUT
        while attempt.proc.poll() is None:
            if self.is_holder(attempt):
                return time.monotonic()
            assert time.monotonic() < deadline, "capture never took the writer lock"
            time.sleep(0.0005)
        return None

    def wait_until_released(self, attempt: Attempt) -> float:
        """Poll until the process no longer holds the writer lock; when that was."""
        deadline = time.monotonic() + PROC_TIMEOUT
        while attempt.proc.poll() is None and self.is_holder(attempt):
            assert time.monotonic() < deadline, "capture never released the writer lock"
            time.sleep(0.0005)
        return time.monotonic()

    def wait_until_queued(self, attempt: Attempt, fallback: float) -> None:
        """Poll until the process waits for the writer lock (Linux: /proc); else sleep."""
        if not Path("/proc/self/fd").is_dir():
            time.sleep(fallback)
            return
        deadline = time.monotonic() + PROC_TIMEOUT
        while attempt.proc.poll() is None and not self.holds_lock_file_open(attempt):
            assert time.monotonic() < deadline, "capture never reached the writer lock"
            time.sleep(0.0005)

    def cleanup(self) -> None:
        for attempt in self.attempts:
            if attempt.proc.poll() is None:
                attempt.proc.kill()
                attempt.proc.wait(timeout=10)


@contextlib.contextmanager
def writer_lock_held(lock_file: Path) -> Iterator[None]:
    """Hold memgit's writer lock (without touching its journal) so captures queue."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + PROC_TIMEOUT
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, "the writer lock stayed taken"
                time.sleep(0.01)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def reported_commit(attempt: Attempt) -> str | None:
    """The commit the command printed, if it got as far as printing one."""
    try:
        data = json.loads(attempt.stdout)
    except ValueError:
        return None
    return data.get("commit") if isinstance(data, dict) else None


@pytest.mark.slow
def test_sigkilled_captures_never_corrupt_or_block_the_repository(
    repo_path: Path, tmp_path: Path
) -> None:
    """50 SIGKILLs at random moments of real ``memgit capture`` runs leave a sound repository.

    Kills land anywhere: at a random delay up to one whole capture's run time,
    at a random moment after the process took the writer lock (inside the
    commit and work-tree sync), and while processes queue for the lock (2-3
    at once, some with the lock held by the test). Afterwards fsck is clean,
    history is linear, every capture a command reported is in HEAD, the next
    writer is not blocked and finishes any dead writer's work-tree sync, and
    re-capturing every attempted turn converges on each present exactly once.
    """
    rng = random.Random(SEED)
    runner = Runner(repo_path, tmp_path)
    try:
        # Measure one capture: the whole command, and how long it holds the writer lock.
        whole, held_for = [], []
        for _ in range(3):
            attempt = runner.start()
            took_lock = runner.wait_until_holder(attempt)
            if took_lock is not None:
                held_for.append(runner.wait_until_released(attempt) - took_lock)
            runner.finish(attempt)
            assert attempt.status == 0, attempt.stderr
            whole.append(time.monotonic() - attempt.started)
        run_time = statistics.median(whole)
        lock_time = statistics.median(held_for) if held_for else run_time / 10

        kills = 0
        modes: Counter[str] = Counter()
        pending_recoveries = 0
        for _ in range(400):
            if kills >= KILLS:
                break
            mode = rng.choice(["anytime", "anytime", "in-commit", "in-commit", "queue", "held"])
            modes[mode] += 1
            if mode == "anytime":
                attempt = runner.start()
                time.sleep(rng.uniform(0, run_time))
                kills += runner.kill(attempt)
                group = [attempt]
            elif mode == "in-commit":
                attempt = runner.start()
                if runner.wait_until_holder(attempt) is not None:
                    time.sleep(rng.uniform(0, lock_time))
                    kills += runner.kill(attempt)
                group = [attempt]
            else:
                # 2-3 at once: they queue for the lock. In "held" mode the test holds
                # it, and each victim is killed while it waits; in "queue" mode the
                # victims die at random moments while the others get through.
                held = (
                    writer_lock_held(runner.lock_file)
                    if mode == "held"
                    else contextlib.nullcontext()
                )
                with held:
                    group = [runner.start() for _ in range(rng.randint(2, 3))]
                    victims = rng.sample(group, rng.randint(1, len(group) - (mode == "queue")))
                    if mode == "held":
                        for victim in victims:
                            runner.wait_until_queued(victim, fallback=run_time)
                            time.sleep(rng.uniform(0, lock_time))
                            kills += runner.kill(victim)
                    else:
                        start = time.monotonic()
                        for when, victim in sorted(
                            ((rng.uniform(0, run_time), victim) for victim in victims),
                            key=lambda pair: pair[0],
                        ):
                            time.sleep(max(0.0, start + when - time.monotonic()))
                            kills += runner.kill(victim)
            for attempt in group:
                runner.finish(attempt)
            if runner.journal().get("op") == "publish":
                pending_recoveries += 1
        assert kills >= KILLS, f"only {kills} kills landed"

        files = set(head_files(repo_path))
        killed_after_commit = sum(
            attempt.killed
            and attempt.status == -signal.SIGKILL
            and capture_path(SOURCE, "crash", attempt.seq) in files
            for attempt in runner.attempts
        )
        stats = (
            f"kills={kills} modes={dict(modes)} run_time={run_time:.3f}s "
            f"lock_time={lock_time:.3f}s "
            f"lock_wait_kills={sum(a.in_lock_wait for a in runner.attempts)} "
            f"journals_left_publishing={pending_recoveries} "
            f"killed_after_commit={killed_after_commit}"
        )
        reported: dict[int, str] = {}
        for attempt in runner.attempts:
            if attempt.status == 0:
                commit = reported_commit(attempt)
                assert commit is not None, f"turn {attempt.seq}: {attempt.stdout}"
                reported[attempt.seq] = commit
            elif attempt.status == -signal.SIGKILL and attempt.killed:
                commit = reported_commit(attempt)
                if commit is not None:
                    reported[attempt.seq] = commit
            else:
                pytest.fail(
                    f"turn {attempt.seq}: memgit capture exited {attempt.status} "
                    f"(killed: {attempt.killed}):\n{attempt.stderr}\n{stats}"
                )

        # Whatever was killed where, the repository is sound and kept every report.
        print(stats)
        assert_fsck_clean(repo_path)
        assert_linear(repo_path)
        history = set(git(repo_path, "rev-list", "HEAD").split())
        for seq, commit in reported.items():
            assert commit in history, f"reported commit of turn {seq} is not in the history"
            assert capture_path(SOURCE, "crash", seq) in files, (
                f"reported turn {seq} is missing from HEAD"
            )

        # No lock blocks the next writer (it may not wait at all), and it finishes a
        # dead writer's sync.
        with pytest.MonkeyPatch.context() as env:
            env.setenv("MEMGIT_LOCK_TIMEOUT", "0")
            fresh = runner.start()
        runner.finish(fresh)
        assert fresh.status == 0, fresh.stderr
        assert reported_commit(fresh) is not None
        assert git(repo_path, "status", "--porcelain") == "", stats
        assert_fsck_clean(repo_path)

        # Capturing every attempted turn again converges: each present exactly once.
        for seq in range(runner.next_seq):
            outcome = MemoryRepo.open(repo_path).capture(crash_turn(seq))
            assert outcome.duplicate or outcome.commit is not None
            assert not (outcome.duplicate and outcome.commit is not None)
            if seq in reported:
                assert outcome.duplicate, f"reported turn {seq} was captured again"
        expected = {f"{SOURCE}/crash/{seq}" for seq in range(runner.next_seq)}
        keys = captured_keys(repo_path)
        assert Counter(keys) == Counter(expected), "a turn is missing or captured twice"
        assert len(head_files(repo_path)) == runner.next_seq
        assert int(git(repo_path, "rev-list", "--count", "HEAD")) == runner.next_seq + 1
        assert_linear(repo_path)
        assert_fsck_clean(repo_path)
        assert git(repo_path, "status", "--porcelain") == "", stats
    finally:
        runner.cleanup()


# A capture that SIGKILLs itself at one precise point of its write.
KILL_ITSELF = r"""
import json, os, signal, sys
from pathlib import Path
import memgit.store.engine as engine
import memgit.store.worktree as worktree
from memgit import MemoryRepo

repo_path, point, turn, way = sys.argv[1:5]
if way == "split-after-write":
    worktree.SPLIT_INDEX_BYTES = 0  # as for a large index

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

def die_holding_ref_lock(repo, branch, *args, **kwargs):
    Path(repo.path, branch + ".lock").write_bytes(b"")  # as a ref transaction's lock is
    die()

if point == "ref-locked":
    engine._move_refs = die_holding_ref_lock
elif point == "branch-moved":
    worktree.IndexLock.checkout = die
elif point == "file-written":
    worktree._wants_split = die  # git wrote the files and the next index, not yet in place
MemoryRepo.open(repo_path).capture(json.loads(turn))
"""


@pytest.mark.slow
@pytest.mark.parametrize("way", ["whole", "split-after-write"])
@pytest.mark.parametrize(
    ("point", "committed"),
    [
        ("ref-locked", False),
        ("branch-moved", True),
        ("file-written", True),
    ],
)
def test_next_writer_repairs_a_writer_killed_at_a_known_point(
    repo_path: Path, point: str, committed: bool, way: str
) -> None:
    """Deterministic companions of the random kills, one per step of publishing.

    ``ref-locked``: died holding the branch's ``.lock`` before moving it;
    ``branch-moved``: died after moving the branch, before any work-tree sync;
    ``file-written``: died after git wrote the new file, before the index is in place.
    Each time memgit held git's ``index.lock``: the next writer removes it.
    In every case the next ``memgit capture`` succeeds, leaves ``git status``
    empty and fsck clean, and the killed turn is in HEAD exactly when the
    branch had moved; capturing it again completes it exactly once. With
    ``split-after-write`` the killed writer would have split the index after its
    write.
    """
    done = subprocess.run(
        [sys.executable, "-c", KILL_ITSELF, str(repo_path), point, json.dumps(crash_turn(0)), way],
        capture_output=True,
        timeout=PROC_TIMEOUT,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    journal = json.loads((repo_path / ".git" / CACHE_DIR / LOCK_FILE).read_bytes())
    assert journal["op"] == "publish"
    assert (repo_path / ".git" / "index.lock").read_text("ascii") == journal["index_lock"]
    path = capture_path(SOURCE, "crash", 0)
    assert (path in head_files(repo_path)) == committed

    fresh = subprocess.run(
        [sys.executable, "-m", "memgit.cli.main", "-C", str(repo_path), "capture", "--json"],
        input=json.dumps(crash_turn(1)).encode(),
        capture_output=True,
        env={**os.environ, "MEMGIT_LOCK_TIMEOUT": "5"},
        timeout=PROC_TIMEOUT,
        check=False,
    )
    assert fresh.returncode == 0, fresh.stderr.decode()
    assert not (repo_path / ".git" / "index.lock").exists()
    assert git(repo_path, "status", "--porcelain") == ""
    assert_fsck_clean(repo_path)

    again = MemoryRepo.open(repo_path).capture(crash_turn(0))
    assert again.duplicate == committed
    assert Counter(captured_keys(repo_path)) == Counter([f"{SOURCE}/crash/0", f"{SOURCE}/crash/1"])
    assert git(repo_path, "status", "--porcelain") == ""
    assert_linear(repo_path)
