"""``memgit replay``: a committed run asked again of a backend, diffed against its
commit; nothing is ever written."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from memgit import MemgitError, MemoryRepo
from memgit.gate.prompt import GateRequest
from memgit.jsonio import json_data

from support import make_turn, memgit_cli, snapshot

PYTEST = "Remember that I prefer pytest for every Python project."
TABS = "Remember that I indent with tabs."


def objects(path: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(path), "cat-file", "--batch-all-objects", "--batch-check"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def runs(repo_path: Path) -> tuple[Path, list[str]]:
    """Two rules runs, one memory each; their ids, oldest first."""
    ids = []
    for seq, text in enumerate([PYTEST, TABS]):
        with MemoryRepo.open(repo_path) as repo:
            repo.capture(make_turn(seq, text))
            (run,) = repo.process(backend="rules").runs
            ids.append(run.run_id)
    return repo_path, ids


@dataclass
class Answering:
    """A backend that answers every supporting unit with ``decision``, or ``text``."""

    decision: str = "NO_CHANGE"
    text: str | None = None
    name: str = "scripted"
    model: str | None = "test-model"
    can_correct: bool = False

    def answer(self, request: GateRequest) -> str:
        if self.text is not None:
            return self.text
        rows = [
            {"unit_id": unit.id, "decision": self.decision, "reason": "no-durable-content"}
            for unit in request.units
            if unit.can_support
        ]
        return json.dumps({"candidates": [], "coverage": rows, "evidence_bindings": []})


def test_a_run_asked_again_of_its_own_backend_is_the_same(runs: tuple[Path, list[str]]) -> None:
    path, ids = runs
    before, stored = snapshot(path), objects(path)
    (first, second) = MemoryRepo.open(path).replay(ids)
    assert first.same and second.same and first.same_prompt and second.same_prompt
    assert first.committed == first.replayed and first.files == ()
    assert snapshot(path) == before and objects(path) == stored


def test_a_backend_that_answers_otherwise_is_diffed(runs: tuple[Path, list[str]]) -> None:
    path, ids = runs
    before, stored = snapshot(path), objects(path)
    (replay,) = MemoryRepo.open(path).replay(ids[1:], backend=Answering())
    assert not replay.same and replay.same_prompt
    assert [d["action"] for d in replay.committed] == ["CREATE"] and replay.replayed == ()
    (change,) = replay.files
    assert change.path == replay.committed[0]["path"]
    assert change.replayed is None and TABS.removeprefix("Remember that ") in (
        change.committed or ""
    )
    diff = json_data(change)["diff"]
    assert diff.startswith(f"--- committed/{change.path}\n+++ replayed/{change.path}\n")
    assert (replay.backend, replay.model) == ("scripted", "test-model")
    assert snapshot(path) == before and objects(path) == stored


def test_an_answer_the_checks_refuse_is_reported_not_raised(
    runs: tuple[Path, list[str]],
) -> None:
    path, ids = runs
    before = snapshot(path)
    (replay,) = MemoryRepo.open(path).replay(ids[:1], backend=Answering(text="Sure! Here it is."))
    assert not replay.same and replay.files == ()
    assert [problem.code for problem in replay.refused] == ["not-json"]
    assert snapshot(path) == before


def test_the_cli_says_same_or_differs_by_exit_status(runs: tuple[Path, list[str]]) -> None:
    path, ids = runs
    done = memgit_cli("-C", str(path), "replay", *ids, "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert [item["run_id"] for item in shown] == ids
    assert all(item["same"] and item["same_prompt"] for item in shown)
    text = memgit_cli("-C", str(path), "replay", ids[0])
    assert (
        text.returncode == 0 and text.stdout.decode() == f"{ids[0]}  same  (rules, same prompt)\n"
    )


def test_a_run_without_its_ref_is_found_by_its_trailer(runs: tuple[Path, list[str]]) -> None:
    """A run merged from elsewhere can come without refs/memgit/runs/<id>."""
    path, ids = runs
    subprocess.run(
        ["git", "-C", str(path), "update-ref", "-d", f"refs/memgit/runs/{ids[0]}"], check=True
    )
    (replay,) = MemoryRepo.open(path).replay(ids[:1])
    assert replay.same and replay.run_id == ids[0]


def test_last_n_replays_the_branchs_most_recent_runs_oldest_first(
    runs: tuple[Path, list[str]],
) -> None:
    path, ids = runs
    assert [r.run_id for r in MemoryRepo.open(path).replay(last=1)] == ids[1:]
    assert [r.run_id for r in MemoryRepo.open(path).replay(last=50)] == ids
    # A run named and also among the last is asked once.
    assert [r.run_id for r in MemoryRepo.open(path).replay(ids[1:], last=2)] == ids[::-1]


@pytest.mark.parametrize(
    ("args", "code", "status"),
    [
        (["20261130T100000Z-zzzzzz"], "unknown-run", 2),
        (["../../etc/passwd"], "invalid-id", 3),
        (["x" * 5000], "invalid-id", 3),
        (["--backend", "host", "20261130T100000Z-zzzzzz"], "usage", 2),
        (["--backend", "nonsense", "20261130T100000Z-zzzzzz"], "unknown-backend", 2),
        (["--last", "0"], "usage", 2),
        ([], "usage", 2),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    runs: tuple[Path, list[str]], args: list[str], code: str, status: int
) -> None:
    path, _ = runs
    before = snapshot(path)
    done = memgit_cli("-C", str(path), "replay", *args)
    assert done.returncode == status, done.stderr
    assert done.stderr.decode().startswith(f"error[{code}]: "), done.stderr
    assert snapshot(path) == before
    with pytest.raises(MemgitError):
        MemoryRepo.open(path).replay([])


def test_an_unchanged_run_that_superseded_a_memory_replays_the_same(repo_path: Path) -> None:
    """A memory, a change of mind that supersedes it, another memory: the second run's
    related memories are the parent commit's (the superseded one among them), not
    today's index's, so its SUPERSEDE and its ``supersedes`` entry replay as made."""
    texts = ["Remember that I prefer pytest.", "I prefer unittest now, not pytest.", TABS]
    for seq, text in enumerate(texts):
        with MemoryRepo.open(repo_path) as repo:
            repo.capture(make_turn(seq, text, timestamp=f"2026-11-30T10:0{seq}:00Z"))
            repo.process(backend="rules")
    log = subprocess.run(
        ["git", "-C", str(repo_path), "log", "--format=%(trailers:key=Memgit-Superseded)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Memgit-Superseded: " in log
    before = snapshot(repo_path)
    done = memgit_cli("-C", str(repo_path), "replay", "--last", "3", "--json")
    assert done.returncode == 0, done.stdout.decode()
    shown = json.loads(done.stdout)
    assert len(shown) == 3 and all(item["same"] and item["same_prompt"] for item in shown)
    assert [d["action"] for d in shown[1]["replayed"]] == ["SUPERSEDE"]
    assert snapshot(repo_path) == before
