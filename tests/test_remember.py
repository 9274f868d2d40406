"""``memgit remember TEXT``: the text becomes a memory through capture, the Gate contract,
the checks and the commit engine, as any run's answer does; bad input changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memgit import MemgitError, MemoryRepo
from memgit.jsonio import json_data
from memgit.memory import read_memory

from secret_fixtures import SECRET_FIXTURES
from support import everything_git_keeps, git, make_turn, memgit_cli, snapshot

AWS_KEY = next(value for kind, _, value in SECRET_FIXTURES if kind == "aws-access-key-id")
STAGING = "The staging database is db.stg.example.com, port 5433."


def test_the_text_becomes_a_checked_memory_quoting_its_capture(repo_path: Path) -> None:
    with MemoryRepo.open(repo_path) as repo:
        made = repo.remember(STAGING, scope="project")
    memory = read_memory((repo_path / made.path).read_bytes(), path=made.path)
    assert (memory.id, memory.scope, memory.type) == (made.memory_id, "project", "fact")
    assert memory.body.strip() == STAGING and memory.title == STAGING
    (source,) = memory.sources
    assert source.quote == STAGING and made.capture.startswith("inbox/memgit-remember/")
    run, capture = git(repo_path, "log", "-2", "--format=%s").splitlines()
    assert run == "process: 1 created [remember]"
    assert capture.startswith("capture: memgit-remember/r-")
    assert memgit_cli("-C", str(repo_path), "verify", "--all").returncode == 0
    hits = MemoryRepo.open(repo_path).recall("staging database port")
    assert [hit.memory.id for hit in hits.memories][:1] == [made.memory_id]
    (history,) = MemoryRepo.open(repo_path).log(made.memory_id)
    assert (history.versions[0].change, history.versions[0].backend) == ("created", "remember")


def test_other_pending_turns_are_left_for_process(repo_path: Path) -> None:
    with MemoryRepo.open(repo_path) as repo:
        repo.capture(make_turn(0, "Remember that the wiki lives on the intranet."))
        repo.remember("I review pull requests in the mornings.")
        request = repo.gate_prompt()
    assert request is not None
    assert [unit.text for unit in request.units] == [
        "Remember that the wiki lives on the intranet."
    ]


def test_a_secret_in_the_text_never_enters_an_object(repo_path: Path) -> None:
    with MemoryRepo.open(repo_path) as repo:
        made = repo.remember(f"The deploy key for staging is {AWS_KEY} until Friday.")
    assert "[REDACTED" in (repo_path / made.path).read_text("utf-8")
    kept = everything_git_keeps(repo_path)
    assert all(AWS_KEY.encode() not in data for data in kept.values())


@pytest.mark.parametrize(
    ("args", "code", "field"),
    [
        (["short"], "invalid-text", "TEXT"),
        (["x" * 4001], "invalid-text", "TEXT"),
        ([STAGING, "--scope", "elsewhere"], "unknown-scope", "--scope"),
        ([STAGING, "--scope", "../etc"], "invalid-scope", "--scope"),
        ([STAGING, "--type", "gossip"], "unknown-type", "--type"),
        ([STAGING, "--title", "two\nlines"], "invalid-text", "--title"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(
    repo_path: Path, args: list[str], code: str, field: str
) -> None:
    before = snapshot(repo_path)
    done = memgit_cli("-C", str(repo_path), "remember", *args)
    assert done.returncode == 3, done.stderr
    assert done.stderr.decode().startswith(f"error[{code}]: {field}: "), done.stderr
    assert snapshot(repo_path) == before


def test_the_cli_reads_stdin_and_prints_json(repo_path: Path) -> None:
    done = memgit_cli(
        "-C",
        str(repo_path),
        "remember",
        "-",
        "--json",
        "--type",
        "preference",
        input=b"I prefer tabs over spaces in Go code.\n",
    )
    assert done.returncode == 0, done.stderr
    made = json.loads(done.stdout)
    assert set(made) == {
        "memory_id",
        "path",
        "already_held",
        "capture",
        "run_id",
        "commit",
        "proposal",
    }
    assert made["already_held"] is False
    assert "type: preference" in (repo_path / made["path"]).read_text("utf-8")
    with pytest.raises(MemgitError) as refused:
        MemoryRepo.open(repo_path).remember("   ")
    assert refused.value.code == "invalid-text"


def test_the_same_text_again_makes_no_second_memory_and_names_the_first(
    repo_path: Path,
) -> None:
    """Remembered twice (case, spacing and punctuation aside), a text is one memory: the
    second time nothing is written and the memory that holds it is named."""
    with MemoryRepo.open(repo_path) as repo:
        made = repo.remember(STAGING, scope="project")
    before, kept = snapshot(repo_path), everything_git_keeps(repo_path)
    again = memgit_cli(
        "-C",
        str(repo_path),
        "remember",
        "--scope",
        "project",
        "the staging database is DB.stg.example.com,  port 5433",
    )
    assert again.returncode == 0, again.stderr.decode()
    assert again.stdout.decode() == (
        f"already remembered: {made.memory_id}  {made.path}  holds the same text\n"
    )
    shown = memgit_cli("-C", str(repo_path), "remember", "--scope", "project", STAGING, "--json")
    assert json.loads(shown.stdout) == {
        "memory_id": made.memory_id,
        "path": made.path,
        "already_held": True,
        "capture": None,
        "run_id": None,
        "commit": None,
        "proposal": None,
    }
    assert snapshot(repo_path) == before and everything_git_keeps(repo_path) == kept
    hits = MemoryRepo.open(repo_path).recall("staging database port")
    assert [hit.memory.id for hit in hits.memories] == [made.memory_id]
    # Another scope is another memory.
    other = MemoryRepo.open(repo_path).remember(STAGING, scope="user")
    assert not other.already_held and other.memory_id != made.memory_id


def test_process_never_makes_a_second_identical_memory(repo_path: Path) -> None:
    """Whatever the backend answers, a CREATE of an active memory's text (or one an
    earlier CREATE of the same answer makes) is dropped from the recorded answer: its
    unit is NO_CHANGE, already-known, and the run record says so."""
    from history_support import answer, unit

    with MemoryRepo.open(repo_path) as repo:
        made = repo.remember(STAGING, scope="project")
        repo.capture(make_turn(0, f"{STAGING} And {STAGING.lower()}"))
        first, second = STAGING, STAGING.lower()
        created = {"action": "CREATE", "type": "fact", "scope": "project", "title": "Staging"}
        given = answer(
            repo,
            {**created, "body": STAGING.upper(), "claims": [(unit(0), first)]},
            {**created, "scope": "user", "body": STAGING, "claims": [(unit(0), first)]},
            {**created, "scope": "user", "body": STAGING + "!", "claims": [(unit(0), second)]},
        )
        (run,) = repo.process(gate_output=given).runs
    assert [(d.action, d.path.split("/")[1]) for d in run.decisions] == [("CREATE", "user")]
    assert json_data(run.held) == [
        {
            "candidate_id": "c1",
            "units": [unit(0)],
            "memory_id": made.memory_id,
            "path": made.path,
            "same_as": None,
        },
        {
            "candidate_id": "c3",
            "units": [unit(0)],
            "memory_id": None,
            "path": None,
            "same_as": "c2",
        },
    ]
    memories = git(repo_path, "ls-files", "memories").split()
    assert len(memories) == 2 and made.path in memories
    record = json.loads(
        git(repo_path, "show", f"HEAD:runs/{run.run_id[:4]}/{run.run_id[4:6]}/{run.run_id}.json")
    )
    assert {"code": "already-held", "count": 2} in record["diagnostics"]
    assert [c["candidate_id"] for c in record["gate_output"]["candidates"]] == ["c2"]
    assert memgit_cli("-C", str(repo_path), "verify", "--all").returncode == 0


def test_chinese_text_is_the_same_whatever_its_spacing(repo_path: Path) -> None:
    with MemoryRepo.open(repo_path) as repo:
        made = repo.remember("我喜欢用 pytest 写测试，不用 unittest。")
        again = repo.remember("我喜欢用pytest写测试,不用unittest")
    assert again.already_held and again.memory_id == made.memory_id


def test_process_names_the_memory_that_already_holds_a_dropped_create(repo_path: Path) -> None:
    from history_support import answer, unit

    with MemoryRepo.open(repo_path) as repo:
        made = repo.remember(STAGING, scope="project")
        repo.capture(make_turn(0, STAGING))
        created = {"action": "CREATE", "type": "fact", "scope": "project", "title": "Staging"}
        given = answer(repo, {**created, "body": STAGING, "claims": [(unit(0), STAGING)]})
    done = memgit_cli("-C", str(repo_path), "process", "--gate-output", "-", input=given.encode())
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    head = git(repo_path, "rev-parse", "HEAD").strip()
    assert lines[0].endswith(f": no memory changes from 1 capture in {head[:12]}"), lines
    assert lines[1] == f"  HELD      {made.memory_id}  {made.path}  already holds {unit(0)}"
    assert git(repo_path, "ls-files", "memories").split() == [made.path]
