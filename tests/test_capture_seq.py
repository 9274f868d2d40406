"""A turn captured without ``seq`` gets the next one of its session, under concurrency too."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from test_concurrency import run_released_together
from test_process import configure, cpath, days_later, open_repo, pending_units, unit

from support import git, make_turn, memgit_in_process, snapshot

# One capturing process: wait at the barrier, then capture ten turns without a seq into
# one session through the real ``memgit capture --json``, printing each outcome.
UNNUMBERED_WORKER = r"""
import json, subprocess, sys, time
from pathlib import Path

repo_path, worker, ready, go = sys.argv[1:5]
Path(ready).touch()
deadline = time.monotonic() + 60
while not Path(go).exists():
    if time.monotonic() > deadline:
        sys.exit("never released")
    time.sleep(0.001)
for i in range(10):
    turn = {
        "source": "conc-agent",
        "session": "shared",
        "timestamp": "2026-11-30T10:00:00Z",
        "messages": [{"role": "user", "content": f"worker {worker} turn {i}"}],
    }
    done = subprocess.run(
        [sys.executable, "-m", "memgit.cli.main", "-C", repo_path, "capture", "--json"],
        input=json.dumps(turn).encode(), capture_output=True, check=False,
    )
    if done.returncode != 0:
        sys.exit(done.stderr.decode())
    print(json.dumps(json.loads(done.stdout)), flush=True)
"""


def unnumbered(content: str = "hello", **fields: object) -> dict[str, object]:
    turn = make_turn(content=content, **fields)
    del turn["seq"]
    return turn


def capture(repo_path: Path, turn: dict[str, object]) -> dict[str, object]:
    done = memgit_in_process("capture", "--json", cwd=repo_path, input=json.dumps(turn).encode())
    assert done.returncode == 0, done.stderr.decode()
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_turn_without_seq_gets_the_next_of_its_session(repo_path: Path) -> None:
    assert capture(repo_path, make_turn(seq=4))["seq"] == 4
    first = capture(repo_path, unnumbered("one more"))
    assert first["seq"] == 5
    assert first["path"] == git(repo_path, "ls-files", "inbox/*5.yaml").strip()
    stored = yaml.safe_load(git(repo_path, "show", f"HEAD:{first['path']}"))
    assert stored["seq"] == 5
    assert stored["messages"] == [{"role": "user", "content": "one more"}]
    assert capture(repo_path, unnumbered("and another"))["seq"] == 6
    # Another session starts at 0.
    assert capture(repo_path, unnumbered("elsewhere", session="s2"))["seq"] == 0
    trailers = git(repo_path, "log", "-1", "--format=%(trailers:key=Memgit-Captured,valueonly)")
    assert trailers.strip() == "test-agent/s2/0"


def test_the_same_turn_without_seq_again_is_a_duplicate(repo_path: Path) -> None:
    turn = unnumbered("remember that I like tea")
    assert capture(repo_path, turn)["seq"] == 0
    before = snapshot(repo_path)
    again = capture(repo_path, turn)
    assert again == {**again, "seq": 0, "duplicate": True, "commit": None}
    assert snapshot(repo_path) == before
    # The same words at another time are another turn.
    later = capture(
        repo_path, unnumbered("remember that I like tea", timestamp="2026-12-01T09:00:00Z")
    )
    assert later["seq"] == 1 and later["duplicate"] is False


def test_a_file_of_turns_without_seq_is_numbered_in_order(repo_path: Path) -> None:
    lines = repo_path.parent / "turns.jsonl"
    turns = [unnumbered(f"turn {n}") for n in range(3)] + [unnumbered("turn 0")]
    lines.write_text("".join(json.dumps(t) + "\n" for t in turns), "utf-8")
    done = memgit_in_process("capture", "--file", str(lines), "--json", cwd=repo_path)
    assert done.returncode == 0, done.stderr.decode()
    captures = json.loads(done.stdout)["captures"]
    assert [c["seq"] for c in captures] == [0, 1, 2]
    assert git(repo_path, "ls-files", "inbox").count(".yaml") == 3


def test_turns_with_and_without_seq_in_one_input_never_share_a_seq(repo_path: Path) -> None:
    lines = repo_path.parent / "mixed.jsonl"
    turns = [unnumbered("first, unnumbered"), make_turn(seq=0, content="given seq 0")]
    lines.write_text("".join(json.dumps(t) + "\n" for t in turns), "utf-8")
    done = memgit_in_process("capture", "--file", str(lines), "--json", cwd=repo_path)
    assert done.returncode == 0, done.stderr.decode()
    assert [c["seq"] for c in json.loads(done.stdout)["captures"]] == [1, 0]
    files = git(repo_path, "ls-files", "inbox").split()
    assert len(files) == 2
    contents = {
        yaml.safe_load((repo_path / f).read_text())["messages"][0]["content"] for f in files
    }
    assert contents == {"first, unnumbered", "given seq 0"}


def test_a_seq_given_later_in_the_input_is_kept_free_across_batches(memrepo: object) -> None:
    """One turn per commit: the first, unnumbered, must not take the seq the second gives."""
    from memgit import MemoryRepo
    from memgit.capture.inbox import capture_turns
    from memgit.capture.read import parse_turn
    from memgit.governance.checks import Governance
    from memgit.state.lookup import TreeWalk

    assert isinstance(memrepo, MemoryRepo)
    turns = [unnumbered("first, unnumbered"), make_turn(seq=0, content="given seq 0")]
    parsed = [parse_turn(turn, source="<api>") for turn in turns]
    result = capture_turns(
        memrepo.git,
        parsed,
        origins=["<api>"] * 2,
        guard=Governance(TreeWalk(memrepo.git)),
        batch_size=1,
    )
    assert [t.seq for t in result.turns] == [1, 0] and len(result.commits) == 2


def test_numbering_goes_on_after_retention_removed_the_session(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retention took every capture of the session out of the tree: a new turn still gets
    a seq no capture of the session ever had, so its units are not taken for the ones
    old runs decided (they would never be asked about)."""
    configure(repo_path, inbox={"retention_days": 30})
    for text in ("Our CI runs on Fridays only.", "The office is closed on Mondays."):
        capture(repo_path, unnumbered(text))
    assert open_repo(repo_path).process().runs
    days_later(monkeypatch, 31)
    assert open_repo(repo_path).process().expired == (cpath(0), cpath(1))
    assert git(repo_path, "ls-files", "inbox") == ""

    assert capture(repo_path, unnumbered("Remember that I drink tea."))["seq"] == 2
    assert pending_units(repo_path) == [unit(2)]


def test_api_capture_reports_the_seq_given(memrepo: object) -> None:
    from memgit import MemoryRepo, json_data

    assert isinstance(memrepo, MemoryRepo)
    assert memrepo.capture(unnumbered("a")).seq == 0
    assert json_data(memrepo.capture(unnumbered("b")))["seq"] == 1


@pytest.mark.parametrize("seq", [None, -1, "3", 1.5])
def test_a_seq_present_but_invalid_is_still_refused(repo_path: Path, seq: object) -> None:
    before = snapshot(repo_path)
    done = memgit_in_process(
        "capture", cwd=repo_path, input=json.dumps(make_turn(seq=0) | {"seq": seq}).encode()
    )
    assert done.returncode == 3
    assert done.stderr.decode().startswith("error[schema]: <stdin>: seq: ")
    assert snapshot(repo_path) == before


@pytest.mark.slow
def test_two_processes_capturing_without_seq_into_one_session(
    repo_path: Path, tmp_path: Path
) -> None:
    """2 processes x 10 turns released together into one session: all 20 are captured,
    with the seqs 0..19 each once, and every outcome names the seq its file has."""
    commands = [
        [
            sys.executable,
            "-c",
            UNNUMBERED_WORKER,
            str(repo_path),
            str(worker),
            str(tmp_path / f"ready-{worker}"),
            str(tmp_path / "go"),
        ]
        for worker in range(2)
    ]
    results = run_released_together(commands, tmp_path)
    assert all(code == 0 for code, _, _ in results), [err for _, _, err in results]
    outcomes = [json.loads(line) for _, out, _ in results for line in out.splitlines()]
    assert sorted(o["seq"] for o in outcomes) == list(range(20))
    assert not any(o["duplicate"] for o in outcomes)
    files = git(repo_path, "ls-tree", "-r", "--name-only", "HEAD", "--", "inbox").split()
    assert len(files) == 20
    contents = set()
    for outcome in outcomes:
        stored = yaml.safe_load(git(repo_path, "show", f"HEAD:{outcome['path']}"))
        assert stored["seq"] == outcome["seq"]
        contents.add(stored["messages"][0]["content"])
    assert contents == {f"worker {w} turn {i}" for w in range(2) for i in range(10)}
    assert git(repo_path, "status", "--porcelain") == ""


def test_turns_with_a_secret_and_no_seq_are_captured_redacted(repo_path: Path) -> None:
    """Host hooks never send a seq; a pasted key must not make the turn be refused (it was:
    the check after redaction asked for the seq the turn was still to be given)."""
    from memgit import MemoryRepo

    from secret_fixtures import SECRET_FIXTURES
    from support import everything_git_keeps

    repo = MemoryRepo.open(repo_path)
    turns = [
        unnumbered(sample, session=f"secret-{number}")
        for number, (_, sample, _) in enumerate(SECRET_FIXTURES)
    ]
    first = repo.capture_many(turns)
    assert len(first.turns) == len(SECRET_FIXTURES)
    for (kind, _, _), captured in zip(SECRET_FIXTURES, first.turns, strict=True):
        assert (captured.seq, captured.duplicate) == (0, False), kind
        stored = yaml.safe_load(git(repo_path, "show", f"HEAD:{captured.path}"))
        assert stored["seq"] == 0
        assert stored["redactions"], kind
    # The same pasted turns again are the same captures, not new ones.
    assert all(captured.duplicate for captured in repo.capture_many(turns).turns)
    kept = everything_git_keeps(repo_path)
    for kind, _, value in SECRET_FIXTURES:
        for where, data in kept.items():
            assert value.encode() not in data, (kind, where)


def test_the_cli_captures_a_pasted_key_without_seq(repo_path: Path) -> None:
    from secret_fixtures import SECRET_FIXTURES

    kind, sample, value = next(f for f in SECRET_FIXTURES if f[0] == "github-token")
    done = capture(repo_path, unnumbered(sample))
    assert done["seq"] == 0
    assert done["redactions"] == {kind: 1}
    assert value not in git(repo_path, "show", f"HEAD:{done['path']}")
