"""Changes of mind by subject, in every common form (issue 25, items 2 and 3).

End to end through ``memgit process`` in real repositories, over two runs: a change of
mind retires the memory of the *same subject slot* (``refs/memgit/retired/<id>`` points
at its last commit, the successor names it in ``supersedes``) and nothing else; a
different environment, part, host, owner or number on either side retires nothing;
a change with no earlier memory is stored as the state it leaves. The earlier memory
is made with ``memgit remember``, so these tests do not depend on which statements the
rules Gate admits on their own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_process import capture, memories, open_repo, ref, refs, user_turn

from memgit.gate.changes import change_kind, find_target, read_change
from memgit.gate.subjects import same_subject, slot_of
from memgit.memory import Memory

from support import git


def _seed(path: Path, *texts: str) -> list[Memory]:
    """Each text remembered as a project memory; the memories, in order."""
    made = []
    for text in texts:
        remembered = open_repo(path).remember(text, scope="project")
        made.append(memories(path)[remembered.memory_id])
    return made


def _say(path: Path, text: str, seq: int = 1) -> list[tuple[str, str | None]]:
    """Capture ``text`` as a user turn and process it: the run's (action, target)s."""
    capture(path, user_turn(seq, text))
    (run,) = open_repo(path).process().runs
    return [(decision.action, decision.target) for decision in run.decisions]


def _assert_retired(path: Path, old: Memory) -> Memory:
    """``old`` left the tree, its retired ref points at its last commit, and the one
    current memory that replaced it names it in ``supersedes``; that memory."""
    current = memories(path)
    assert old.id not in current
    retired = ref(path, f"refs/memgit/retired/{old.id}")
    assert retired is not None
    assert old.id in git(path, "ls-tree", "-r", "--name-only", retired, "--", "memories")
    (successor,) = [m for m in current.values() if any(s.id == old.id for s in m.supersedes)]
    assert [(s.id, s.commit) for s in successor.supersedes] == [(old.id, retired)]
    return successor


# (earlier memory, change of mind, the successor's title)
RETIRES: list[tuple[str, str, str]] = [
    # The forms issue 25 names, verbatim where it gives them.
    ("We use pnpm for every package.", "I no longer use pnpm, we moved to bun.", ""),
    ("The team uses npm to install packages.", "We switched from npm to pnpm.", ""),
    ("We use yarn in this repo.", "We changed from yarn to pnpm last week.", ""),
    (
        "The API lives at api.example.com.",
        "The API moved from api.example.com to api2.example.com.",
        "",
    ),
    ("Production runs Postgres 15.", "Production now runs Postgres 16.", ""),
    ("Production runs Postgres 15.", "We upgraded production to Postgres 16.", ""),
    ("Deploys go through Jenkins.", "We migrated the deploys from Jenkins to GitHub Actions.", ""),
    ("We cache sessions in Redis.", "We dropped Redis.", "We no longer use Redis"),
    ("I prefer pytest for tests.", "I prefer unittest instead of pytest now.", ""),
    ("We deploy to Heroku.", "We don't deploy to Heroku anymore, it all runs on Fly.", ""),
    ("The staging server is staging.acme.dev.", "Correction: staging moved to stg.acme.dev.", ""),
    ("Use tabs in Makefiles.", "Actually, use spaces instead of tabs in Makefiles now.", ""),
    ("Staging is on Kubernetes 1.27.", "Staging got bumped to Kubernetes 1.29 this morning.", ""),
    (
        "The API server runs on Python 3.10.",
        "Upgraded the API server to Python 3.12 last night.",
        "The API server is on Python 3.12",
    ),
    (
        "The frontend is built with webpack.",
        "We dropped webpack, the frontend builds with Vite now.",
        "",
    ),
    ("Our CI runs on Jenkins.", "We migrated CI to GitHub Actions last week.", ""),
    # Chinese, Spanish, German.
    ("我们项目用 MySQL 数据库。", "我们项目已经从 MySQL 迁移到 PostgreSQL 了。", ""),
    ("我们用 npm 管理依赖。", "我们不再用 npm 管理依赖，改用 pnpm 了。", ""),
    ("Usamos npm en el proyecto.", "Cambiamos de npm a pnpm en el proyecto.", ""),
    ("Usamos Jenkins para el despliegue.", "Ya no usamos Jenkins para el despliegue.", ""),
    ("Usamos MySQL en producción.", "En producción migramos de MySQL a PostgreSQL.", ""),
    (
        "Las incidencias las llevamos en Jira.",
        "Hemos cambiado Jira por Linear para las incidencias.",
        "",
    ),
    ("La API usa Node 18.", "Actualizamos la API a Node 22 ayer.", ""),
    (
        "El repositorio principal está en GitLab.",
        "Perdón, el repositorio principal está en Bitbucket, no en GitLab.",
        "",
    ),
    ("Wir nutzen npm im Projekt.", "Wir sind im Projekt von npm auf pnpm umgestiegen.", ""),
    ("Wir nutzen Jenkins für Deployments.", "Wir nutzen Jenkins nicht mehr für Deployments.", ""),
    ("Der Sprint dauert drei Wochen.", "Korrektur: der Sprint dauert zwei Wochen, nicht drei.", ""),
    # Markers without a change verb: got pushed to, folded into, subimos ... a.
    ("The standup is at 9:30.", "standup got pushed to 10:15", ""),
    (
        "The design system lives in a separate repo, acme-ui.",
        "acme-ui got folded into the monorepo under packages/ui",
        "",
    ),
    (
        "El límite de memoria de los pods es 512Mi.",
        "subimos el límite de memoria de los pods a 1Gi, con 512 se morían",
        "",
    ),
    ("Frontend state is managed with Redux Toolkit.", "we ripped out redux entirely", ""),
    # The same name at a new version.
    ("El frontend está hecho en Vue 2.", "Ya migramos el frontend a Vue 3.", ""),
    # A number and its unit, written apart in one and together in the other.
    ("Max upload size is 10 MB.", "max upload size 10MB -> 25MB, support kept complaining", ""),
]


@pytest.mark.parametrize(("first", "second", "title"), RETIRES, ids=range(len(RETIRES)))
def test_a_change_of_mind_retires_the_memory_of_its_subject(
    repo_path: Path, first: str, second: str, title: str
) -> None:
    (old,) = _seed(repo_path, first)
    assert _say(repo_path, second) == [("SUPERSEDE", old.id)]
    successor = _assert_retired(repo_path, old)
    assert successor.sources[-1].quote in second
    if title:
        assert successor.title == title


# (earlier memory, a change about another subject): nothing may be retired.
MUST_NOT_RETIRE: list[tuple[str, str]] = [
    # Environment.
    ("The staging database runs Postgres 15.", "Production now runs Postgres 16."),
    ("CI runs on Python 3.11.", "Locally I switched to Python 3.12."),
    ("The test server runs Debian 11.", "The production server now runs Debian 12."),
    # Part of the system, and a host name's first label.
    ("The API lives at api.example.dev.", "The docs moved to docs.example.dev."),
    ("The API lives at api.example.dev.", "We moved from docs.example.dev to docs2.example.dev."),
    ("The frontend uses yarn.", "The backend switched from yarn to pnpm."),
    ("The shop runs at shop.example.dev.", "We moved blog.example.dev to blog2.example.dev."),
    # A new version in an environment the memory does not name.
    ("The database runs Postgres 15.", "Staging now runs Postgres 16."),
    # A numbered name, an owner.
    ("Server 7 runs Debian 11.", "Server 14 now runs Debian 12."),
    ("My laptop runs Fedora.", "Our laptops switched to Ubuntu."),
    # Not a change: a hypothetical, a plan, someone else's words.
    ("We deploy on Heroku.", "If we moved to Fly, deploys would be faster."),
    ("We use npm.", "We are thinking about switching from npm to pnpm."),
    ("We use npm.", "Dana said we switched from npm to pnpm."),
    # The old value it names is not the one held.
    ("We use yarn for the monorepo.", "We switched from npm to pnpm."),
    # Two memories hold the old value equally: retiring one at random loses a true one.
    ("We use yarn for the monorepo.", "We switched from yarn to pnpm."),
    # Chinese, Spanish, German.
    ("测试环境的数据库是 MySQL。", "生产环境已经改用 PostgreSQL 了。"),
    ("前端用 yarn 管理依赖。", "后端改用 pnpm 管理依赖了。"),
    ("El entorno de pruebas usa MySQL.", "En producción migramos de MySQL a PostgreSQL."),
    (
        "La API está en api.example.dev.",
        "Ya no usamos docs.example.dev, la documentación está en docs2.example.dev.",
    ),
    (
        "Die Staging-Datenbank läuft auf Postgres 15.",
        "Die Produktionsdatenbank läuft jetzt auf Postgres 16.",
    ),
    ("Das Frontend nutzt yarn.", "Das Backend ist von yarn auf pnpm umgestiegen."),
]


@pytest.mark.parametrize(("first", "second"), MUST_NOT_RETIRE, ids=range(len(MUST_NOT_RETIRE)))
def test_a_change_about_another_subject_retires_nothing(
    repo_path: Path, first: str, second: str
) -> None:
    seeded = [first]
    if "yarn for the monorepo" in first and "from yarn" in second:
        seeded.append("Yarn workspaces hold every package of the monorepo.")
    olds = _seed(repo_path, *seeded)
    decisions = _say(repo_path, second)
    assert all(action == "CREATE" for action, _target in decisions)
    current = memories(repo_path)
    for old in olds:
        assert current[old.id].title == old.title
    assert refs(repo_path, "refs/memgit/retired/") == {}


# (a change with no earlier memory, the memory it becomes: title, scope, type)
ALONE: list[tuple[str, tuple[str, str, str]]] = [
    ("We switched from npm to pnpm.", ("We use pnpm (no longer npm)", "project", "fact")),
    ("I switched to Neovim last month.", ("I use Neovim", "user", "preference")),
    ("We migrated to Postgres 16.", ("We use Postgres 16", "project", "fact")),
    (
        "We no longer use yarn; everything is on pnpm now.",
        ("We no longer use yarn; everything is on pnpm now", "project", "fact"),
    ),
    # A sentence the statement forms read already (我们…用) keeps its own words.
    ("其实我们已经改用 PostgreSQL 了。", ("我们已经改用 PostgreSQL 了", "project", "fact")),
    ("Migramos de MySQL a PostgreSQL.", ("Usamos PostgreSQL (ya no MySQL)", "project", "fact")),
    ("Wir sind auf pnpm umgestiegen.", ("Wir nutzen pnpm", "project", "fact")),
    (
        "We're switching the test suite to Vitest.",
        ("We're switching the test suite to Vitest", "project", "fact"),
    ),
    # "I" and "we": the new state is the team's.
    (
        "I no longer use pnpm, we moved to bun last sprint.",
        ("We use bun (no longer pnpm)", "project", "fact"),
    ),
    # An editor or a formatter, said with no subject, is the person's.
    (
        "Not using black anymore, ruff format does the job.",
        ("Not using black anymore, ruff format does the job", "user", "preference"),
    ),
]


@pytest.mark.parametrize(("text", "expected"), ALONE, ids=range(len(ALONE)))
def test_a_change_with_no_earlier_memory_is_stored_as_the_new_state(
    repo_path: Path, text: str, expected: tuple[str, str, str]
) -> None:
    assert [action for action, _ in _say(repo_path, text, seq=0)] == ["CREATE"]
    (memory,) = memories(repo_path).values()
    assert (memory.title, memory.scope, memory.type) == expected
    assert memory.sources[0].quote in text


def test_a_removal_after_the_new_state_adds_no_memory_of_its_own(repo_path: Path) -> None:
    """ "we moved to bun. pnpm-lock.yaml is gone, bun.lock is committed.": the second
    sentence is the same change, and a memory of it would name pnpm as if it held."""
    text = "ok so big news, we moved to bun. pnpm-lock.yaml is gone, bun.lock is committed."
    assert [action for action, _ in _say(repo_path, text, seq=0)] == ["CREATE"]
    (memory,) = memories(repo_path).values()
    assert "bun" in memory.title and "pnpm" not in f"{memory.title} {memory.body}"


@pytest.mark.parametrize(
    "text",
    [
        "Please switch to the staging branch.",
        "I moved the file to src/utils.py.",
        "We switched to the other tab for now.",
        "If we migrated to Postgres 16, would anything break?",
        "We're planning to move to Fly next month.",
        "Can you switch from npm to pnpm in this script",
        "Por favor cambia a la rama de pruebas.",
        "如果我们改用 PostgreSQL，会更快吗",
        "Wenn wir auf pnpm umsteigen würden, wäre es schneller.",
        "I moved the button to the left.",
        "My friend switched to Linux last year.",
        "Fun fact: Discord moved from Go to Rust.",
        "We switched to Zoom for the standup today.",
        "I changed the color to Red.",
        "It's Postgres, not MySQL.",
        # Only the old value: nothing new to keep, and "Redis" would look current.
        "We dropped Redis.",
        "Heroku is out, the pricing got silly.",
    ],
)
def test_a_request_or_hypothetical_change_stores_nothing(repo_path: Path, text: str) -> None:
    assert _say(repo_path, text, seq=0) == []
    assert memories(repo_path) == {}


def test_the_old_value_named_picks_the_target_among_memories_of_one_family(
    repo_path: Path,
) -> None:
    """Two package-manager memories: "from npm" retires the npm one, whatever the other
    shares with the statement."""
    npm, _yarn = _seed(
        repo_path, "The site uses npm for its build.", "The site build caches yarn offline."
    )
    assert _say(repo_path, "The site build switched from npm to pnpm.") == [("SUPERSEDE", npm.id)]
    _assert_retired(repo_path, npm)


def test_two_changes_over_three_runs_make_a_chain(repo_path: Path) -> None:
    """npm -> pnpm -> bun: each run retires the one current memory, and the last names
    the second, which names the first."""
    (first,) = _seed(repo_path, "We use npm for packages.")
    _say(repo_path, "We switched from npm to pnpm for packages.", seq=1)
    second = _assert_retired(repo_path, first)
    _say(repo_path, "We moved from pnpm to bun for packages.", seq=2)
    third = _assert_retired(repo_path, second)
    assert "bun" in third.title
    assert list(memories(repo_path)) == [third.id]


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        ("We switched from npm to pnpm.", ("npm",), ("pnpm",)),
        ("I no longer use pnpm, we moved to bun.", ("pnpm",), ("bun",)),
        (
            "We've moved off Jenkins, deploys run on GitHub Actions now.",
            ("Jenkins",),
            ("GitHub Actions",),
        ),
        ("We upgraded Postgres from 15 to 16.", ("15",), ("16",)),
        ("Use spaces instead of tabs.", ("tabs",), ("spaces",)),
        ("我们已经从 MySQL 迁移到 PostgreSQL 了。", ("MySQL",), ("PostgreSQL",)),
        ("Ya no usamos Jenkins.", ("Jenkins",), ()),
        ("Wir nutzen pnpm statt npm.", ("npm",), ("pnpm",)),
    ],
)
def test_a_change_names_its_old_and_new_values(
    text: str, old: tuple[str, ...], new: tuple[str, ...]
) -> None:
    change = read_change(text)
    assert change is not None
    assert change.action == "SUPERSEDE"
    assert change.old == old
    assert all(any(value in said for said in change.new) for value in new)


def test_from_now_on_alone_opens_a_rule_and_changes_nothing() -> None:
    for text in (
        "From now on, tag release 8 with the build date.",
        "以后提交信息用英文写。",
        "A partir de ahora, etiqueta cada versión.",
        "Ab jetzt bitte jeden Release taggen.",
    ):
        assert read_change(text) is None, text


def test_an_idiom_of_no_names_no_old_value() -> None:
    """ "no exceptions" and "no issues so far" say how a thing is, not what was dropped."""
    for text in (
        "two approvals on every PR, no exceptions",
        "upgraded prod db to pg 15 last night, no issues so far",
    ):
        change = read_change(text)
        assert change is None or not change.old, (text, change)


def test_the_slot_tells_environments_parts_hosts_and_numbers_apart() -> None:
    def same(one: str, other: str) -> bool:
        return same_subject(slot_of(one), slot_of(other))

    assert same("staging moved to stg.acme.dev", "The staging server is staging.acme.dev")
    assert same("测试环境已经迁到 qa.shop-demo.cn 了", "测试环境地址是 test.old-shop.cn")
    assert same("The API has moved to api2.example.com", "The API lives at api.example.com")
    assert not same("Production now runs Postgres 16", "The staging database runs Postgres 15")
    assert not same("docs.example.dev is the new host", "api.example.dev is the host")
    assert not same("Server 14 runs Debian", "Server 7 runs Debian")
    assert not same("my laptop runs Fedora", "our laptop runs Fedora")
    assert same("my laptop runs Ubuntu", "the laptop runs Fedora")
    assert not same("We dropped a replica of the US cluster", "The EU cluster runs in eu-central-1")
    assert same("We moved the cluster to us-east-1", "The EU cluster runs in eu-central-1")


def test_equal_fits_have_no_target() -> None:
    known = {"a": "The frontend uses yarn", "b": "The backend uses yarn"}
    assert find_target("We switched from yarn to pnpm.", known, taken=set()) is None
    assert find_target("The backend switched from yarn to pnpm.", known, taken=set()) == "b"


@pytest.mark.parametrize(
    ("module", "text", "field"),
    [
        ("subjects", "format: 2\n", "format"),
        (
            "subjects",
            "format: 1\nqualifiers:\n  - name: x\n    one_sided: maybe\n",
            "qualifiers[0]",
        ),
        ("subjects", "format: 1\nthings:\n  - name: db\n    values: ['(']\n", "things[0].values"),
        ("changes", "format: 1\nlanguages:\n  en:\n    change: ['[']\n", "change"),
        (
            "changes",
            "format: 1\nlanguages:\n  en:\n    forms:\n      - pattern: x\n",
            "languages.en.forms[0]",
        ),
        ("scoping", "format: 1\nuser: []\nteam: 3\nproject: []\n", "team"),
    ],
)
def test_a_broken_rules_file_is_an_error_naming_its_field(
    module: str, text: str, field: str
) -> None:
    """The shipped files are data a person edits: a mistake there names file and field."""
    from memgit.errors import MemgitError
    from memgit.gate import changes, scoping, subjects

    parse = {
        "subjects": subjects.parse_subjects,
        "changes": changes.parse_changes,
        "scoping": scoping.parse_scopes,
    }[module]
    with pytest.raises(MemgitError) as caught:
        parse(text)
    assert caught.value.code == "invalid-gate-rules"
    assert caught.value.field == field
    assert caught.value.path is not None and caught.value.path.endswith(".yaml")


BANK = {
    "stg-db": "The staging database runs Postgres 15",
    "prod-db": "Production runs Postgres 15.4",
    "api-host": "The API lives at api.example.dev",
    "docs-host": "The docs live at docs.example.dev",
    "pm": "We use pnpm for packages",
    "fe-pm": "The frontend uses yarn",
    "ci": "CI runs on Jenkins",
    "deploy": "We deploy to Heroku",
    "editor": "I use VS Code",
    "srv7": "Server 7 runs Debian 11",
    "laptop": "My laptop runs Fedora",
    "mq": "The message queue is RabbitMQ",
    "zh-db": "测试环境的数据库是 MySQL",
    "es-ci": "Usamos Jenkins para el despliegue",
}


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("Production now runs Postgres 16.", "prod-db"),
        ("The staging database was upgraded to Postgres 16.", "stg-db"),
        ("We switched from pnpm to bun.", "pm"),
        ("The frontend switched from yarn to pnpm.", "fe-pm"),
        # The one memory holding the value named is meant, whatever part it names.
        ("We moved from yarn to pnpm.", "fe-pm"),
        ("CI moved to GitHub Actions.", "ci"),
        ("We moved off Heroku, everything runs on Fly.io now.", "deploy"),
        ("I switched from VS Code to Zed.", "editor"),
        ("Server 14 now runs Debian 12.", None),
        ("Server 7 now runs Debian 12.", "srv7"),
        ("Our laptops now run Ubuntu.", None),
        ("We replaced RabbitMQ with Kafka.", "mq"),
        ("The docs moved to docs2.example.dev.", "docs-host"),
        ("The API moved to api.example.io.", "api-host"),
        ("生产环境已经改用 PostgreSQL 了。", None),
        ("测试环境已经改用 PostgreSQL 了。", "zh-db"),
        ("Ya no usamos Jenkins, ahora todo va a GitHub Actions.", "es-ci"),
    ],
)
def test_among_many_memories_a_change_finds_its_subject(text: str, target: str | None) -> None:
    assert find_target(text, BANK, taken=set()) == target


# (the one memory there is, a change of mind in a common form: it finds that memory)
FORMS_FIND_TARGET = [
    ("Our API is written in Flask.", "We rewrote the API in FastAPI over the summer."),
    ("The team standup is at 9:30.", "Standup got moved to 10:00."),
    ("I use VS Code.", "These days I'm on Zed."),
    ("We store sessions in Redis.", "Sessions live in Postgres now, we ripped Redis out."),
    ("I prefer tabs.", "Actually I've come around to spaces."),
    ("Our on-call tool is PagerDuty.", "PagerDuty got replaced by Opsgenie."),
    ("Tests run with nose.", "We finally killed nose, it's all pytest."),
    ("Our linter is flake8.", "flake8 -> ruff, done last sprint."),
    ("Logs go to Papertrail.", "We ditched Papertrail for Loki."),
    ("日志收集用 ELK。", "ELK 太重了，我们已经不用了，现在是 Loki"),
    ("我们部署在腾讯云。", "腾讯云的合同到期了，全部搬到了华为云。"),
    ("订单数据存在 MySQL 里。", "迁移之后订单数据在 TiDB 上。"),
    ("el ORM es Sequelize", "sequelize ya fue, lo swapeamos por Prisma, q es mucho mas comodo"),
]


@pytest.mark.parametrize(("earlier", "text"), FORMS_FIND_TARGET, ids=range(len(FORMS_FIND_TARGET)))
def test_a_change_in_a_common_form_finds_the_memory_it_replaces(earlier: str, text: str) -> None:
    assert change_kind(text) == "SUPERSEDE"
    assert find_target(text, {"m": earlier}, taken=set()) == "m"


# (memories, a statement that must retire none of them)
LEAVES_ALONE = [
    (["I use VS Code."], "Priya switched to Zed."),
    (["Deploys go out on Tuesdays."], "Deploys now need two approvals."),
    (["The release manager is Tom."], "The release date moved to Friday."),
    (["The team standup is at 9:30."], "The retro got moved to Friday."),
    (["Our web app uses React."], "The mobile app moved to Flutter."),
    (["Sessions are stored in Redis."], "We moved the job queue to RabbitMQ."),
    (["Staging runs Postgres 15.", "Production runs Postgres 15."], "We upgraded to Postgres 16."),
]


@pytest.mark.parametrize(("known", "text"), LEAVES_ALONE, ids=range(len(LEAVES_ALONE)))
def test_a_change_about_someone_or_something_else_retires_nothing(
    known: list[str], text: str
) -> None:
    assert find_target(text, {f"m{n}": m for n, m in enumerate(known)}, taken=set()) is None


def test_of_two_editors_a_first_person_change_retires_the_users_own() -> None:
    known = {"mine": "I use VS Code.", "priya": "Priya uses Vim."}
    assert find_target("These days I'm on Zed.", known, taken=set()) == "mine"


# (what the user said, what they said next in the same session, the decision it makes)
SAID_NEXT = [
    (
        "The staging URL is staging.shopfront.io.",
        "sorry, typo: it's stage.shopfront.io, no 'ing'",
        "UPDATE",
    ),
    ("Our sprints are three weeks long.", "scratch that, sprints are two weeks.", "UPDATE"),
    (
        "The public API rate limit is 100 requests per minute.",
        "bumped the API rate limit to 300/min today",
        "SUPERSEDE",
    ),
    (
        "We store user uploads on S3.",
        "we ditched S3 for Cloudflare R2 last month, the egress fees were insane",
        "SUPERSEDE",
    ),
    (
        "Feature flags are handled by LaunchDarkly.",
        "No more LaunchDarkly, the contract ended. Flags live in Unleash now, self-hosted.",
        "SUPERSEDE",
    ),
    (
        "We use Yarn 1 for packages.",
        "Yarn classic is out. We're on pnpm 9 since Monday.",
        "SUPERSEDE",
    ),
    (
        "The prod database is on port 5433.",
        "wait no, I mixed them up. prod is on 5432, it's the replica that's on 5433",
        "UPDATE",
    ),
    ("My shell is bash.", "moved my shell to zsh finally, oh-my-zsh and all", "SUPERSEDE"),
    (
        "The session cookie lasts 7 days.",
        "we shortened session cookies to 24h after the security review",
        "SUPERSEDE",
    ),
    ("Our error tracker is Rollbar.", "Rollbar → Sentry, done as of this morning", "SUPERSEDE"),
]


@pytest.mark.parametrize(("first", "second", "action"), SAID_NEXT, ids=range(len(SAID_NEXT)))
def test_what_the_user_says_next_replaces_what_they_just_said(
    repo_path: Path, first: str, second: str, action: str
) -> None:
    """A correction of the turn just before, a dated change, a change with its reason
    ("the fees were insane"), and a removal followed by the new state are one decision
    about the memory just made, never a second memory beside it."""
    assert [a for a, _ in _say(repo_path, first, seq=0)] == ["CREATE"]
    (old,) = memories(repo_path).values()
    assert _say(repo_path, second, seq=1) == [(action, old.id)]
    (new,) = memories(repo_path).values()
    assert any(source.quote in second for source in new.sources)


def test_a_new_version_of_the_same_name_targets_its_memory() -> None:
    """ "moved to Frobnicator 5" speaks of the memory holding Frobnicator 4, though the
    two share no other word; a memory at no version of that name is no target."""
    known = {
        "a": "The wiki runs on Frobnicator 4.",
        "b": "The docs are built with Hugo.",
    }
    assert find_target("We moved to Frobnicator 5.", known, taken=frozenset()) == "a"
    assert find_target("We moved to Frobnicator 5.", {"b": known["b"]}, taken=frozenset()) is None


def test_a_correction_that_names_what_it_corrects_targets_that_memory() -> None:
    """ "scratch what I said about farah: ..." replaces the one memory about farah, even
    when the new state names another part (the mobile app, not the dashboard)."""
    known = {
        "a": "farah builds the frontend dashboard",
        "b": "Oskar runs infra and the cloud account",
    }
    said = "scratch what I said about farah: she moved to the mobile app team last week."
    assert read_change(said) is not None
    assert find_target(said, known, taken=frozenset()) == "a"
    both = {**known, "c": "Farah reviews every dashboard PR"}
    assert find_target(said, both, taken=frozenset()) is None
    assert (
        find_target("olvida lo que te dije de farah: ahora está en móvil", known, taken=frozenset())
        == "a"
    )


def test_a_hedge_in_another_clause_is_a_reason_not_a_hedge() -> None:
    """Someone else's words beside the change (a reason) leave it a change; in the
    clause that says it, they make it none."""
    said = "We bumped the minimum to iOS 16, the analytics said under 2% were still on 15."
    assert change_kind(said) == "SUPERSEDE"
    assert change_kind("The analytics team said we bumped the minimum to iOS 16.") is None
    assert change_kind("If we switched to Postgres, the migration would take a week.") is None


@pytest.mark.parametrize(
    "text",
    [
        "cloudfront ➜ bunny.net, finally.",
        "(we let the figma seats lapse) penpot for all design files since june",
        "standup's been async in #standup ever since we went remote-first",
        "the sops file is dead, every service reads its secrets from Vault",
        "flyway's gone.",
        "nuked oh-my-zsh, startup took 2 seconds.",
        "drop the jira-ticket rule for PRs, half the team ignores it",
        "thinking about it more: ULIDs for the primary keys",
        "算了还是用简体吧，繁体我看着累",
        "想了想还是直接给 Parquet，CSV 文件太大了",
        "ya casi no toco Java, ponme los ejemplos en Go",
        "pensándolo mejor: GraphQL para la pública",
        "Quatsch, 5 Sekunden, hab grad im Code nachgeschaut",
    ],
)
def test_a_change_of_mind_said_without_a_verb_of_change(text: str) -> None:
    """An arrow, "X's gone", "let X lapse", "ever since", 算了, "pensándolo mejor",
    "Quatsch": people say a value changed without "switched" or "changed"."""
    assert change_kind(text) is not None, text


def test_a_number_not_the_old_one_names_the_old_value_without_a_comma() -> None:
    """ "50 min not 15" says what "50 min, not 15" says: 15 is the old value."""
    for text, old in (("sorry, typo, 50 min not 15", "15"), ("the limit is 300 not 200", "200")):
        change = read_change(text)
        assert change is not None and change.old == (old,), text
    assert read_change("This is not a problem.") is None
