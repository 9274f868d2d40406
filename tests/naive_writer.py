"""A deliberately wrong capture writer, for tests/test_concurrency.py only.

It does what a hasty implementation would: read the branch tip, add one file
to its tree with TreeBuilders, commit, then *force* the branch onto the new
commit. No writer lock, no compare-and-swap: when two of these race, the later
ref update silently drops the other's commit. The repository stays perfectly
valid (``git fsck`` is clean), which is why the real concurrency test counts
captures instead of trusting fsck.

Usage: naive_writer.py REPO WORKER COUNT READY_FILE GO_FILE [GAP_SECONDS]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pygit2

BRANCH = "refs/heads/main"
SIGNATURE = pygit2.Signature("Naive Writer", "naive@example.com", 1764495000, 0)


def tree_with(repo: pygit2.Repository, tree: pygit2.Tree | None, parts: list[str], blob):
    """``tree`` with the blob inserted at ``parts`` (folders created as needed)."""
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    name = parts[0]
    if len(parts) == 1:
        builder.insert(name, blob, pygit2.enums.FileMode.BLOB)
    else:
        entry = builder.get(name)
        subtree = repo[entry.id] if entry is not None else None
        builder.insert(name, tree_with(repo, subtree, parts[1:], blob), pygit2.enums.FileMode.TREE)
    return builder.write()


def capture(repo: pygit2.Repository, worker: int, seq: int, gap: float) -> None:
    key = f"naive/w{worker}/{seq}"
    path = f"inbox/naive/w{worker}/{seq:06d}.yaml"
    tip = repo.references[BRANCH].peel(pygit2.Commit)
    blob = repo.create_blob(f"worker: {worker}\nseq: {seq}\n".encode())
    tree = tree_with(repo, tip.tree, path.split("/"), blob)
    message = f"capture: naive/w{worker} turn {seq}\n\nMemgit-Captured: {key}\n"
    commit = repo.create_commit(None, SIGNATURE, SIGNATURE, message, tree, [tip.id])
    time.sleep(gap)  # a little work between reading the tip and moving the branch
    while True:
        try:
            repo.references.create(BRANCH, commit, force=True)
            return
        except (pygit2.GitError, OSError):
            # Another naive writer holds refs/heads/main.lock this instant: try again.
            time.sleep(0.001)


def main() -> None:
    repo_path, worker, count, ready, go = sys.argv[1:6]
    gap = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    repo = pygit2.Repository(repo_path)
    Path(ready).touch()
    deadline = time.monotonic() + 60
    while not Path(go).exists():
        if time.monotonic() > deadline:
            sys.exit("never released")
        time.sleep(0.001)
    for seq in range(int(count)):
        capture(repo, int(worker), seq, gap)


if __name__ == "__main__":
    main()
