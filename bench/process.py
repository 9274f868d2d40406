"""Per-run cost of ``memgit process`` outside the Gate backend, at 1k-100k memories.

Usage (from the checkout)::

    .venv/bin/python bench/process.py --sizes 1000,10000,100000 --json bench/results/process.json

For each size a repository holding that many memories is written directly
(memory files rendered by memgit's own ``render_memory`` at memgit's own paths,
their sources quoting real capture blobs that a retention cleanup already
removed from the inbox, all in one ``git fast-import`` commit, checked out),
with the history a repository of that size has: one run record per 10
memories, and one processed turn of the last day per 50 memories still in the
inbox (inside the retention period). It is cached in ``bench/.cache/`` (rebuilt
weekly, so those turns stay recent) and copied once per benchmark invocation;
the untimed warm-up run fills memgit's caches in ``.git/memgit/``.

Each measured run captures one fresh turn (untimed), then a **fresh Python
process** (imports untimed, as they are the same for every size) opens the
repository and runs ``process`` once; the backend object is wrapped so its
``answer`` time is subtracted. Two backends:

* ``rules``: the offline default;
* ``instant``: the ``openai`` backend against a local HTTP stub
  (``tests/scripted_server.py``) that answers a valid NO_CHANGE answer built
  from the prompt's units immediately, so the HTTP client, prompt rendering
  and answer parsing inside memgit are exercised but no model time is.

Reported per size and backend: median and p95 of (run wall time - backend
time) in ms, and the backend time. The baseline, measured in the same
repository and interleaved with memgit's runs: a plain ``git add`` +
``git commit`` of the two files a run writes (a memory and a run record),
as two git processes; ``x git`` is memgit's median over git's. At 100k the
warm-up run puts Git's index in split mode (docs/decisions/0005-split-index.md),
for memgit's runs and git's alike.

Goal: under 100 ms per run (p95) at 100k memories, with memgit.yaml as
``init`` writes it. ``--variants no-related`` adds rows with
``gate.related_memories: 0`` (committed in the working copy), which shows
what a run costs beneath the related-memory lookup. ``--profile N`` runs one
extra cProfiled run per row and prints the top N functions by cumulative
time. Missing a goal never changes the exit status.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
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
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the reusable scripted HTTP server

CACHE = HERE / ".cache"
CACHE_VERSION = 3
GOAL_MS = 100.0
GOAL_SIZE = 100_000
SOURCE = "bench-agent"
SEED_SOURCE = "bench-seed"
PER_CAPTURE = 50  # memories quoting one seed capture
RUNS_PER = 10  # memories per run record of the past
INBOX_PER = 50  # memories per processed capture still in the inbox (within retention)
SCOPES = ("user", "project/api", "project/web", "project/infra")
TYPES = ("fact", "preference", "decision", "procedure")
WORDS = (
    "cache config loader migration retry backoff network index schema field default "
    "timezone parser branch merge rebase commit hook lint fixture deploy staging review "
    "latency budget memory release docs changelog module refactor database queue worker"
).split()
STATEMENTS = (
    "Remember that the {w1} {w2} for service {n} is kept in {w3}.",
    "From now on, run the {w1} check before {w2} number {n}.",
    "I prefer {w1} over {w2} for project {n}.",
    "Never touch the {w1} {w2} of cluster {n} on Fridays.",
)


# --- building the repository ----------------------------------------------------------


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


def _sentence(rng: random.Random, n: int) -> str:
    template = STATEMENTS[n % len(STATEMENTS)]
    return template.format(w1=rng.choice(WORDS), w2=rng.choice(WORDS), w3=rng.choice(WORDS), n=n)


def _format_tag() -> str:
    """A hash of how memgit renders a memory today: part of the cache key."""
    from memgit.memory import Memory, Source, render_memory

    sample = Memory(
        id="abcdefabcdef",
        type="fact",
        scope="user",
        title="t: 'x'",
        body="b\n",
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        sources=(
            Source(capture="inbox/a/b/c/000000.yaml", unit="a/c/0#0", quote="q", blob="0" * 40),
        ),
    )
    return hashlib.sha1(f"{sample.path}\n{render_memory(sample)}".encode()).hexdigest()[:8]


def _fast_import(repo: Path, commits: list[tuple[str, list[tuple[str, bytes | None]]]]) -> None:
    """Append commits (message, [(path, content or None to delete)]) to main in one stream."""
    parent = _git(repo, "rev-parse", "refs/heads/main").strip()
    proc = subprocess.Popen(
        ["git", "-C", str(repo), "fast-import", "--quiet", "--done"], stdin=subprocess.PIPE
    )
    assert proc.stdin is not None
    out = proc.stdin
    for number, (message, files) in enumerate(commits):
        msg = message.encode()
        out.write(b"commit refs/heads/main\n")
        out.write(f"committer memgit bench <bench@localhost> {int(time.time())} +0000\n".encode())
        out.write(b"data %d\n%s\n" % (len(msg), msg))
        if number == 0:
            out.write(b"from %s\n" % parent.encode())
        for path, data in files:
            if data is None:
                out.write(b"D %s\n" % path.encode())
            else:
                out.write(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
    out.write(b"\ndone\n")
    out.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")


def build_repository(size: int, seed: int, rebuild: bool = False) -> Path:
    """The cached repository with ``size`` memories (built on first use)."""
    # The inbox holds turns of the day before the build: rebuilt weekly, they stay
    # inside the 30-day retention period.
    week = datetime.now(UTC).strftime("%G%V")
    final = CACHE / f"process-n{size}-s{seed}-v{CACHE_VERSION}-w{week}-{_format_tag()}"
    if rebuild and final.exists():
        shutil.rmtree(final)
    if (final / "manifest.json").exists():
        return final / "repo"
    scratch = final.with_name(final.name + f".building-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    began = time.perf_counter()
    _build(scratch / "repo", size, seed)
    (scratch / "manifest.json").write_text(
        json.dumps({"size": size, "seed": seed, "build_seconds": time.perf_counter() - began})
    )
    os.replace(scratch, final)
    return final / "repo"


def _build(repo: Path, size: int, seed: int) -> None:
    from memgit.memory import Memory, Source, new_memory_id, render_memory
    from memgit.repo import MemoryRepo
    from memgit.turn import Message, Turn, render_capture

    MemoryRepo.init(repo)
    rng = random.Random(seed)
    epoch = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
    # 1. seed captures: the turns the memories came from (later removed by retention)
    seeds: list[tuple[Turn, bytes, list[str]]] = []
    for number in range(math.ceil(size / PER_CAPTURE)):
        sentences = [_sentence(rng, number * PER_CAPTURE + i) for i in range(PER_CAPTURE)]
        stamp = (epoch + timedelta(minutes=number)).strftime("%Y-%m-%dT%H:%M:%SZ")
        turn = Turn(
            source=SEED_SOURCE,
            session=f"seed{number // 100:05d}",
            seq=number % 100,
            timestamp=stamp,
            messages=(Message(role="user", content=" ".join(sentences)),),
        )
        seeds.append((turn, render_capture(turn).encode("utf-8"), sentences))
    # blob ids without a process per blob: git's blob id is sha1("blob <len>\0<data>")
    blob_ids = {t.path: hashlib.sha1(b"blob %d\0" % len(d) + d).hexdigest() for t, d, _ in seeds}
    first_turn, first_data, _ = seeds[0]
    assert (
        _git(repo, "hash-object", "--stdin", stdin=first_data).strip() == blob_ids[first_turn.path]
    )
    # 2. the memories, each quoting one sentence of one seed capture
    memories: list[tuple[str, bytes]] = []
    for index in range(size):
        turn, _, sentences = seeds[index // PER_CAPTURE]
        quote = sentences[index % PER_CAPTURE]
        stamp = turn.timestamp
        memory_id = new_memory_id(f"bench-{seed}-{index}".encode())
        words = quote.rstrip(".").split()
        memory = Memory(
            id=memory_id,
            type=TYPES[index % len(TYPES)],
            scope=SCOPES[index % len(SCOPES)],
            title=" ".join(words[:8]),
            body=quote + "\n\n" + " ".join(rng.choice(WORDS) for _ in range(24)) + ".\n",
            created=stamp,
            updated=stamp,
            tags=tuple(sorted({rng.choice(WORDS), rng.choice(WORDS)})),
            sources=(
                Source(
                    capture=turn.path,
                    unit=f"{turn.key}#0",
                    quote=quote,
                    blob=blob_ids[turn.path],
                ),
            ),
        )
        memories.append((memory.path, render_memory(memory).encode("utf-8")))
    _fast_import(
        repo,
        [
            (f"bench: {len(seeds)} seed captures", [(t.path, d) for t, d, _ in seeds]),
            (
                f"bench: {size} memories, {size // RUNS_PER} run records, "
                f"{size // INBOX_PER} processed captures of the last day; "
                "the seed captures past retention",
                [(t.path, None) for t, _, _ in seeds]  # type: ignore[misc]
                + memories
                + _run_history(size // RUNS_PER - size // INBOX_PER // 2, epoch)
                + _recent_inbox(size // INBOX_PER, datetime.now(UTC)),
            ),
        ],
    )
    _git(repo, "reset", "--hard", "--quiet")
    if _git(repo, "status", "--porcelain", "--untracked-files=all").strip():
        raise RuntimeError(f"{repo} is not clean after the build")


Covered = list[tuple[str, str, str]]
"""(unit id, capture path, capture blob id) of the units one run record covers."""


def _run_record(number: int, stamp: datetime, covered: Covered) -> tuple[str, bytes]:
    """A run that found nothing to keep in the units it covers."""
    from memgit.runrecord import RunInput, RunRecord, render_run_record

    record = RunRecord(
        run_id=f"{stamp:%Y%m%dT%H%M%SZ}-{number % 32**6:06d}",
        created=f"{stamp:%Y-%m-%dT%H:%M:%SZ}",
        backend="rules",
        prompt_digest="sha256:" + hashlib.sha256(b"%d" % number).hexdigest(),
        inputs=tuple(RunInput(path=path, blob=blob) for _, path, blob in covered),
        gate_output={
            "candidates": [],
            "coverage": [
                {"unit_id": unit, "decision": "NO_CHANGE", "reason": "transient"}
                for unit, _, _ in covered
            ],
            "evidence_bindings": [],
        },
    )
    return record.path, render_run_record(record).encode("utf-8")


def _run_history(count: int, epoch: datetime) -> list[tuple[str, bytes]]:
    """The run records of a repository's past (memgit reads them to know what is
    processed), each covering two turns long gone from the inbox."""
    records = []
    for number in range(count):
        covered = [
            (
                f"{SOURCE}/past{number // 100:05d}/{number % 100 * 2 + i}#0",
                f"inbox/{SOURCE}/past/{number}-{i}.yaml",
                "0" * 40,
            )
            for i in (0, 1)
        ]
        records.append(_run_record(number, epoch + timedelta(minutes=10 * number), covered))
    return records


def _recent_inbox(count: int, now: datetime) -> list[tuple[str, bytes]]:
    """Turns of the last day, processed (nothing to keep) but inside the retention
    period, so they stay in the inbox, with the run records that covered them."""
    from memgit.turn import Message, Turn, render_capture

    files: list[tuple[str, bytes]] = []
    covered: Covered = []
    stamp = now - timedelta(days=1)
    for number in range(count):
        turn = Turn(
            source=SOURCE,
            session=f"recent{number // 100:05d}",
            seq=number % 100,
            timestamp=f"{stamp:%Y-%m-%dT%H:%M:%SZ}",
            messages=(Message(role="user", content=f"Nice weather today, number {number}."),),
        )
        data = render_capture(turn).encode("utf-8")
        files.append((turn.path, data))
        covered.append(
            (f"{turn.key}#0", turn.path, hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest())
        )
    for start in range(0, count, 2):
        files.append(
            _run_record(10**6 + start, stamp + timedelta(seconds=start), covered[start : start + 2])
        )
    return files


def working_copy(cached: Path, dest: Path) -> Path:
    subprocess.run(["cp", "-a", "--reflink=auto", str(cached), str(dest)], check=True)
    _git(dest, "update-index", "-q", "--refresh")
    return dest


# --- one measured run (in a child process) ----------------------------------------------


class TimedBackend:
    """Wraps a backend and adds up the time spent in ``answer``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.can_correct = inner.can_correct
        self.seconds = 0.0
        self.calls = 0

    def answer(self, request: Any) -> str:
        started = time.perf_counter()
        try:
            return str(self.inner.answer(request))
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1


def child_run(repo: Path, backend_name: str, url: str | None, profile_to: str | None) -> None:
    """Open ``repo`` and process once; print timings as JSON (imports are not timed)."""
    # Imports happen before the clock starts, the rules backend's included.
    import memgit.gate.backends.rules
    import memgit.process  # noqa: F401
    from memgit.derived.lexical import LexicalIndex
    from memgit.gate.backends import make_backend
    from memgit.gate.backends.openai import OpenAIBackend
    from memgit.process import process_inbox
    from memgit.repo import MemoryRepo

    profiler = cProfile.Profile() if profile_to else None
    if profiler is not None:
        profiler.enable()
    started = time.perf_counter()
    memory = MemoryRepo.open(repo)
    if backend_name == "instant":
        assert url is not None
        inner: Any = OpenAIBackend(base_url=url, model="instant", timeout=30.0, max_retries=0)
    else:
        inner = make_backend(backend_name, memory.settings.gate)
    backend = TimedBackend(inner)
    result = process_inbox(memory.git, memory.settings, backend, index=LexicalIndex(memory.git))
    wall = time.perf_counter() - started
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile_to)
    print(
        json.dumps(
            {
                "wall": wall,
                "backend": backend.seconds,
                "calls": backend.calls,
                "runs": len(result.runs),
                "decisions": sum(len(run.decisions) for run in result.runs),
            }
        )
    )


def git_commit_sample(repo: Path, number: int) -> float:
    """Seconds for ``git add`` + ``git commit`` of two new files the size of a run's."""
    folder = repo / "bench-baseline"
    folder.mkdir(exist_ok=True)
    names = [f"bench-baseline/{number:06d}.md", f"bench-baseline/{number:06d}.json"]
    (repo / names[0]).write_text(f"---\nid: b{number}\n---\nA baseline memory {number}.\n")
    (repo / names[1]).write_text(json.dumps({"run": number, "pad": "x" * 1500}))
    started = time.perf_counter()
    _git(repo, "add", "--", *names)
    _git(repo, "commit", "-q", "-m", f"baseline {number}")
    return time.perf_counter() - started


def _child(repo: Path, backend: str, url: str | None, profile_to: str | None = None) -> dict:
    args = [sys.executable, str(Path(__file__).resolve()), "--child", str(repo), backend]
    if url:
        args += ["--url", url]
    if profile_to:
        args += ["--profile-to", profile_to]
    done = subprocess.run(args, capture_output=True, text=True, env=_child_env(), check=False)
    if done.returncode != 0:
        raise RuntimeError(f"child failed: {done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _child_env() -> dict[str, str]:
    """Keep .pyc files (an installed memgit has them) but never write them into the checkout."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str((CACHE / "pycache").resolve())
    return env


# --- the stub and the feed ----------------------------------------------------------------


def instant_answer(request: Any) -> Any:
    """A valid NO_CHANGE answer for every supporting unit of the prompt, at once."""
    from scripted_server import chat

    units = request.user_payload["units"]
    coverage = [
        {"unit_id": u["unit_id"], "decision": "NO_CHANGE", "reason": "no-durable-content"}
        for u in units
        if u["can_support"]
    ]
    return chat(json.dumps({"candidates": [], "coverage": coverage, "evidence_bindings": []}))


def capture_fresh_turn(repo: Path, number: int, rng: random.Random) -> None:
    from memgit.repo import MemoryRepo

    stamp = (datetime(2027, 1, 1, tzinfo=UTC) + timedelta(minutes=number)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    MemoryRepo.open(repo).capture(
        {
            "source": SOURCE,
            "session": "measure",
            "seq": number,
            "timestamp": stamp,
            "messages": [
                {"role": "user", "content": _sentence(rng, 10_000_000 + number)},
                {"role": "assistant", "content": "Noted."},
            ],
        }
    )


def set_related(repo: Path, limit: int | None) -> None:
    """Set (or, with None, remove) gate.related_memories in memgit.yaml, committed."""
    config = repo / "memgit.yaml"
    lines = [
        line
        for line in config.read_text("utf-8").splitlines()
        if not line.startswith("  related_memories:")
    ]
    if limit is not None:
        lines.insert(lines.index("gate:") + 1, f"  related_memories: {limit}")
    text = "\n".join(lines) + "\n"
    if text != config.read_text("utf-8"):
        config.write_text(text, "utf-8")
        _git(repo, "commit", "-q", "-m", "bench: related_memories", "--", "memgit.yaml")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(0, math.ceil(q * len(ordered)) - 1)
    return ordered[rank]


# --- main ---------------------------------------------------------------------------------


def measure(size: int, args: argparse.Namespace, server: Any) -> list[dict[str, Any]]:
    cached = build_repository(size, args.seed, args.rebuild)
    rows = []
    with tempfile.TemporaryDirectory(prefix=f"memgit-bench-process-{size}-") as tmp:
        repo = working_copy(cached, Path(tmp) / "repo")
        rng = random.Random(f"feed-{args.seed}-{size}")
        counter = 0
        for backend, variant in [(b, v) for v in args.variants for b in args.backends]:
            set_related(repo, 0 if variant == "no-related" else None)
            url = server.base_url if backend == "instant" else None
            samples = []
            baseline = []
            for number in range(args.warmup + args.runs):
                capture_fresh_turn(repo, counter, rng)
                counter += 1
                sample = _child(repo, backend, url)
                if sample["runs"] != 1:
                    raise RuntimeError(f"expected one run, got {sample}")
                git_seconds = git_commit_sample(repo, counter)
                if number >= args.warmup:
                    samples.append(sample)
                    baseline.append(1000 * git_seconds)
            outside = [1000 * (s["wall"] - s["backend"]) for s in samples]
            row = {
                "size": size,
                "backend": backend,
                "variant": variant,
                "runs": len(samples),
                "outside_median_ms": statistics.median(outside),
                "outside_p95_ms": _percentile(outside, 0.95),
                "backend_median_ms": statistics.median(1000 * s["backend"] for s in samples),
                "wall_median_ms": statistics.median(1000 * s["wall"] for s in samples),
                "git_median_ms": statistics.median(baseline),
                "samples_ms": outside,
                "git_samples_ms": baseline,
            }
            if args.profile:
                capture_fresh_turn(repo, counter, rng)
                counter += 1
                stats_file = Path(tmp) / f"{backend}-{variant}.prof"
                _child(repo, backend, url, str(stats_file))
                row["profile"] = _profile_report(stats_file, args.profile)
            rows.append(row)
            print(_row_line(row), flush=True)
    return rows


def _profile_report(stats_file: Path, top: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(str(stats_file), stream=out)
    stats.sort_stats("cumulative").print_stats(r"memgit|pygit2|yaml|json|httpx", top)
    return out.getvalue()


def _row_line(row: dict[str, Any]) -> str:
    return (
        f"{row['size']:>8,} {row['backend']:<8} {row['variant']:<10} {row['runs']:>4} "
        f"{row['outside_median_ms']:>11.1f} {row['outside_p95_ms']:>9.1f} "
        f"{row['backend_median_ms']:>11.1f} {row['wall_median_ms']:>9.1f} "
        f"{row['git_median_ms']:>8.1f} {row['outside_median_ms'] / row['git_median_ms']:>6.2f}"
    )


HEADER = (
    f"{'memories':>8} {'backend':<8} {'variant':<10} {'runs':>4} {'outside/med':>11} {'p95':>9} "
    f"{'backend/med':>11} {'wall/med':>9} {'git/med':>8} {'x git':>6}   (ms)"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--backends", default="rules,instant")
    parser.add_argument("--runs", type=int, default=7, help="measured runs per size and backend")
    parser.add_argument(
        "--variants",
        default="default",
        help="default (memgit.yaml as built) and/or no-related (gate.related_memories: 0, "
        "which shows the cost beneath the related-memory lookup)",
    )
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", dest="json_out", help="write every sample and the setup here")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print top N")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("REPO", "BACKEND"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_run(Path(args.child[0]), args.child[1], args.url, args.profile_to)
        return 0
    args.backends = [b for b in args.backends.split(",") if b]
    args.variants = [v for v in args.variants.split(",") if v]
    if not set(args.variants) <= {"default", "no-related"}:
        parser.error("--variants takes default and/or no-related")
    sizes = [int(s) for s in args.sizes.split(",") if s]

    from scripted_server import ScriptedServer

    rows: list[dict[str, Any]] = []
    with ScriptedServer(default=instant_answer) as server:
        print(HEADER)
        for size in sizes:
            rows.extend(measure(size, args, server))
    print()
    goals = []
    for row in rows:
        if row["size"] == GOAL_SIZE and row["variant"] == "default":
            ok = row["outside_p95_ms"] < GOAL_MS
            goals.append({"backend": row["backend"], "p95_ms": row["outside_p95_ms"], "pass": ok})
            print(
                f"{'PASS' if ok else 'FAIL'}  {row['backend']}: p95 {row['outside_p95_ms']:.1f} ms "
                f"per run outside the backend at {GOAL_SIZE:,} memories (goal < {GOAL_MS:g} ms)"
            )
    if not goals:
        print(f"(no goal checked: the goal is at {GOAL_SIZE:,} memories)")
    for row in rows:
        if "profile" in row:
            print(
                f"\n--- profile: {row['size']:,} memories, {row['backend']}, {row['variant']} ---"
            )
            print(row["profile"])
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(
            json.dumps(
                {
                    "rows": rows,
                    "goals": goals,
                    "python": sys.version,
                    "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                    "loadavg": os.getloadavg(),
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
