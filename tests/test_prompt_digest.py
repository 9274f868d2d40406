"""A host's Gate answer names the prompt it answers; an answer to an older prompt is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_process import answer, capture, create, open_repo, pending_units, run_records, unit
from test_process import user_turn as said

from memgit.errors import ConflictError

from support import memgit_cli, snapshot

FRIDAYS = create("CI runs on Fridays", "CI runs on Fridays.", [(unit(0), "CI runs on Fridays")])


def printed_digest(path: Path) -> str:
    done = memgit_cli("-C", str(path), "process", "--print-prompt", "--json")
    assert done.returncode == 0, done.stderr.decode()
    digest: str = json.loads(done.stdout)["digest"]
    return digest


def naming(text: str, digest: str) -> str:
    return json.dumps({"prompt_digest": digest, **json.loads(text)})


def test_the_printed_prompt_names_its_digest(repo_path: Path) -> None:
    capture(repo_path, said(0, "Our CI runs on Fridays only."))
    digest = printed_digest(repo_path)
    assert digest.startswith("sha256:") and len(digest) == 71
    text = memgit_cli("-C", str(repo_path), "process", "--print-prompt").stdout.decode()
    assert f'"prompt_digest": "{digest}"' in text
    request = open_repo(repo_path).gate_prompt()
    assert request is not None and request.digest == digest


def test_an_answer_to_the_current_prompt_commits(repo_path: Path) -> None:
    capture(repo_path, said(0, "Our CI runs on Fridays only."))
    digest = printed_digest(repo_path)
    done = memgit_cli(
        "-C",
        str(repo_path),
        "process",
        "--gate-output",
        "-",
        input=naming(answer(repo_path, FRIDAYS), digest).encode(),
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""
    (record,) = run_records(repo_path).values()
    assert record["prompt_digest"] == digest
    assert record["gate_output"]["prompt_digest"] == digest
    assert pending_units(repo_path) == []


def test_an_answer_after_a_new_capture_is_refused(repo_path: Path) -> None:
    capture(repo_path, said(0, "Our CI runs on Fridays only."))
    digest = printed_digest(repo_path)
    stale = naming(answer(repo_path, FRIDAYS), digest)
    capture(repo_path, said(1, "The office is closed on Mondays."))
    before = snapshot(repo_path)

    done = memgit_cli("-C", str(repo_path), "process", "--gate-output", "-", input=stale.encode())
    assert done.returncode == 4
    first = done.stderr.decode().splitlines()[0]
    assert first.startswith("error[prompt-changed]: gate output: prompt_digest: ")
    assert digest[:19] in first
    assert b"Traceback" not in done.stderr
    assert snapshot(repo_path) == before
    assert pending_units(repo_path) == [unit(0), unit(1)]

    with pytest.raises(ConflictError) as caught:
        open_repo(repo_path).process(gate_output=stale)
    assert caught.value.code == "prompt-changed"
    assert snapshot(repo_path) == before

    fresh = naming(answer(repo_path, FRIDAYS), printed_digest(repo_path))
    (run,) = open_repo(repo_path).process(gate_output=fresh).runs
    assert [d.action for d in run.decisions] == ["CREATE"]


def test_an_answer_without_a_digest_is_applied_with_a_warning(repo_path: Path) -> None:
    capture(repo_path, said(0, "Our CI runs on Fridays only."))
    text = answer(repo_path, FRIDAYS)
    done = memgit_cli("-C", str(repo_path), "process", "--gate-output", "-", input=text.encode())
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr.decode().startswith("warning: the Gate answer names no prompt_digest")
    assert pending_units(repo_path) == []


def test_a_malformed_digest_is_a_schema_problem(repo_path: Path) -> None:
    capture(repo_path, said(0, "Our CI runs on Fridays only."))
    bad = naming(answer(repo_path, FRIDAYS), "abc")
    before = snapshot(repo_path)
    done = memgit_cli("-C", str(repo_path), "process", "--gate-output", "-", input=bad.encode())
    assert done.returncode == 3
    assert "error[gate-rejected]:" in done.stderr.decode()
    assert "prompt_digest" in done.stderr.decode()
    assert snapshot(repo_path) == before
