"""Three clones of one remote served by ``git daemon`` capture, process and sync at once.

The issue's acceptance: each clone captures and processes 30 turns of its own,
syncing every few turns, all three at the same time (real subprocesses). At the
end every clone and the remote hold the same tree and the same ``refs/memgit/*``,
every capture and memory of every clone, each unit decided once, no conflict
marker, and the history passes ``git fsck --strict`` and ``memgit verify --all``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from remotes import git_daemon

from memgit import MemoryRepo

from support import git, memgit_cli

TURNS = 30
SYNC_EVERY = 5
CLONES = ("ada", "bo", "cy")

WORKER = r"""
import sys, time
from memgit import MemoryRepo
from memgit.errors import ConflictError

path, name, turns, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
SAYINGS = [
    "I prefer {} tabs over spaces in every Python file.",
    "We decided that {} deploys happen only after the tests pass.",
    "Remember that the {} staging database is reset every Monday.",
    "Just chatting about the weather in {} today.",
]

def sync(repo):
    # Each retry loses only to another clone's push, and the three push about 21 times
    # in all; a busy machine stretches the windows, so allow more than that.
    for attempt in range(60):
        try:
            return repo.sync()
        except ConflictError as err:  # the writer lock or the remote, busy for a moment
            if err.code not in ("remote-moved", "lock-busy", "git-lock"):
                raise
            time.sleep(0.1)
    raise SystemExit("sync kept failing")

with MemoryRepo.open(path) as repo:
    for seq in range(turns):
        text = SAYINGS[seq % len(SAYINGS)].format(f"{name}{seq}")
        repo.capture({
            "source": "agent", "session": name, "seq": seq,
            "timestamp": f"2025-11-30T10:{seq:02d}:00Z",
            "messages": [{"role": "user", "content": text}],
        })
        if (seq + 1) % every == 0:
            repo.process(backend="rules")
            sync(repo)
    repo.process(backend="rules")
    sync(repo)
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A ``git daemon`` on 127.0.0.1 serving (and accepting pushes to) ``served/``."""
    served = tmp_path / "served"
    served.mkdir()
    with git_daemon(served) as url:
        yield served, url


def test_three_clones_working_at_once_converge(tmp_path: Path, daemon: tuple[Path, str]) -> None:
    served, url = daemon
    seed = tmp_path / "seed"
    MemoryRepo.init(seed)
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(served / "memory.git"))
    clones = [tmp_path / name for name in CLONES]
    for clone in clones:
        git(tmp_path, "clone", "-q", f"{url}/memory.git", str(clone))
        MemoryRepo.init(clone)  # refspecs, the merge driver, the hooks: as a user sets up

    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(clone), clone.name, str(TURNS), str(SYNC_EVERY)],
            stderr=subprocess.PIPE,
        )
        for clone in clones
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err.decode()
    for clone in [*clones, *clones[:-1]]:  # after the first round the remote has it all
        with MemoryRepo.open(clone) as repo:
            repo.sync()

    remote = served / "memory.git"
    trees = {git(path, "rev-parse", "HEAD^{tree}") for path in clones}
    assert trees == {git(remote, "rev-parse", "main^{tree}")}
    refs = {git(path, "for-each-ref", "--format=%(refname) %(objectname)", "refs/memgit/")
            for path in [*clones, remote]}  # fmt: skip
    assert len(refs) == 1

    files = git(clones[0], "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    captures = [f for f in files if f.startswith("inbox/")]
    assert Counter(f.split("/")[3] for f in captures) == dict.fromkeys(CLONES, TURNS)
    memories = [f for f in files if f.startswith("memories/")]
    texts = "".join(git(clones[0], "show", f"HEAD:{f}") for f in memories)
    # The preference, the decision and the explicit request are kept; the chatting is not.
    kept = {f"{name}{seq}" for name in CLONES for seq in range(TURNS) if seq % 4 != 3}
    assert len(memories) == len(kept)
    assert all(f" {word} " in texts for word in kept)

    decided: Counter[str] = Counter()
    for record in (f for f in files if f.startswith("runs/")):
        data = json.loads(git(clones[0], "show", f"HEAD:{record}"))
        decided.update(row["unit_id"] for row in data["gate_output"]["coverage"])
    assert decided and set(decided.values()) == {1}
    assert len({unit.split("#")[0] for unit in decided}) == len(CLONES) * TURNS

    assert "<<<<<<<" not in texts
    for path in clones:
        git(path, "fsck", "--strict")
        assert git(path, "status", "--porcelain") == ""
        done = memgit_cli("verify", "--all", cwd=path)
        assert done.returncode == 0, done.stdout + done.stderr
