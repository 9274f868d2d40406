"""The secrets corpus of memgit issue 11: every family, through every door, stored nowhere.

One realistic fake value per family (80+ families: each kind of the detector, the shapes
the issue found leaking, and the ways a value hides or spreads within one turn), built at
run time by :mod:`secret_fixtures`. Every family is captured as its own turn through the
real CLI into one real repository, processed by the offline ``rules`` backend (each turn
says "remember that ..."), and recalled. Then no raw value, and for a key no body line, may
be in:

* any Git object (``git cat-file --batch-all-objects --batch``) or history patch;
* any other file under ``.git``, the SQLite index in ``.git/memgit/`` included;
* what ``recall`` prints, as text (with ``--evidence``) and as ``--json``;
* what any command printed, or the error of a refused turn holding the value.

A disguised value (full-width letters, a zero-width space) must appear in neither its
disguised nor its plain ASCII form.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memgit import MemoryRepo
from memgit.errors import MemgitError
from memgit.jsonio import json_data
from memgit.secrets.textview import view_of

from secret_fixtures import SECRET_FIXTURES
from support import everything_git_keeps, git_environment, make_turn, memgit_cli


@dataclass(frozen=True, slots=True)
class Family:
    """One family: the messages of its turn, its thread, and the values that must vanish."""

    name: str
    messages: list[dict[str, Any]]
    values: list[str]
    thread: str | None = None
    kinds: set[str] = field(default_factory=set)


def _by_kind(kind: str, index: int = 0) -> tuple[str, str]:
    """(sample, value) of the ``index``-th fixture of ``kind``."""
    found = [(sample, value) for k, sample, value in SECRET_FIXTURES if k == kind]
    return found[index]


def _pem() -> str:
    return next(v for k, _, v in SECRET_FIXTURES if k == "private-key" and "-----END" in v)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _families() -> list[Family]:
    families: list[Family] = []
    seen: dict[str, int] = {}
    for kind, sample, value in SECRET_FIXTURES:
        seen[kind] = seen.get(kind, 0) + 1
        name = f"{kind}-{seen[kind]}"
        text = f"Remember that note {name} reads:\n{sample}"
        families.append(Family(name, [_user(text)], [value], kinds={kind}))
    # The ways a value spreads or hides inside one turn (memgit issue 11).
    typed = "correct" + "horse" + "battery" + "42"
    families.append(
        Family(
            "echoed-by-the-assistant",
            [
                _user(f"Remember that the db pass{'word'}={typed} for staging"),
                {"role": "assistant", "content": f"Noted, {typed} is the staging password."},
            ],
            [typed],
        )
    )
    pem = _pem()
    families.append(
        Family(
            "private-key-in-a-second-message",
            [_user("Remember that the deploy key follows."), _user(f"here:\n{pem}\nthanks")],
            [pem],
        )
    )
    lines = pem.splitlines()
    families.append(
        Family(
            "private-key-split-over-two-messages",
            [
                _user("Remember that the key is:\n" + "\n".join(lines[:3])),
                _user("and the rest:\n" + "\n".join(lines[3:]) + "\nthat is all"),
            ],
            [line for line in lines[1:-1]],
        )
    )
    github = _by_kind("github-token")[1]
    families.append(
        Family(
            "tool-call-arguments",
            [
                _user("Remember that the login tool works."),
                {
                    "role": "assistant",
                    "content": json.dumps(
                        {"name": "login", "arguments": json.dumps({"pass" + "word": typed + "x"})}
                    ),
                },
            ],
            [typed + "x"],
        )
    )
    families.append(
        Family(
            "secret-as-thread-id",
            [_user("Remember that the thread id is odd.")],
            [github],
            thread=f"thread {github}",
        )
    )
    token = _by_kind("huggingface-token")[1]
    families.append(
        Family(
            "secret-as-tool-name",
            [
                _user("Remember that the tool is named oddly."),
                {"role": "tool", "name": f"tool {token}", "content": "ok", "complete": True},
            ],
            [token],
        )
    )
    fullwidth = "".join(chr(ord(char) + 0xFEE0) for char in github)
    families.append(
        Family(
            "echoed-in-full-width",
            [_user(f"Remember that my token is {github} today"), _user(f"again: {fullwidth}")],
            [github, fullwidth],
        )
    )
    return families


FAMILIES = _families()


def fragments(value: str) -> list[str]:
    """What must never be stored: the value, its plain view, and each key line over 20
    characters (a PEM or PuTTY body line)."""
    found = {value, view_of(value).text}
    for line in re.split(r"\n|\\n", value):
        if len(line) > 20 and not line.startswith("-----") and ":" not in line:
            found.add(line)
    return sorted(found)


@dataclass(frozen=True, slots=True)
class Corpus:
    repo: Path
    printed: bytes
    recalled: dict[str, bytes]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    base = tmp_path_factory.mktemp("corpus")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in git_environment(base).items():
            patch.setenv(name, value)
        repo = base / "memory"
        done = [memgit_cli("init", str(repo))]
        turns = base / "corpus.jsonl"
        lines = [
            json.dumps(
                make_turn(
                    seq,
                    messages=family.messages,
                    **({"thread": family.thread} if family.thread else {}),
                ),
                ensure_ascii=False,
            )
            for seq, family in enumerate(FAMILIES)
        ]
        turns.write_text("\n".join(lines) + "\n", "utf-8")
        done.append(memgit_cli("capture", "--file", str(turns), "--json", cwd=repo))
        done.append(memgit_cli("process", cwd=repo))
        recalled: dict[str, bytes] = {}
        for query in ("remember note", "token key password"):
            for extra in ([], ["--json"]):
                args = ["recall", "-k", "1000", "--evidence", *extra, *query.split()]
                done.append(memgit_cli(*args, cwd=repo))
                recalled[" ".join(args)] = done[-1].stdout
        for step in done:
            assert step.returncode == 0, step.stderr.decode()
        printed = b"".join(step.stdout + step.stderr for step in done)
        yield Corpus(repo, printed, recalled)


def test_the_corpus_has_the_families_issue_11_asks_for() -> None:
    names = {family.name for family in FAMILIES}
    assert len(names) == len(FAMILIES) >= 60
    kinds = {kind for family in FAMILIES for kind in family.kinds}
    assert len(kinds) >= 60


def test_the_searched_data_holds_the_turns(corpus: Corpus) -> None:
    """Otherwise an empty search would pass: the objects hold the placeholders, and recall
    printed the captured turns and memories."""
    kept = everything_git_keeps(corpus.repo)
    assert b"[REDACTED:putty-private-key]" in kept["git cat-file --batch-all-objects --batch"]
    index = b"".join(data for where, data in kept.items() if "memgit" in where)
    assert b"REDACTED" in index
    for output in corpus.recalled.values():
        assert b"REDACTED" in output and b"note" in output


@pytest.mark.parametrize("family", FAMILIES, ids=[family.name for family in FAMILIES])
def test_no_raw_value_anywhere(family: Family, corpus: Corpus) -> None:
    kept = everything_git_keeps(corpus.repo)
    for value in family.values:
        for fragment in fragments(value):
            data = fragment.encode()
            for where, content in kept.items():
                assert data not in content, f"{family.name} in {where}"
            for where, content in corpus.recalled.items():
                assert data not in content, f"{family.name} in {where}"
            assert data not in corpus.printed, f"{family.name} printed"


def test_a_refused_turn_never_echoes_any_family(corpus: Corpus) -> None:
    """Each family in a turn refused for its shape (a thread with a newline, an unknown
    role): the error, as text and as JSON, holds none of it."""
    repo = MemoryRepo.open(corpus.repo)
    for family in FAMILIES:
        text = family.messages[0]["content"]
        for broken in (
            make_turn(thread=f"line\n{text}"),
            make_turn(messages=[{"role": text, "content": "x"}]),
            make_turn(timestamp=text),
        ):
            with pytest.raises(MemgitError) as caught:
                repo.capture(broken)
            shown = caught.value.render() + json.dumps(json_data(caught.value.problem))
            for value in family.values:
                for fragment in fragments(value):
                    assert fragment not in shown, family.name


def test_git_fsck_is_clean_and_nothing_is_left_uncommitted(corpus: Corpus) -> None:
    subprocess.run(["git", "-C", str(corpus.repo), "fsck", "--strict"], check=True)
    status = subprocess.run(
        ["git", "-C", str(corpus.repo), "status", "--porcelain"], capture_output=True, check=True
    )
    assert status.stdout == b""
