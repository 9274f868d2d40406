"""``memgit capture --file`` at scale: linear cost, one commit per batch, all or nothing."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pygit2
import pytest

from memgit.capture.inbox import CAPTURE_BATCH, capture_turns
from memgit.capture.read import iter_jsonl_turns, parse_turn
from memgit.errors import ConflictError, InvalidInputError
from memgit.governance.checks import Governance
from memgit.repo import MemoryRepo
from memgit.state.lookup import TreeWalk
from memgit.store.tree import blob_at, build_tree

from support import assert_fsck_clean, git, make_turn, memgit_cli, snapshot


def lookup_seconds(repo: pygit2.Repository, files: int, lookups: int = 200) -> float:
    """Seconds per path looked up in a folder of ``files`` files (one commit's tree)."""
    paths = [f"inbox/agent/00/s1/{seq:06d}.yaml" for seq in range(files)]
    tree = repo[build_tree(repo, None, dict.fromkeys(paths, b"same content\n"))]
    assert isinstance(tree, pygit2.Tree)
    chosen = paths[:: max(1, files // lookups)]
    best = float("inf")
    for _ in range(5):  # the least of five: a shared machine's pauses only ever add
        started = time.process_time()
        for path in chosen:
            assert blob_at(tree, path) is not None
        best = min(best, time.process_time() - started)
    return best / len(chosen)


def test_a_path_in_a_large_folder_costs_what_one_in_a_small_folder_does(repo_path: Path) -> None:
    """Capturing n turns of one session looks up each turn's path in the session's folder
    (idempotence, then every governance check); libgit2 re-read and re-parsed a folder over
    4 KiB for each lookup, so capture --file was quadratic. Was ~300x here, now ~1x."""
    repo = MemoryRepo.open(repo_path).git
    small = lookup_seconds(repo, 50)
    large = lookup_seconds(repo, 5000)
    assert large < 10 * small, f"{large * 1e6:.1f} us at 5,000 files vs {small * 1e6:.1f} at 50"


def capture_in_batches(path: Path, turns: list[dict[str, object]], batch_size: int) -> list[str]:
    repo = MemoryRepo.open(path)
    parsed = [parse_turn(turn, source="<api>") for turn in turns]
    result = capture_turns(
        repo.git,
        parsed,
        origins=["<api>"] * len(turns),
        guard=Governance(TreeWalk(repo.git)),
        batch_size=batch_size,
    )
    return list(result.commits)


def captured_trailers(path: Path, revisions: str) -> list[list[str]]:
    """Per commit (oldest first), the Memgit-Captured trailer values, as git reads them."""
    out = git(
        path,
        "log",
        "--reverse",
        "--format=%(trailers:key=Memgit-Captured,valueonly,separator=%x2C)",
        revisions,
    )
    return [line.split(",") for line in out.splitlines() if line]


def test_a_large_capture_is_one_commit_per_batch(repo_path: Path) -> None:
    """Five turns in batches of two: three commits, each naming exactly its turns."""
    head = git(repo_path, "rev-parse", "HEAD").strip()
    commits = capture_in_batches(repo_path, [make_turn(seq) for seq in range(5)], batch_size=2)
    assert len(commits) == 3
    assert git(repo_path, "rev-parse", "HEAD").strip() == commits[-1]
    assert captured_trailers(repo_path, f"{head}..HEAD") == [
        ["test-agent/s1/0", "test-agent/s1/1"],
        ["test-agent/s1/2", "test-agent/s1/3"],
        ["test-agent/s1/4"],
    ]
    assert git(repo_path, "status", "--porcelain") == ""
    assert_fsck_clean(repo_path)


def test_capturing_a_batched_input_again_writes_nothing(repo_path: Path) -> None:
    """Idempotent across batches: an input captured partly or fully before adds only what
    is missing (here the last batch, as after an interrupted capture)."""
    capture_in_batches(repo_path, [make_turn(seq) for seq in range(4)], batch_size=2)
    head = git(repo_path, "rev-parse", "HEAD").strip()
    commits = capture_in_batches(repo_path, [make_turn(seq) for seq in range(6)], batch_size=2)
    assert len(commits) == 1
    assert captured_trailers(repo_path, f"{head}..HEAD") == [["test-agent/s1/4", "test-agent/s1/5"]]
    assert capture_in_batches(repo_path, [make_turn(seq) for seq in range(6)], batch_size=2) == []


def test_a_conflict_in_the_last_batch_writes_no_batch(repo_path: Path) -> None:
    """Every turn is compared with the branch before the first batch is committed."""
    capture_in_batches(repo_path, [make_turn(4, "the first text")], batch_size=2)
    before = snapshot(repo_path)
    turns = [make_turn(seq) for seq in range(4)] + [make_turn(4, "other text")]
    with pytest.raises(ConflictError) as raised:
        capture_in_batches(repo_path, turns, batch_size=2)
    assert raised.value.code == "capture-conflict"
    assert snapshot(repo_path) == before


def test_capture_file_of_1001_lines_is_two_commits(repo_path: Path, tmp_path: Path) -> None:
    """The command commits 1,000 turns at a time and lists every commit it made."""
    assert CAPTURE_BATCH == 1000
    lines = tmp_path / "turns.jsonl"
    lines.write_text("".join(json.dumps(make_turn(seq)) + "\n" for seq in range(1001)), "utf-8")
    done = memgit_cli("capture", "--file", str(lines), "--json", cwd=repo_path)
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert len(result["commits"]) == 2
    assert result["commit"] == result["commits"][-1] == git(repo_path, "rev-parse", "HEAD").strip()
    assert git(repo_path, "rev-list", "--count", "HEAD~2..HEAD").strip() == "2"
    assert git(repo_path, "status", "--porcelain") == ""
    again = memgit_cli("capture", "--file", str(lines), cwd=repo_path)
    assert again.stdout.decode() == "Already captured: 1001 turns (nothing changed)\n"


def test_capture_file_with_a_bad_last_line_writes_nothing(repo_path: Path, tmp_path: Path) -> None:
    """A malformed line after the first batch is refused before any batch is committed."""
    lines = tmp_path / "turns.jsonl"
    good = "".join(json.dumps(make_turn(seq)) + "\n" for seq in range(1001))
    lines.write_text(good + "{not json\n", "utf-8")
    before = snapshot(repo_path)
    done = memgit_cli("capture", "--file", str(lines), cwd=repo_path)
    assert done.returncode == 3
    assert done.stderr.decode().startswith(f"error[invalid-json]: {lines}:1002: ")
    assert snapshot(repo_path) == before


class EndlessTurns(io.RawIOBase):
    """A stream of valid JSON Lines turns without end (as `yes` would print them)."""

    def __init__(self) -> None:
        self.seq = 0
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while len(self.pending) < len(buffer):
            self.pending += json.dumps(make_turn(self.seq)).encode() + b"\n"
            self.seq += 1
        size = len(buffer)
        buffer[:size], self.pending = self.pending[:size], self.pending[size:]
        return size


def test_an_endless_json_lines_stream_is_refused_at_the_limit() -> None:
    """`capture --file -` reads JSON Lines up to a total limit, not only per line."""
    stream = io.BufferedReader(EndlessTurns())
    with pytest.raises(InvalidInputError) as caught:
        for _ in iter_jsonl_turns(stream, source="<stdin>", limit=100_000):
            pass
    assert (caught.value.code, caught.value.path) == ("too-large", "<stdin>")
    assert "100,000-byte limit" in caught.value.message
