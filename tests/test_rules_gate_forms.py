"""The rules Gate's statement forms (memgit/gate/forms/*.yaml): what it keeps, what it refuses.

Each kept message is a form issue 25 names (explicit requests in their common forms,
preferences and habits, decisions, facts about people, several facts in one turn,
identity) in English, Chinese, Spanish or German, with the scope a careful person would
give it; each refused message is one of what must never become a memory (questions,
hypotheticals, someone else's words, an assistant's suggestion, jokes and sarcasm,
states of the moment, one-off instructions for the next answer, code, tool output,
text with a redaction marker, "I never said that"). End to end through ``memgit
process`` in one real repository, each message in its own session; the forms as data
are checked too: every shipped file parses, a broken one says where, and a language
is added by a file alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_process import capture, memories, open_repo, user_turn

from memgit.errors import InvalidInputError
from memgit.gate.backends.rules import find_statements
from memgit.gate.forms import load_forms, parse_forms
from memgit.memory import Memory

# message -> [(scope, type), ...] of the memories it gives, each quoting its own words.
KEPT: dict[str, list[tuple[str, str]]] = {
    "Don't forget that the billing cron runs at 02:00 UTC.": [("project", "fact")],
    "Save this to memory: the VPN config lives in infra/vpn.conf.": [("project", "fact")],
    "Make a note: our staging bucket is acme-staging-assets.": [("project", "fact")],
    "Note to self: the release checklist is in docs/release.md.": [("project", "fact")],
    "Keep in mind that the API rate limit is 600 requests per minute.": [("project", "fact")],
    "For future reference: the design system lives in packages/ui.": [("project", "fact")],
    "I always use tabs.": [("user", "preference")],
    "I prefer Poetry over pip-tools.": [("user", "preference")],
    "I'd rather you use f-strings than format().": [("user", "preference")],
    "I hate long functions, keep them under 40 lines.": [("user", "preference")],
    "We'll deploy on Fly.io.": [("project", "decision")],
    "We decided to move the docs to MkDocs.": [("project", "decision")],
    "Let's go with Redis for the session store.": [("project", "decision")],
    "We use Renovate for dependency updates.": [("project", "fact")],
    "Dana owns billing.": [("project", "fact")],
    "Priya handles the release notes.": [("project", "fact")],
    "Tom is our SRE.": [("project", "fact")],
    "Marta is responsible for the data pipeline.": [("project", "fact")],
    "I use zsh, and my editor is Neovim.": [("user", "preference"), ("user", "fact")],
    "I'm Sam, the platform lead.": [("user", "fact")],
    "记住：生产数据库在 db-prod-1 上。": [("project", "fact")],
    "别忘了发布前要更新 CHANGELOG.md。": [("project", "procedure")],
    "记一下，测试账号是 qa-bot。": [("project", "fact")],
    "我喜欢用 ripgrep 搜代码。": [("user", "preference")],
    "我们决定用 Kafka 做消息队列。": [("project", "decision")],
    "Recuerda que el staging está en staging.ejemplo.es.": [("project", "fact")],
    "No olvides que los tests de integración usan Docker.": [("project", "fact")],
    "Toma nota: la rama principal es develop.": [("project", "fact")],
    "Prefiero respuestas cortas.": [("user", "preference")],
    "Decidimos usar Terraform para la infraestructura.": [("project", "decision")],
    "Lucía se encarga de los despliegues.": [("project", "fact")],
    "Merk dir, dass der Build-Server build01.intern heißt.": [("project", "fact")],
    "Vergiss nicht: Releases werden freitags getaggt.": [("project", "fact")],
    "Notiere, dass wir Python 3.12 verwenden.": [("project", "fact")],
    "Ich bevorzuge kurze Antworten.": [("user", "preference")],
    "Wir haben uns für GitLab CI entschieden.": [("project", "decision")],
    "Jonas ist für das Monitoring zuständig.": [("project", "fact")],
    # A short label before a colon opens a statement, and a list after it is parted.
    "Team intro: Priya owns the frontend, Sam does infra, and Dana is our tech lead.": [
        ("project", "fact"),
        ("project", "fact"),
        ("project", "fact"),
    ],
    "We're building ropewalk, a booking app for climbing gyms.": [("project", "fact")],
    "We've set up Sentry for error tracking.": [("project", "decision")],
    "Something I want you to keep in mind for good: never run migrations yourself.": [
        ("user", "procedure")
    ],
    "She's right, so from now on tokens go in packages/ui.": [("project", "procedure")],
    "Staging lives at staging.ropewalk.dev, and prod will be app.ropewalk.dev.": [
        ("project", "fact"),
        ("project", "fact"),
    ],
    "Python 3.12 + FastAPI. Poetry for deps.": [("project", "fact")],
    "So you know who to bug: Oskar runs infra (and the cloud account, mostly), Nils does "
    "the analytics side, and Mette is our PM.": [
        ("project", "fact"),
        ("project", "fact"),
        ("project", "fact"),
    ],
    "One more for the record: we demo the app to the marina association on 2 December.": [
        ("project", "fact")
    ],
    # The statement beside a credential holds; the credential goes (capture redacts it).
    "The staging database host is db.staging.acme.net, and its password is tangerine-moose-71.": [
        ("project", "fact")
    ],
    # One introduction over two sentences is one memory.
    "I'm Maya, I do most of the backend. I'm in Lisbon, so my hours are 9 to 6 WET.": [
        ("user", "fact")
    ],
}

# Messages that must never become a memory.
NEVER = [
    "What's the best way to structure a monorepo?",
    "Should we use Kafka here?",
    "If I were to use Rust for this, would it be faster?",
    "Suppose we moved everything to AWS, what would change?",
    'My manager said "we always ship on Fridays", which seems risky.',
    "Shall I switch the tests to pytest?",
    "Sure, let's rewrite it all in Perl, what could go wrong 🙃",
    "I always write bug-free code, lol.",
    "I'm tired today.",
    "The CI is down right now.",
    "Double-check the SQL in your next answer.",
    "For this answer only, use bullet points.",
    "```python\nALWAYS_RETRY = True  # we always retry\n```",
    "$ npm test\nnpm ERR! Remember that tests failed",
    'Traceback (most recent call last):\n  File "app.py", line 3\nWe use Python 3.12',
    "pasting the CI log:\n\n#14 12.31 npm ERR! code ERESOLVE\n#14 ERROR: process failed",
    "here's the output:\nThe build uses Node 20 and 3 workers",
    "My password is [REDACTED:password], remember it.",
    "I never said that.",
    "¿Usamos Kafka o RabbitMQ?",
    "Si usáramos Rust, ¿sería más rápido?",
    "Estoy cansado hoy.",
    "Solo esta vez, responde en inglés.",
    "jaja, siempre despliego los viernes",
    "Sollen wir Kafka nehmen?",
    "Wenn wir Rust benutzen würden, wäre es schneller.",
    "Ich bin heute müde.",
    "Nur dieses Mal auf Englisch antworten.",
    "Haha, wir deployen immer freitags um 17 Uhr.",
    "我们要不要用 Kafka？",
    "如果换成 Rust 会更快吗？",
    "今天好累。",
    "这次回答用英文。",
    "哈哈，我们永远周五发版。",
    "Ich habe das nie gesagt.",
    "Yo nunca dije eso.",
    "我没说过这句话。",
    "Fun fact: Discord moved from Go to Rust.",
    "the berth forecast endpoint is slow, about 2s at p95",
    "status: CI is green, deploy going out now",
    "I'd rather have none than those.",
    "Cloud Build does the rest.",
    "Love how the build takes 14 minutes.",
    "Deploy is running, should be done in 5.",
    "Our CTO's take in the all-hands was basically 'we'll be on Kubernetes by summer'.",
    "Decision from this morning's call: so please stop suggesting the 15-only fixes 😅",
    "The Gradle daemon is hogging 8GB of memory again.",
    "cargo build has been running for 20 minutes on the conference wifi, send help",
    "This reindex is going to take about a million years.",
    "Our feature branches have the life expectancy of a fruit fly.",
    "I love it when the linter changes its mind between two runs.",
    "Ich liebe es, wenn Gradle um Mitternacht alles neu herunterlädt.",
    "Der Export läuft noch, dauert wohl eine Stunde.",
    "El build está corriendo, en diez minutos debería estar.",
    "Este repo tiene más ramas que commits, literal.",
    "Rust 的编译报错真是天书。",
    "The test suite is so slow that I could learn Haskell while it runs.",
    "Die Pipeline ist so langsam, dass ich nebenher ein Buch schreiben kann.",
    "不知道 Rust 的宏能不能在这里用",
]


@pytest.fixture(scope="module")
def processed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Memory]]:
    """Every KEPT and NEVER message captured in its own session, processed in one run:
    message -> the memories quoting it."""
    from memgit import MemoryRepo

    path = tmp_path_factory.mktemp("forms") / "memory"
    MemoryRepo.init(path)
    messages = [*KEPT, *NEVER]
    capture(path, *(user_turn(0, text, session=f"m{n}") for n, text in enumerate(messages)))
    open_repo(path).process()
    found: dict[str, list[Memory]] = {text: [] for text in messages}
    for memory in memories(path).values():
        session = memory.sources[0].unit.split("/")[1]
        found[messages[int(session[1:])]].append(memory)
    return found


@pytest.mark.parametrize("message", list(KEPT), ids=range(len(KEPT)))
def test_each_form_is_kept_with_its_scope(processed: dict[str, list[Memory]], message: str) -> None:
    got = sorted((m.scope, m.type) for m in processed[message])
    assert got == sorted(KEPT[message])
    for memory in processed[message]:
        (source,) = memory.sources
        assert source.quote in message


@pytest.mark.parametrize("message", NEVER, ids=range(len(NEVER)))
def test_what_must_never_become_a_memory(processed: dict[str, list[Memory]], message: str) -> None:
    assert processed[message] == []


def test_several_facts_in_one_turn_are_several_memories() -> None:
    """Each its own memory, each quoting its own clause."""
    got = [s.quote for s in find_statements("I use zsh, and my editor is Neovim.")]
    assert got == ["I use zsh", "my editor is Neovim"]
    got = [
        s.quote
        for s in find_statements(
            "Two things: the cache is Redis 7, and the queue is SQS in eu-west-1."
        )
    ]
    assert got == ["the cache is Redis 7", "the queue is SQS in eu-west-1"]


def test_every_shipped_forms_file_parses_and_each_language_has_each_kind() -> None:
    folder = Path(__file__).resolve().parents[1] / "memgit" / "gate" / "forms"
    files = sorted(folder.glob("*.yaml"))
    assert [f.stem for f in files] == ["de", "en", "es", "zh"]
    for file in files:
        forms = parse_forms(file.read_text("utf-8"), source=str(file))
        for kind in ("requests", "statements", "never", "agreements", "proposals"):
            assert getattr(forms, kind), (file.name, kind)
            assert {form.language for form in getattr(forms, kind)} == {file.stem}
    assert len(load_forms().requests) == sum(
        len(parse_forms(f.read_text("utf-8"), source=str(f)).requests) for f in files
    )


def test_a_language_is_a_file_alone() -> None:
    """A new file's forms apply beside the others, through no new code path."""
    french = parse_forms(
        "format: 1\nlanguage: fr\nrequests:\n  - {pattern: '^souviens-toi que\\s+', type: fact}\n",
        source="fr.yaml",
    )
    both = load_forms() + french
    assert [f.language for f in both.requests][-1] == "fr"
    assert both.requests[-1].search("Souviens-toi que la CI tourne la nuit.")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("format: 2\nlanguage: xx\n", "format"),
        (
            "format: 1\nlanguage: xx\nstatements: [{pattern: '(unclosed'}]\n",
            "statements[0].pattern",
        ),
        (
            "format: 1\nlanguage: xx\nstatements: [{pattern: x, scope: team}]\n",
            "statements[0].scope",
        ),
        ("format: 1\nlanguage: xx\nrules: []\n", "rules"),
    ],
    ids=["format", "pattern", "scope", "unknown-key"],
)
def test_a_broken_forms_file_says_where(text: str, field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_forms(text, source="xx.yaml")
    assert caught.value.code == "invalid-forms"
    assert (caught.value.path, caught.value.field) == ("xx.yaml", field)
