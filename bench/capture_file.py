"""capture --file cost per line: a file of 1k, 10k and 100k turns into a fresh repository.

Usage (from the checkout)::

    .venv/bin/python bench/capture_file.py                      # 1k, 10k, 100k lines
    .venv/bin/python bench/capture_file.py --sizes 1000,10000 --sessions 1

For each size a JSON Lines file of that many turns is written, a fresh memory
repository made with ``memgit init``, and ``memgit capture --file`` run once in
a subprocess, as a user runs it; its wall time and CPU time (of the child) are
measured. By default every turn is in one session: the worst case, since each
session is one folder and a folder's tree object grows with it (a quadratic
capture showed up there first). ``--sessions N`` spreads the turns over N.

The last line is the ratio of the per-line cost at the largest size to that
at the smallest: linear means about 1. Nothing here fails the exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import memgit


def write_turns(path: Path, count: int, sessions: int) -> None:
    """``count`` turns of two messages each, spread round-robin over ``sessions``."""
    with path.open("w", encoding="utf-8") as out:
        for number in range(count):
            turn = {
                "source": "bench",
                "session": f"s{number % sessions}",
                "seq": number // sessions,
                "timestamp": "2026-11-30T10:00:00Z",
                "messages": [
                    {
                        "role": "user",
                        "content": f"Turn {number}: remember that build {number} ran.",
                    },
                    {"role": "assistant", "content": f"Noted: build {number}."},
                ],
            }
            out.write(json.dumps(turn) + "\n")


def memgit_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "memgit.cli.main", *args]


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench_size(work: Path, count: int, sessions: int) -> dict[str, float]:
    lines = work / f"turns-{count}.jsonl"
    write_turns(lines, count, sessions)
    repo = work / f"repo-{count}"
    subprocess.run(memgit_cmd("init", str(repo)), check=True, capture_output=True)
    cpu = child_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        memgit_cmd("-C", str(repo), "capture", "--file", str(lines), "--json"),
        capture_output=True,
        check=False,
    )
    wall = time.perf_counter() - started
    cpu = child_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"capture --file failed: {done.stderr.decode()}")
    commits = len(json.loads(done.stdout)["commits"])
    return {"lines": count, "commits": commits, "wall_s": wall, "cpu_s": cpu}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="default: %(default)s")
    parser.add_argument(
        "--sessions", type=int, default=1, help="sessions the turns are spread over (default: 1)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the repositories and files")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    work = Path(tempfile.mkdtemp(prefix="memgit-capture-file-"))
    print(f"memgit {memgit.__version__}; {args.sessions} session(s); work in {work}")
    for role in ("AUTHOR", "COMMITTER"):  # a machine without a git identity can run it too
        os.environ.setdefault(f"GIT_{role}_NAME", "bench")
        os.environ.setdefault(f"GIT_{role}_EMAIL", "bench@example.com")
    results = []
    print(
        f"{'lines':>8} {'commits':>8} {'wall s':>9} {'ms/line':>8} {'cpu s':>9} {'cpu ms/line':>11}"
    )
    try:
        for count in sizes:
            row = bench_size(work, count, args.sessions)
            results.append(row)
            print(
                f"{count:>8,} {row['commits']:>8} {row['wall_s']:>9.1f} "
                f"{row['wall_s'] / count * 1e3:>8.2f} {row['cpu_s']:>9.1f} "
                f"{row['cpu_s'] / count * 1e3:>11.2f}",
                flush=True,
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    first, last = results[0], results[-1]
    for key, name in (("wall_s", "wall"), ("cpu_s", "cpu")):
        ratio = (last[key] / last["lines"]) / (first[key] / first["lines"])
        print(
            f"per-line {name} cost at {last['lines']:,} vs {first['lines']:,} lines: {ratio:.2f}x"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"sessions": args.sessions, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
