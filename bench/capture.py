"""Capture latency: memgit's API and CLI against plain git, in repositories of 1k-100k files.

Usage (from the checkout)::

    .venv/bin/python bench/capture.py --sizes 1000,10000,100000 --json bench/results/capture.json

For each size the same seeded corpus (see ``corpus.py``) is copied once per
contender, and the contenders capture the same sequence of new turns:

* ``api``: ``MemoryRepo.capture()`` in this process, the repository opened once;
* ``cli``: ``memgit -C PATH capture`` in a subprocess, the turn as JSON on stdin;
* ``git``: the same YAML file written by hand, then ``git add`` + ``git commit``;

and three diagnostics that explain the gaps between them:

* ``api-open``: ``MemoryRepo.open()`` + ``capture()`` every time, which separates
  the command's start-up from opening the repository (and loading its index);
* ``api-nofsync``: ``api`` with libgit2's fsync of the git directory switched
  off, since memgit fsyncs every object and ref and ``git commit`` by default
  fsyncs nothing;
* ``git-fsync``: ``git`` with ``core.fsync=committed``, git made durable too.

Samples are interleaved (a bit of every contender in turn, not one contender
after another), because this machine is shared and noisy: a slow minute then
hits every contender alike, and the ratios between them stay meaningful even
when the absolute times do not. Goals are reported as PASS/FAIL; missing one
never makes the exit status non-zero.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import platform
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2
from corpus import DEFAULT_CACHE, Corpus, TurnFeed, build_corpus, copy_corpus

import memgit
from memgit.capture.read import parse_turn
from memgit.constants import TRAILER_CAPTURED
from memgit.repo import MemoryRepo
from memgit.trailers import render_message
from memgit.turn import redact_turn, render_capture

ALL_CONTENDERS = ("api", "cli", "git", "api-open", "api-nofsync", "git-fsync")
GOAL_SPEEDUP = 2.0
GOAL_API_MS_AT_100K = 50.0
GOAL_VERSION_MS = 150.0


# --- contenders -------------------------------------------------------------------------


class Contender:
    """One way of capturing a turn into its own copy of the corpus.

    ``prepare`` runs untimed (it turns the agent's JSON into what this contender
    consumes); only ``run`` is timed.
    """

    name = ""

    def __init__(self, repo: Path, memgit_cmd: Sequence[str]) -> None:
        self.repo = repo
        self.memgit_cmd = list(memgit_cmd)

    def prepare(self, turn: dict[str, Any]) -> Any:
        return turn

    def run(self, prepared: Any) -> None:
        raise NotImplementedError


class ApiContender(Contender):
    """The in-process API as an agent holding the repository open would use it."""

    name = "api"

    def __init__(self, repo: Path, memgit_cmd: Sequence[str]) -> None:
        super().__init__(repo, memgit_cmd)
        self.memory = MemoryRepo.open(repo)

    def run(self, prepared: Any) -> None:
        _check_outcome(self.memory.capture(prepared))


class ApiOpenContender(Contender):
    """Diagnostic: the API paying for ``MemoryRepo.open`` every time, as the CLI does."""

    name = "api-open"

    def run(self, prepared: Any) -> None:
        _check_outcome(MemoryRepo.open(self.repo).capture(prepared))


class ApiNoFsyncContender(ApiContender):
    """Diagnostic: the API with libgit2's fsync of the git directory switched off.

    memgit turns it on for durability; plain ``git commit`` fsyncs nothing by
    default, so this row shows how much of the gap is durability, not code.
    The setting is process-wide, so it is switched back on after every sample.
    """

    name = "api-nofsync"

    def run(self, prepared: Any) -> None:
        pygit2.settings.enable_fsync_gitdir(False)
        try:
            super().run(prepared)
        finally:
            pygit2.settings.enable_fsync_gitdir(True)


class CliContender(Contender):
    """End to end: process start, imports, open, capture, exit."""

    name = "cli"

    def prepare(self, turn: dict[str, Any]) -> bytes:
        return json.dumps(turn).encode("utf-8")

    def run(self, prepared: Any) -> None:
        _run([*self.memgit_cmd, "-C", str(self.repo), "capture"], stdin=prepared)


@dataclass(frozen=True, slots=True)
class GitChange:
    path: str
    data: bytes
    message: str


class GitContender(Contender):
    """The baseline: the same file and commit message, made with the git CLI."""

    name = "git"
    config: tuple[str, ...] = ()

    def prepare(self, turn: dict[str, Any]) -> GitChange:
        clean = redact_turn(parse_turn(turn, source="<bench>"))
        summary = f"capture: {clean.source}/{clean.session} turn {clean.seq}"
        message = render_message(summary, [(TRAILER_CAPTURED, clean.key)])
        return GitChange(clean.path, render_capture(clean).encode("utf-8"), message)

    def run(self, prepared: Any) -> None:
        full = self.repo / prepared.path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(prepared.data)
        git = ["git", "-C", str(self.repo), *self.config]
        _run([*git, "add", "--", prepared.path])
        _run([*git, "commit", "-q", "-m", prepared.message])


class GitFsyncContender(GitContender):
    """Diagnostic: git made durable like memgit (objects and refs fsynced)."""

    name = "git-fsync"
    config = ("-c", "core.fsync=committed", "-c", "core.fsyncMethod=fsync")


CONTENDER_TYPES: dict[str, type[Contender]] = {
    cls.name: cls
    for cls in (
        ApiContender,
        CliContender,
        GitContender,
        ApiOpenContender,
        ApiNoFsyncContender,
        GitFsyncContender,
    )
}
MAIN_CONTENDERS = ("api", "cli", "git")


def _check_outcome(outcome: Any) -> None:
    """A benchmark that silently measured duplicates would measure nothing."""
    if outcome.duplicate or not outcome.commit:
        raise RuntimeError(f"capture made no commit: {outcome}")


def _run(cmd: list[str], stdin: bytes | None = None) -> None:
    done = subprocess.run(cmd, input=stdin, capture_output=True, check=False)
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace")
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {done.returncode}: {err}")


# --- statistics and scheduling ----------------------------------------------------------


@dataclass(slots=True)
class Samples:
    """Raw wall-clock samples in milliseconds, plus the summaries the table shows."""

    ms: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.ms) if self.ms else math.nan

    @property
    def p95(self) -> float:
        return percentile(self.ms, 0.95)

    def to_dict(self) -> dict[str, Any]:
        return {"median_ms": self.median, "p95_ms": self.p95, "samples_ms": self.ms}


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), nan when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def interleave(counts: dict[str, int], rng: random.Random) -> list[str]:
    """Spread each contender's samples evenly over the run, ties in random order.

    A contender with 30 samples and one with 15 both span the whole run, so a
    noisy stretch of the machine lands on all of them in proportion.
    """
    slots = [((k + 0.5) / n, rng.random(), name) for name, n in counts.items() for k in range(n)]
    return [name for _, _, name in sorted(slots)]


def timed(action: Callable[[], None]) -> float:
    began = time.perf_counter_ns()
    action()
    return (time.perf_counter_ns() - began) / 1e6


# --- one size ---------------------------------------------------------------------------


@dataclass(slots=True)
class SizeResult:
    corpus: Corpus
    samples: dict[str, Samples]
    warmup_ms: dict[str, list[float]]
    setup_seconds: float


def bench_size(corpus: Corpus, args: argparse.Namespace, work: Path) -> SizeResult:
    """Copy the corpus per contender, warm each up, then take interleaved samples."""
    began = time.perf_counter()
    contenders: dict[str, Contender] = {}
    feeds: dict[str, TurnFeed] = {}
    for name in args.contenders:
        copy = copy_corpus(corpus, work / f"{corpus.size}-{name}")
        contenders[name] = CONTENDER_TYPES[name](copy, args.memgit_cmd)
        feeds[name] = TurnFeed(corpus, args.seed)
    bases = {name: _git_out(c.repo, "rev-parse", "HEAD").strip() for name, c in contenders.items()}
    # Flush the copies' dirty pages now: memgit fsyncs and git does not, so writeback
    # still pending from the copy would slow only the memgit contenders.
    os.sync()
    setup = time.perf_counter() - began

    def sample(name: str) -> float:
        contender = contenders[name]
        prepared = contender.prepare(feeds[name].next_turn())
        return timed(lambda: contender.run(prepared))

    warmup = {name: [sample(name) for _ in range(args.warmup)] for name in contenders}
    counts = {
        name: args.repeats if name.startswith("api") else args.cli_repeats for name in contenders
    }
    result = {name: Samples() for name in contenders}
    for name in interleave(counts, random.Random(args.seed)):
        result[name].ms.append(sample(name))
    _verify(contenders, bases, {name: args.warmup + counts[name] for name in contenders})
    if args.profile and "api" in contenders:
        profile_api(contenders["api"], feeds["api"], args.profile, work, corpus.size)
    return SizeResult(corpus, result, warmup, setup)


def _git_out(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def _verify(contenders: dict[str, Contender], bases: dict[str, str], made: dict[str, int]) -> None:
    """Every capture made exactly one new commit, and every copy ends clean."""
    for name, contender in contenders.items():
        count = int(_git_out(contender.repo, "rev-list", "--count", f"{bases[name]}..HEAD"))
        if count != made[name]:
            raise RuntimeError(f"{name}: {count} new commits, expected {made[name]}")
        status = _git_out(contender.repo, "status", "--porcelain", "--untracked-files=all")
        if status.strip():
            raise RuntimeError(f"{name}: working copy not clean after the run:\n{status[:500]}")


def profile_api(contender: Contender, feed: TurnFeed, count: int, work: Path, size: int) -> None:
    """cProfile ``count`` extra API captures (not part of the timings) and print the top."""
    turns = [feed.next_turn() for _ in range(count)]
    profiler = cProfile.Profile()
    profiler.enable()
    for turn in turns:
        contender.run(turn)
    profiler.disable()
    out = work.parent / f"profile-api-{size}.prof"
    profiler.dump_stats(out)
    print(f"\n--- cProfile of {count} api captures at {size:,} files (saved to {out}) ---")
    stats = pstats.Stats(profiler, stream=sys.stdout).strip_dirs()
    stats.sort_stats("tottime").print_stats(12)


# --- start-up ---------------------------------------------------------------------------


def bench_startup(args: argparse.Namespace) -> dict[str, Samples]:
    """``memgit --version`` beside the bare interpreter, interleaved."""
    python = sys.executable
    commands = {
        "memgit --version": [*args.memgit_cmd, "--version"],
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import memgit.repo'": [python, "-c", "import memgit.repo"],
    }
    for cmd in commands.values():
        _run(cmd)  # warm the page cache
    result = {label: Samples() for label in commands}
    order = interleave(dict.fromkeys(commands, args.startup_repeats), random.Random(args.seed))
    for label in order:
        result[label].ms.append(timed(lambda cmd=commands[label]: _run(cmd)))
    return result


def use_bytecode_cache(cache: Path) -> None:
    """Let child Pythons keep .pyc files, as an installed memgit would.

    Some environments set PYTHONDONTWRITEBYTECODE, which makes every ``memgit``
    process recompile memgit's own modules from source and inflates start-up.
    The prefix keeps the .pyc files under the cache folder instead of writing
    ``__pycache__`` folders into the checkout.
    """
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str((cache / "pycache").resolve())


# --- reporting --------------------------------------------------------------------------


def speed_words(git_ms: float, ms: float) -> str:
    ratio = git_ms / ms
    if ratio >= 1:
        return f"{ratio:4.1f}x faster than git"
    return f"{1 / ratio:4.1f}x slower than git"


def print_size(result: SizeResult) -> None:
    corpus = result.corpus
    how = "cached" if corpus.cached else "built now"
    phases = ", ".join(f"{k} {v:.1f}s" for k, v in corpus.phases.items())
    print(
        f"\n== {corpus.size:,} files: corpus {how}, build took {corpus.build_seconds:.1f} s "
        f"({phases}); copies {result.setup_seconds:.1f} s =="
    )
    print(f"{'contender':<11} {'n':>3} {'median ms':>10} {'p95 ms':>9} {'git/median':>11}  verdict")
    git = result.samples.get("git")
    for name, samples in result.samples.items():
        ratio = f"{git.median / samples.median:10.2f}x" if git else ""
        words = speed_words(git.median, samples.median) if git and name != "git" else ""
        print(
            f"{name:<11} {len(samples.ms):>3} {samples.median:>10.1f} {samples.p95:>9.1f} "
            f"{ratio:>11}  {words}"
        )
    if set(result.samples) - set(MAIN_CONTENDERS):
        print(
            "(diagnostics: api-open = open + capture per call; api-nofsync = api with libgit2's "
            "fsync off; git-fsync = git with core.fsync=committed)"
        )


def print_environment(env: dict[str, Any]) -> None:
    load = ", ".join(f"{value:.2f}" for value in env["loadavg_start"])
    print(
        f"memgit {env['memgit']}, Python {env['python']}, pygit2 {env['pygit2']} "
        f"(libgit2 {env['libgit2']}), {env['git']}, {env['cpus']} CPUs, load {load}; "
        f"bytecode {env['bytecode']}"
    )


def print_startup(startup: dict[str, Samples]) -> None:
    print("\n== start-up (subprocess wall time) ==")
    for label, samples in startup.items():
        print(
            f"{label:<32} n={len(samples.ms):<3} median {samples.median:7.1f} ms   "
            f"p95 {samples.p95:7.1f} ms"
        )


def goals(results: dict[int, SizeResult], startup: dict[str, Samples]) -> list[dict[str, Any]]:
    """Each goal with its measured value and PASS / FAIL / SKIP."""
    found: list[dict[str, Any]] = []
    for size, result in results.items():
        api, git = result.samples.get("api"), result.samples.get("git")
        if api and git:
            ratio = git.median / api.median
            found.append(
                _goal(
                    f"api >= {GOAL_SPEEDUP:g}x faster than git at {size:,} files",
                    ratio >= GOAL_SPEEDUP,
                    f"{ratio:.2f}x",
                )
            )
    api_big = results.get(100_000)
    if api_big and "api" in api_big.samples:
        median = api_big.samples["api"].median
        found.append(
            _goal(
                f"api median < {GOAL_API_MS_AT_100K:g} ms at 100,000 files",
                median < GOAL_API_MS_AT_100K,
                f"{median:.1f} ms",
            )
        )
    else:
        found.append(
            _goal(f"api median < {GOAL_API_MS_AT_100K:g} ms at 100,000 files", None, "size not run")
        )
    version = startup["memgit --version"].median
    found.append(
        _goal(
            f"memgit --version < {GOAL_VERSION_MS:g} ms",
            version < GOAL_VERSION_MS,
            f"{version:.1f} ms",
        )
    )
    return found


def _goal(name: str, passed: bool | None, value: str) -> dict[str, Any]:
    verdict = "SKIP" if passed is None else "PASS" if passed else "FAIL"
    return {"goal": name, "verdict": verdict, "value": value}


def print_goals(found: list[dict[str, Any]]) -> None:
    print("\n== goals ==")
    for goal in found:
        print(f"{goal['verdict']:<5} {goal['goal']:<48} measured {goal['value']}")


def environment(args: argparse.Namespace) -> dict[str, Any]:
    """What the numbers depend on, so a JSON file can be compared with another."""
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    return {
        "memgit": memgit.__version__,
        "python": platform.python_version(),
        "pygit2": pygit2.__version__,
        "libgit2": pygit2.LIBGIT2_VERSION,
        "git": git_version.strip(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "argv": sys.argv,
        "seed": args.seed,
        "bytecode": "as in the environment" if args.env_bytecode else "cached (.pyc kept)",
        "env_PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE"),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def to_json(
    env: dict[str, Any],
    results: dict[int, SizeResult],
    startup: dict[str, Samples],
    found: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "environment": {**env, "loadavg_end": os.getloadavg()},
        "sizes": {
            str(size): {
                "corpus": {
                    "files": size,
                    "cached": result.corpus.cached,
                    "build_seconds": result.corpus.build_seconds,
                    "phases": result.corpus.phases,
                    "sessions": len(result.corpus.sessions),
                },
                "setup_seconds": result.setup_seconds,
                "warmup_ms": result.warmup_ms,
                "contenders": {name: s.to_dict() for name, s in result.samples.items()},
            }
            for size, result in results.items()
        },
        "startup": {label: s.to_dict() for label, s in startup.items()},
        "goals": found,
    }


# --- command line -----------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="1000,10000,100000",
        help="corpus sizes in files, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--repeats", type=int, default=30, help="api captures per size (default: %(default)s)"
    )
    parser.add_argument(
        "--cli-repeats",
        type=int,
        default=15,
        help="cli and git captures per size (default: %(default)s)",
    )
    parser.add_argument("--startup-repeats", type=int, default=20, help="default: %(default)s")
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="unmeasured captures per contender first (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=42, help="default: %(default)s")
    parser.add_argument(
        "--contenders", default=",".join(ALL_CONTENDERS), help="subset of %(default)s"
    )
    parser.add_argument("--json", type=Path, help="write every raw sample here")
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help="corpus cache and scratch space (default: bench/.cache)",
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild cached corpora")
    parser.add_argument("--keep", action="store_true", help="keep the working copies")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also cProfile N extra api captures per size and print the top",
    )
    parser.add_argument(
        "--env-bytecode",
        action="store_true",
        help="leave child Pythons' bytecode settings as the environment has them "
        "(default: keep .pyc files under the cache, as an installed memgit would)",
    )
    parser.add_argument(
        "--memgit",
        default=str(Path(sys.executable).parent / "memgit"),
        help="the memgit command (default: next to this Python)",
    )
    args = parser.parse_args(argv)
    args.sizes = [int(size) for size in args.sizes.split(",")]
    args.contenders = [name.strip() for name in args.contenders.split(",")]
    unknown = set(args.contenders) - set(ALL_CONTENDERS)
    if unknown:
        parser.error(f"unknown contenders: {', '.join(sorted(unknown))}")
    args.memgit_cmd = [args.memgit]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    env = environment(args)
    if not args.env_bytecode:
        use_bytecode_cache(args.cache)
    print_environment(env)
    results: dict[int, SizeResult] = {}
    work = args.cache / f"work-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    try:
        for size in args.sizes:
            print(f"preparing {size:,}-file corpus (seed {args.seed}) ...", flush=True)
            corpus = build_corpus(size, args.seed, args.cache, rebuild=args.rebuild)
            results[size] = bench_size(corpus, args, work)
            print_size(results[size])
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    startup = bench_startup(args)
    print_startup(startup)
    found = goals(results, startup)
    print_goals(found)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(to_json(env, results, startup, found), indent=1))
        print(f"\nraw samples: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
