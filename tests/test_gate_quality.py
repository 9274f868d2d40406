"""The Gate quality set and its harness: the set is sound, the scorer counts right, and
the harness scores any backend.

The set (``tests/gate_quality/development/*.yaml`` and ``heldout/*.yaml``) is checked
against its schema and its own rules (size, languages, categories in each half, every
key term present in its expected text, changes of mind naming what they replace). The
scorer (``bench/gate_score.py``) is checked on hand-made stored/expected pairs with
known numbers. The harness (``bench/gate_quality.py``) runs a few items against a real
OpenAI-compatible HTTP server on 127.0.0.1: one that answers the labelled memories
scores precision and recall 1.0, one that answers junk scores 0, one that quotes what
the user did not say scores 0 however right its words, and a credential in any Git
object is counted, so the numbers come from what the backend stored, not from the
harness. The checks on the held-out half report counts and ids only, never its text.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from scripted_server import RecordedRequest, Reply, ScriptedServer, chat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import gate_quality  # noqa: E402
from gate_score import Expected, Stored, Tally, occurs, score_item, term_found  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")
# One item of each shape: a project fact, a Chinese fact, two memories in one message,
# a correction (two messages, the second supersedes), and one expecting nothing.
HARNESS_ITEMS = ("en-014", "zh-011", "en-048", "en-067", "en-081")
CATEGORIES = set(
    json.loads((ROOT / "tests" / "gate_quality" / "set.schema.json").read_text("utf-8"))["$defs"][
        "item"
    ]["properties"]["category"]["enum"]
)
NOTHING_TO_KEEP = {
    "question",
    "small-talk",
    "one-off",
    "example",
    "hypothetical",
    "quoted",
    "this-turn",
    "transient",
    "joke",
    "unaccepted",
    "code",
    "tool-output",
}
HELDOUT = ROOT / "tests" / "gate_quality" / "heldout"
needs_heldout = pytest.mark.skipif(
    not any(HELDOUT.glob("*.yaml")), reason="the held-out half has not landed on this branch"
)


@pytest.fixture(scope="module")
def items() -> list[gate_quality.Item]:
    """The development half: the items the harness tests below run."""
    return gate_quality.load_items()


@pytest.fixture(scope="module")
def every_item() -> list[gate_quality.Item]:
    """Both halves (whatever of the held-out half is on this branch)."""
    return gate_quality.load_items(half="both")


def _raw_items() -> list[dict[str, Any]]:
    raw: list[dict[str, Any]] = []
    for path in gate_quality.half_files("both"):
        loaded = yaml.safe_load(path.read_text("utf-8"))
        assert isinstance(loaded, list), path
        raw += loaded
    return raw


# ---------------------------------------------------------------- the set


def test_every_file_is_valid_and_ids_are_unique_over_all_files(tmp_path: Path) -> None:
    """load_items validates each file against the schema and refuses an id used twice."""
    files = gate_quality.half_files("both")
    assert len(files) >= 5
    ids = [entry["id"] for entry in _raw_items()]
    assert [name for name, count in Counter(ids).items() if count > 1] == []
    gate_quality.load_items(files)
    twice = tmp_path / "twice.yaml"
    twice.write_text(
        yaml.safe_dump(
            [
                {
                    "id": "en-001",
                    "lang": "en",
                    "category": "question",
                    "messages": ["Why?"],
                    "expect": [],
                }
            ]
        ),
        "utf-8",
    )
    with pytest.raises(ValueError, match="id en-001 is already used in"):
        gate_quality.load_items([gate_quality.DATA / "development" / "original.yaml", twice])
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump([{"id": "en-1", "lang": "en"}]), "utf-8")
    with pytest.raises(ValueError, match=r"bad\.yaml"):
        gate_quality.load_items(bad)


def test_the_development_half_covers_every_category_and_language(
    items: list[gate_quality.Item],
) -> None:
    assert {item.half for item in items} == {"development"}
    assert {item.category for item in items} == CATEGORIES
    counts = Counter(item.lang for item in items)
    assert counts["es"] >= 35 and counts["de"] >= 35 and counts["zh"] >= 40, counts
    assert sum(item.control for item in items) >= 4
    assert sum(bool(item.credentials) for item in items) >= 8


@needs_heldout
def test_the_set_is_big_enough_and_each_half_has_every_category(
    every_item: list[gate_quality.Item],
) -> None:
    assert len(every_item) >= 400
    languages = Counter(item.lang for item in every_item)
    for language in ("zh", "es", "de"):
        assert languages[language] >= 40, (language, languages[language])
    for half in gate_quality.HALVES:
        present = {item.category for item in every_item if item.half == half}
        assert sorted(CATEGORIES - present) == [], half


def test_every_key_term_occurs_in_its_expected_text() -> None:
    for entry in _raw_items():
        for want in entry["expect"]:
            for term in want["terms"]:
                choice = term if isinstance(term, str) else tuple(term)
                assert term_found(choice, want["text"]), (entry["id"], term)
        for old in entry.get("supersedes", ()):
            for term in old["terms"]:
                choice = term if isinstance(term, str) else tuple(term)
                assert term_found(choice, old["text"]), (entry["id"], term)


def test_languages_changes_and_credentials_are_what_they_say(
    every_item: list[gate_quality.Item],
) -> None:
    for item in every_item:
        text = " ".join(message.content for message in item.messages)
        if item.lang != "zh":
            assert not CJK.search(text), item.id
        elif item.category not in ("tool-output", "code"):  # a paste has no language
            assert CJK.search(text), item.id
        if item.category in ("correction", "change"):
            assert len(item.messages) >= 2 and item.replaced and item.expected, item.id
        for value in item.credentials:
            assert value in text, item.id
        if re.match(r"[a-z0-9]+-", item.id) is not None and not item.id.startswith(
            ("en-", "zh-", "es-", "de-")
        ):
            assert item.id.split("-")[1] == item.lang, item.id


def test_categories_agree_with_their_labels(every_item: list[gate_quality.Item]) -> None:
    """An item of a nothing-to-keep category expects nothing, any other expects something
    (a secret may sit beside a fact worth keeping)."""
    for item in every_item:
        if item.category in NOTHING_TO_KEEP:
            assert not item.expected, item.id
        elif item.category != "secret":
            assert item.expected, item.id
        if item.control:
            assert len(item.expected) >= 2 and len(item.messages) >= 2, item.id


def test_secrets_are_placeholders_filled_in_at_load(items: list[gate_quality.Item]) -> None:
    """The set files hold no secret-shaped string; the loaded messages do, and each filled-in
    value is one of its item's credentials."""
    text = "\n".join(path.read_text("utf-8") for path in gate_quality.half_files("development"))
    placeholders = re.findall(r"\{secret:([a-z-]+)\}", text)
    assert len(placeholders) >= 5
    assert all("{secret:" not in m.content for item in items for m in item.messages)
    values = gate_quality._secret_values()
    assert all(values[kind] in text_of(items) for kind in placeholders)
    for item in items:
        for kind in placeholders:
            if values[kind] in " ".join(m.content for m in item.messages):
                assert values[kind] in item.credentials, item.id


def text_of(items: list[gate_quality.Item]) -> str:
    return "\n".join(m.content for item in items for m in item.messages)


def _raw_set() -> list[dict[str, Any]]:
    return _raw_items()


# ---------------------------------------------------------------- the scorer


@pytest.mark.parametrize(
    ("term", "text", "found"),
    [
        ("Python 3.11", "CI must run on Python 3.11 and 3.12.", True),
        ("Python 3.11", "CI must run on Python 3", False),
        ("3.1", "Python 3.12", False),
        ("3.12", "Python 3.12.", True),
        ("api.example.com", "The API lives at api", False),
        ("Alex", "Call me Alexandra", False),
        ("2.0.0", "from v2.0.0 on", True),
        ("1.26", "numpy 1.26.x", True),
        ("10", "10,485,760 bytes", False),
        ("20", "since 2020", False),
        ("make lint test", "Run `make   lint\ntest` first", True),
        ("PYTEST", "prefers pytest", True),
        ("pytest", "prefers pytest-xdist", True),
        ("test", "prefers pytest", False),
        ("两个空格", "习惯用两个空格缩进", True),
        ("UTC+8", "时区是 UTC+8。", True),
    ],
)
def test_a_term_occurs_only_unbroken(term: str, text: str, found: bool) -> None:
    assert occurs(term, text) is found


def test_alternatives_need_any_one() -> None:
    assert term_found(("short", "concise"), "Keep answers concise.")
    assert not term_found(("short", "concise"), "Keep answers shorter.")


def want(text: str, *terms: str | tuple[str, ...], scope: str = "project") -> Expected:
    return Expected(text=text, scope=scope, type="fact", terms=tuple(terms))


def stored(title: str, scope: str = "project", body: str = "", kind: str = "fact") -> Stored:
    return Stored(title=title, body=body or title, scope=scope, type=kind)


def test_the_scorer_gives_known_numbers() -> None:
    ci = want("CI runs on Python 3.11 and 3.12.", "3.11", "3.12")
    api = want("The API lives at api.example.com.", "api.example.com")
    pnpm = want("The repository uses pnpm.", "pnpm")
    name = want("The user is Dana.", "Dana", scope="user")
    scores = [
        # two expected: one stored right, one cut at the dot
        score_item(
            [stored("CI runs on Python 3.11 and 3.12"), stored("The API lives at api")], [ci, api]
        ),
        # nothing expected: a question stored anyway
        score_item([stored("What is a tuple")], []),
        # a correction: the old memory kept beside the new one
        score_item([stored("Uses yarn"), stored("Uses pnpm now")], [pnpm], replaced=[("yarn",)]),
        # right terms, wrong scope; and the same memory twice
        score_item([stored("The user is Dana", scope="project")], [name]),
        score_item([stored("Uses pnpm", scope="project/web"), stored("pnpm it is")], [pnpm]),
        # nothing stored, one expected
        score_item([], [api]),
    ]
    kinds = [[v.kind for v in score.verdicts] for score in scores]
    assert kinds == [
        ["correct", "unexpected"],
        ["unexpected"],
        ["stale", "correct"],
        ["scope"],
        ["correct", "duplicate"],
        [],
    ]
    assert scores[0].verdicts[1].missing == ("api.example.com",)
    total = Tally()
    for score in scores:
        total.add(score)
    assert (total.stored, total.correct, total.expected, total.matched) == (8, 3, 6, 3)
    assert total.precision == pytest.approx(3 / 8)
    assert total.recall == pytest.approx(3 / 6)
    assert total.scope_errors == 1
    assert total.to_dict()["verdicts"] == {
        "correct": 3,
        "duplicate": 1,
        "scope": 1,
        "stale": 1,
        "unexpected": 2,
    }


def test_matching_is_one_to_one_and_maximal() -> None:
    """A memory holding both expected ones' terms must not take the only match of another."""
    a, b = want("A is 1.5.", "A", "1.5"), want("B is 2.5.", "B", "2.5")
    both, only_a = stored("A is 1.5 and B is 2.5"), stored("A is 1.5")
    score = score_item([both, only_a], [a, b])
    assert [v.kind for v in score.verdicts] == ["correct", "correct"]
    assert score.matched == {0, 1}


def test_nothing_stored_has_no_precision() -> None:
    total = Tally()
    total.add(score_item([], [want("x is 1.", "x")]))
    assert total.precision is None and total.recall == 0.0


# ---------------------------------------------------------------- the harness


def _payload(request: RecordedRequest) -> dict[str, Any]:
    return request.user_payload


def _answer(units: list[dict[str, Any]], decide: Any) -> Reply:
    """A Gate answer covering every supporting unit, its candidates from ``decide``."""
    candidates: list[dict[str, Any]] = []
    coverage: list[dict[str, Any]] = []
    bindings: list[dict[str, Any]] = []
    for unit in units:
        if not unit["can_support"]:
            continue
        made = decide(unit["text"])
        ids = []
        for memory in made:
            cid = f"c{len(candidates) + 1}"
            ids.append(cid)
            candidates.append({"candidate_id": cid, **memory})
            bindings.append(
                {
                    "candidate_id": cid,
                    "claims": [
                        {"unit_id": unit["unit_id"], "quote": unit["text"], "role": "assertion"}
                    ],
                }
            )
        if ids:
            coverage.append(
                {"unit_id": unit["unit_id"], "decision": "CANDIDATE", "candidate_ids": ids}
            )
        else:
            coverage.append(
                {
                    "unit_id": unit["unit_id"],
                    "decision": "NO_CHANGE",
                    "reason": "no-durable-content",
                }
            )
    answer = {"candidates": candidates, "coverage": coverage, "evidence_bindings": bindings}
    return chat(json.dumps(answer, ensure_ascii=False))


def labelled_model(chosen: list[gate_quality.Item]) -> Any:
    """A scripted model that answers exactly the labels: the earlier message of a
    correction as its earlier memory, the last message as the expected memories, the
    first of them superseding a related memory when memgit shows one."""
    by_text = {m.content: (item, n) for item in chosen for n, m in enumerate(item.messages)}
    raw = {entry["id"]: entry for entry in _raw_set()}

    def reply(request: RecordedRequest) -> Reply:
        payload = _payload(request)
        related = [memory["id"] for memory in payload["related_memories"]]

        def decide(text: str) -> list[dict[str, Any]]:
            item, n = by_text[text]
            if n < len(item.messages) - 1:
                old = raw[item.id]["supersedes"][n]["text"]
                return [_memory(old, "project", "fact")]
            made = [_memory(w.text, w.scope, w.type) for w in item.expected]
            if made and related and item.replaced:
                made[0] = {**made[0], "action": "SUPERSEDE", "target": related[0]}
            return made

        return _answer(payload["units"], decide)

    return reply


def junk_model(request: RecordedRequest) -> Reply:
    """A model that stores one memory per message, none of them what was said."""
    return _answer(
        _payload(request)["units"],
        lambda _text: [_memory("Nothing worth keeping was said here.", "user", "fact")],
    )


def _memory(text: str, scope: str, kind: str) -> dict[str, Any]:
    return {"action": "CREATE", "type": kind, "scope": scope, "title": text[:200], "body": text}


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def chosen(items: list[gate_quality.Item]) -> list[gate_quality.Item]:
    found = {item.id: item for item in items}
    return [found[name] for name in HARNESS_ITEMS]


def http_gate(server: ScriptedServer) -> dict[str, Any]:
    return {"backend": "openai", "base_url": server.base_url, "model": "scripted", "timeout": 10}


def test_a_backend_answering_the_labels_scores_one(
    chosen: list[gate_quality.Item], tmp_path: Path, no_proxy: None
) -> None:
    with ScriptedServer(default=labelled_model(chosen)) as server:
        runs = gate_quality.evaluate(chosen, http_gate(server), workdir=tmp_path)
        asked = len(server.requests)
    summary = gate_quality.summarise(runs)
    overall = summary["overall"]
    assert summary["failed_runs"] == [] and asked == 6  # one request per message
    assert (overall["precision"], overall["recall"]) == (1.0, 1.0)
    assert (overall["stored"], overall["expected"]) == (5, 5)
    assert summary["wrong"] == [] and summary["missed"] == []
    assert overall["type_agreements"] == 5
    assert summary["by_language"]["zh"]["recall"] == 1.0


def test_a_backend_answering_junk_scores_zero(
    chosen: list[gate_quality.Item], tmp_path: Path, no_proxy: None
) -> None:
    with ScriptedServer(default=junk_model) as server:
        runs = gate_quality.evaluate(chosen, http_gate(server), workdir=tmp_path)
    summary = gate_quality.summarise(runs)
    overall = summary["overall"]
    assert summary["failed_runs"] == []
    assert (overall["precision"], overall["recall"]) == (0.0, 0.0)
    # One a message, but for the correction's second: the same text again is no second
    # memory (memgit names the one that holds it).
    assert overall["stored"] == 5
    assert len(summary["wrong"]) == 5 and len(summary["missed"]) == 5
    wrong = next(entry for entry in summary["wrong"] if entry["item"] == "en-014")
    assert wrong["kind"] == "unexpected" and wrong["missing_terms"] == ["pnpm"]
    assert wrong["expected"]["text"] == "The repository uses pnpm, not npm or yarn."


def test_the_command_line_writes_json_and_names_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rules Gate on one item through main(): the report, the JSON and progress."""
    out = tmp_path / "result.json"
    assert gate_quality.main(["--only", "zh-08", "--json", str(out)]) == 0
    printed = capsys.readouterr()
    data = json.loads(out.read_text("utf-8"))
    assert data["about"]["backend"] == "rules" and data["overall"]["items"] == 1
    assert "[1/1] zh-080: stored 0 (none)" in printed.err
    assert printed.out.startswith("Gate quality: backend rules, 1 item (development),")


def test_the_command_backend_scores_a_half(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--backend command with --half: an agreement item (an assistant turn, then the
    user's reply) runs through a real subprocess Gate without a failed run."""
    out = tmp_path / "result.json"
    command = f"{sys.executable} {ROOT / 'bench' / 'standin_gate.py'}"
    argv = ["--half", "development", "--only", "dv-en-021", "--json", str(out)]
    assert gate_quality.main([*argv, "--backend", "command", "--command", command]) == 0
    data = json.loads(out.read_text("utf-8"))
    assert data["about"]["backend"] == "command" and data["about"]["half"] == "development"
    assert data["overall"]["items"] == 1 and data["failed_runs"] == []
    assert "[1/1] dv-en-021: stored" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        gate_quality.main(["--half", "development", "--only", "zz-"])


def test_a_failing_backend_is_counted_and_its_item_scored_on_the_tree(
    chosen: list[gate_quality.Item], tmp_path: Path, no_proxy: None
) -> None:
    """A refused answer fails the run: the item counts as failed and as storing nothing."""
    with ScriptedServer(default=chat("Sure! Here is what I would remember.")) as server:
        runs = gate_quality.evaluate(chosen[:1], http_gate(server), workdir=tmp_path)
        asked = len(server.requests)
    summary = gate_quality.summarise(runs)
    assert asked == 2  # the answer and its one correction round
    assert [entry["item"] for entry in summary["failed_runs"]] == ["en-014"]
    assert summary["failed_runs"][0]["error"].startswith("gate-rejected: ")
    assert summary["overall"]["failed_runs"] == 1
    assert (summary["overall"]["stored"], summary["overall"]["recall"]) == (0, 0.0)


# ---------------------------------------------------------------- strict precision


def test_strict_precision_takes_quotes_only_from_what_the_user_said_or_agreed_to() -> None:
    """A quote of an assistant message counts only beside the user's reply to it; a tool's
    output, a turn not of the item and no quote at all never count."""
    said = (
        gate_quality.Message(role="assistant", content="Shall I switch the suite to pytest?"),
        gate_quality.Message(role="tool", content="pytest 8.3.2", complete=True),
        gate_quality.Message(role="user", content="yes, do that"),
        gate_quality.Message(role="assistant", content="Done. Also pin pytest?"),
    )
    assert gate_quality.supported([2], said)
    assert gate_quality.supported([0, 2], said)
    assert not gate_quality.supported([0], said), "an assistant-only quote"
    assert not gate_quality.supported([3, 2], said), "no user reply follows the proposal"
    assert not gate_quality.supported([1, 2], said), "a tool's output"
    assert not gate_quality.supported([2, -1], said) and not gate_quality.supported([], said)
    suite = want("The test suite uses pytest.", "pytest")
    right_words = Stored(title="Tests use pytest", body="", scope="project", type="decision")
    score = score_item([replace(right_words, supported=False)], [suite])
    assert [v.kind for v in score.verdicts] == ["unsupported"] and score.matched == frozenset()
    assert score_item([right_words], [suite]).matched == {0}


def test_a_memory_holding_a_credential_is_never_correct() -> None:
    """Strict precision: the right fact with the password beside it is a wrong memory."""
    wifi = want("The office wifi is CoffeeNet.", "CoffeeNet")
    leaky = Stored(
        title="The office wifi is CoffeeNet, password Espresso!Shot99",
        body="",
        scope="project",
        type="fact",
    )
    score = score_item([leaky], [wifi], credentials=["Espresso!Shot99"])
    assert [v.kind for v in score.verdicts] == ["credential"] and score.matched == frozenset()
    clean = replace(leaky, title="The office wifi is CoffeeNet")
    assert score_item([clean], [wifi], credentials=["Espresso!Shot99"]).matched == {0}


AGREEMENT = gate_quality.Item(
    id="dv-en-990",
    lang="en",
    category="agreement",
    half="development",
    messages=(
        gate_quality.Message(role="assistant", content="Shall I switch the suite to pytest?"),
        gate_quality.Message(
            role="tool", content="$ pytest --version\npytest 8.3.2", complete=True
        ),
        gate_quality.Message(role="user", content="yes, do that"),
    ),
    expected=(want("The test suite uses pytest.", "pytest"),),
    replaced=(),
)


def quoting_model(role_quoted: str) -> Any:
    """A scripted model that stores the labelled memory from the unit of ``role_quoted``
    only, quoting it, and keeps nothing of the others."""
    roles = {message.content: message.role for message in AGREEMENT.messages}
    memory = _memory("The test suite uses pytest.", "project", "decision")

    def reply(request: RecordedRequest) -> Reply:
        return _answer(
            _payload(request)["units"],
            lambda text: [memory] if roles[text] == role_quoted else [],
        )

    return reply


@pytest.mark.parametrize(("quoted", "precision"), [("user", 1.0), ("tool", 0.0)])
def test_a_memory_quoting_what_the_user_did_not_say_is_wrong_however_right_its_words(
    quoted: str, precision: float, tmp_path: Path, no_proxy: None
) -> None:
    """The same memory, once quoting the user's agreement and once the tool's output (which
    memgit accepts as evidence): only the first is correct."""
    with ScriptedServer(default=quoting_model(quoted)) as server:
        runs = gate_quality.evaluate([AGREEMENT], http_gate(server), workdir=tmp_path)
    summary = gate_quality.summarise(runs)
    overall = summary["overall"]
    assert summary["failed_runs"] == [] and overall["stored"] == 1
    assert overall["precision"] == precision and overall["recall"] == precision
    if precision == 0.0:
        assert [entry["kind"] for entry in summary["wrong"]] == ["unsupported"]


# ---------------------------------------------------------------- credentials


def silent_model(request: RecordedRequest) -> Reply:
    return _answer(_payload(request)["units"], lambda _text: [])


def storing_model(request: RecordedRequest) -> Reply:
    return _answer(
        _payload(request)["units"],
        lambda text: [_memory(f"Build box: {text}", "project", "fact")],
    )


@pytest.mark.parametrize("model", [silent_model, storing_model])
def test_a_credential_in_any_git_object_is_counted(
    model: Any, tmp_path: Path, no_proxy: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing stored, the credential is still in the captured turn's blob: counted; stored
    in a memory too, it is still one credential; a value never said is not counted."""
    item = gate_quality.Item(
        id="dv-en-991",
        lang="en",
        category="secret",
        half="development",
        messages=(gate_quality.Message(role="user", content="The build box is Quokka-Sunrise."),),
        expected=(),
        replaced=(),
        credentials=("Quokka-Sunrise", "Never-Said-77"),
    )
    with ScriptedServer(default=model) as server:
        runs = gate_quality.evaluate([item], http_gate(server), workdir=tmp_path)
    assert runs[0].credentials_found == ("Quokka-Sunrise",)
    summary = gate_quality.summarise(runs)
    assert summary["overall"]["credentials_stored"] == 1
    assert summary["credentials_stored"] == [{"item": "dv-en-991", "count": 1}]
    assert summary["overall"]["stored"] == (model is storing_model)
    about = {"backend": "openai", "commit": "x", "date": "d", "half": "development"}
    assert "credentials stored: 1 (must be 0)" in gate_quality.render_text(summary, about)


# ---------------------------------------------------------------- the held-out half


def test_the_held_out_half_is_reported_in_figures_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A held-out item's id, text and memories are never printed, not even in the JSON,
    and it cannot be scored alone."""
    folder = tmp_path / "heldout"
    folder.mkdir()
    secret_words = "Remember that the ledger service is owned by Zebedee Quist."
    entry = {
        "id": "ha-en-901",
        "lang": "en",
        "category": "people",
        "messages": [secret_words],
        "expect": [
            {
                "text": "Zebedee Quist owns the ledger.",
                "scope": "user",
                "type": "fact",
                "terms": ["Zebedee"],
            }
        ],
    }
    (folder / "x.yaml").write_text(yaml.safe_dump([entry]), "utf-8")
    out = tmp_path / "result.json"
    assert gate_quality.main(["--set", str(folder / "x.yaml"), "--json", str(out)]) == 0
    printed = capsys.readouterr()
    shown = printed.out + printed.err + out.read_text("utf-8")
    for private in ("ha-en-901", "Zebedee", "ledger"):
        assert private not in shown
    data = json.loads(out.read_text("utf-8"))
    assert data["by_half"]["heldout"]["items"] == 1 and data["by_category"]["people"]["items"] == 1
    assert data["wrong"] == data["missed"] == data["failed_runs"] == []
    with pytest.raises(SystemExit):
        gate_quality.main(["--set", str(folder / "x.yaml"), "--only", "ha-en-9"])


# ---------------------------------------------------------------- must-not-retire controls

CONTROL = gate_quality.Item(
    id="dv-en-992",
    lang="en",
    category="project-fact",
    half="development",
    messages=(
        gate_quality.Message(role="user", content="The staging database runs Postgres 14."),
        gate_quality.Message(role="user", content="Production now runs Postgres 16."),
    ),
    expected=(
        want("The staging database runs Postgres 14.", "staging", "14"),
        want("Production runs Postgres 16.", "Production", "16"),
    ),
    replaced=(),
    control=True,
)


def control_model(retire: bool) -> Any:
    """Stores each message as a memory; with ``retire`` the second replaces the first."""

    def reply(request: RecordedRequest) -> Reply:
        payload = _payload(request)
        related = [memory["id"] for memory in payload["related_memories"]]

        def decide(text: str) -> list[dict[str, Any]]:
            made = _memory(text, "project", "fact")
            if retire and related:
                made = {**made, "action": "SUPERSEDE", "target": related[0]}
            return [made]

        return _answer(payload["units"], decide)

    return reply


@pytest.mark.parametrize("retire", [False, True])
def test_a_control_that_loses_its_earlier_memory_counts_a_wrong_retirement(
    retire: bool, tmp_path: Path, no_proxy: None
) -> None:
    with ScriptedServer(default=control_model(retire)) as server:
        runs = gate_quality.evaluate([CONTROL], http_gate(server), workdir=tmp_path)
    summary = gate_quality.summarise(runs)
    overall = summary["overall"]
    assert summary["failed_runs"] == [] and overall["controls"] == 1
    assert overall["wrong_retirements"] == int(retire)
    assert overall["recall"] == (0.5 if retire else 1.0)
    assert summary["wrong_retirements"] == ([{"item": "dv-en-992", "retired": 1}] if retire else [])
