"""``memgit capture --file`` at scale: linear cost, one commit per batch, all or nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pygit2

from memgit.repo import MemoryRepo
from memgit.store.tree import blob_at, build_tree


def lookup_seconds(repo: pygit2.Repository, files: int, lookups: int = 200) -> float:
    """Seconds per path looked up in a folder of ``files`` files (one commit's tree)."""
    paths = [f"inbox/agent/00/s1/{seq:06d}.yaml" for seq in range(files)]
    tree = repo[build_tree(repo, None, dict.fromkeys(paths, b"same content\n"))]
    assert isinstance(tree, pygit2.Tree)
    chosen = paths[:: max(1, files // lookups)]
    started = time.perf_counter()
    for path in chosen:
        assert blob_at(tree, path) is not None
    return (time.perf_counter() - started) / len(chosen)


def test_a_path_in_a_large_folder_costs_what_one_in_a_small_folder_does(repo_path: Path) -> None:
    """Capturing n turns of one session looks up each turn's path in the session's folder
    (idempotence, then every governance check); libgit2 re-read and re-parsed a folder over
    4 KiB for each lookup, so capture --file was quadratic. Was ~300x here, now ~1x."""
    repo = MemoryRepo.open(repo_path).git
    small = lookup_seconds(repo, 50)
    large = lookup_seconds(repo, 5000)
    assert large < 10 * small, f"{large * 1e6:.1f} us at 5,000 files vs {small * 1e6:.1f} at 50"
