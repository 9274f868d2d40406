"""The convergence soak of issue 24, over many seeds: ``tests/soak.py``'s engine.

Usage (from the checkout)::

    .venv/bin/python bench/sync_soak.py --seeds 20 --start 1 --steps 80 --json out.json

Each seed sets up a bare remote served by a real ``git daemon`` on 127.0.0.1 and
three clones as docs/sharing.md says, runs ``--steps`` random steps (capture with
and without ``seq``, some holding a secret; process; sync; hand edits and ``git rm``
committed through the hooks; ``memgit forget``; one memory replaced two ways in two
clones; ``memgit review approve ID --keep``), syncs every clone until a whole round
changes nothing, and checks every invariant of the issue's acceptance. Printed per
seed: what the steps did and what the checks found (with the step log of a failed
seed), then a JSON summary of every seed. Exit 1 if any seed failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import soak  # noqa: E402 (the engine lives beside the test that runs a few seeds)

from support import git_environment  # noqa: E402

FIXED_DATE = "@1764495000 +0000"


def isolate(home: Path) -> None:
    """The isolated git setup of tests/conftest.py: no machine config, fixed identity."""
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update(git_environment(home))
    for role in ("AUTHOR", "COMMITTER"):
        os.environ[f"GIT_{role}_NAME"] = "Test Person"
        os.environ[f"GIT_{role}_EMAIL"] = "test@example.com"
        os.environ[f"GIT_{role}_DATE"] = FIXED_DATE
    os.environ["MEMGIT_LOCK_TIMEOUT"] = "10"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="how many seeds (default 20)")
    parser.add_argument("--start", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--steps", type=int, default=80, help="random steps per seed")
    parser.add_argument(
        "--pre-receive",
        action="store_true",
        help="install hooks/pre-receive in the remote (every push checked)",
    )
    parser.add_argument("--keep", action="store_true", help="keep each seed's folder")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="memgit-soak-"))
    isolate(work / "home")
    summaries: list[dict[str, Any]] = []
    for seed in range(args.start, args.start + args.seeds):
        root = work / f"seed-{seed}"
        try:
            report = soak.run_seed(root, seed, args.steps, pre_receive=args.pre_receive)
        except soak.SoakFailure as failure:
            print(
                f"seed {seed}: FAILED after {len(failure.report.steps)} steps "
                f"({failure.report.seconds:.1f} s); folder {root}\n{failure}\n",
                flush=True,
            )
            summaries.append(failure.report.summary())
            continue
        summary = report.summary()
        summaries.append(summary)
        print(
            f"seed {seed}: ok in {report.seconds:.1f} s ({report.cpu_seconds:.1f} s CPU): "
            f"{_what(summary)}",
            flush=True,
        )
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    failed = [s["seed"] for s in summaries if not s["ok"]]
    total = {
        "seeds": len(summaries),
        "failed": failed,
        "steps": args.steps,
        "pre_receive": args.pre_receive,
        "seconds": round(sum(s["seconds"] for s in summaries), 1),
        "cpu_seconds": round(sum(s["cpu_seconds"] for s in summaries), 1),
        "per_seed": summaries,
    }
    text = json.dumps(total, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", "utf-8")
    if not args.keep and not failed:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


def _what(summary: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {action}" for action, n in summary["counts"].items())
    return (
        f"{counts}; {summary['memories']} memories, {summary['captures_in_tree']} captures, "
        f"{summary['runs']} runs; {summary['conflicts_resolved']} conflict(s) resolved by "
        f"hand, {summary['contradictions_closed']} contradiction(s) closed, "
        f"{summary['open_contradictions']} open; quiet after "
        f"{summary['quiet_after_rounds']} round(s)"
    )


if __name__ == "__main__":
    sys.exit(main())
