"""The default Gate over two weeks of a conversation (tests/gate_quality/conversation.yaml
and conversation-2.yaml: two people, two projects, two ways of talking).

A quality item tests one message; this tests what a user lives with: 40 turns over eight
days, captured as a host's hooks capture them (each user message, then each assistant
message, as its own turn of the day's session, with no seq) and processed at the end of
each day. At the end the memories in the tree must hold at least 70 % of what a careful
person would have kept, be at least 70 % right (the chit-chat, questions and one-off
requests kept out), hold none of the values a change of mind replaced and no credential;
and no Git object may hold a credential or a pasted secret. Scoring is the quality set's
(``bench/gate_score.py``). When it fails, the message lists every expected memory
missed, every stale memory, and every memory stored wrongly, so a developer sees what
to fix.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from secret_fixtures import SECRET_FIXTURES

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "gate_quality"
sys.path.insert(0, str(ROOT / "bench"))

from gate_quality import Message, stored_memories  # noqa: E402
from gate_score import Expected, ItemScore, Stored, Term, missing_terms, score_item  # noqa: E402

MIN_RECALL = 0.70
MIN_PRECISION = 0.70
ASSISTANT_DELAY = timedelta(seconds=40)  # the answer comes a little after the question


def _secret_values() -> dict[str, str]:
    """kind -> the first fake value of that kind, as the quality set expands them."""
    values: dict[str, str] = {}
    for kind, _sample, value in SECRET_FIXTURES:
        values.setdefault(kind, value)
    return values


def _expand(text: str, values: Mapping[str, str], used: set[str]) -> str:
    while "{secret:" in text:
        start = text.index("{secret:")
        end = text.index("}", start)
        kind = text[start + len("{secret:") : end]
        used.add(values[kind])
        text = text[:start] + values[kind] + text[end + 1 :]
    return text


def _terms(raw: Sequence[Any]) -> tuple[Term, ...]:
    return tuple(term if isinstance(term, str) else tuple(term) for term in raw)


def _load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((HERE / name).read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def _validator() -> Draft202012Validator:
    items = json.loads((HERE / "set.schema.json").read_text("utf-8"))
    schema = json.loads((HERE / "conversation.schema.json").read_text("utf-8"))
    registry = Registry().with_resource(items["$id"], Resource.from_contents(items))
    return Draft202012Validator(schema, registry=registry)


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Conversation:
    """A conversation file, where the rules Gate stands on it (a regression below a floor
    fails at once), and a memory that still says one of its old values."""

    name: str
    floor_recall: float
    floor_precision: float
    floor_stale: int
    stale_body: str  # a memory body still saying an old value
    stale_retired: str  # the `retired` text it matches


# Where the rules Gate stands (2026-12-03, third session), each floor rounded down to
# 0.05. conversation.yaml: 89 % kept at 96 % precision, every change of mind applied.
# conversation-2.yaml: 75 % kept at 94.7 % precision, every change of mind applied.
# Nothing leaked in either. The goal (70 %, every change applied) is the last
# test.
CONVERSATIONS = (
    Conversation(
        name="conversation.yaml",
        floor_recall=0.80,
        floor_precision=0.90,
        floor_stale=0,
        stale_body="We deploy to Heroku.",
        stale_retired="ropewalk deploys to Heroku.",
    ),
    Conversation(
        name="conversation-2.yaml",
        floor_recall=0.75,
        floor_precision=0.90,
        floor_stale=0,
        stale_body="We deploy on ECS Fargate.",
        stale_retired="tidewater deploys on AWS ECS Fargate.",
    ),
)
NAMES = [conversation.name for conversation in CONVERSATIONS]


@pytest.mark.parametrize("name", NAMES)
def test_conversation_file_is_well_formed(name: str) -> None:
    """The file follows its schema and the brief: 40 turns, eight days over two weeks, in
    time order, every placeholder a known kind, every credential said in a turn."""
    data = _load(name)
    problems = [error.message for error in _validator().iter_errors(data)]
    assert problems == []
    turns = data["turns"]
    assert len(turns) == 40
    sessions = list(dict.fromkeys(turn["session"] for turn in turns))
    assert len(sessions) == 8
    # A session is one day, and its turns are together.
    assert [turn["session"] for turn in turns] == sorted(
        (turn["session"] for turn in turns), key=sessions.index
    )
    moments = [_stamp(turn["timestamp"]) for turn in turns]
    assert moments == sorted(moments) and len(set(moments)) == len(moments)
    assert timedelta(days=10) <= moments[-1] - moments[0] <= timedelta(days=14)
    for session in sessions:
        days = {_stamp(t["timestamp"]).date() for t in turns if t["session"] == session}
        assert len(days) == 1, session
    values, used = _secret_values(), set[str]()
    said = "\n".join(
        _expand(turn["user"], values, used)
        + "\n"
        + _expand(turn.get("assistant", ""), values, used)
        for turn in turns
    )
    assert used, "the conversation pastes a token-shaped secret"
    assert data["credentials"] and all(value in said for value in data["credentials"])
    for earlier in data["retired"]:
        assert not missing_terms(_terms(earlier["terms"]), earlier["text"]), earlier
    for memory in data["expected"]:
        assert not missing_terms(_terms(memory["terms"]), memory["text"]), memory


def _capture_conversation(
    repo: Any, data: Mapping[str, Any], values: Mapping[str, str]
) -> tuple[set[str], dict[str, int], list[Message]]:
    """Each user message, then each assistant message, as its own turn with no seq, as a
    host's hooks send them; the day is processed when its last turn is in. Returns the
    secret values pasted, and each capture's message (by path) with every message said,
    so the quotes are judged as the quality bench judges them."""
    used: set[str] = set()
    captured: dict[str, int] = {}
    messages: list[Message] = []
    turns = data["turns"]
    for n, turn in enumerate(turns):
        moment = _stamp(turn["timestamp"])
        said = [("user", turn["user"], moment)]
        if "assistant" in turn:
            said.append(("assistant", turn["assistant"], moment + ASSISTANT_DELAY))
        for role, text, at in said:
            content = _expand(text, values, used)
            outcome = repo.capture(
                {
                    "source": data["source"],
                    "session": turn["session"],
                    "timestamp": _when(at),
                    "messages": [{"role": role, "content": content}],
                }
            )
            captured[outcome.path] = len(messages)
            messages.append(Message(role=role, content=content))
        if n + 1 == len(turns) or turns[n + 1]["session"] != turn["session"]:
            repo.process()
    return used, captured, messages


def _all_objects(path: Path) -> bytes:
    return subprocess.run(
        ["git", "-C", str(path), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout


def _kind(value: str, prose: Sequence[str]) -> str:
    return "prose password" if value in prose else "pasted secret"


def _show(memory: Stored) -> str:
    body = " ".join(memory.body.split())
    return f"[{memory.scope}/{memory.type}] {memory.title!r}: {body[:160]!r}"


def _report(
    score: ItemScore,
    stale: Sequence[tuple[Stored, str]],
    leaked: Sequence[str],
    recall: float,
    precision: float | None,
) -> str:
    lines = [
        f"recall {recall:.0%} (at least {MIN_RECALL:.0%} wanted), precision "
        + (f"{precision:.0%}" if precision is not None else "n/a (nothing stored)")
        + f" (at least {MIN_PRECISION:.0%} wanted), {len(score.verdicts)} memories stored",
        "",
        "MISSED (expected at the end, no memory holds its terms in its scope):",
    ]
    for i, want in enumerate(score.expected):
        if i not in score.matched:
            terms = ", ".join(t if isinstance(t, str) else " | ".join(t) for t in want.terms)
            lines.append(f"  - [{want.scope}] {want.text}  (terms: {terms})")
    lines += ["", "STALE (still holds what a change of mind replaced):"]
    lines += [f"  - {_show(memory)}  (retired: {earlier})" for memory, earlier in stale]
    lines += ["", "STORED WRONGLY (kept what a careful person would not, or in the wrong scope):"]
    stale_ids = {id(memory) for memory, _ in stale}
    for verdict in score.verdicts:
        if verdict.kind == "correct" or id(verdict.stored) in stale_ids:
            continue
        why = verdict.kind
        if verdict.kind in ("scope", "duplicate") and verdict.expected is not None:
            why += f" of {score.expected[verdict.expected].text!r}"
        lines.append(f"  - {_show(verdict.stored)}  ({why})")
    lines += ["", "CREDENTIALS OR SECRETS KEPT:"]
    lines += [f"  - {where}" for where in leaked]
    return "\n".join(lines)


def _judge(
    stored: Sequence[Stored], data: Mapping[str, Any]
) -> tuple[ItemScore, list[tuple[Stored, str]]]:
    """The quality set's verdict on every stored memory, and the stale ones: a memory
    that matches an expected one may name an old value as history ("moved from pnpm");
    any other memory holding an old value still says it is current."""
    expected = [
        Expected(
            text=memory["text"],
            scope=memory["scope"],
            type=memory["type"],
            terms=_terms(memory["terms"]),
        )
        for memory in data["expected"]
    ]
    retired = [(earlier["text"], _terms(earlier["terms"])) for earlier in data["retired"]]
    score = score_item(stored, expected, replaced=[terms for _text, terms in retired])
    stale = [
        (verdict.stored, text)
        for verdict in score.verdicts
        if verdict.kind != "correct"
        for text, terms in retired
        if not missing_terms(terms, verdict.stored.text)
    ]
    return score, stale


def _rates(score: ItemScore) -> tuple[float, float | None]:
    """(recall, precision); precision is None when nothing was stored."""
    recall = len(score.matched) / len(score.expected)
    return recall, (score.correct / len(score.verdicts) if score.verdicts else None)


def _passes(score: ItemScore, stale: Sequence[tuple[Stored, str]]) -> bool:
    recall, precision = _rates(score)
    return recall >= MIN_RECALL and (precision or 0.0) >= MIN_PRECISION and not stale


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=NAMES)
def test_the_checks_pass_a_careful_person_and_catch_what_they_name(
    conversation: Conversation,
) -> None:
    """The labels are consistent with the checks: a careful person's memories (the
    expected ones, as written) pass; the same plus an old value still current, or plus
    chit-chat, are caught."""
    data = _load(conversation.name)
    careful = [
        Stored(title=memory["text"], body="", scope=memory["scope"], type=memory["type"])
        for memory in data["expected"]
    ]
    score, stale = _judge(careful, data)
    assert _rates(score) == (1.0, 1.0) and stale == [], _report(score, stale, [], 1.0, 1.0)
    old = Stored(title="Deploys", body=conversation.stale_body, scope="project", type="fact")
    score, stale = _judge([*careful, old], data)
    assert [(memory.title, text) for memory, text in stale] == [
        ("Deploys", conversation.stale_retired)
    ]
    chatter = [
        Stored(title=f"Small talk {n}", body="Coffee machine is broken.", scope="user", type="fact")
        for n in range(12)
    ]
    score, stale = _judge([*careful, *chatter], data)
    assert stale == [] and not _passes(score, stale)
    assert "(unexpected)" in _report(score, stale, [], *_rates(score))


# The score, the stale memories, what leaked, and the report a developer reads.
Result = tuple[ItemScore, list[tuple[Stored, str]], list[str], str]


def _conversation_result(tmp_path: Path, name: str) -> Result:
    """Capture and process the two weeks as a host would; the score, the stale memories,
    what leaked, and the report a developer reads."""
    from memgit import MemoryRepo

    data = _load(name)
    values = _secret_values()
    path = tmp_path / "memory"
    MemoryRepo.init(path)
    with MemoryRepo.open(path) as repo:
        secrets, captured, messages = _capture_conversation(repo, data, values)
        stored = stored_memories(repo, captured, messages)

    score, stale = _judge(stored, data)
    credentials = [*data["credentials"], *sorted(secrets)]
    leaked = [
        f"memory {memory.title!r} holds {value[:6]}..."
        for memory in stored
        for value in credentials
        if value in memory.text
    ]
    objects = _all_objects(path)
    leaked += [
        f"a Git object holds {value[:6]}... ({_kind(value, data['credentials'])})"
        for value in credentials
        if value.encode("utf-8") in objects
    ]
    recall, precision = _rates(score)
    return score, stale, leaked, _report(score, stale, leaked, recall, precision)


@pytest.fixture(scope="module")
def two_weeks(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Result]:
    """Each conversation captured and processed once for the tests below (two weeks of
    processing is the slow part)."""
    done: dict[str, Result] = {}

    def result(name: str) -> Result:
        if name not in done:
            done[name] = _conversation_result(tmp_path_factory.mktemp("two-weeks"), name)
        return done[name]

    return result


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=NAMES)
def test_the_rules_gate_holds_its_ground_on_two_weeks(
    two_weeks: Callable[[str], Result], conversation: Conversation
) -> None:
    """No credential anywhere in Git, and no step back from where the Gate stands."""
    score, stale, leaked, report = two_weeks(conversation.name)
    recall, precision = _rates(score)
    assert not leaked, report
    assert recall >= conversation.floor_recall, report
    assert (precision or 0.0) >= conversation.floor_precision, report
    assert len(stale) <= conversation.floor_stale, report


@pytest.mark.parametrize(
    "name",
    ["conversation.yaml", "conversation-2.yaml"],
)
def test_default_gate_keeps_what_a_careful_person_would(
    two_weeks: Callable[[str], Result], name: str
) -> None:
    """Two weeks in, the memories are the current state: most of `expected`, none of
    `retired`, no chit-chat, and no credential anywhere in Git. The xfail is strict: once
    a conversation passes, its mark must go."""
    score, stale, leaked, report = two_weeks(name)
    if not _passes(score, stale) or leaked:
        pytest.fail(
            "the Gate's memories after two weeks are not what a careful person keeps\n" + report
        )
