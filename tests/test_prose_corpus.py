"""The adversarial corpus of credentials in prose (``tests/prose_credentials.yaml``, issue 25
item 1): every value is redacted by the real ``memgit capture`` and no Git object holds it,
every mention stays readable, and the Gate contract's credential fence catches each value
even where capture would have missed it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from test_process import answer, capture, configure, create, unit, user_turn
from test_prose_credentials import PROGRAM, Captured, captured_texts, holds

from memgit.secrets.redact import find_credentials, redact

from support import everything_git_keeps, git, memgit_cli, snapshot

CORPUS = yaml.safe_load(Path(__file__).with_name("prose_credentials.yaml").read_text("utf-8"))


@dataclass(frozen=True, slots=True)
class Leak:
    lang: str
    text: str
    values: tuple[str, ...]


LEAKS = [
    Leak(
        item["lang"],
        item["text"],
        tuple(item["value"]) if isinstance(item["value"], list) else (str(item["value"]),),
    )
    for item in CORPUS["leak"]
]
STAYS = [(item["lang"], item["text"]) for item in CORPUS["stays"]]
LANGS = ("en", "es", "de", "zh")


def leak_id(leak: Leak) -> str:
    return f"{leak.lang}-{LEAKS.index(leak):03d}"


def test_the_corpus_is_large_and_in_four_languages() -> None:
    assert len(LEAKS) >= 120 and len(STAYS) >= 40
    for lang in LANGS:
        assert sum(leak.lang == lang for leak in LEAKS) >= 20, lang
        assert sum(stay_lang == lang for stay_lang, _ in STAYS) >= 5, lang
    for leak in LEAKS:
        assert all(value and value in leak.text for value in leak.values), leak.text


@pytest.mark.parametrize("leak", LEAKS, ids=leak_id)
def test_redaction_removes_every_value(leak: Leak) -> None:
    clean, counts = redact(leak.text)
    assert counts, leak.text
    assert not any(holds(clean, value) for value in leak.values), clean


@pytest.mark.parametrize(("lang", "text"), STAYS, ids=[text[:40] for _, text in STAYS])
def test_a_mention_stays_verbatim(lang: str, text: str) -> None:
    assert redact(text) == (text, {}), lang


@pytest.mark.parametrize("leak", LEAKS, ids=leak_id)
def test_the_fence_finds_each_value_capture_must_redact(leak: Leak) -> None:
    """The second fence alone: were capture to miss it, a memory stating it is refused."""
    found = find_credentials(leak.text)
    for value in leak.values:
        at = leak.text.index(value)
        assert any(m.start <= at < m.end for m in found), (value, found)


@pytest.mark.parametrize(("lang", "text"), STAYS, ids=[text[:40] for _, text in STAYS])
def test_the_fence_lets_a_mention_be_a_memory(lang: str, text: str) -> None:
    assert find_credentials(text) == [], lang


# --- through memgit capture and process: nothing Git keeps holds a value -----------------


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Captured]:
    """Every leak, then every mention, as the user message of its own turn, captured with one
    ``--file`` and processed by the offline Gate."""
    texts = [leak.text for leak in LEAKS] + [text for _, text in STAYS]
    with captured_texts(tmp_path_factory.mktemp("corpus"), texts, process=True) as done:
        yield done


def blobs_and_messages(repo: Path) -> dict[str, str]:
    """Every blob's text and every commit message: where a short digit run is a value."""
    listed = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    blobs = [
        line.split()[0]
        for line in listed
        if line.endswith(tuple("0123456789")) and " blob " in line
    ]
    kept = {f"blob {sha}": git(repo, "cat-file", "blob", sha) for sha in blobs}
    kept["git log --all --format=%B"] = git(repo, "log", "--all", "--format=%B")
    return kept


def test_no_corpus_value_reaches_any_git_object(captured: Captured) -> None:
    kept = everything_git_keeps(captured.repo)
    texts = blobs_and_messages(captured.repo)
    assert len(texts) > len(LEAKS)
    leaked = []
    for leak in LEAKS:
        for value in leak.values:
            where = texts if re.fullmatch(r"[0-9]+", value) else kept
            leaked += [(value, name) for name, data in where.items() if holds(data, value)]
    assert leaked == []


def test_each_leak_is_captured_with_a_redaction(captured: Captured) -> None:
    for seq, leak in enumerate(LEAKS):
        assert captured.results[seq].get("redactions"), leak.text
        assert "[REDACTED:" in captured.content(seq)


def test_mentions_are_captured_as_written(captured: Captured) -> None:
    for offset, (_, text) in enumerate(STAYS):
        seq = len(LEAKS) + offset
        assert captured.results[seq].get("redactions", {}) == {}, text
        assert captured.content(seq) == text


# --- the contract fence: a crafted Gate output -------------------------------------------


@pytest.fixture
def scripted(repo_path: Path, tmp_path: Path) -> Callable[[str], None]:
    """A command backend that prints the answer it is given, whatever it is asked."""
    (tmp_path / "gate.py").write_text(PROGRAM, "utf-8")
    command = [sys.executable, str(tmp_path / "gate.py")]
    configure(repo_path, gate={"backend": "command", "command": command, "model": "canned"})

    def answering(answer_text: str) -> None:
        (tmp_path / "answer.json").write_text(answer_text, "utf-8")

    return answering


@pytest.mark.parametrize(
    ("said", "title", "value"),
    [
        ("Remember the door code", "Door code {}#", "45" + "12"),
        ("Remember the card PIN", "PIN {} for the debit card", "66" + "20"),
        ("Remember the wifi", "Wifi is CafeNet / pw {}", "sunny-dog" + "-77"),
        ("Remember how to log in", "Use {} to sign in to staging", "Sp4rrow" + "#1"),
        ("Remember the build agent", "Build agent {}", "Zq8Kp2Lm9Xw4" + "Rt7YbN3vQ5"),
    ],
)
def test_the_fence_refuses_a_gate_output_that_states_a_credential(
    repo_path: Path, scripted: Callable[[str], None], said: str, title: str, value: str
) -> None:
    """A model (here a scripted command backend) that writes a credential into a memory title
    is refused with ``credential-in-memory``; nothing is stored and the error names no value.
    The last title has no credential word: a long random token is refused on its own."""
    capture(repo_path, user_turn(0, said))
    scripted(answer(None, create(title.format(value), said, [(unit(0), said)]), units=[unit(0)]))
    before = snapshot(repo_path)
    done = memgit_cli("-C", str(repo_path), "process")
    stderr = done.stderr.decode()
    assert done.returncode == 3, stderr
    assert "credential-in-memory" in stderr
    assert snapshot(repo_path) == before
    assert value not in stderr
