"""``memgit recall`` and ``memgit map``: the evidence pack, its provenance, and misses
that explain themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memgit.errors import MemgitError
from memgit.jsonio import json_data
from memgit.repo import MemoryRepo

from recall_fixtures import (
    commit_all,
    head,
    ids,
    memory,
    source_for,
    turn,
    turn_keys,
    write_memory,
)
from support import git, memgit_cli, memgit_in_process, snapshot


@pytest.fixture(autouse=True)
def overlay_every_query(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMGIT_OVERLAY_TTL", "0")


def ok(done: object) -> str:
    assert done.returncode == 0, done.stderr.decode()  # type: ignore[attr-defined]
    assert b"Traceback" not in done.stderr  # type: ignore[attr-defined]
    return done.stdout.decode()  # type: ignore[attr-defined]


# --- the pack ------------------------------------------------------------------------


def test_memory_hit_carries_provenance_and_sources(repo_path: Path) -> None:
    repo = MemoryRepo.open(repo_path)
    repo.capture(turn(0, "Remember that staging runs Postgres 16."))
    capture = git(repo_path, "ls-files", "inbox").strip()
    write_memory(
        repo_path,
        memory(
            "pgversion01",
            "Staging uses Postgres 16",
            "Staging runs Postgres 16; use its syntax for migrations.",
            scope="project/billing",
            tags=("database",),
            sources=(source_for(repo_path, capture, "staging runs Postgres 16"),),
        ),
    )
    commit_all(repo_path, "add memory")
    write_memory(repo_path, memory("other000001", "Unrelated memory about kites"))
    commit_all(repo_path, "later commit")
    pack = repo.recall("which postgres version does staging use?")
    [hit] = pack.memories
    assert (hit.memory.id, hit.memory.type, hit.memory.scope, hit.memory.title) == (
        "pgversion01",
        "fact",
        "project/billing",
        "Staging uses Postgres 16",
    )
    assert hit.memory.path == "memories/project/billing/pg/pgversion01.md"
    assert hit.commit == git(repo_path, "log", "-1", "--format=%H", "--", hit.memory.path).strip()
    assert hit.commit != head(repo_path)
    assert hit.matched_terms == ("postgres", "staging", "use")  # "uses", stemmed
    assert "Postgres 16" in hit.snippet and hit.score > 0
    assert [s.source.capture for s in hit.sources] == [capture]
    assert hit.sources[0].turn is None  # only with evidence=True
    assert pack.trace.stop_words == ("which", "does")
    assert pack.trace.terms == ("postgres", "version", "staging", "use")
    assert pack.trace.unknown_terms == ("version",)
    # The memory's source turn is shown under it, not again among the turns.
    assert turn_keys(pack) == []
    assert [(t.turn.session, t.turn.seq, t.index) for t in hit.source_turns] == [("s1", 0, 0)]
    assert hit.source_turns[0].matched_terms == ("postgres", "staging")  # "runs", not "use"
    data = json.loads(ok(memgit_cli("recall", "postgres", "--json", cwd=repo_path)))
    assert set(data) == {
        "query",
        "k",
        "as_of",
        "filters",
        "miss",
        "memories",
        "turns",
        "ranked",
        "trace",
    }
    assert data["memories"][0]["commit"] == hit.commit
    assert data["memories"][0]["sources"][0]["quote"] == "staging runs Postgres 16"
    assert set(data["memories"][0]["source_turns"][0]) >= {
        "capture",
        "source",
        "session",
        "seq",
        "role",
        "message",
        "snippet",
        "score",
        "timestamp",
        "thread",
    }


def test_the_only_correct_hit_is_shown_as_relevance_1_not_score_0(repo_path: Path) -> None:
    """With one memory, FTS5 floors the weight of a term every memory holds, so the raw
    BM25 of the only, correct hit is about 0: the text shows relevance (the share of
    the best hit's score), and --json keeps the raw score beside it."""
    write_memory(repo_path, memory("pytest00001", "I prefer pytest", "I prefer pytest."))
    commit_all(repo_path)
    text = ok(memgit_cli("-C", str(repo_path), "recall", "pytest"))
    assert "  1. I prefer pytest  (fact, user, relevance 1.00)\n" in text, text
    assert "score 0.00" not in text
    data = json.loads(ok(memgit_cli("-C", str(repo_path), "recall", "pytest", "--json")))
    (hit,) = data["memories"]
    assert hit["relevance"] == 1.0 and hit["score"] < 0.01
    assert list(hit).index("relevance") == list(hit).index("score") + 1
    for number in range(3):
        write_memory(repo_path, memory(f"other{number:06d}", f"Kite flying {number}"))
    write_memory(repo_path, memory("weaker00001", "Pytest fixtures", "Pytest kite notes."))
    commit_all(repo_path)
    pack = MemoryRepo.open(repo_path).recall("pytest prefer")
    best, weaker = pack.memories
    assert pack.relevance(best) == 1.0 and 0 < pack.relevance(weaker) < 1
    assert pack.relevance(weaker) == pytest.approx(weaker.score / best.score, abs=1e-4)


def test_title_outranks_body_and_k_limits(repo_path: Path) -> None:
    write_memory(repo_path, memory("inbody00001", "Build notes", "The release uses Docker images."))
    write_memory(repo_path, memory("intitle0001", "Docker is the release format", "See notes."))
    for number in range(5):
        write_memory(repo_path, memory(f"filler{number:05d}", f"Docker filler {number}"))
    commit_all(repo_path)
    repo = MemoryRepo.open(repo_path)
    pack = repo.recall("docker release", k=2)
    assert ids(pack) == ["intitle0001", "inbody00001"]
    assert len(repo.recall("docker", k=3).memories) == 3


def test_scope_and_type_filters_and_the_matches_they_hide(repo_path: Path) -> None:
    write_memory(repo_path, memory("billing0001", "Invoices use Postgres", scope="project/billing"))
    write_memory(repo_path, memory("projects001", "Postgres in projects", scope="projects"))
    write_memory(
        repo_path, memory("userpref001", "Likes Postgres", scope="user", type="preference")
    )
    commit_all(repo_path)
    repo = MemoryRepo.open(repo_path)
    pack = repo.recall("postgres", scope="project")
    assert ids(pack) == ["billing0001"]  # a scope and what is below it, not "projects"
    assert {(m.memory.id, m.hidden_by) for m in pack.trace.hidden} == {
        ("projects001", ("scope",)),
        ("userpref001", ("scope",)),
    }
    assert pack.trace.hidden_total == 2 and not pack.miss
    pack = repo.recall("postgres", scope="project", type="preference")
    assert pack.miss and ids(pack) == []
    assert {m.memory.id: m.hidden_by for m in pack.trace.hidden}["userpref001"] == ("scope",)
    assert {m.memory.id: m.hidden_by for m in pack.trace.hidden}["billing0001"] == ("type",)
    text = ok(memgit_in_process("recall", "postgres", "--type", "decision", cwd=repo_path))
    assert "3 matches hidden by --scope/--type" in text
    assert "This is a miss, not an answer" in text


def test_unknown_terms_are_named(repo_path: Path) -> None:
    write_memory(repo_path, memory("pgversion01", "Staging uses Postgres 16"))
    commit_all(repo_path)
    pack = MemoryRepo.open(repo_path).recall("postgres kubernetes helm")
    assert ids(pack) == ["pgversion01"]
    assert pack.trace.unknown_terms == ("kubernetes", "helm")
    assert pack.trace.term_locations["postgres"] == ("memories",)
    text = ok(memgit_in_process("recall", "kubernetes", cwd=repo_path))
    assert "found nowhere in the repository: kubernetes" in text
    assert "This is a miss, not an answer" in text


# --- retired memories ------------------------------------------------------------------


@pytest.fixture
def superseded(repo_path: Path) -> Path:
    """A superseded by B (with the retired ref), and R retracted."""
    write_memory(repo_path, memory("oldpg000001", "Staging uses Postgres 15"))
    write_memory(repo_path, memory("retracted01", "The office has a rooftop garden"))
    first = commit_all(repo_path, "A and R")
    (repo_path / memory("oldpg000001", "x").path).unlink()
    write_memory(
        repo_path,
        memory("newpg000001", "Staging uses Postgres 16", supersedes=(("oldpg000001", first),)),
    )
    second = commit_all(repo_path, "B supersedes A")
    git(repo_path, "update-ref", "refs/memgit/retired/oldpg000001", first)
    (repo_path / memory("retracted01", "x").path).unlink()
    commit_all(repo_path, "retract R")
    git(repo_path, "update-ref", "refs/memgit/retired/retracted01", second)
    return repo_path


def test_retired_matches_name_their_successor(superseded: Path) -> None:
    repo = MemoryRepo.open(superseded)
    pack = repo.recall("postgres 15")
    assert ids(pack) == ["newpg000001"]
    [retired] = pack.trace.retired
    assert retired.memory.id == "oldpg000001"
    assert retired.superseded_by is not None
    assert (retired.superseded_by.id, retired.superseded_by.active) == ("newpg000001", True)
    assert retired.commit == git(superseded, "rev-parse", "HEAD~2").strip()
    pack = repo.recall("rooftop garden")
    assert pack.miss
    [retired] = pack.trace.retired
    assert retired.memory.id == "retracted01" and retired.retracted
    text = ok(memgit_in_process("recall", "postgres 15", cwd=superseded))
    assert (
        "retired memory oldpg000001 (Staging uses Postgres 15) matched; superseded by "
        "newpg000001 (Staging uses Postgres 16)" in text
    )
    text = ok(memgit_in_process("recall", "rooftop", cwd=superseded))
    assert "it was retracted" in text


def test_include_retired_ranks_them_with_the_active(superseded: Path) -> None:
    pack = MemoryRepo.open(superseded).recall("postgres 15", include_retired=True)
    assert [(h.memory.id, h.status) for h in pack.memories] == [
        ("oldpg000001", "retired"),
        ("newpg000001", "active"),
    ]
    assert pack.memories[0].superseded_by is not None
    data = json_data(pack)["memories"][0]
    assert data["superseded_by"]["id"] == "newpg000001"


def test_retired_ref_moved_or_deleted_is_followed(superseded: Path) -> None:
    repo = MemoryRepo.open(superseded)
    assert [r.memory.id for r in repo.recall("postgres").trace.retired] == ["oldpg000001"]
    git(superseded, "update-ref", "-d", "refs/memgit/retired/oldpg000001")
    assert repo.recall("postgres").trace.retired == ()


# --- as of -----------------------------------------------------------------------------


def test_as_of_revision_and_date(repo_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-03-01T12:00:00Z")
    write_memory(repo_path, memory("pgversion01", "Staging uses Postgres 15"))
    march = commit_all(repo_path, "march")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-06-01T12:00:00Z")
    write_memory(repo_path, memory("pgversion01", "Staging uses Postgres 16"))
    write_memory(repo_path, memory("redis000001", "Cache is Redis"))
    commit_all(repo_path, "june")
    repo = MemoryRepo.open(repo_path)
    assert "16" in repo.recall("postgres").memories[0].memory.title
    then = repo.recall("postgres", as_of="HEAD~1")
    assert then.as_of == march and then.memories[0].memory.title == "Staging uses Postgres 15"
    assert then.memories[0].commit == march
    assert ids(repo.recall("redis", as_of=march)) == []
    for date in ("2026-04-15", "2026-03-01T12:00:00Z", "2026-05-31T23:59:59+00:00"):
        assert repo.recall("postgres", as_of=date).as_of == march, date
    assert repo.recall("postgres", as_of="2026-06-01").as_of == head(repo_path)
    # HEAD is untouched and the next plain recall is current again.
    assert "16" in repo.recall("postgres").memories[0].memory.title
    data = json.loads(
        ok(memgit_in_process("recall", "postgres", "--as-of", "2026-04", "--json", cwd=repo_path))
    )
    assert data["as_of"] == march


@pytest.mark.parametrize(
    "value",
    ["no-such-branch", "2025-01-01", "HEAD~99", "HEAD:memgit.yaml", "31/12/2026", " ", "2026-13"],
)
def test_invalid_as_of_is_refused_by_name(repo_path: Path, value: str) -> None:
    before = snapshot(repo_path)
    done = memgit_in_process("recall", "anything", "--as-of", value, cwd=repo_path)
    assert done.returncode == 2
    line = done.stderr.decode().splitlines()[0]
    assert line.startswith("error[invalid-revision]: --as-of: --as-of ")
    assert repr(value)[1:-1] in line or value.strip() == ""
    assert b"Traceback" not in done.stderr
    assert snapshot(repo_path) == before


# --- threads, evidence -----------------------------------------------------------------


@pytest.fixture
def threaded(repo_path: Path) -> Path:
    repo = MemoryRepo.open(repo_path)
    repo.capture_many(
        [turn(seq, f"Thread one turn {seq} mentions the kettle", thread="t-1") for seq in range(4)]
    )
    repo.capture_many([turn(0, "Thread two also mentions the kettle", session="s2", thread="t-2")])
    captures = git(repo_path, "ls-files", "inbox").split()
    t1 = [c for c in captures if "/s1/" in c]
    t2 = [c for c in captures if "/s2/" in c]
    write_memory(
        repo_path,
        memory(
            "onlyt1seq2x",
            "Kettle descaling schedule",
            sources=(source_for(repo_path, t1[2], "Thread one turn 2"),),
        ),
    )
    write_memory(
        repo_path,
        memory(
            "botht1t2xxx",
            "Kettle is electric",
            sources=(
                source_for(repo_path, t1[0], "Thread one turn 0"),
                source_for(repo_path, t2[0], "Thread two also"),
            ),
        ),
    )
    write_memory(repo_path, memory("humankettle", "Kettle was a gift"))
    commit_all(repo_path, "memories")
    return repo_path


def test_exclude_thread_leaves_out_its_turns_and_memories_sourced_only_there(
    threaded: Path,
) -> None:
    repo = MemoryRepo.open(threaded)
    everything = repo.recall("kettle")
    assert sorted(ids(everything)) == ["botht1t2xxx", "humankettle", "onlyt1seq2x"]
    # Three of the five turns are memories' sources, shown under them.
    assert len(everything.turns) == 2 and len(everything.grouped_turns()) == 5
    pack = repo.recall("kettle", exclude_thread="t-1")
    assert sorted(ids(pack)) == ["botht1t2xxx", "humankettle"]
    assert pack.trace.excluded_memories == ("onlyt1seq2x",)
    assert [(t.turn.session, t.turn.seq) for t in pack.grouped_turns()] == [("s2", 0)]
    assert pack.trace.excluded_turns == 4
    pack = repo.recall("kettle", exclude_thread="t-1", from_turn=3)
    assert sorted(ids(pack)) == ["botht1t2xxx", "humankettle", "onlyt1seq2x"]
    assert sorted(t.turn.seq for t in pack.grouped_turns() if t.turn.session == "s1") == [0, 1, 2]
    assert pack.trace.excluded_turns == 1
    # A session id works as well as a thread id, for a memory's source turns too.
    pack = repo.recall("kettle", exclude_thread="s2")
    assert {t.turn.session for t in pack.grouped_turns()} == {"s1"}
    done = memgit_in_process("recall", "kettle", "--from-turn", "2", cwd=threaded)
    assert (
        done.returncode == 2 and b"error[usage]: --from-turn needs --exclude-thread" in done.stderr
    )


def test_evidence_reads_the_capture_from_git_after_it_left_the_tree(threaded: Path) -> None:
    git(threaded, "rm", "-q", "-r", "inbox")
    git(threaded, "commit", "-q", "-m", "inbox cleanup")
    repo = MemoryRepo.open(threaded)
    pack = repo.recall("descaling schedule", evidence=True)
    [hit] = pack.memories
    [source] = hit.sources
    assert source.turn is not None
    assert [(m.role, m.content) for m in source.turn.messages] == [
        ("user", "Thread one turn 2 mentions the kettle")
    ]
    assert (source.turn.session, source.turn.seq) == ("s1", 2)
    assert pack.turns == ()  # the captures are no longer in the tree
    # --exclude-thread still knows where that capture came from.
    assert repo.recall("descaling", exclude_thread="t-1").trace.excluded_memories == (
        "onlyt1seq2x",
    )
    text = ok(memgit_in_process("recall", "descaling", "--evidence", cwd=threaded))
    assert "user: Thread one turn 2 mentions the kettle" in text


# --- languages ---------------------------------------------------------------------------


def test_chinese_queries_find_chinese_memories_and_turns(repo_path: Path) -> None:
    write_memory(
        repo_path,
        memory(
            "coffee00001", "用户喜欢喝咖啡", "每天早上一杯美式咖啡，不加糖。", type="preference"
        ),
    )
    write_memory(
        repo_path, memory("tea00000001", "下午喝绿茶", "用户下午只喝绿茶。", type="preference")
    )
    write_memory(
        repo_path,
        memory(
            "mixed000001", "部署使用 Kubernetes 集群", "生产环境的 deploy 通过 Kubernetes 完成。"
        ),
    )
    commit_all(repo_path)
    repo = MemoryRepo.open(repo_path)
    repo.capture(turn(0, "我明天要去北京出差，记得提醒我带护照。"))
    assert ids(repo.recall("咖啡")) == ["coffee00001"]
    assert ids(repo.recall("喜欢什么咖啡")) == ["coffee00001"]
    assert ids(repo.recall("茶")) == ["tea00000001"]  # a single character
    assert ids(repo.recall("绿茶")) == ["tea00000001"]
    assert ids(repo.recall("kubernetes 集群")) == ["mixed000001"]
    assert ids(repo.recall("Deploying")) == ["mixed000001"]  # stemming inside Chinese text
    assert turn_keys(repo.recall("北京护照")) == [("s1", 0, 0)]
    pack = repo.recall("上海")
    assert pack.miss and pack.trace.unknown_terms == ("上海",)
    assert "咖啡" in ok(memgit_in_process("recall", "美式咖啡", cwd=repo_path))


def test_english_stemming_and_case(repo_path: Path) -> None:
    write_memory(repo_path, memory("migrate0001", "Migrations run on Tuesdays"))
    commit_all(repo_path)
    repo = MemoryRepo.open(repo_path)
    for query in ("migrate", "MIGRATING", "migration", "tuesday", "running"):
        assert ids(repo.recall(query)) == ["migrate0001"], query


# --- bad input ---------------------------------------------------------------------------

HOSTILE = [
    "NEAR(a b",
    '"unbalanced',
    "AND",
    "OR OR OR",
    "NOT postgres",
    "title:postgres",
    "postgres*",
    "-postgres",
    "^postgres",
    "a:b:c",
    "{title}: x",
    '""""',
    "'; DROP TABLE memory; --",
    "(((",
    "* * *",
    "memory_fts MATCH 'x'",
    "\x00postgres",
    "postgres\n\nNEAR/3",
    "rank:1",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_fts5_syntax_in_a_query_is_plain_words(repo_path: Path, query: str) -> None:
    """Operators, quotes and column names are words: an answer, or "no words to look for"."""
    write_memory(repo_path, memory("pgversion01", "Staging uses Postgres 16"))
    commit_all(repo_path)
    try:
        pack = MemoryRepo.open(repo_path).recall(query)
    except MemgitError as err:
        assert err.code == "invalid-query" and "has no words" in err.message
        return
    if "postgres" in query.lower():
        assert ids(pack) == ["pgversion01"]


def test_not_is_a_word_not_an_operator(repo_path: Path) -> None:
    write_memory(repo_path, memory("pgversion01", "Staging uses Postgres 16"))
    commit_all(repo_path)
    assert ids(MemoryRepo.open(repo_path).recall("NOT postgres")) == ["pgversion01"]


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "!!! ??? ...", "___"])
def test_empty_queries_are_refused_clearly(repo_path: Path, query: str) -> None:
    with pytest.raises(MemgitError) as caught:
        MemoryRepo.open(repo_path).recall(query)
    assert caught.value.code == "invalid-query"
    done = memgit_in_process("recall", query, cwd=repo_path)
    assert done.returncode == 3
    assert done.stderr.decode().startswith("error[invalid-query]: ")


def test_huge_query_uses_its_first_terms(repo_path: Path) -> None:
    write_memory(repo_path, memory("pgversion01", "Staging uses Postgres 16"))
    commit_all(repo_path)
    words = " ".join(f"word{n}" for n in range(20_000))
    query = "postgres " + words
    assert len(query.encode()) > 100_000
    pack = MemoryRepo.open(repo_path).recall(query)
    assert ids(pack) == ["pgversion01"]
    assert len(pack.trace.terms) == 32 and pack.trace.dropped_terms == 20_001 - 32
    with pytest.raises(MemgitError) as caught:
        MemoryRepo.open(repo_path).recall("x " * (1024 * 1024))
    assert caught.value.code == "invalid-query" and "limit" in caught.value.message


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["-k", "0"], "invalid-option"),
        (["-k", "100000"], "invalid-option"),
        (["--scope", "../etc"], "invalid-scope"),
        (["--type", "Not A Type"], "invalid-option"),
        (["--exclude-thread", "t", "--from-turn", "-1"], "invalid-option"),
        (["--exclude-thread", "t", "--from-turn", "1000000000"], "invalid-option"),
        (["--exclude-thread", "t", "--from-turn", str(10**30)], "invalid-option"),
    ],
)
def test_bad_options_are_refused(repo_path: Path, args: list[str], code: str) -> None:
    done = memgit_in_process("recall", "postgres", *args, cwd=repo_path)
    assert done.returncode == 3, done.stderr
    assert done.stderr.decode().startswith(f"error[{code}]")


def test_outside_a_repository(tmp_path: Path) -> None:
    done = memgit_cli("recall", "postgres", cwd=tmp_path)
    assert done.returncode == 2 and b"error[not-a-repository]" in done.stderr


# --- map -----------------------------------------------------------------------------------


def test_map_is_a_bounded_overview(repo_path: Path) -> None:
    for number in range(120):
        write_memory(
            repo_path,
            memory(
                f"m{number:05d}x",
                f"Postgres tuning note {number}",
                f"Vacuum and index advice {number}.",
                scope=f"project/p{number % 60}",
                type="fact" if number % 3 else "decision",
                updated=f"2026-11-{1 + number % 28:02d}T10:00:00Z",
            ),
        )
    commit_all(repo_path)
    repo = MemoryRepo.open(repo_path)
    result = repo.map(recent=5, terms=5)
    assert result.memories == 120
    assert len(result.scopes) == 50 and result.more_scopes == 10
    assert dict(result.types) == {"fact": 80, "decision": 40}
    assert len(result.recent) == 5 and result.recent[0].updated == "2026-11-28T10:00:00Z"
    assert len(result.terms) == 5
    assert {"postgres", "tuning", "vacuum"} <= {term for term, _ in repo.map(terms=20).terms}
    data = json.loads(ok(memgit_in_process("map", "--json", "--recent", "3", cwd=repo_path)))
    assert len(data["recent"]) == 3 and data["memories"] == 120
    assert len(ok(memgit_in_process("map", cwd=repo_path))) < 4000
    assert memgit_in_process("map", "--recent", "1000", cwd=repo_path).returncode == 2


def test_help_explains_each_command(repo_path: Path) -> None:
    for command in (["recall"], ["map"], ["index"], ["index", "status"], ["index", "rebuild"]):
        text = ok(memgit_cli(*command, "--help", cwd=repo_path))
        assert "--json" in text or command == ["index"]


# --- the docs say what the code does ----------------------------------------------------

DOCS = Path(__file__).parents[1] / "docs"


def _documented_keys(text: str, command: str) -> set[str]:
    """The keys listed after "`--json` prints `{...}`" in a command's section."""
    section = text.split(f"## memgit {command}\n", 1)[1].split("\n## ", 1)[0]
    listed = section.split("`--json` prints `{", 1)[1].split("}`", 1)[0]
    return {key.strip().strip('"') for key in listed.replace("\n", " ").split(",")}


def test_documented_json_shapes_match(threaded: Path) -> None:
    repo = MemoryRepo.open(threaded)
    pack = json_data(repo.recall("kettle descaling", evidence=True))
    text = (DOCS / "recall.md").read_text("utf-8")
    example = json.loads(text.split("`--json` prints:\n\n```json\n", 1)[1].split("```", 1)[0])
    assert set(example) == set(pack)
    assert set(example["memories"][0]) == set(pack["memories"][0])
    assert set(example["turns"][0]) == set(pack["turns"][0])
    assert set(example["trace"]) == set(pack["trace"])
    assert set(example["trace"]["index"]) == set(pack["trace"]["index"])
    assert set(example["filters"]) == set(pack["filters"])
    commands = (DOCS / "commands.md").read_text("utf-8")
    assert _documented_keys(commands, "map") == set(json_data(repo.map()))
    assert _documented_keys(commands, "index") == set(json_data(repo.index_status()))
