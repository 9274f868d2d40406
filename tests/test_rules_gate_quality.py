"""The offline rules Gate writes the memories a user would agree with (issue 16).

End to end through ``memgit process`` in real repositories: each message becomes the
memory a careful person would write (title, body, type and scope), never one cut
inside a number, domain, path, abbreviation or code span; a change of mind
supersedes the memory it changes (a correction updates it) in a second run; and
what the Gate cannot read with confidence stores nothing.

The single messages share one repository, so the file stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_process import capture, configure, memories, open_repo, ref, run_records, user_turn

from memgit.gate.scoping import choose_scope
from memgit.memory import Memory

from support import everything_git_keeps, git_environment


def _said_after(repo_path: Path, first: str, second: str) -> tuple[str, Any]:
    """``first`` captured and processed alone (one memory), then ``second`` in the next
    turn of the session: the id of the first memory and the second processing run."""
    capture(repo_path, user_turn(0, first))
    open_repo(repo_path).process()
    (old,) = memories(repo_path)
    capture(repo_path, user_turn(1, second))
    (run,) = open_repo(repo_path).process().runs
    return old, run


def _by_quote(path: Path) -> dict[str, Memory]:
    return {memory.sources[0].quote: memory for memory in memories(path).values()}


# message -> [(title, body, type, scope), ...] for each memory it must give, in order.
ONE_RUN: dict[str, list[tuple[str, str, str, str]]] = {
    # The three broken examples of issue 16.
    "Remember that CI must run on Python 3.11 and 3.12.": [
        (
            "CI must run on Python 3.11 and 3.12",
            "CI must run on Python 3.11 and 3.12.",
            "fact",
            "project",
        )
    ],
    "Remember that the API lives at api.example.com.": [
        (
            "The API lives at api.example.com",
            "The API lives at api.example.com.",
            "fact",
            "project",
        )
    ],
    "Remember that e.g. staging is slow on Mondays.": [
        ("E.g. staging is slow on Mondays", "E.g. staging is slow on Mondays.", "fact", "project")
    ],
    # Versions, decimals, paths, domains, addresses.
    "Remember that we pin v2.4.1 of the client library.": [
        (
            "We pin v2.4.1 of the client library",
            "We pin v2.4.1 of the client library.",
            "fact",
            "project",
        )
    ],
    "Note that the build is 1.5x faster with ccache. Nobody measured the rest.": [
        (
            "The build is 1.5x faster with ccache",
            "The build is 1.5x faster with ccache.",
            "fact",
            "project",
        )
    ],
    "Remember that the entry point is src/app.py, not main.py.": [
        (
            "The entry point is src/app.py, not main.py",
            "The entry point is src/app.py, not main.py.",
            "fact",
            "project",
        )
    ],
    "Remember that the support address is help@example.com.": [
        (
            "The support address is help@example.com",
            "The support address is help@example.com.",
            "fact",
            "project",
        )
    ],
    "Remember that the docs live at https://docs.example.com/v2/index.html. Read them.": [
        (
            "The docs live at https://docs.example.com/v2/index.html",
            "The docs live at https://docs.example.com/v2/index.html.",
            "fact",
            "project",
        )
    ],
    # Abbreviations.
    "Remember that Dr. Smith reviews all database migrations.": [
        (
            "Dr. Smith reviews all database migrations",
            "Dr. Smith reviews all database migrations.",
            "fact",
            "project",
        )
    ],
    "Always use tabs, i.e. never spaces, in Makefiles.": [
        (
            "Always use tabs, i.e. never spaces, in Makefiles",
            "Always use tabs, i.e. never spaces, in Makefiles.",
            "procedure",
            "project",
        )
    ],
    "Remember that issue No. 42 blocks the release.": [
        (
            "Issue No. 42 blocks the release",
            "Issue No. 42 blocks the release.",
            "fact",
            "project",
        )
    ],
    "Remember that we chose Postgres vs. MySQL for the billing service.": [
        (
            "We chose Postgres vs. MySQL for the billing service",
            "We chose Postgres vs. MySQL for the billing service.",
            "decision",
            "project",
        )
    ],
    "Note that logs, caches, etc. on the build server are rotated daily.": [
        (
            "Logs, caches, etc. on the build server are rotated daily",
            "Logs, caches, etc. on the build server are rotated daily.",
            "fact",
            "project",
        )
    ],
    # Code spans, parentheses, lists.
    "Remember that `config.load()` reads ~/.config/app.toml first.": [
        (
            "`config.load()` reads ~/.config/app.toml first",
            "`config.load()` reads ~/.config/app.toml first.",
            "fact",
            "project",
        )
    ],
    "Remember that the deploy script (see deploy.sh) takes 5 min. Then it pings us.": [
        (
            "The deploy script (see deploy.sh) takes 5 min",
            "The deploy script (see deploy.sh) takes 5 min.",
            "fact",
            "project",
        )
    ],
    "Our rules:\n1. Always rebase before merging.\n2. Never push to main.": [
        ("Always rebase before merging", "Always rebase before merging.", "procedure", "project"),
        ("Never push to main", "Never push to main.", "procedure", "project"),
    ],
    "- I like dark mode in every editor.\n- ok": [
        (
            "I like dark mode in every editor",
            "I like dark mode in every editor.",
            "preference",
            "user",
        )
    ],
    # The user, not the project.
    "I prefer pytest over unittest. It is simpler.": [
        ("I prefer pytest over unittest", "I prefer pytest over unittest.", "preference", "user")
    ],
    "Call me Sam.": [("Call me Sam", "Call me Sam.", "preference", "user")],
    # Chinese: 。！？； end a sentence, ， does not, and no spaces between words.
    "记住：持续集成必须在 Python 3.11 上运行。谢谢！": [
        (
            "持续集成必须在 Python 3.11 上运行",
            "持续集成必须在 Python 3.11 上运行。",
            "procedure",
            "project",
        )
    ],
    "好的。记住：接口地址是 api.example.com。": [
        ("接口地址是 api.example.com", "接口地址是 api.example.com。", "fact", "project")
    ],
    "我喜欢用 pytest 写测试，因为它简单。": [
        (
            "我喜欢用 pytest 写测试，因为它简单",
            "我喜欢用 pytest 写测试，因为它简单。",
            "preference",
            "user",
        )
    ],
    "请叫我小王。": [("请叫我小王", "请叫我小王。", "preference", "user")],
    # A correction with no memory to correct is a plain new memory.
    "I prefer unittest now, not pytest.": [
        (
            "I prefer unittest now, not pytest",
            "I prefer unittest now, not pytest.",
            "preference",
            "user",
        )
    ],
    # Nothing a careful person would store.
    "Is it true that CI runs on Python 3.11?": [],
    # Too short to quote (a CJK character weighs two): refused as evidence, so not offered.
    "叫我王。": [],
    "Actually the weather is nice today.": [],
    "Nice weather today. The build was green.": [],
    # A statement around a credential keeps nothing once capture redacted it.
    "Remember that the deploy bot token is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + ".": [],
    "记住：数据库密码是 ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2" + "。": [],
    # "Never mind" takes back something of this turn only.
    "Never mind that test run, it was a fluke.": [],
}


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Memory]]:
    """Every ONE_RUN message captured in its own session, all processed at once:
    message -> the memories quoting it, in the order they stand in the message."""
    from memgit import MemoryRepo

    base = tmp_path_factory.mktemp("quality")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in git_environment(base).items():
            patch.setenv(name, value)
        path = base / "memory"
        MemoryRepo.init(path)
        # Each message is judged alone, as in a fresh repository: the changes of mind
        # are the business of the two-run tests below.
        configure(path, gate={"related_memories": 0})
        turns = [user_turn(0, message, session=f"m{n}") for n, message in enumerate(ONE_RUN)]
        MemoryRepo.open(path).capture_many(turns)
        # A change of mind about a memory made in the same run waits for the next one.
        while open_repo(path).process().remaining:
            pass
        found: dict[str, list[Memory]] = {message: [] for message in ONE_RUN}
        for memory in memories(path).values():
            (source,) = memory.sources
            session = source.unit.split("/")[1]
            found[list(ONE_RUN)[int(session[1:])]].append(memory)
    for message, items in found.items():
        items.sort(key=lambda m: message.index(m.sources[0].quote))
    return found


@pytest.mark.parametrize("message", list(ONE_RUN), ids=range(len(ONE_RUN)))
def test_each_message_becomes_the_right_memory(
    one_run: dict[str, list[Memory]], message: str
) -> None:
    got = [(m.title, m.body.strip(), m.type, m.scope) for m in one_run[message]]
    assert got == ONE_RUN[message]
    for memory in one_run[message]:
        assert memory.sources[0].quote in message


CHANGES: list[tuple[str, str, str, dict[str, Any]]] = [
    # (first message, second message, action, what the second memory is)
    (
        "I prefer pytest.",
        "I prefer unittest now, not pytest.",
        "SUPERSEDE",
        {"title": "I prefer unittest now, not pytest", "type": "preference", "scope": "user"},
    ),
    (
        "I prefer tabs.",
        "I switched to spaces instead of tabs.",
        "SUPERSEDE",
        # Said as an event, kept as the state it leaves.
        {"title": "I use spaces (no longer tabs)", "type": "preference", "scope": "user"},
    ),
    (
        "Remember that the API lives at api.example.com.",
        "The API has moved to api2.example.com.",
        "SUPERSEDE",
        {"title": "The API has moved to api2.example.com", "type": "fact", "scope": "project"},
    ),
    (
        "Remember that CI must run on Python 3.11.",
        "Actually, CI must run on Python 3.12.",
        "UPDATE",
        {"title": "CI must run on Python 3.12", "type": "fact", "scope": "project"},
    ),
    (
        "我喜欢用 pytest。",
        "我不再用 pytest，改用 unittest。",
        "SUPERSEDE",
        {"title": "我不再用 pytest，改用 unittest", "type": "preference", "scope": "user"},
    ),
    (
        "记住：部署在周五进行。",
        "其实部署在周四进行。",
        "UPDATE",
        {"title": "部署在周四进行", "type": "fact", "scope": "project"},
    ),
]


@pytest.mark.parametrize(
    ("first", "second", "action", "expected"), CHANGES, ids=range(len(CHANGES))
)
def test_a_change_of_mind_replaces_the_memory(
    repo_path: Path, first: str, second: str, action: str, expected: dict[str, Any]
) -> None:
    """Two captures in two runs leave one current memory. A change of mind supersedes:
    the old memory leaves the tree, keeps its retired ref, and recall shows the chain.
    A correction updates the same memory."""
    capture(repo_path, user_turn(0, first))
    open_repo(repo_path).process()
    (old,) = memories(repo_path).values()
    capture(repo_path, user_turn(1, second))
    (run,) = open_repo(repo_path).process().runs

    (new,) = memories(repo_path).values()
    assert {"title": new.title, "type": new.type, "scope": new.scope} == expected
    (decision,) = run.decisions
    assert decision.action == action
    if action == "UPDATE":
        assert new.id == old.id
        assert [s.quote for s in new.sources] == [old.sources[0].quote, second]
        return
    assert new.id != old.id
    assert [(s.id, s.commit) for s in new.supersedes] == [
        (old.id, ref(repo_path, f"refs/memgit/retired/{old.id}"))
    ]
    word = "pytest" if "pytest" in first else first.split()[-1].strip(".。")
    pack = open_repo(repo_path).recall(word)
    (retired,) = [item for item in pack.trace.retired if item.memory.id == old.id]
    assert [step.id for step in retired.chain] == [new.id]


def test_a_change_of_mind_in_the_same_run_waits_for_the_next(repo_path: Path) -> None:
    """Both turns processed at once: the first becomes a memory, the change of mind is
    DEFERRED (needs-context), and the next process supersedes the new memory."""
    capture(
        repo_path,
        user_turn(0, "I prefer pytest."),
        user_turn(1, "I prefer unittest now, not pytest."),
    )
    first = open_repo(repo_path).process()
    (run,) = first.runs
    assert [d.action for d in run.decisions] == ["CREATE"]
    assert run_records(repo_path)[run.run_id]["gate_output"]["coverage"][1] == {
        "unit_id": "test-agent/s1/1#0",
        "decision": "DEFERRED",
        "reason": "needs-context",
    }
    assert first.remaining == 1
    (old,) = memories(repo_path).values()
    (again,) = open_repo(repo_path).process().runs
    assert [(d.action, d.target) for d in again.decisions] == [("SUPERSEDE", old.id)]
    assert [m.title for m in memories(repo_path).values()] == ["I prefer unittest now, not pytest"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I prefer green tea.", "I now prefer dark mode in the editor."),
        ("Never push to main.", "Remember that the entry point is src/app.py, not main.py."),
        (
            "Remember that the API lives at api.example.com.",
            "Remember that the docs now live at docs.example.com.",
        ),
        (
            "From now on, tag release 1 with the build date.",
            "From now on, tag release 8 with the build date.",
        ),
        (
            "Remember that server 7 runs Debian 3.",
            "Remember that server 14 now runs Debian 5.",
        ),
    ],
    ids=[
        "no-shared-topic",
        "one-incidental-word",
        "same-domain-only",
        "a-second-new-rule",
        "another-numbered-thing",
    ],
)
def test_an_unrelated_change_of_mind_is_a_new_memory(
    repo_path: Path, first: str, second: str
) -> None:
    """ "now" or ", not" beside a memory that shares no topic, or one incidental word,
    retires nothing: retiring the wrong memory loses a true one."""
    capture(repo_path, user_turn(0, first))
    open_repo(repo_path).process()
    capture(repo_path, user_turn(1, second))
    (run,) = open_repo(repo_path).process().runs
    assert [d.action for d in run.decisions] == ["CREATE"]
    quotes = sorted(m.sources[0].quote for m in memories(repo_path).values())
    assert quotes == sorted([first, second])


def test_a_correction_about_nothing_known_corrects_nothing(repo_path: Path) -> None:
    """ "Actually ..." with no related memory updates none: what it states is a fact of its
    own (the project-fact forms read it), and the unrelated memory stays as it was."""
    capture(repo_path, user_turn(0, "I prefer green tea."))
    open_repo(repo_path).process()
    capture(repo_path, user_turn(1, "Actually, the build server is in Frankfurt."))
    (run,) = open_repo(repo_path).process().runs
    assert [(d.action, d.target) for d in run.decisions] == [("CREATE", None)]
    titles = sorted(memory.title for memory in memories(repo_path).values())
    assert titles == ["I prefer green tea", "The build server is in Frankfurt"]


def test_scope_falls_back_to_the_default_when_project_is_not_declared(repo_path: Path) -> None:
    """A project fact in a repository whose memgit.yaml declares only ``team`` and
    ``user`` goes to the first scope listed; a first-person habit that would be the
    project's way of working keeps the scope its form says (no run fails on a scope
    memgit.yaml does not declare)."""
    from test_process import configure

    configure(repo_path, scopes=["team", "user"])
    capture(repo_path, user_turn(0, "Remember that CI must run on Python 3.11."))
    capture(repo_path, user_turn(1, "I prefer pytest."))
    capture(repo_path, user_turn(2, "I run `make seed` against staging before every release."))
    open_repo(repo_path).process()
    scopes = {m.title: m.scope for m in memories(repo_path).values()}
    assert scopes == {
        "CI must run on Python 3.11": "team",
        "I prefer pytest": "user",
        "I run `make seed` against staging before every release": "user",
    }


PIECES = [
    "Remember that ",
    "I prefer ",
    "Actually, ",
    "From now on, ",
    "记住：",
    "我不再用",
    "Call me ",
    "not ",
    "now ",
    "pytest",
    "3.11",
    "api.example.com",
    "e.g. ",
    "`a.b()` ",
    "1. ",
    "- ",
    "x" * 120,
    "https://example.com/" + "p" * 230,
    ". ",
    "? ",
    "。",
    "，",
    "\n",
    " ",
    "\x07",
    "staging ",
    "I ",
    "我",
    "a",
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(PIECES), max_size=25).map("".join), min_size=1, max_size=3),
    st.lists(st.sampled_from(["I prefer pytest", "The API lives at api.example.com"]), max_size=2),
)
def test_every_rules_answer_passes_the_contract(texts: list[str], titles: list[str]) -> None:
    """Whatever the user wrote, the rules Gate's answer is one the checks accept: titles
    within the schema, quotes exact and long enough, targets among the related memories.
    (A refused answer fails the whole run, and every turn in it stays pending.)"""
    from memgit.evidence import EvidenceUnit
    from memgit.gate.backends.rules import RulesBackend
    from memgit.gate.contract import check_gate_output
    from memgit.gate.prompt import GateRequest
    from memgit.memory import read_memory
    from memgit.settings import DEFAULT_CONFIG, parse_settings

    settings_ = parse_settings(DEFAULT_CONFIG)
    units = tuple(
        EvidenceUnit(
            id=f"t/s/{n}#0",
            capture=f"inbox/t/s/{n}.yaml",
            blob="0" * 40,
            index=0,
            role="user",
            text=text,
            can_support=bool(text.strip()),
            timestamp="2026-11-30T10:00:00Z",
        )
        for n, text in enumerate(texts)
    )
    related = tuple(
        read_memory(
            f"---\nid: known{n:07d}\ntype: preference\nscope: user\ntitle: {title}\n"
            "status: active\ncreated: '2026-11-30T10:00:00Z'\nupdated: '2026-11-30T10:00:00Z'\n"
            f"origin: human\nauthor: Test Person\nsources: []\n---\n{title}.\n",
            path=f"memories/user/kn/known{n:07d}.md",
        )
        for n, title in enumerate(dict.fromkeys(titles))
    )
    ids = {memory.id: memory for memory in related}
    request = GateRequest(units=units, related=related, settings=settings_)
    check_gate_output(
        RulesBackend().answer(request),
        units={unit.id: unit for unit in units},
        settings=settings_,
        target_state=lambda memory_id: "active" if memory_id in ids else "unknown",
        target_text=lambda memory_id: f"{ids[memory_id].title} {ids[memory_id].body}",
    )


@pytest.mark.parametrize(
    ("message", "scope"),
    [
        ("Toma nota: la factura se genera el día 1 de cada mes.", "project"),
        ("Behalte im Hinterkopf, dass die Produktionsdatenbank sonntags gesperrt ist.", "project"),
        ("Remember that the invoice goes out on the 1st of each month.", "project"),
        ("Remember that I'm vegetarian.", "user"),
    ],
)
def test_a_fact_of_no_one_is_the_projects(repo_path: Path, message: str, scope: str) -> None:
    """A fact that names no person and no part of a project is still no preference of
    the user's: it goes to project, not to the default scope."""
    capture(repo_path, user_turn(0, message))
    open_repo(repo_path).process()
    (memory,) = memories(repo_path).values()
    assert memory.scope == scope


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("La demo con el cliente es el jueves 14.", "perdón, me equivoqué: es el viernes 15"),
        ("The release party is on the 14th.", "sorry, my bad: it's the 15th"),
        ("Die Demo beim Kunden ist am Donnerstag, den 14.", "Korrektur: es ist Freitag, der 15."),
        ("客户演示是周四14号。", "不对，是周五15号"),
    ],
)
def test_a_correction_with_no_subject_corrects_what_was_just_said(
    repo_path: Path, first: str, second: str
) -> None:
    """ "sorry, it's the 15th" right after a statement corrects that memory, though it
    shares no word with it: it has no subject of its own."""
    old, run = _said_after(repo_path, first, second)
    assert [(d.action in ("UPDATE", "SUPERSEDE"), d.target) for d in run.decisions] == [(True, old)]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Ich nutze VS Code.", "Lena ist auf Emacs umgestiegen, keine Ahnung warum."),
        ("Uso VS Code.", "Camila se pasó a Emacs."),
        ("I use VS Code.", "Priya switched to Zed last week."),
    ],
)
def test_a_teammates_change_right_after_mine_retires_nothing(
    repo_path: Path, first: str, second: str
) -> None:
    """The turn before is context for a short reply, and its memory is shown to the
    Gate: someone else's change of editor still leaves mine current."""
    capture(repo_path, user_turn(0, first))
    open_repo(repo_path).process()
    (mine,) = memories(repo_path)
    capture(repo_path, user_turn(1, second))
    open_repo(repo_path).process()
    assert mine in memories(repo_path)


def test_an_announced_change_is_what_the_next_sentence_says(repo_path: Path) -> None:
    """ "I've changed my mind on X." says no new state: the sentence after it does, and
    the two are one change, quoted together."""
    capture(repo_path, user_turn(0, "I like my answers with lots of detail and background."))
    open_repo(repo_path).process()
    (old,) = memories(repo_path)
    said = "Honestly I've changed my mind on the long answers. Give me the short version first."
    capture(repo_path, user_turn(1, said))
    (run,) = open_repo(repo_path).process().runs
    assert [(d.action, d.target) for d in run.decisions] == [("SUPERSEDE", old)]
    (new,) = memories(repo_path).values()
    assert "short version" in new.body and new.sources[0].quote == said


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (
            "Code review needs two approvals before merge.",
            "From now on one approval is enough to merge, we're too small a team for two.",
        ),
        (
            "I like dark themes everywhere.",
            "From now on I like light themes, the glare kills dark mode.",
        ),
        ("回答请用英文。", "从现在开始回答请用中文。"),
    ],
)
def test_a_rule_from_now_on_replaces_the_memory_of_its_subject(
    repo_path: Path, first: str, second: str
) -> None:
    """ "From now on" opens a rule; when a memory holds a rule of the same subject, the
    new one replaces it rather than sitting beside it, stale."""
    old, run = _said_after(repo_path, first, second)
    assert [(d.action, d.target) for d in run.decisions] == [("SUPERSEDE", old)]
    assert old not in memories(repo_path)


@pytest.mark.parametrize(
    ("message", "kept"),
    [
        (
            "the staging db is db.stg.internal, user admin, password hunter2-Kestrel",
            "The staging db is db.stg.internal, user admin",
        ),
        (
            "Der Mailserver ist mail.kassenwerk.de, SMTP über Port 587, Absender "
            "noreply@kassenwerk.de mit Kennwort Birke-Fluss-31",
            "Der Mailserver ist mail.kassenwerk.de, SMTP über Port 587",
        ),
        ("guest wifi is Atelier-Guest, key sunflower2026", None),
    ],
)
def test_the_fact_before_a_credential_in_a_list_of_commas_is_kept_without_it(
    repo_path: Path, message: str, kept: str | None
) -> None:
    """The parts of a sentence before its credential's part hold a fact of their own; a
    wifi's name beside its key is half of the credential and keeps nothing."""
    capture(repo_path, user_turn(0, message))
    open_repo(repo_path).process()
    titles = [m.title for m in memories(repo_path).values()]
    assert titles == ([kept] if kept else [])
    for place, content in everything_git_keeps(repo_path).items():
        for secret in (b"hunter2-Kestrel", b"Birke-Fluss-31", b"sunflower2026"):
            assert secret not in content, place


@pytest.mark.parametrize(
    "text",
    [
        "文档站搬到了 docs.kuaidian.cn",
        "The status page moved to status.acme.de",
        "提交信息用英文",
        "Die Tests laufen jede Nacht",
        "Las pruebas corren cada noche",
    ],
)
def test_a_project_word_or_a_host_of_any_country_is_the_projects(text: str) -> None:
    """A host under a country's domain (".cn", ".de") and the words of a project's work
    in each language (提交信息, Tests, pruebas) say whose a statement of no one is."""
    assert choose_scope(text, ("user", "project")) == "project"
    assert choose_scope("I like it short", ("user", "project")) == "user"


def test_a_bare_removal_retracts_the_memory_and_keeps_no_memory_of_the_old_value(
    repo_path: Path,
) -> None:
    """ "flyway's gone." says only what no longer holds: the memory of Flyway leaves,
    and no memory naming Flyway takes its place (it would read as current)."""
    old, run = _said_after(repo_path, "DB migrations are written with Flyway.", "flyway's gone.")
    assert [(d.action, d.target) for d in run.decisions] == [("RETRACT", old)]
    assert memories(repo_path) == {}


@pytest.mark.parametrize(
    ("message", "scope", "kind"),
    [
        (
            "I run `make seed` against staging right before every demo release.",
            "project",
            "procedure",
        ),
        ("Ich nutze für das Projekt Python 3.12.", "project", "fact"),
        ("我一般用 `make deploy` 上线。", "project", "procedure"),
        ("I always run `pytest -x` first.", "user", "preference"),
    ],
)
def test_a_habit_in_the_first_person_that_is_how_the_project_is_worked(
    repo_path: Path, message: str, scope: str, kind: str
) -> None:
    """How the project is released or set up, said as "I ...", is the project's; a
    habit of one's own stays the user's."""
    capture(repo_path, user_turn(0, message))
    open_repo(repo_path).process()
    (memory,) = memories(repo_path).values()
    assert (memory.scope, memory.type) == (scope, kind)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("线上 Redis 是 6.2。", "线上 Redis 今天早上升级到 7.2 了"),
        ("Producción usa Node 18.", "Hoy subimos producción a Node 22."),
        (
            "Die Produktion läuft auf Node 18.",
            "Heute haben wir die Produktion auf Node 22 umgestellt.",
        ),
    ],
)
def test_a_change_made_today_in_any_language_replaces_the_memory(
    repo_path: Path, first: str, second: str
) -> None:
    """ "today" makes a sentence one of the moment, unless it dates a change already
    made: in Chinese, Spanish and German as in English."""
    old, run = _said_after(repo_path, first, second)
    assert [(d.action, d.target) for d in run.decisions] == [("SUPERSEDE", old)]


def test_a_change_that_quotes_nothing_of_the_memory_just_said_corrects_it(
    repo_path: Path,
) -> None:
    """ "it's been moved now, it's the 15th" shares no word with "The release party is
    on the 14th": a SUPERSEDE quoting it would fail the contract (and the whole run);
    it corrects the memory the turn before made."""
    old, run = _said_after(
        repo_path, "The release party is on the 14th.", "it's been moved now, it's the 15th"
    )
    assert [(d.action, d.target) for d in run.decisions] == [("UPDATE", old)]
    (memory,) = memories(repo_path).values()
    assert "15th" in memory.body


def test_a_change_about_another_regions_cluster_leaves_the_memory_just_said(
    repo_path: Path,
) -> None:
    """ "the US cluster" and "the EU cluster" are two subjects, though a change right
    after a memory, naming no old value it holds, may correct that memory."""
    capture(repo_path, user_turn(0, "The EU cluster runs in eu-central-1."))
    open_repo(repo_path).process()
    (eu,) = memories(repo_path)
    capture(repo_path, user_turn(1, "We dropped the us-east-1 replica of the US cluster."))
    open_repo(repo_path).process()
    assert eu in memories(repo_path)


def test_a_change_with_an_opinion_as_its_reason_replaces_the_memory(repo_path: Path) -> None:
    """ "..., the two-week train was way too slow" is why the change was made: the
    opinion after the change does not make the sentence one of opinion."""
    capture(repo_path, user_turn(0, "Releases are cut every second Thursday."))
    open_repo(repo_path).process()
    (old,) = memories(repo_path)
    said = "oh and releases are weekly now, every Tuesday, the two-week train was way too slow"
    capture(repo_path, user_turn(1, said))
    (run,) = open_repo(repo_path).process().runs
    assert [(d.action, d.target) for d in run.decisions] == [("SUPERSEDE", old)]
    capture(repo_path, user_turn(2, "The staging deploy is way too slow."))
    (run,) = open_repo(repo_path).process().runs
    assert [d.action for d in run.decisions] == []


def test_a_correction_with_no_subject_of_its_own_may_leave_out_the_memorys_qualifier(
    repo_path: Path,
) -> None:
    """ "actually it's 75" cannot say "in CI": a qualifier on the memory's side alone
    does not part it from the memory just said; a different one would."""
    old, run = _said_after(
        repo_path,
        "Coverage threshold in CI is 80%.",
        "actually it's 75, we lowered it when the legacy importer module came in",
    )
    assert [(d.action, d.target) for d in run.decisions] == [("UPDATE", old)]
    (memory,) = memories(repo_path).values()
    assert "75" in memory.body


def test_by_the_way_in_chinese_opens_a_statement_not_an_errand(repo_path: Path) -> None:
    """顺便说一下 ("by the way") opens what follows; 顺便 alone ("while you're at it,
    ...") asks for an errand."""
    old, run = _said_after(
        repo_path, "前端打包用 webpack。", "顺便说一下，打包工具换了，webpack 退役，以后都用 Vite"
    )
    assert [(d.action, d.target) for d in run.decisions] == [("SUPERSEDE", old)]
    capture(repo_path, user_turn(2, "顺便把 README 里的链接修一下"))
    (run,) = open_repo(repo_path).process().runs
    assert not run.decisions
