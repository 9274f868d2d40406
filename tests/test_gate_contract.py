"""The Gate contract (``check_gate_output``) on hand-built evidence units.

One passing answer per action, one refused answer per evidence_check code (the
code and the field it names), and a fuzz proving that no answer, however
malformed, raises anything but ``GateOutputError``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memgit.errors import ExitStatus
from memgit.evidence import EvidenceUnit
from memgit.gate.contract import EVIDENCE_CHECKS, GateOutput, GateOutputError, check_gate_output
from memgit.settings import DEFAULT_CONFIG, parse_settings

SETTINGS = parse_settings(DEFAULT_CONFIG)
ACTIVE = "act1ve000001"
ACTIVE_2 = "act1ve000002"
RETIRED = "ret1red00001"
# A string that appears in answers only: no problem may ever repeat it.
MARKER = "ZQXJ-model-only-text"


def _unit(uid: str, role: str, text: str, *, complete: bool | None = None) -> EvidenceUnit:
    supports = bool(text.strip()) and (role == "user" or (role == "tool" and complete is True))
    return EvidenceUnit(
        id=uid,
        capture=f"inbox/t/00/s/{uid[-3]}.yaml",
        blob="0" * 40,
        index=int(uid.rsplit("#", 1)[1]),
        role=role,
        text=text,
        can_support=supports,
        timestamp="2026-11-30T10:00:00Z",
    )


USER = "t/s/0#0"
ASSISTANT = "t/s/0#1"
TOOL = "t/s/0#2"
TOOL_CUT = "t/s/0#3"
USER_2 = "t/s/1#0"
# Units an earlier run decided, or deferred too often: not this run's to answer for.
DECIDED = "t/s/2#0"
STUCK = "t/s/3#0"
CLOSED = {DECIDED: "unit-already-covered", STUCK: "unit-stuck"}
UNITS = {
    u.id: u
    for u in (
        _unit(USER, "user", "Remember that the build uses make. I like tea. I like tea."),
        _unit(ASSISTANT, "assistant", "Sure, remember that the build uses ninja."),
        _unit(TOOL, "tool", "pytest: 42 passed in 1.2s", complete=True),
        _unit(TOOL_CUT, "tool", "pytest: 41 passed, output cut", complete=False),
        _unit(USER_2, "user", "From now on, run the linter before every commit."),
        _unit(DECIDED, "user", "Remember that the build uses make."),
        _unit(STUCK, "user", "Maybe the other one."),
    )
}
SUPPORTING = [USER, TOOL, USER_2]


def target_state(memory_id: str) -> str:
    return {ACTIVE: "active", ACTIVE_2: "active", RETIRED: "retired"}.get(memory_id, "unknown")


# What the active memories say: a SUPERSEDE or RETRACT must quote something about it.
TARGET_TEXTS = {
    ACTIVE: "The test suite\n42 passed last time. I like tea. Run the linter before commits.",
    ACTIVE_2: "Deploys\nDeploys happen on Fridays.",
}


def check(answer: Any) -> GateOutput:
    return check_gate_output(
        answer,
        units=UNITS,
        settings=SETTINGS,
        target_state=target_state,
        closed=CLOSED,
        target_text=TARGET_TEXTS.get,
    )


def claim(unit: str, quote: str, role: str = "assertion", **offsets: int) -> dict[str, Any]:
    return {"unit_id": unit, "quote": quote, "role": role, **offsets}


def answer_with(candidate: dict[str, Any], claims: list[dict[str, Any]]) -> dict[str, Any]:
    """One candidate ``c1`` supported by ``claims``; every other supporting unit NO_CHANGE."""
    used = {c["unit_id"] for c in claims}
    coverage = [
        {"unit_id": u, "decision": "CANDIDATE", "candidate_ids": ["c1"]}
        if u in used
        else {"unit_id": u, "decision": "NO_CHANGE", "reason": "no-durable-content"}
        for u in SUPPORTING
    ]
    return {
        "candidates": [{"candidate_id": "c1", **candidate}],
        "coverage": coverage,
        "evidence_bindings": [{"candidate_id": "c1", "claims": claims}],
    }


def create() -> dict[str, Any]:
    return answer_with(
        {
            "action": "CREATE",
            "type": "fact",
            "scope": "project/build",
            "title": "The build uses make",
            "body": f"The build uses make. {MARKER}",
            "tags": ["build"],
        },
        [claim(USER, "the build uses make")],
    )


PASSING: dict[str, dict[str, Any]] = {
    "CREATE": create(),
    "UPDATE": answer_with(
        {
            "action": "UPDATE",
            "target": ACTIVE,
            "type": "procedure",
            "scope": "user",
            "title": "Lint before committing",
            "body": "Run the linter before every commit.",
        },
        [claim(USER_2, "run the linter before every commit")],
    ),
    "SUPERSEDE": answer_with(
        {
            "action": "SUPERSEDE",
            "target": ACTIVE,
            "type": "fact",
            "scope": "project",
            "title": "The suite has 42 tests",
            "body": "42 tests pass.",
        },
        [claim(TOOL, "42 passed", "source_excerpt")],
    ),
    "RETRACT": answer_with(
        {"action": "RETRACT", "target": ACTIVE},
        [claim(USER, "I like tea", "user_confirmation", start=35, end=45)],
    ),
}


@pytest.mark.parametrize("action", sorted(PASSING))
def test_one_valid_answer_of_each_action_passes(action: str) -> None:
    """A well-formed answer of each action validates, with its claims resolved to offsets."""
    answer = PASSING[action]
    result = check(json.dumps(answer))
    assert [c.action for c in result.candidates] == [action]
    (candidate,) = result.candidates
    (resolved,) = candidate.claims
    quote = answer["evidence_bindings"][0]["claims"][0]["quote"]
    assert UNITS[resolved.unit_id].text[resolved.start : resolved.end] == quote
    assert set(result.decisions) == set(SUPPORTING)
    assert result.raw == answer


def test_an_answer_may_be_given_as_text_bytes_or_a_parsed_object() -> None:
    """Text, UTF-8 bytes and an already parsed dict give the same validated result."""
    answer = create()
    results = [check(json.dumps(answer)), check(json.dumps(answer).encode()), check(answer)]
    assert results[0] == results[1] == results[2]


def test_a_run_without_supporting_units_accepts_an_empty_answer() -> None:
    """With only assistant text and cut-short output there is nothing to cover."""
    units = {u: UNITS[u] for u in (ASSISTANT, TOOL_CUT)}
    empty = {"candidates": [], "coverage": [], "evidence_bindings": []}
    result = check_gate_output(empty, units=units, settings=SETTINGS, target_state=target_state)
    assert result.candidates == () and result.decisions == {}


Mutation = Callable[[dict[str, Any]], Any]


def _second_candidate(a: dict[str, Any], **fields: Any) -> None:
    """Add candidate c2 backed by the linter sentence of USER_2."""
    a["candidates"].append({"candidate_id": "c2", **fields})
    a["coverage"][2] = {"unit_id": USER_2, "decision": "CANDIDATE", "candidate_ids": ["c2"]}
    a["evidence_bindings"].append(
        {"candidate_id": "c2", "claims": [claim(USER_2, "run the linter")]}
    )


def _update(a: dict[str, Any], target: str) -> None:
    a["candidates"][0].update(action="UPDATE", target=target)


def _set(path: str, value: Any) -> Mutation:
    """Mutation setting ``a[k1][k2]...`` (keys separated by '.'; digits index lists)."""

    def mutate(a: dict[str, Any]) -> None:
        *parents, leaf = [int(k) if k.isdigit() else k for k in path.split(".")]
        node: Any = a
        for key in parents:
            node = node[key]
        node[leaf] = value

    return mutate


def _do(*steps: Mutation) -> Mutation:
    def mutate(a: dict[str, Any]) -> None:
        for step in steps:
            step(a)

    return mutate


def _fenced(a: dict[str, Any]) -> str:
    return "```json\n" + json.dumps(a) + "\n```"


# code -> (how to break the valid CREATE answer, the field the problem must name)
FAILING: dict[str, tuple[Mutation, str | None]] = {
    "not-json": (_fenced, None),
    "schema": (lambda a: a["candidates"][0].pop("action"), "candidates[0].action"),
    "duplicate-candidate": (
        lambda a: a["candidates"].append(copy.deepcopy(a["candidates"][0])),
        "candidates[1].candidate_id",
    ),
    "unknown-type": (_set("candidates.0.type", "opinion"), "candidates[0].type"),
    "unknown-scope": (_set("candidates.0.scope", "team/build"), "candidates[0].scope"),
    "unknown-target": (lambda a: _update(a, "n0such0memory"), "candidates[0].target"),
    "retired-target": (lambda a: _update(a, RETIRED), "candidates[0].target"),
    "duplicate-target": (
        lambda a: (
            _update(a, ACTIVE),
            _second_candidate(
                a, action="RETRACT", target=ACTIVE, type="fact", scope="user", title="x", body="x"
            ),
        ),
        "candidates[1].target",
    ),
    "unknown-unit": (
        lambda a: a["coverage"].append(
            {"unit_id": "t/s/9#0", "decision": "NO_CHANGE", "reason": "transient"}
        ),
        "coverage[3].unit_id",
    ),
    "unit-cannot-support": (
        _set("evidence_bindings.0.claims.0", claim(TOOL_CUT, "41 passed, output cut")),
        "evidence_bindings[0].claims[0].unit_id",
    ),
    # The assistant beside the user of the same turn, not of the turn right after.
    "proposal-without-agreement": (
        lambda a: a["evidence_bindings"][0]["claims"].append(
            claim(ASSISTANT, "the build uses ninja")
        ),
        "evidence_bindings[0].claims[1].unit_id",
    ),
    "duplicate-coverage": (
        lambda a: a["coverage"].append(copy.deepcopy(a["coverage"][1])),
        "coverage[3].unit_id",
    ),
    "incomplete-coverage": (lambda a: a["coverage"].pop(1), "coverage"),
    "unit-already-covered": (
        lambda a: a["coverage"].append(
            {"unit_id": DECIDED, "decision": "NO_CHANGE", "reason": "already-known"}
        ),
        "coverage[3].unit_id",
    ),
    "unit-stuck": (
        _set("evidence_bindings.0.claims.0", claim(STUCK, "the other one")),
        "evidence_bindings[0].claims[0].unit_id",
    ),
    "unknown-candidate": (
        _set("coverage.0.candidate_ids", ["c1", "c9"]),
        "coverage[0].candidate_ids[1]",
    ),
    "duplicate-binding": (
        lambda a: a["evidence_bindings"].append(copy.deepcopy(a["evidence_bindings"][0])),
        "evidence_bindings[1].candidate_id",
    ),
    "quote-too-short": (
        _set("evidence_bindings.0.claims.0.quote", "make"),
        "evidence_bindings[0].claims[0].quote",
    ),
    "evidence-unrelated-to-target": (
        _set("candidates.0", {"candidate_id": "c1", "action": "RETRACT", "target": ACTIVE_2}),
        "candidates[0].target",
    ),
    "quote-not-found": (
        _set("evidence_bindings.0.claims.0.quote", f"the build uses {MARKER}"),
        "evidence_bindings[0].claims[0].quote",
    ),
    "quote-ambiguous": (
        _set("evidence_bindings.0.claims.0.quote", "I like tea"),
        "evidence_bindings[0].claims[0].quote",
    ),
    "quote-offsets-mismatch": (
        _do(
            _set("evidence_bindings.0.claims.0.start", 0),
            _set("evidence_bindings.0.claims.0.end", 19),
        ),
        "evidence_bindings[0].claims[0].quote",
    ),
    "confirmation-not-from-user": (
        _do(
            _set("evidence_bindings.0.claims.0", claim(TOOL, "42 passed", "user_confirmation")),
            _set("coverage.0", {"unit_id": USER, "decision": "NO_CHANGE", "reason": "transient"}),
            _set("coverage.1", {"unit_id": TOOL, "decision": "CANDIDATE", "candidate_ids": ["c1"]}),
        ),
        "evidence_bindings[0].claims[0].role",
    ),
    "no-evidence": (
        lambda a: a["candidates"].append(
            {
                "candidate_id": "c2",
                "action": "CREATE",
                "type": "fact",
                "scope": "user",
                "title": f"Unsupported {MARKER}",
                "body": "Nobody said this.",
            }
        ),
        "candidates[1]",
    ),
    "coverage-contradicts-bindings": (
        _set("coverage.0", {"unit_id": USER, "decision": "NO_CHANGE", "reason": "transient"}),
        "coverage",
    ),
    # Built at run time, so this file holds no credential.
    "credential-in-memory": (
        _set("candidates.0.title", f"{MARKER} laptop password is " + "Qv7m&" + "Tr4z"),
        "candidates[0].title",
    ),
}


# A claim that fails one of these is dropped, which leaves its candidate without
# evidence and its coverage row naming a candidate that quotes nothing from it.
CLAIM_CHECKS = {
    "unit-stuck",
    "quote-too-short",
    "quote-not-found",
    "quote-ambiguous",
    "quote-offsets-mismatch",
    "unit-cannot-support",
}
UNSUPPORTED = {"no-evidence", "coverage-contradicts-bindings"}


def test_every_evidence_check_has_a_failing_case() -> None:
    """The table below covers EVIDENCE_CHECKS exactly: a new code needs a new case."""
    assert set(FAILING) == set(EVIDENCE_CHECKS)


@pytest.mark.parametrize("code", sorted(FAILING))
def test_each_evidence_check_refuses_with_its_code_and_field(code: str) -> None:
    """Breaking one rule refuses the answer with exactly that code, naming the field."""
    mutate, field = FAILING[code]
    answer = create()
    result = mutate(answer)
    text = result if mutate is _fenced else json.dumps(answer)
    with pytest.raises(GateOutputError) as caught:
        check(text)
    err = caught.value
    assert err.code == "gate-rejected"
    assert err.exit_status == ExitStatus.INVALID_INPUT
    expected = {code} | (UNSUPPORTED if code in CLAIM_CHECKS else set())
    assert {p.code for p in err.problems} == expected
    if field is not None:
        assert field in [p.field for p in err.problems]
    assert f"{code} x" in err.message
    # Problems carry allowlisted codes and our own words, never the model's text.
    for problem in err.problems:
        assert MARKER not in f"{problem.message} {problem.field} {problem.hint}"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "null",
        "[]",
        '"just a string"',
        "42",
        "Here is the JSON: {}",
        '{"candidates": [], "coverage": [], "evidence_bindings": []} trailing',
        '{"candidates": [], "candidates": [], "coverage": [], "evidence_bindings": []}',
        '{"candidates": NaN}',
        "\ufeff{}",
        "```\n{}\n```",
    ],
)
def test_answers_that_are_not_one_json_object_are_not_json(text: str) -> None:
    """Prose, fences, scalars, arrays, trailing text and empty answers are all not-json."""
    with pytest.raises(GateOutputError) as caught:
        check(text)
    assert [p.code for p in caught.value.problems] == ["not-json"]


def test_every_problem_of_an_answer_is_reported_at_once() -> None:
    """A backend's correction round needs all failures, not just the first."""
    answer = create()
    answer["candidates"][0]["type"] = "opinion"
    answer["evidence_bindings"][0]["claims"][0]["quote"] = "a forged claim"
    answer["coverage"].pop(2)
    with pytest.raises(GateOutputError) as caught:
        check(answer)
    assert {p.code for p in caught.value.problems} == {
        "unknown-type",
        "quote-not-found",
        "incomplete-coverage",
        *UNSUPPORTED,
    }


# ---------------------------------------------------------------- fuzz

JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=20,
)
UNIT_IDS = st.sampled_from([*UNITS, "t/s/9#0", ""])
QUOTES = st.sampled_from(
    ["the build uses make", "I like tea", "42 passed", "ninja", "run the linter", "", "x"]
)
IDS = st.sampled_from(["c1", "c2", "c3", "-bad", ""])
TARGETS = st.sampled_from([ACTIVE, ACTIVE_2, RETIRED, "n0such0memory", "../../memgit"])


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(None), strategy)


def _drop_none(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


CANDIDATE = st.builds(
    _drop_none,
    candidate_id=IDS,
    action=st.sampled_from(["CREATE", "UPDATE", "SUPERSEDE", "RETRACT", "DELETE"]),
    target=_maybe(TARGETS),
    type=_maybe(st.sampled_from(["fact", "preference", "opinion"])),
    scope=_maybe(st.sampled_from(["user", "project/x", "team", "../../.git"])),
    title=_maybe(st.text(max_size=8)),
    body=_maybe(st.text(max_size=8)),
    tags=_maybe(st.lists(st.sampled_from(["a", "b", "../x"]), max_size=2)),
)
COVERAGE = st.builds(
    _drop_none,
    unit_id=UNIT_IDS,
    decision=st.sampled_from(["CANDIDATE", "NO_CHANGE", "DEFERRED"]),
    candidate_ids=_maybe(st.lists(IDS, max_size=2, unique=True)),
    reason=_maybe(st.sampled_from(["transient", "already-known", "because"])),
)
CLAIM = st.builds(
    _drop_none,
    unit_id=UNIT_IDS,
    quote=QUOTES,
    role=st.sampled_from(["assertion", "source_excerpt", "user_confirmation"]),
    start=_maybe(st.integers(-2, 70)),
    end=_maybe(st.integers(-2, 70)),
)
BINDING = st.builds(
    lambda cid, claims: {"candidate_id": cid, "claims": claims},
    IDS,
    st.lists(CLAIM, max_size=3),
)
SHAPED = st.fixed_dictionaries(
    {
        "candidates": st.lists(CANDIDATE, max_size=3),
        "coverage": st.lists(COVERAGE, max_size=5),
        "evidence_bindings": st.lists(BINDING, max_size=3),
    }
)


def _only_refusals(answer: Any) -> None:
    try:
        result = check(answer)
    except GateOutputError as err:
        assert err.problems, "a refusal names at least one problem"
        assert {p.code for p in err.problems} <= set(EVIDENCE_CHECKS)
    else:
        assert isinstance(result, GateOutput)


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(JSONISH)
def test_fuzz_any_json_value_as_text_is_refused_or_accepted(value: Any) -> None:
    """Any JSON value sent as text: a GateOutputError with known codes, or a valid result."""
    _only_refusals(json.dumps(value))


@FUZZ
@given(st.dictionaries(st.text(max_size=12), JSONISH, max_size=4))
def test_fuzz_any_parsed_object_is_refused_or_accepted(value: dict[str, Any]) -> None:
    """Any parsed JSON object handed over directly (the host API) is checked just as safely."""
    _only_refusals(value)


@FUZZ
@given(st.text(max_size=200) | st.binary(max_size=200))
def test_fuzz_any_text_or_bytes_is_refused_or_accepted(value: str | bytes) -> None:
    """Arbitrary text and bytes, including invalid UTF-8 and surrogates, only ever refuse."""
    _only_refusals(value)


@FUZZ
@given(SHAPED)
def test_fuzz_nearly_valid_answers_reach_the_code_checks_safely(value: dict[str, Any]) -> None:
    """Schema-shaped answers with wrong ids, quotes and offsets exercise every code check."""
    _only_refusals(value)
    _only_refusals(json.dumps(value))
