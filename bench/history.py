"""``memgit log``'s walk against ``git log -- PATH``, on a repository of a few thousand commits.

Usage (from the checkout)::

    .venv/bin/python bench/history.py [--commits 5000] [--memories 2000] [--repeats 7]

It builds (once, in a temporary folder) a repository of ``--memories`` memory files
sharded as memgit lays them out, then ``--commits`` commits that each change one
random memory, plus two memories followed through the benchmark: ``old`` (created in
the first commit, changed every 500 commits) and ``new`` (created 50 commits before
the tip, changed twice). For each it times, median of ``--repeats``:

* ``memgit``: :func:`memgit.history.versions.load_history` in-process (the walk,
  classification of each version and its run record lookup included);
* ``git``: ``git log --first-parent --format=%H -- PATH`` in a subprocess, which
  only lists commits (memgit still had to classify them);
* ``git-glob``: the same with ``:(glob)memories/**/<xx>/<id>.md``, the pathspec that
  would follow a memory across scopes.

``--gc`` packs the objects first (memgit writes loose objects; a person's ``git gc``
or git's auto-gc packs them). The machine is shared: read the ratios more than the
absolute times.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pygit2

from memgit.history.versions import load_history
from memgit.layout import memory_path

SCOPES = ("user", "project", "project/billing", "team")


def memory_text(memory_id: str, scope: str, revision: int) -> bytes:
    return (
        f"---\nid: {memory_id}\ntype: fact\nscope: {scope}\ntitle: memory {memory_id}\n"
        f"status: active\ncreated: '2026-11-30T10:00:00Z'\nupdated: '2026-11-30T10:00:00Z'\n"
        f"origin: memgit\n---\nRevision {revision} of {memory_id}.\n"
    ).encode()


def build(path: Path, commits: int, memories: int, seed: int) -> tuple[str, str]:
    rng = random.Random(seed)
    repo = pygit2.init_repository(str(path))
    who = pygit2.Signature("bench", "bench@example.com", 1764495000, 0)
    ids = [f"m{number:011d}" for number in range(memories)]
    scope_of = {memory_id: rng.choice(SCOPES) for memory_id in ids}
    old, new = "oldmemory000", "newmemory000"
    scope_of[old] = scope_of[new] = "project"
    index = repo.index
    for memory_id in [*ids, old]:
        blob = repo.create_blob(memory_text(memory_id, scope_of[memory_id], 0))
        index.add(pygit2.IndexEntry(memory_path(scope_of[memory_id], memory_id), blob, 0o100644))
    parent = repo.create_commit("HEAD", who, who, "seed", index.write_tree(), [])
    for number in range(commits):
        revision = number + 1
        if number % 500 == 0:
            target = old
        elif number in (commits - 50, commits - 20):
            target = new
        else:
            target = rng.choice(ids)
        blob = repo.create_blob(memory_text(target, scope_of[target], revision))
        index.add(pygit2.IndexEntry(memory_path(scope_of[target], target), blob, 0o100644))
        parent = repo.create_commit(
            "HEAD", who, who, f"change {number}", index.write_tree(), [parent]
        )
    return old, new


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--gc", action="store_true", help="Pack the objects (git gc) before timing."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder)
        started = time.perf_counter()
        targets = build(path, args.commits, args.memories, args.seed)
        print(
            f"built {args.commits} commits, {args.memories} memories in "
            f"{time.perf_counter() - started:.1f} s"
        )
        if args.gc:
            subprocess.run(["git", "-C", str(path), "gc", "-q"], check=True)
            print("objects packed (git gc)")
        repo = pygit2.Repository(str(path))
        print(f"{'memory':8} {'versions':>8} {'memgit ms':>10} {'git ms':>8} {'git-glob ms':>12}")
        for memory_id in targets:
            history = load_history(repo, memory_id)
            file = memory_path("project", memory_id)
            glob = f":(glob)memories/**/{memory_id[:2]}/{memory_id}.md"

            def git_log(spec: str, path: Path = path) -> list[str]:
                done = subprocess.run(
                    ["git", "-C", str(path), "log", "--first-parent", "--format=%H", "--", spec],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                return done.stdout.split()

            assert git_log(file) == [v.commit for v in history.versions], memory_id
            assert git_log(glob) == [v.commit for v in history.versions], memory_id
            ours = median_seconds(partial(load_history, repo, memory_id), args.repeats)
            plain = median_seconds(partial(git_log, file), args.repeats)
            globbed = median_seconds(partial(git_log, glob), args.repeats)
            print(
                f"{memory_id[:3]:8} {len(history.versions):>8} {ours * 1000:>10.1f} "
                f"{plain * 1000:>8.1f} {globbed * 1000:>12.1f}"
            )


if __name__ == "__main__":
    main()
