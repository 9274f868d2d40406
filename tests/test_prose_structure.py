"""Credentials in prose by structure (``tests/prose_credentials_structure.yaml``, issue 25,
third round): a value with a secret's shape in a clause whose credential cue came earlier
(a list of connection facts, ``user / …``, parentheses, "it's …" after a sentence about a
password) is redacted by the real ``memgit capture`` and reaches no Git object, while the
facts beside it (host, port, user name, path, network name) stay readable, and every mention
with no value is captured as written.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from test_prose_credentials import Captured, captured_texts, holds

from memgit.secrets.redact import find_credentials, find_secrets, redact

from support import everything_git_keeps, git

CORPUS = yaml.safe_load(
    Path(__file__).with_name("prose_credentials_structure.yaml").read_text("utf-8")
)
LANGS = ("en", "es", "de", "zh")


@dataclass(frozen=True, slots=True)
class Leak:
    lang: str
    text: str
    values: tuple[str, ...]
    keep: tuple[str, ...]


def _listed(item: object) -> tuple[str, ...]:
    return tuple(str(v) for v in item) if isinstance(item, list) else (str(item),)


LEAKS = [
    Leak(item["lang"], item["text"], _listed(item["value"]), _listed(item.get("keep", [])))
    for item in CORPUS["leak"]
]
STAYS = [(item["lang"], item["text"]) for item in CORPUS["stays"]]


def leak_id(leak: Leak) -> str:
    return f"{leak.lang}-{LEAKS.index(leak):03d}"


def stay_id(index: int) -> str:
    return f"{STAYS[index][0]}-{index:03d}"


def test_the_corpus_is_large_and_in_four_languages() -> None:
    assert len(LEAKS) + len(STAYS) >= 100 and len(STAYS) >= 40
    for lang in LANGS:
        assert sum(leak.lang == lang for leak in LEAKS) >= 15, lang
        assert sum(stay_lang == lang for stay_lang, _ in STAYS) >= 8, lang
    for leak in LEAKS:
        assert all(part and part in leak.text for part in leak.values + leak.keep), leak.text
        assert not any(value in keep for value in leak.values for keep in leak.keep)


@pytest.mark.parametrize("leak", LEAKS, ids=leak_id)
def test_redaction_removes_the_value_and_keeps_the_facts(leak: Leak) -> None:
    clean, counts = redact(leak.text)
    assert counts, leak.text
    assert [value for value in leak.values if holds(clean, value)] == [], clean
    assert [keep for keep in leak.keep if keep not in clean] == [], clean


@pytest.mark.parametrize("index", range(len(STAYS)), ids=stay_id)
def test_a_mention_stays_verbatim(index: int) -> None:
    text = STAYS[index][1]
    assert redact(text) == (text, {})


@pytest.mark.parametrize("leak", LEAKS, ids=leak_id)
def test_a_memory_stating_a_value_is_refused(leak: Leak) -> None:
    """The Gate contract's credential fence reads the same structure, and the secret hook
    every kind (a URL's password is no credential in prose): a memory stating one of these
    values is refused even where capture was bypassed."""
    found = find_credentials(leak.text) + find_secrets(leak.text)
    for value in leak.values:
        at = leak.text.index(value)
        assert any(m.start <= at < m.end for m in found), (value, found)


@pytest.mark.parametrize("index", range(len(STAYS)), ids=stay_id)
def test_the_fence_lets_a_mention_be_a_memory(index: int) -> None:
    assert find_credentials(STAYS[index][1]) == []


# --- through memgit capture and process: nothing Git keeps holds a value -----------------


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Captured]:
    """Every leak, then every mention, as the user message of its own turn, captured with one
    ``--file`` and processed by the offline Gate."""
    texts = [leak.text for leak in LEAKS] + [text for _, text in STAYS]
    with captured_texts(tmp_path_factory.mktemp("structure"), texts, process=True) as done:
        yield done


def every_object(repo: Path) -> str:
    """``git cat-file --batch-all-objects --batch``: every object's content, one text."""
    return subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "replace")


def blob_texts(repo: Path) -> dict[str, str]:
    """Every blob's text and every commit message: where a short digit run is a value (the
    whole batch holds object sizes and timestamps that may contain any short run)."""
    listed = git(repo, "cat-file", "--batch-all-objects", "--batch-check").split("\n")
    blobs = [line.split()[0] for line in listed if " blob " in line]
    kept = {f"blob {sha}": git(repo, "cat-file", "blob", sha) for sha in blobs}
    kept["git log --all --format=%B"] = git(repo, "log", "--all", "--format=%B")
    return kept


def test_no_value_reaches_any_git_object(captured: Captured) -> None:
    objects = every_object(captured.repo)
    kept = everything_git_keeps(captured.repo)
    texts = blob_texts(captured.repo)
    leaked = []
    for leak in LEAKS:
        for value in leak.values:
            if re.fullmatch(r"[0-9]+", value):
                leaked += [(value, name) for name, data in texts.items() if holds(data, value)]
            else:
                leaked += [(value, "objects")] if holds(objects, value) else []
                leaked += [(value, name) for name, data in kept.items() if holds(data, value)]
    assert leaked == []


def test_each_leak_is_captured_with_its_facts_readable(captured: Captured) -> None:
    for seq, leak in enumerate(LEAKS):
        assert captured.results[seq].get("redactions"), leak.text
        content = captured.content(seq)
        assert "[REDACTED:" in content, leak.text
        assert [keep for keep in leak.keep if keep not in content] == [], content


def test_mentions_are_captured_as_written(captured: Captured) -> None:
    for offset, (_, text) in enumerate(STAYS):
        seq = len(LEAKS) + offset
        assert captured.results[seq].get("redactions", {}) == {}, text
        assert captured.content(seq) == text
