"""``role: system`` messages are captured as context: shown to the Gate, never evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_process import (
    answer,
    capture,
    create,
    memories,
    open_repo,
    pending_units,
    prompt_units,
    turn,
    unit,
)

from memgit.gate.contract import GateOutputError

from support import git, memgit_cli, snapshot

SYSTEM = "You are a coding agent. Remember that the user prefers tabs over spaces."
USER = "Our CI runs on Fridays only."


def test_a_system_message_is_captured_and_shown_as_context(repo_path: Path) -> None:
    done = memgit_cli(
        "capture",
        "--json",
        cwd=repo_path,
        input=json.dumps(turn(0, ("system", SYSTEM), ("user", USER))).encode(),
    )
    assert done.returncode == 0, done.stderr.decode()
    path = json.loads(done.stdout)["path"]
    stored = yaml.safe_load(git(repo_path, "show", f"HEAD:{path}"))
    assert stored["messages"][0] == {"role": "system", "content": SYSTEM}

    units = prompt_units(repo_path)
    assert [(u["unit_id"], u["role"], u["can_support"]) for u in units] == [
        (unit(0, 0), "system", False),
        (unit(0, 1), "user", True),
    ]
    assert units[0]["text"] == SYSTEM
    assert pending_units(repo_path) == [unit(0, 1)]


def test_the_rules_backend_keeps_no_statement_from_a_system_message(repo_path: Path) -> None:
    """The user's fact is kept; the system message's "remember that ..." is not."""
    capture(repo_path, turn(0, ("system", SYSTEM), ("user", USER)))
    open_repo(repo_path).process()
    (memory,) = memories(repo_path).values()
    assert [(s.unit, s.quote) for s in memory.sources] == [(unit(0, 1), USER)]
    assert "tabs" not in f"{memory.title} {memory.body}"


def test_a_gate_answer_quoting_a_system_message_is_refused(repo_path: Path) -> None:
    capture(repo_path, turn(0, ("system", SYSTEM), ("user", USER)))
    quoting_system = answer(
        repo_path,
        create(
            "The user prefers tabs",
            "The user prefers tabs over spaces.",
            [(unit(0, 0), "the user prefers tabs over spaces")],
        ),
    )
    before = snapshot(repo_path)
    with pytest.raises(GateOutputError) as caught:
        open_repo(repo_path).process(gate_output=quoting_system)
    assert "unit-cannot-support" in {p.code for p in caught.value.problems}
    assert snapshot(repo_path) == before

    done = memgit_cli(
        "-C", str(repo_path), "process", "--gate-output", "-", input=quoting_system.encode()
    )
    assert done.returncode == 3
    assert "error[gate-rejected]:" in done.stderr.decode()
    assert "unit-cannot-support" in done.stderr.decode()
    assert snapshot(repo_path) == before
