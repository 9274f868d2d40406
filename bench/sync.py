"""``memgit sync`` between two clones of one remote, against plain git doing the same.

Usage (from the checkout)::

    .venv/bin/python bench/sync.py --sizes 10000,100000 --rounds 5 --json bench/results/sync.json

For each size, the repository of ``bench/process.py`` (that many memories, with
the runs and inbox such a repository has; cached in ``bench/.cache/``) becomes
three bare remotes, each cloned twice: ``a`` and ``b`` sync with the ``memgit``
command, ``pa`` and ``pb`` with ``MemoryRepo.sync`` in this process (memgit's own
work, without the interpreter's start and imports), ``ga`` and ``gb`` with plain
git. Every round, untimed, each clone captures one new turn of its own and runs
``memgit process`` (the rules Gate), so both sides of each pair hold one new run;
the pairs capture the same turns, so they hold the same files. Then, timed and
interleaved step by step:

| step | memgit (and api) | git |
| --- | --- | --- |
| push | ``a``: ``memgit sync`` (ahead: checks, pushes) | ``ga``: ``git push`` |
| merge | ``b``: ``memgit sync`` (merges, checks, pushes) | ``gb``: ``git pull`` + ``git push`` |
| fast-forward | ``a``: ``memgit sync`` | ``ga``: ``git pull --ff-only`` |

Each command step is a fresh ``memgit`` process, as a user runs it (``python -c
pass`` is printed as the interpreter's floor); each api step opens the repository
and syncs in this process. memgit does more than git in every step: it fetches and
pushes ``refs/memgit/*`` too, checks what it fetched, the joined tree and what the
remote lacks, and keeps its derived store current. Reported: the median of each
step in ms for the command and the API, and each over git (same run, interleaved:
the machine is shared). The warm-up round, untimed, builds each clone's derived
store. At the end ``memgit verify`` checks every commit the rounds made in the four
memgit clones.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import process as corpus_bench  # noqa: E402 (the repository of the process benchmark)

STEPS = ("push", "merge", "fast-forward")


def _git(repo: Path, *args: str) -> None:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace')}")


def _timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, env=corpus_bench._child_env())
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.decode(errors='replace')}")
    return elapsed * 1000


def _memgit_sync(clone: Path) -> float:
    return _timed([sys.executable, "-m", "memgit.cli.main", "sync"], clone)


def _api_sync(clone: Path) -> float:
    from memgit.repo import MemoryRepo

    started = time.perf_counter()
    with MemoryRepo.open(clone) as repo:
        repo.sync()
    return (time.perf_counter() - started) * 1000


def _git_steps(clone: Path, *commands: list[str]) -> float:
    return sum(_timed(["git", *command], clone) for command in commands)


def _new_run(clone: Path, session: str, number: int, rng: random.Random) -> None:
    from memgit.repo import MemoryRepo

    with MemoryRepo.open(clone) as repo:
        repo.capture(
            {
                "source": corpus_bench.SOURCE,
                "session": session,
                "seq": number,
                "timestamp": f"2027-01-01T00:{number % 60:02d}:00Z",
                "messages": [
                    {"role": "user", "content": "Remember that " + corpus_bench._sentence(rng, 12)},
                ],
            }
        )
        repo.process(backend="rules")


def _setup(size: int, seed: int, work: Path) -> dict[str, Path]:
    cached = corpus_bench.build_repository(size, seed)
    clones: dict[str, Path] = {}
    for remote, names in (
        ("memgit.git", ("a", "b")),
        ("api.git", ("pa", "pb")),
        ("git.git", ("ga", "gb")),
    ):
        _git(work, "clone", "-q", "--bare", str(cached), str(work / remote))
        for name in names:
            _git(work, "clone", "-q", str(work / remote), str(work / name))
            clones[name] = work / name
    return clones


def _round(
    clones: dict[str, Path], number: int, seed: int
) -> dict[str, tuple[float, float, float]]:
    """Each step's (command, api, git) milliseconds."""
    for side, session in (("a", "bench-a"), ("b", "bench-b")):
        for name in (side, f"p{side}", f"g{side}"):
            _new_run(clones[name], session, number, random.Random(seed * 1000 + number))
    c = clones
    return {
        "push": (
            _memgit_sync(c["a"]),
            _api_sync(c["pa"]),
            _git_steps(c["ga"], ["push", "-q", "origin", "main"]),
        ),
        "merge": (
            _memgit_sync(c["b"]),
            _api_sync(c["pb"]),
            _git_steps(c["gb"], ["pull", "-q", "--no-rebase", "--no-edit"], ["push", "-q"]),
        ),
        "fast-forward": (
            _memgit_sync(c["a"]),
            _api_sync(c["pa"]),
            _git_steps(c["ga"], ["pull", "-q", "--ff-only"]),
        ),
    }


def measure(size: int, rounds: int, seed: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"memgit-sync-{size}-"))
    try:
        clones = _setup(size, seed, work)
        start = subprocess.run(
            ["git", "-C", str(clones["a"]), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        _round(clones, 0, seed)  # warm-up: builds each clone's derived store
        samples: dict[str, list[tuple[float, float, float]]] = {step: [] for step in STEPS}
        for number in range(1, rounds + 1):
            for step, pair in _round(clones, number, seed).items():
                samples[step].append(pair)
        # The corpus is written directly, not through runs, so only what the rounds added
        # is checked: the commits after the corpus's, and the merges among them.
        for clone in ("a", "b", "pa", "pb"):
            done = subprocess.run(
                [sys.executable, "-m", "memgit.cli.main", "verify", f"{start}..HEAD"],
                cwd=clones[clone],
                capture_output=True,
            )
            if done.returncode != 0:
                raise RuntimeError(f"verify in {clone}: {done.stdout.decode()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    row: dict[str, Any] = {"size": size, "rounds": rounds, "samples": samples}
    for step in STEPS:
        memgit_ms = statistics.median(m for m, _, _ in samples[step])
        api_ms = statistics.median(a for _, a, _ in samples[step])
        git_ms = statistics.median(g for _, _, g in samples[step])
        row[step] = {
            "memgit_ms": memgit_ms,
            "api_ms": api_ms,
            "git_ms": git_ms,
            "ratio": memgit_ms / git_ms,
            "api_ratio": api_ms / git_ms,
        }
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args()
    floor = statistics.median(_timed([sys.executable, "-c", "pass"], HERE) for _ in range(5))
    print(f"python -c pass: {floor:.0f} ms")
    print(
        f"{'size':>8} {'step':<13} {'memgit ms':>10} {'api ms':>7} {'git ms':>7} "
        f"{'x git':>6} {'api x git':>9}"
    )
    rows = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        row = measure(size, args.rounds, args.seed)
        rows.append(row)
        for step in STEPS:
            cell = row[step]
            print(
                f"{size:>8,} {step:<13} {cell['memgit_ms']:>10.0f} {cell['api_ms']:>7.0f} "
                f"{cell['git_ms']:>7.0f} {cell['ratio']:>6.2f} {cell['api_ratio']:>9.2f}"
            )
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(
            json.dumps(
                {"rows": rows, "python_floor_ms": floor, "platform": platform.platform()},
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
