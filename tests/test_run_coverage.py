"""Which units a run answers for: one definition, shared by the planner and the checks.

A run answers for the supporting units of its captures that are still open on the
commit it builds on: not those an earlier run decided, nor those deferred too often.
``memgit process`` asks the Gate for exactly those, re-plans against the tip it
commits on (a concurrent run may have decided some meanwhile), and the governance
check holds every run record to the same set, so neither can jam the other.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_process import (
    answer,
    assert_clean,
    capture,
    configure,
    cpath,
    create,
    memories,
    open_repo,
    pending_units,
    run_records,
    turn,
    unit,
    user_turn,
)

from memgit import MemoryRepo
from memgit.gate.contract import GateOutputError

from support import git, memgit_cli, snapshot

DECISIONS = ("CANDIDATE", "NO_CHANGE", "DEFERRED")
FIRST = "Remember that we deploy on Tuesdays."
SECOND = "Remember that the staging database is Postgres 17."


def gate_answer(decisions: dict[str, str], quotes: dict[str, str]) -> str:
    """A host answer deciding each unit as told; CANDIDATE units get a memory quoting them."""
    candidates = [
        create(f"Memory from {unit_id}", quotes[unit_id], [(unit_id, quotes[unit_id])])
        for unit_id, decision in decisions.items()
        if decision == "CANDIDATE"
    ]
    deferred = [u for u, d in decisions.items() if d == "DEFERRED"]
    return answer(None, *candidates, units=list(decisions), deferred=deferred)


def covered_once(path: Path) -> Counter[str]:
    """How many run records decided each unit (CANDIDATE or NO_CHANGE)."""
    counts: Counter[str] = Counter()
    for record in run_records(path).values():
        for row in record["gate_output"]["coverage"]:
            if row["decision"] != "DEFERRED":
                counts[row["unit_id"]] += 1
    return counts


def verify_all(path: Path) -> None:
    done = memgit_cli("-C", str(path), "verify", "--all")
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


@pytest.mark.parametrize("mix", list(itertools.product(DECISIONS, repeat=2)), ids="-".join)
def test_every_decision_mix_of_a_two_message_turn_drains_the_inbox(
    repo_path: Path, mix: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the Gate decides of a turn's two messages, the next process answers
    for the deferred ones only and commits, with a newer capture batched beside it."""
    capture(repo_path, turn(0, ("user", FIRST), ("user", SECOND)))
    units = {unit(0, 0): FIRST, unit(0, 1): SECOND}
    first = open_repo(repo_path).process(
        gate_output=gate_answer(dict(zip(units, mix, strict=True)), units)
    )
    assert len(first.runs) == 1
    reopened = [u for u, decision in zip(units, mix, strict=True) if decision == "DEFERRED"]
    assert pending_units(repo_path) == reopened

    capture(repo_path, user_turn(1, "Remember that the office is closed on Mondays."))
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1764495060 +0000")  # a later run
    assert pending_units(repo_path) == [*reopened, unit(1)]
    second = open_repo(repo_path).process(gate_output=answer(repo_path))
    assert len(second.runs) == 1 and second.runs[0].commit is not None
    assert pending_units(repo_path) == []
    assert covered_once(repo_path) == Counter({unit(0, 0): 1, unit(0, 1): 1, unit(1): 1})
    assert len(memories(repo_path)) == mix.count("CANDIDATE")
    verify_all(repo_path)
    assert_clean(repo_path)


def test_a_unit_deferred_too_often_is_stuck_and_blocks_nothing(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message deferred gate.max_deferrals times beside a decided one is reported stuck;
    later captures of the same batch are processed, and every check stays clean."""
    configure(repo_path, gate={"max_deferrals": 2})
    capture(repo_path, turn(0, ("user", FIRST), ("user", "Maybe the other one.")))
    units = {unit(0, 0): FIRST, unit(0, 1): "Maybe the other one."}
    decisions = {unit(0, 0): "NO_CHANGE", unit(0, 1): "DEFERRED"}
    open_repo(repo_path).process(gate_output=gate_answer(decisions, units))
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1764495060 +0000")
    result = open_repo(repo_path).process(gate_output=answer(repo_path, deferred=[unit(0, 1)]))
    assert result.stuck == (unit(0, 1),)

    capture(repo_path, user_turn(1, "Remember that the office is closed on Mondays."))
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1764495120 +0000")
    assert pending_units(repo_path) == [unit(1)]
    done = open_repo(repo_path).process()
    assert len(done.runs) == 1 and done.stuck == (unit(0, 1),)
    assert pending_units(repo_path) == []
    verify_all(repo_path)


def test_an_answer_for_a_decided_unit_is_refused_with_its_own_code(repo_path: Path) -> None:
    """A host answer that decides again what a run already decided is refused as
    unit-already-covered, and nothing changes."""
    capture(repo_path, turn(0, ("user", FIRST), ("user", SECOND)))
    units = {unit(0, 0): FIRST, unit(0, 1): SECOND}
    decisions = {unit(0, 0): "NO_CHANGE", unit(0, 1): "DEFERRED"}
    open_repo(repo_path).process(gate_output=gate_answer(decisions, units))
    before = snapshot(repo_path)
    stale = gate_answer({unit(0, 0): "NO_CHANGE", unit(0, 1): "NO_CHANGE"}, units)
    with pytest.raises(GateOutputError) as refused:
        open_repo(repo_path).process(gate_output=stale)
    assert {p.code for p in refused.value.problems} == {"unit-already-covered"}
    assert snapshot(repo_path) == before


# A command Gate that answers like a careful model (one memory per user message,
# quoting all of it), after waiting for a go-ahead file, so that tests can order
# two real `memgit process` runs: asked first, committed last.
HELD_GATE = r"""
import json, pathlib, sys, time
folder = pathlib.Path(sys.argv[1])
text = sys.stdin.read()
units = json.loads(text[text.index("\n{\n") + 1:])["units"]
number = len(list(folder.glob("asked-*")))
# Written whole, then renamed: the test waits for the name and reads it at once.
(folder / f".asked-{number}").write_text(" ".join(u["unit_id"] for u in units))
(folder / f".asked-{number}").replace(folder / f"asked-{number}")
deadline = time.monotonic() + 60
while not (folder / f"go-{number}").exists():
    if time.monotonic() > deadline:
        sys.exit("never released")
    time.sleep(0.01)
candidates, coverage, bindings = [], [], []
for n, u in enumerate(u for u in units if u["can_support"]):
    cid = f"c{n}"
    candidates.append({"candidate_id": cid, "action": "CREATE", "type": "fact",
                       "scope": "user", "title": u["text"][:60], "body": u["text"]})
    coverage.append({"unit_id": u["unit_id"], "decision": "CANDIDATE", "candidate_ids": [cid]})
    bindings.append({"candidate_id": cid, "claims": [
        {"unit_id": u["unit_id"], "quote": u["text"], "role": "assertion"}]})
print(json.dumps({"candidates": candidates, "coverage": coverage, "evidence_bindings": bindings}))
"""


def wait_for(path: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)


def test_a_run_that_lost_the_race_applies_only_what_is_still_open(
    repo_path: Path, tmp_path: Path
) -> None:
    """Run A is asked about turn 0; then turn 1 arrives and run B is asked about both.
    A commits first. B re-plans on A's commit: it drops its answer for turn 0 (A decided
    it) and applies only turn 1's memory. One memory per turn, one decision per unit,
    and every door accepts both records."""
    folder = tmp_path / "gate"
    folder.mkdir()
    script = tmp_path / "held_gate.py"
    script.write_text(HELD_GATE, "utf-8")
    config = repo_path / "memgit.yaml"
    data = yaml.safe_load(config.read_text("utf-8"))
    data["gate"] = {**data.get("gate", {}), "backend": "command", "timeout": 120}
    data["gate"]["command"] = [sys.executable, str(script), str(folder)]
    config.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    git(repo_path, "commit", "-q", "-m", "a held command Gate", "--", "memgit.yaml")

    capture(repo_path, user_turn(0, FIRST))
    command = [sys.executable, "-m", "memgit.cli.main", "-C", str(repo_path), "process", "--json"]
    env = dict(os.environ)
    run_a = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    wait_for(folder / "asked-0", run_a)
    capture(repo_path, user_turn(1, SECOND))
    run_b = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    wait_for(folder / "asked-1", run_b)
    assert (folder / "asked-1").read_text() == f"{unit(0)} {unit(1)}"

    (folder / "go-0").touch()
    _, err_a = run_a.communicate(timeout=120)
    assert run_a.returncode == 0, err_a.decode()
    (folder / "go-1").touch()
    out_b, err_b = run_b.communicate(timeout=120)
    assert run_b.returncode == 0, err_b.decode()

    found = sorted(m.body.strip() for m in memories(repo_path).values())
    assert found == sorted([FIRST, SECOND])
    assert covered_once(repo_path) == Counter({unit(0): 1, unit(1): 1})
    (late,) = [r for r in run_records(repo_path).values() if r["diagnostics"]]
    assert [row["unit_id"] for row in late["gate_output"]["coverage"]] == [unit(1)]
    assert [item["path"] for item in late["inputs"]] == [cpath(1)]
    assert late["diagnostics"] == [{"code": "replanned", "count": 1}]
    assert json.loads(out_b)["runs"][0]["commit"] is not None
    verify_all(repo_path)
    assert_clean(repo_path)


def run_counts(path: Path) -> dict[str, Any]:
    return {"memories": len(memories(path)), "runs": len(run_records(path))}


def test_verify_finds_a_copied_run_record_that_decides_units_again(repo_path: Path) -> None:
    """A run record copied under another run id by hand (as a bad merge or a forger
    would) decides its units a second time: verify and the hooks name it."""
    capture(repo_path, user_turn(0, FIRST))
    MemoryRepo.open(repo_path).process()
    (name,) = git(repo_path, "ls-files", "runs").split()
    record = json.loads((repo_path / name).read_text("utf-8"))
    copied_id = record["run_id"][:-6] + "copy00"
    record["run_id"] = copied_id
    copy = repo_path / name.replace(name.rsplit("/", 1)[1], f"{copied_id}.json")
    copy.write_text(json.dumps(record, indent=2), "utf-8")
    git(repo_path, "add", str(copy))
    hook = subprocess.run(
        [
            str(Path(sys.executable).with_name("memgit-check-evidence")),
            str(copy.relative_to(repo_path)),
        ],
        cwd=repo_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert hook.returncode == 1 and "error[unit-already-covered]" in hook.stderr, hook.stderr
    git(repo_path, "commit", "-q", "--no-verify", "-m", "copy a run record")
    done = memgit_cli("-C", str(repo_path), "verify", "--all")
    assert done.returncode == 1
    assert "unit-already-covered" in done.stdout.decode() + done.stderr.decode()
    assert run_counts(repo_path) == {"memories": 1, "runs": 2}
