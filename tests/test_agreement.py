"""A user's short agreement keeps the assistant's proposal, and nothing looser does.

"yes, do that" after "Shall I switch the tests to pytest?" is a decision. Each turn is
captured and processed as an agent host does it, so the proposal was already processed
when the reply comes: ``memgit process`` shows the Gate the session's previous turn as
context, the rules Gate keeps the proposal and quotes both, and the Gate contract and
the evidence hook accept a quote of the assistant only beside a quote of the user's
agreement in the turn right after it: at memgit's own write and at ``memgit verify``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_process import capture, memories, open_repo, run_records, turn

from memgit.evidence import EvidenceUnit
from memgit.gate.contract import GateOutputError, check_gate_output
from memgit.jsonio import json_data
from memgit.memory import Memory
from memgit.settings import DEFAULT_CONFIG, parse_settings

from support import git, memgit_cli

# (the assistant's turn, the user's reply, a word the memory must hold, its scope)
AGREED = [
    ("I looked at the suite. Shall I switch the tests to pytest?", "yes, do that", "pytest"),
    (
        "Should we use Postgres or MySQL for the orders service?",
        "sounds good, go with Postgres",
        "Postgres",
    ),
    ("Do you want me to add type hints to every new function?", "Yes please", "type hints"),
    ("¿Quieres que migre los tests a pytest?", "sí, hazlo", "pytest"),
    ("Soll ich die Tests auf pytest umstellen?", "ja, mach das", "pytest"),
    ("要不要把测试换成 pytest？", "好的就这么办", "pytest"),
    # A question that only points back: the proposal is the sentence before it.
    (
        "I can add a pre-commit hook that runs ruff. Want me to set that up?",
        "yes please",
        "pre-commit",
    ),
    (
        "Should the API return errors as RFC 7807 problem+json?",
        "yes please, that's what the mobile team expects anyway",
        "RFC 7807",
    ),
    ("For file names I'd go with kebab-case across the repo. Sound ok?", "sure thing", "kebab"),
    (
        "I'd put the shared types in packages/types so both apps import them. Should I?",
        "oh god yes please",
        "packages/types",
    ),
    (
        "Sollen Feature-Branches nach dem Merge automatisch gelöscht werden?",
        "klingt gut, machen wir so",
        "Feature-Branches",
    ),
    (
        "Para fechas propongo usar date-fns en lugar de moment. ¿Te parece?",
        "va, de acuerdo",
        "date-fns",
    ),
    # A reply too short to quote on its own is quoted whole, beside the proposal.
    ("Shall I switch the tests to pytest?", "ok", "pytest"),
    ("Should the CI cache the pip downloads between runs?", "👍", "pip"),
    ("Soll ich die Tests auf pytest umstellen?", "passt", "pytest"),
    ("要不要把测试换成 pytest？", "行", "pytest"),
]


def _proposal_then(repo_path: Path, proposal: str, *replies: str) -> list[Any]:
    """The assistant's turn (processed), then each reply captured and processed in turn."""
    capture(repo_path, turn(0, ("assistant", proposal)))
    runs = list(open_repo(repo_path).process().runs)
    for seq, reply in enumerate(replies, start=1):
        capture(repo_path, turn(seq, ("user", reply)))
        runs += open_repo(repo_path).process().runs
    return runs


def _verify(path: Path) -> tuple[int, str]:
    done = memgit_cli("-C", str(path), "verify", "--all")
    return done.returncode, done.stdout.decode() + done.stderr.decode()


@pytest.mark.parametrize(("proposal", "reply", "term"), AGREED, ids=range(len(AGREED)))
def test_a_short_agreement_keeps_the_proposal(
    repo_path: Path, proposal: str, reply: str, term: str
) -> None:
    """The memory states the proposal; its sources quote the user's reply and the
    proposal; the run record names the assistant's turn; every commit verifies."""
    (*_, run) = _proposal_then(repo_path, proposal, reply)
    (memory,) = memories(repo_path).values()
    assert term.lower() in f"{memory.title} {memory.body}".lower()
    assert memory.scope == "project" and memory.type == "decision"
    proposed = [s for s in proposal.split(". ") if term.lower() in s.lower()][-1]
    assert [(s.unit, s.quote) for s in memory.sources] == [
        ("test-agent/s1/1#0", reply),
        ("test-agent/s1/0#0", proposed if proposed.endswith(("?", "？", ".")) else proposed + "."),
    ]
    record = run_records(repo_path)[run.run_id]
    assert [item["path"].rsplit("/", 1)[-1] for item in record["inputs"]] == [
        "000000.yaml",
        "000001.yaml",
    ]
    assert _verify(repo_path)[0] == 0


def test_a_proposal_about_the_user_goes_to_the_user(repo_path: Path) -> None:
    _proposal_then(
        repo_path, "Should I keep my answers short for you from now on?", "yes, please do"
    )
    (memory,) = memories(repo_path).values()
    assert memory.scope == "user"
    assert "short" in memory.title


@pytest.mark.parametrize(
    ("proposal", "replies"),
    [
        ("Shall I switch the tests to pytest?", ["no, keep unittest"]),
        ("Shall I switch the tests to pytest?", ["hmm, let me think about it"]),
        ("Shall I switch the tests to pytest?", ["yes, but not now"]),
        ("Shall I switch the tests to pytest?", ["yes? what would change?"]),
        ("Shall I switch the tests to pytest?", ["thanks for looking", "yes, do that"]),
        ("Should we use Postgres or MySQL for the orders service?", ["yes, do that"]),
        ("Done. All 42 tests pass now.", ["yes, do that"]),
        ("Shall I scaffold a drizzle.config.ts for the local database?", ["yes please"]),
        ("¿Quieres que migre los tests a pytest?", ["no, mejor no"]),
        ("Soll ich die Tests auf pytest umstellen?", ["nein, lieber nicht"]),
        ("要不要把测试换成 pytest？", ["先不要"]),
        (
            "Want me to regenerate the OpenAPI client so it picks up the new endpoint?",
            ["sure, go ahead"],
        ),
        ("Soll ich den Cache jetzt einmal leeren?", ["ja, jetzt einmal bitte"]),
        ("要我现在帮你把这个分支合并到 main 吗？", ["好，现在合吧"]),
        # A proposal the credential fence refuses is no memory, and the run goes on.
        ("Shall I pin the build to commit 9f8e7d6c5b4a3f2e1d0c9b8a?", ["ok"]),
    ],
    ids=[
        "no",
        "hesitation",
        "but",
        "question",
        "not-the-turn-right-after",
        "a-choice-nobody-made",
        "no-proposal",
        "an-errand-for-this-turn",
        "es-no",
        "de-nein",
        "zh-not-yet",
        "an-errand-again",
        "de-just-this-once",
        "zh-an-errand",
        "looks-like-a-credential",
    ],
)
def test_what_is_not_an_agreement_keeps_nothing(
    repo_path: Path, proposal: str, replies: list[str]
) -> None:
    """An assistant's suggestion the user did not accept is never a memory."""
    _proposal_then(repo_path, proposal, *replies)
    assert memories(repo_path) == {}


@pytest.mark.parametrize(
    "proposal",
    [
        "Shall I always run the formatter before I show you code?",
        "Should I keep replies under about 10 lines unless you ask for more?",
        "Soll ich dir Code-Kommentare künftig auf Deutsch schreiben?",
    ],
)
def test_how_the_assistant_works_with_the_user_is_the_users(repo_path: Path, proposal: str) -> None:
    _proposal_then(repo_path, proposal, "yes please")
    (memory,) = memories(repo_path).values()
    assert memory.scope == "user"


def test_a_yes_with_an_amendment_keeps_the_proposal_as_amended(repo_path: Path) -> None:
    _proposal_then(
        repo_path,
        "I can wrap the feed fetches in tenacity: 3 attempts with exponential backoff. Shall I?",
        "yes, do it, but cap the backoff at 60s",
    )
    (memory,) = memories(repo_path).values()
    assert "exponential backoff" in memory.title + memory.body
    assert "60s" in memory.title + memory.body
    assert _verify(repo_path)[0] == 0


def test_an_agreement_then_a_fact_keeps_both(repo_path: Path) -> None:
    """ "yes please. the local dev db is ...": the sentence after the agreement is a
    statement of its own, and is kept beside the agreed proposal."""
    _proposal_then(
        repo_path,
        "Shall I switch the tests to pytest from now on?",
        "yes please. the local dev db is postgres://app@localhost:5432/app_dev",
    )
    found = sorted(m.title for m in memories(repo_path).values())
    assert len(found) == 2, found
    assert any("pytest" in title for title in found)
    assert any("app_dev" in title for title in found)
    assert _verify(repo_path)[0] == 0


# ---------------------------------------------------------------- the contract

SETTINGS = parse_settings(DEFAULT_CONFIG)
PROPOSAL = "Shall I switch the tests to pytest?"


def _unit(uid: str, role: str, text: str) -> EvidenceUnit:
    return EvidenceUnit(
        id=uid,
        capture=f"inbox/t/00/{uid.split('/')[1]}/{uid.split('/')[2].split('#')[0]}.yaml",
        blob="0" * 40,
        index=int(uid.rsplit("#", 1)[1]),
        role=role,
        text=text,
        can_support=role == "user",
        timestamp="2026-11-30T10:00:00Z",
    )


UNITS = {
    u.id: u
    for u in (
        _unit("t/s/4#0", "user", "the tests are slow, any ideas"),
        _unit("t/s/4#1", "assistant", PROPOSAL),
        _unit("t/s/4#2", "user", "yes, do that (same turn)"),
        _unit("t/s/5#0", "user", "yes, do that"),
        _unit("t/s/6#0", "user", "yes, do that later"),
        _unit("t/o/5#0", "user", "yes, do that elsewhere"),
    )
}


def _answer(
    user: str | None, assistant: str | None = "t/s/4#1", units: dict[str, EvidenceUnit] = UNITS
) -> dict[str, Any]:
    """One candidate quoting the proposal (``assistant``) and the user unit ``user``."""
    claims = []
    if assistant is not None:
        claims.append({"unit_id": assistant, "quote": PROPOSAL, "role": "source_excerpt"})
    if user is not None:
        quote = units[user].text
        claims.insert(0, {"unit_id": user, "quote": quote, "role": "user_confirmation"})
    coverage = [
        {"unit_id": uid, "decision": "CANDIDATE", "candidate_ids": ["c1"]}
        if uid == user
        else {"unit_id": uid, "decision": "NO_CHANGE", "reason": "no-durable-content"}
        for uid, unit in units.items()
        if unit.can_support
    ]
    return {
        "candidates": [
            {
                "candidate_id": "c1",
                "action": "CREATE",
                "type": "decision",
                "scope": "project",
                "title": "Switch the tests to pytest",
                "body": "Switch the tests to pytest.",
            }
        ],
        "coverage": coverage,
        "evidence_bindings": [{"candidate_id": "c1", "claims": claims}],
    }


def _check(answer: dict[str, Any], units: dict[str, EvidenceUnit] = UNITS) -> set[str]:
    try:
        check_gate_output(
            json.dumps(answer), units=units, settings=SETTINGS, target_state=lambda _: "unknown"
        )
    except GateOutputError as err:
        return {problem.code for problem in err.problems}
    return set()


def test_the_contract_accepts_a_proposal_beside_the_agreement_right_after() -> None:
    assert _check(_answer("t/s/5#0")) == set()


@pytest.mark.parametrize(
    "user",
    [None, "t/s/4#0", "t/s/4#2", "t/s/6#0", "t/o/5#0"],
    ids=["alone", "the-turn-itself", "later-in-the-turn", "two-turns-on", "another-session"],
)
def test_the_contract_refuses_a_proposal_without_the_agreement_right_after(
    user: str | None,
) -> None:
    codes = _check(_answer(user))
    assert "proposal-without-agreement" in codes


def test_a_bare_yes_is_quoted_whole_and_only_beside_the_proposal() -> None:
    """A reply under the quote minimum ("yes", 行) carries the proposal's memory when it
    is the whole reply; alone, or as a part of a longer reply, it is too short."""
    units = {**UNITS, "t/s/5#0": _unit("t/s/5#0", "user", "yes")}
    assert _check(_answer("t/s/5#0", units=units), units) == set()
    assert "quote-too-short" in _check(_answer("t/s/5#0", assistant=None, units=units), units)
    longer = {**UNITS, "t/s/5#0": _unit("t/s/5#0", "user", "yes. and the CI too")}
    part = _answer("t/s/5#0", units=longer)
    part["evidence_bindings"][0]["claims"][0]["quote"] = "yes"
    assert "quote-too-short" in _check(part, longer)


def test_only_the_assistant_may_be_quoted_so() -> None:
    """A system message or a cut-short observation stays context, agreement or not."""
    units = dict(UNITS)
    units["t/s/4#1"] = EvidenceUnit(**{**_asdict(UNITS["t/s/4#1"]), "role": "system"})
    with pytest.raises(GateOutputError) as caught:
        check_gate_output(
            json.dumps(_answer("t/s/5#0")),
            units=units,
            settings=SETTINGS,
            target_state=lambda _: "unknown",
        )
    assert "unit-cannot-support" in {p.code for p in caught.value.problems}


def _asdict(unit: EvidenceUnit) -> dict[str, Any]:
    return {name: getattr(unit, name) for name in EvidenceUnit.__slots__}


# ---------------------------------------------------------------- the hook at verify


def _human_copy(path: Path, memory: Memory, sources: list[dict[str, Any]], memory_id: str) -> str:
    """A person's memory (origin: human) with ``sources``, committed with git."""
    front = {
        "id": memory_id,
        "type": "decision",
        "scope": "project",
        "title": memory.title,
        "status": "active",
        "created": "2026-11-30T12:00:00Z",
        "updated": "2026-11-30T12:00:00Z",
        "origin": "human",
        "author": "Test Person",
        "sources": sources,
    }
    at = f"memories/project/{memory_id[:2]}/{memory_id}.md"
    (path / at).parent.mkdir(parents=True, exist_ok=True)
    (path / at).write_text(
        "---\n" + json.dumps(front, ensure_ascii=False, indent=1) + "\n---\n" + memory.body,
        "utf-8",
    )
    git(path, "add", "--", at)
    git(path, "commit", "-q", "--no-verify", "-m", f"memory {memory_id} by hand")
    return at


def test_verify_holds_a_persons_commit_to_the_same_rule(repo_path: Path) -> None:
    """A memory quoting the proposal beside the agreement verifies; one quoting the
    proposal alone, or beside a reply two turns later, fails as source-not-evidence."""
    _proposal_then(repo_path, PROPOSAL, "yes, do that", "yes, do that again")
    (memory,) = memories(repo_path).values()
    agreed, proposed = json_data(memory.sources)
    _human_copy(repo_path, memory, [agreed, proposed], "agreedbyhand")
    status, output = _verify(repo_path)
    assert status == 0, output

    later = {**agreed, "unit": "test-agent/s1/2#0", "quote": "yes, do that again"}
    later["capture"] = agreed["capture"].replace("000001", "000002")
    later["blob"] = git(repo_path, "rev-parse", f"HEAD:{later['capture']}").strip()
    for memory_id, sources in (("proposalonly", [proposed]), ("twoturnslate", [later, proposed])):
        at = _human_copy(repo_path, memory, sources, memory_id)
        status, output = _verify(repo_path)
        assert status == 1
        assert "error[source-not-evidence]: " in output and at in output
        git(repo_path, "reset", "-q", "--hard", "HEAD~1")


def test_verify_takes_a_bare_yes_only_beside_the_proposal(repo_path: Path) -> None:
    """A memory quoting a whole "ok" reply beside the proposal verifies; the same quote
    alone is too short to carry a claim."""
    _proposal_then(repo_path, PROPOSAL, "ok")
    (memory,) = memories(repo_path).values()
    agreed, proposed = json_data(memory.sources)
    assert agreed["quote"] == "ok"
    _human_copy(repo_path, memory, [agreed, proposed], "bareokbyhand")
    status, output = _verify(repo_path)
    assert status == 0, output
    at = _human_copy(repo_path, memory, [agreed], "okalonebyhand")
    status, output = _verify(repo_path)
    assert status == 1
    assert "error[quote-too-short]: " in output and at in output
