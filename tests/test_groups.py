"""Hit groups: a recalled memory brings the captured turns its sources quote with it.

A Gate compresses: the memory keeps "port 5433", the turn also said "behind the VPN".
Recall puts the memory first and its source turns beneath it, live or archived, so
the detail the memory dropped comes back; such a turn is not also a lone hit, and
``ranked`` orders memories and the other turns together.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_process import answer, capture, configure, cpath, create, days_later, open_repo, user_turn
from test_process import unit as unit_id

from memgit.jsonio import json_data

from support import memgit_cli

PORT = "Staging listens on port 5433, but only behind the VPN."
OTHER = "The VPN certificate expires in March."


@pytest.fixture
def grouped(repo_path: Path) -> Path:
    configure(repo_path, inbox={"retention_days": 30})
    capture(repo_path, user_turn(0, PORT), user_turn(1, OTHER))
    text = answer(
        repo_path, create("Staging port", "Staging is on port 5433.", [(unit_id(0), "port 5433")])
    )
    (run,) = open_repo(repo_path).process(gate_output=text).runs
    assert [d.action for d in run.decisions] == ["CREATE"]
    return repo_path


def test_a_memory_brings_its_source_turn_and_the_detail_it_dropped(grouped: Path) -> None:
    pack = open_repo(grouped).recall("staging port VPN")
    (memory,) = pack.memories
    assert [(t.capture, t.index, t.removed_in) for t in memory.source_turns] == [
        (cpath(0), 0, None)
    ]
    (source,) = memory.source_turns
    assert "VPN" in source.snippet and source.matched_terms == ("staging", "port", "vpn")
    # not a lone hit as well; the other turn is one
    assert [t.capture for t in pack.turns] == [cpath(1)]
    assert [(p.kind, p.index) for p in pack.ranked] == [("memory", 0), ("turn", 0)]
    assert [t.capture for t in pack.grouped_turns()] == [cpath(0), cpath(1)]
    assert [t.capture for t in pack.grouped_turns(memories_only=True)] == [cpath(0)]
    data = json_data(pack)
    assert data["memories"][0]["source_turns"][0]["capture"] == cpath(0)
    assert data["ranked"][0] == {
        "kind": "memory",
        "id": memory.memory.id,
        "score": round(pack.ranked[0].score, 4),
    }
    assert data["ranked"][1]["kind"] == "turn" and data["ranked"][1]["capture"] == cpath(1)


def test_a_memory_whose_source_was_archived_still_brings_it(
    grouped: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    days_later(monkeypatch, 31)
    result = open_repo(grouped).process()
    assert cpath(0) in result.expired
    pack = open_repo(grouped).recall("staging port VPN")
    (memory,) = pack.memories
    assert [(t.capture, t.removed_in) for t in memory.source_turns] == [
        (cpath(0), result.cleanup_commit)
    ]
    assert pack.trace.archived_turns == 2
    done = memgit_cli("recall", "staging", "port", "VPN", cwd=grouped)
    text = done.stdout.decode("utf-8")
    assert done.returncode == 0, done.stderr
    assert f"turn: {cpath(0)} message 0, archived: removed from the inbox in" in text
    assert json.loads(memgit_cli("recall", "staging", "port", "--json", cwd=grouped).stdout)[
        "memories"
    ][0]["source_turns"][0]["archived"]
