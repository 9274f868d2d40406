"""Recall latency: memgit's index against a naive scan and against bare FTS5, at 1k-100k memories.

Usage (from the checkout)::

    .venv/bin/python bench/recall.py --sizes 1000,10000,100000 [--json bench/results/recall.json]

For each size, on the seeded corpus of ``recall_corpus.py`` (cached), in one run:

* build: the index built from nothing (``LexicalIndex.rebuild``), and its size;
* first query: a new Python process opens the repository and recalls once
  (timed inside the process, so interpreter start-up is excluded), and the
  wall time of the whole ``memgit recall QUERY --json`` command;
* warm: one process, one ``MemoryRepo``, ``recall()`` over the query set
  (p50/p95/p99), with the default ``MEMGIT_OVERLAY_TTL`` of 1 s, with the
  overlay check left out (TTL 1 hour), and with that and ``recall.vocabulary:
  false`` (the recall vocabulary's cost: all queries, and the queries it adds
  terms to), interleaved with
* bare FTS5: the same MATCH expressions straight to SQLite on the same index
  file: the memory top 10 alone, and memory plus captured-turn top 10;
* refresh: a ``git commit`` that changes 10 memory files, then the refresh the
  next recall does (median of 5);
* naive: read every memory file and score it with BM25 in Python (3 queries).

The machine is shared and noisy: compare the ratios measured side by side
rather than absolute times across runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_corpus import build_corpus

from memgit.derived.search import MEMORY_WEIGHTS, MESSAGE_WEIGHTS
from memgit.derived.vocabulary import expand
from memgit.repo import MemoryRepo
from memgit.tokens import parse_query

ROOT = Path(__file__).resolve().parents[1]
GOALS = {"warm_p50_ms": 10.0, "refresh_ms": 100.0, "build_s": 30.0, "ratio_to_bare": 2.0}

_FIRST_QUERY = """
import json, sys, time
started = time.perf_counter()
from memgit.repo import MemoryRepo
imported = time.perf_counter()
repo = MemoryRepo.open(sys.argv[1])
opened = time.perf_counter()
pack = repo.recall(sys.argv[2])
done = time.perf_counter()
print(json.dumps({"import_ms": 1000 * (imported - started), "open_ms": 1000 * (opened - imported),
                  "query_ms": 1000 * (done - opened), "memories": len(pack.memories)}))
"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, check=True, text=True
    ).stdout


def index_file(repo: Path) -> Path:
    return repo / ".git" / "memgit" / "index.sqlite"


def measure_build(repo: Path) -> dict[str, Any]:
    for suffix in ("", "-wal", "-shm"):
        Path(str(index_file(repo)) + suffix).unlink(missing_ok=True)
    memrepo = MemoryRepo.open(repo)
    started = time.perf_counter()
    stats = memrepo._recall_index().rebuild()
    seconds = time.perf_counter() - started
    memrepo._recall_index().close()
    conn = sqlite3.connect(index_file(repo))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return {
        "build_s": seconds,
        "paths": stats.paths,
        "index_mb": index_file(repo).stat().st_size / 1e6,
    }


def measure_first_query(repo: Path, queries: list[str], runs: int = 5) -> dict[str, Any]:
    inner, cli = [], []
    for number in range(runs):
        query = queries[number % len(queries)]
        done = subprocess.run(
            [sys.executable, "-c", _FIRST_QUERY, str(repo), query],
            capture_output=True,
            check=True,
            text=True,
        )
        inner.append(json.loads(done.stdout.strip().splitlines()[-1]))
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "memgit.cli.main", "-C", str(repo), "recall", query, "--json"],
            capture_output=True,
            check=True,
        )
        cli.append(1000 * (time.perf_counter() - started))
    return {
        "first_query_ms": statistics.median(r["query_ms"] for r in inner),
        "open_ms": statistics.median(r["open_ms"] for r in inner),
        "import_ms": statistics.median(r["import_ms"] for r in inner),
        "cli_wall_ms": statistics.median(cli),
    }


def measure_warm(repo: Path, queries: list[str], rounds: int) -> dict[str, Any]:
    """memgit recall and bare FTS5, interleaved query by query."""
    results: dict[str, list[float]] = {
        "memgit": [],
        "memgit_no_overlay": [],
        "memgit_no_vocabulary": [],
        "expanded": [],
        "expanded_no_vocabulary": [],
        "bare": [],
        "bare_both": [],
    }
    os.environ.pop("MEMGIT_OVERLAY_TTL", None)
    default = MemoryRepo.open(repo)
    os.environ["MEMGIT_OVERLAY_TTL"] = "3600"
    steady = MemoryRepo.open(repo)
    plain = MemoryRepo(steady.git, dataclasses.replace(steady.settings, recall_vocabulary=False))
    os.environ.pop("MEMGIT_OVERLAY_TTL", None)
    expands = [bool(expand(parse_query(query)).expansions) for query in queries]
    conn = sqlite3.connect(f"file:{index_file(repo)}?mode=ro", uri=True)
    memory_sql = (
        f"SELECT rowid, bm25(memory_fts, {', '.join(map(str, MEMORY_WEIGHTS))}) AS s "
        "FROM memory_fts WHERE memory_fts MATCH ? ORDER BY s LIMIT 10"
    )
    message_sql = (
        f"SELECT rowid, bm25(message_fts, {', '.join(map(str, MESSAGE_WEIGHTS))}) AS s "
        "FROM message_fts WHERE message_fts MATCH ? ORDER BY s LIMIT 10"
    )
    matches = [parse_query(query).fts() for query in queries]
    for query, match in zip(queries, matches, strict=True):  # warm every cache once
        default.recall(query)
        steady.recall(query)
        plain.recall(query)
        conn.execute(memory_sql, (match,)).fetchall()
    for _ in range(rounds):
        for query, match, expanded in zip(queries, matches, expands, strict=True):
            started = time.perf_counter()
            default.recall(query)
            results["memgit"].append(time.perf_counter() - started)
            started = time.perf_counter()
            steady.recall(query)
            results["memgit_no_overlay"].append(time.perf_counter() - started)
            if expanded:
                results["expanded"].append(results["memgit_no_overlay"][-1])
            started = time.perf_counter()
            plain.recall(query)
            results["memgit_no_vocabulary"].append(time.perf_counter() - started)
            if expanded:
                results["expanded_no_vocabulary"].append(results["memgit_no_vocabulary"][-1])
            started = time.perf_counter()
            conn.execute(memory_sql, (match,)).fetchall()
            results["bare"].append(time.perf_counter() - started)
            started = time.perf_counter()
            conn.execute(memory_sql, (match,)).fetchall()
            conn.execute(message_sql, (match,)).fetchall()
            results["bare_both"].append(time.perf_counter() - started)
    conn.close()
    summary: dict[str, Any] = {"expanded_share": sum(expands) / max(1, len(expands))}
    for name, values in results.items():
        if not values:
            continue
        ms = [1000 * v for v in values]
        summary[name] = {
            "p50": pct(ms, 0.5),
            "p95": pct(ms, 0.95),
            "p99": pct(ms, 0.99),
            "max": max(ms),
            "n": len(ms),
        }
    return summary


def measure_refresh(
    repo: Path, memory_paths: list[str], queries_for_as_of: list[str], runs: int = 5
) -> dict[str, Any]:
    base = git(repo, "rev-parse", "HEAD").strip()
    memrepo = MemoryRepo.open(repo)
    memrepo.recall("warm")
    index = memrepo._recall_index()
    rng = random.Random(7)
    times = []
    as_of: dict[str, float] = {}
    try:
        for run in range(runs):
            for path in rng.sample(memory_paths, 10):
                full = repo / path
                full.write_text(full.read_text("utf-8") + f"Edited in run {run}.\n", "utf-8")
            git(repo, "commit", "-q", "-a", "-m", f"bench: edit 10 memories ({run})")
            started = time.perf_counter()
            stats = index.refresh()
            times.append(1000 * (time.perf_counter() - started))
            assert stats is not None and not stats.full and stats.paths == 10, stats
        for name, rev in (
            ("as_of_near_ms", f"HEAD~{runs}"),
            ("as_of_first_commit_ms", f"HEAD~{runs + 1}"),
        ):
            memrepo.recall("warm", as_of=rev)  # resolve and cache once
            started = time.perf_counter()
            pack = memrepo.recall(queries_for_as_of[0], as_of=rev)
            as_of[name] = 1000 * (time.perf_counter() - started)
            assert pack.as_of is not None
    finally:
        git(repo, "reset", "-q", "--hard", base)
        started = time.perf_counter()
        index.refresh()
        back = 1000 * (time.perf_counter() - started)
        index.close()
    return {
        "refresh_ms": statistics.median(times),
        "refresh_all_ms": times,
        "reset_back_ms": back,
        **as_of,
    }


_WORD = re.compile(r"[^\W_]+")


def naive_query(repo: Path, query: str) -> list[str]:
    """Read every memory file and rank it with BM25 in Python: recall without an index."""
    terms = [t for t in (w.lower() for w in _WORD.findall(query)) if len(t) > 1]
    docs: list[tuple[str, Counter[str], int]] = []
    for folder, _, names in os.walk(repo / "memories"):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as handle:
                words = [w.lower() for w in _WORD.findall(handle.read())]
            docs.append((path, Counter(words), len(words)))
    average = sum(length for _, _, length in docs) / max(1, len(docs))
    frequency = Counter(t for _, counts, _ in docs for t in set(terms) if t in counts)
    scored = []
    for path, counts, length in docs:
        score = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if tf:
                idf = math.log(1 + (len(docs) - frequency[term] + 0.5) / (frequency[term] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        if score:
            scored.append((score, path))
    scored.sort(reverse=True)
    return [path for _, path in scored[:10]]


def measure_overlay(repo: Path, runs: int = 3) -> dict[str, Any]:
    """What finding uncommitted edits costs: git's status, libgit2's, a Python stat walk."""
    import pygit2

    from memgit.derived import overlay

    git_dir, workdir = repo / ".git", repo
    found: dict[str, list[float]] = {
        "git_status_ms": [],
        "libgit2_status_ms": [],
        "python_walk_ms": [],
    }
    handle = pygit2.Repository(str(repo))
    for _ in range(runs):
        started = time.perf_counter()
        assert overlay._git_status(git_dir, workdir) is not None
        found["git_status_ms"].append(1000 * (time.perf_counter() - started))
        started = time.perf_counter()
        handle.status(untracked_files="all")
        found["libgit2_status_ms"].append(1000 * (time.perf_counter() - started))
        started = time.perf_counter()
        count = 0
        for top in ("memories", "inbox"):
            for folder, _, names in os.walk(repo / top):
                for name in names:
                    os.lstat(os.path.join(folder, name))
                    count += 1
        found["python_walk_ms"].append(1000 * (time.perf_counter() - started))
    return {name: statistics.median(values) for name, values in found.items()}


def measure_naive(repo: Path, queries: list[str], runs: int = 3) -> dict[str, Any]:
    times = []
    for query in queries[:runs]:
        started = time.perf_counter()
        naive_query(repo, query)
        times.append(1000 * (time.perf_counter() - started))
    return {"naive_ms": statistics.median(times)}


def run_size(size: int, rounds: int) -> dict[str, Any]:
    corpus = build_corpus(size)
    queries = list(corpus.queries)
    print(
        f"[{size}] corpus {'cached' if corpus.cached else 'built'} "
        f"({corpus.build_seconds:.0f} s to build), {len(queries)} queries",
        flush=True,
    )
    result: dict[str, Any] = {"size": size, "queries": len(queries)}
    result.update(measure_build(corpus.repo))
    print(f"[{size}] build {result['build_s']:.1f} s", flush=True)
    result.update(measure_first_query(corpus.repo, queries))
    result["warm"] = measure_warm(corpus.repo, queries, rounds)
    result.update(measure_refresh(corpus.repo, list(corpus.memory_paths), queries))
    result.update(measure_naive(corpus.repo, queries))
    result.update(measure_overlay(corpus.repo))
    warm = result["warm"]
    result["ratio_to_bare"] = warm["memgit_no_overlay"]["p50"] / warm["bare"]["p50"]
    result["ratio_to_bare_both"] = warm["memgit_no_overlay"]["p50"] / warm["bare_both"]["p50"]
    result["vocabulary_ratio"] = (
        warm["memgit_no_overlay"]["p50"] / warm["memgit_no_vocabulary"]["p50"]
    )
    if "expanded" in warm:
        result["vocabulary_ratio_expanded"] = (
            warm["expanded"]["p50"] / warm["expanded_no_vocabulary"]["p50"]
        )
    result["naive_over_warm"] = result["naive_ms"] / warm["memgit"]["p50"]
    return result


def render(results: list[dict[str, Any]]) -> str:
    rows = [
        ("full build (s)", lambda r: f"{r['build_s']:.1f}"),
        ("index size (MB)", lambda r: f"{r['index_mb']:.0f}"),
        ("first query in a new process (ms)", lambda r: f"{r['first_query_ms']:.0f}"),
        ("`memgit recall` CLI wall time (ms)", lambda r: f"{r['cli_wall_ms']:.0f}"),
        ("warm recall p50 / p95 (ms)", lambda r: _pair(r["warm"]["memgit"])),
        (
            "warm recall, no overlay check, p50 / p95 (ms)",
            lambda r: _pair(r["warm"]["memgit_no_overlay"]),
        ),
        ("bare FTS5 memory top 10, p50 / p95 (ms)", lambda r: _pair(r["warm"]["bare"])),
        ("bare FTS5 memories + turns, p50 / p95 (ms)", lambda r: _pair(r["warm"]["bare_both"])),
        (
            "warm recall, no overlay check, recall.vocabulary: false, p50 / p95 (ms)",
            lambda r: _pair(r["warm"]["memgit_no_vocabulary"]),
        ),
        ("queries the vocabulary adds terms to", lambda r: f"{r['warm']['expanded_share']:.0%}"),
        ("vocabulary on / off (p50, all queries)", lambda r: f"{r['vocabulary_ratio']:.2f}x"),
        (
            "vocabulary on / off (p50, queries it adds terms to)",
            lambda r: f"{r.get('vocabulary_ratio_expanded', 0):.2f}x",
        ),
        ("memgit / bare FTS5 (p50)", lambda r: f"{r['ratio_to_bare']:.2f}x"),
        ("memgit / bare memories + turns (p50)", lambda r: f"{r['ratio_to_bare_both']:.2f}x"),
        ("refresh after a 10-memory commit (ms)", lambda r: f"{r['refresh_ms']:.0f}"),
        ("--as-of 5 commits back (50 files differ) (ms)", lambda r: f"{r['as_of_near_ms']:.0f}"),
        (
            "--as-of the first commit (private build) (ms)",
            lambda r: f"{r['as_of_first_commit_ms']:.0f}",
        ),
        ("naive scan per query (ms)", lambda r: f"{r['naive_ms']:.0f}"),
        ("naive / warm recall", lambda r: f"{r['naive_over_warm']:.0f}x"),
        ("working-tree check: git status (ms)", lambda r: f"{r['git_status_ms']:.0f}"),
        ("working-tree check: libgit2 status (ms)", lambda r: f"{r['libgit2_status_ms']:.0f}"),
        ("working-tree check: Python lstat walk (ms)", lambda r: f"{r['python_walk_ms']:.0f}"),
    ]
    head = "| | " + " | ".join(f"{r['size']:,} memories" for r in results) + " |"
    lines = [head, "| --- |" + " --- |" * len(results)]
    for name, cell in rows:
        lines.append(f"| {name} | " + " | ".join(cell(r) for r in results) + " |")
    return "\n".join(lines)


def _pair(values: dict[str, float]) -> str:
    return f"{values['p50']:.2f} / {values['p95']:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the query set")
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    args = parser.parse_args(argv)
    results = [run_size(int(size), args.rounds) for size in args.sizes.split(",")]
    print(render(results))
    biggest = results[-1]
    checks = {
        "warm p50 < 10 ms": biggest["warm"]["memgit"]["p50"] < GOALS["warm_p50_ms"],
        "refresh < 100 ms": biggest["refresh_ms"] < GOALS["refresh_ms"],
        "build < 30 s": biggest["build_s"] < GOALS["build_s"],
        "within 2x of bare FTS5": biggest["ratio_to_bare"] < GOALS["ratio_to_bare"],
    }
    for name, passed in checks.items():
        print(f"{'PASS' if passed else 'FAIL'} at {biggest['size']:,}: {name}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        machine = {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "sqlite": sqlite3.sqlite_version,
        }
        args.json.write_text(json.dumps({"machine": machine, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
