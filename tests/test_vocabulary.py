"""The recall vocabulary: related terms at half weight, shown in the trace, off by setting.

Real repositories in tmp_path, memories written as files and committed with
the git CLI; queries through ``MemoryRepo.recall`` and the ``memgit`` command.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from memgit.derived.vocabulary import expand, load_vocabulary, parse_vocabulary
from memgit.errors import InvalidInputError
from memgit.jsonio import json_data
from memgit.repo import MemoryRepo
from memgit.tokens import parse_query

from recall_fixtures import commit_all, ids, memory, turn, write_memory
from support import git, memgit_cli

FILLER = (
    ("filler0000a1", "The kettle needs descaling monthly"),
    ("filler0000b2", "Standup is at nine on Mondays"),
    ("filler0000c3", "Invoices go to the finance inbox"),
    ("filler0000d4", "The office closes early on Fridays"),
)


ONE_GROUP = "format: 1\ngroups:\n  - {name: x, from: y,"


def shipped_text() -> str:
    return resources.files("memgit.derived").joinpath("vocabulary.yaml").read_text("utf-8")


def repo_with(path: Path, *memories: tuple[str, str]) -> MemoryRepo:
    for memory_id, title in (*memories, *FILLER):
        write_memory(path, memory(memory_id, title))
    commit_all(path)
    return MemoryRepo.open(path)


def added(query: str) -> list[str]:
    return [expansion.term for expansion in expand(parse_query(query)).expansions]


# --- the file -----------------------------------------------------------------------


def test_the_shipped_vocabulary_has_its_documented_shape() -> None:
    """Every group says where it comes from and has words; every term is lower case,
    listed once in its group, and made of words the index's tokenizer keeps."""
    groups = parse_vocabulary(shipped_text())
    assert 10 <= len(groups) <= 60, "the vocabulary is meant to stay small"
    names = [group.name for group in groups]
    assert len(set(names)) == len(names)
    for group in groups:
        assert group.origin.strip() and group.words
        assert not set(group.words) & set(group.kinds), group.name
    vocabulary = load_vocabulary()
    assert all(entry.tokens for entry in vocabulary._entries)
    every = {term for group in groups for term in (*group.words, *group.kinds)}
    assert {"pytest", "test framework", "测试框架", "数据库", "编辑器", "k8s", "repo"} <= every
    # The file's own rule 4: no member whose everyday sense is the commoner one.
    assert not every & {"go", "fish", "black", "spring", "express", "windows", "library"}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("groups: []\n", "format"),
        ("format: 1\ngroups: []\n", "groups"),
        ("format: 1\ngroups:\n  - name: x\n    words: [a]\n", "groups[0]"),
        (f"{ONE_GROUP} words: [a], extra: 1}}\n", "groups[0]"),
        (f"{ONE_GROUP} words: []}}\n", "groups[0].words"),
        (f"{ONE_GROUP} words: [Pytest]}}\n", "groups[0].words[0]"),
        (f"{ONE_GROUP} words: [a, '!!']}}\n", "groups[0].words[1]"),
        (f"{ONE_GROUP} words: [a], kinds: [b, b]}}\n", "groups[0].kinds"),
    ],
)
def test_a_vocabulary_of_another_shape_is_refused(text: str, field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_vocabulary(text, source="vocabulary.yaml")
    assert caught.value.code == "invalid-vocabulary"
    assert (caught.value.path, caught.value.field) == ("vocabulary.yaml", field)


# --- what a query brings in ---------------------------------------------------------


def test_a_word_brings_in_its_synonyms_and_kinds_a_kind_only_the_words() -> None:
    assert {"pytest", "unittest", "jest", "测试框架"} <= set(added("which test framework"))
    from_pytest = added("do I like pytest")
    assert {"test framework", "testing", "测试框架"} <= set(from_pytest)
    assert "jest" not in from_pytest  # asking about pytest is not asking about jest
    assert {"postgres", "mysql", "database"} <= set(added("我们用什么数据库"))
    assert "kubernetes" in added("k8s cluster")
    assert "repository" in added("which repos")  # stemmed as the index stems it


@pytest.mark.parametrize(
    "query",
    ["kettle descaling", "framework", "testimony", "databank", "repost", "vs", "编辑"],
)
def test_words_not_in_the_vocabulary_bring_in_nothing(query: str) -> None:
    """Neither other words, nor a word of a several-word entry alone, nor part of a
    word, nor one character pair of a three-character Chinese entry."""
    assert added(query) == []


# --- recall -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "query", "through"),
    [
        ("I prefer pytest", "which test framework", "pytest"),
        ("Staging runs Postgres 16", "which database does staging use", "postgres"),
        ("I write code in Neovim", "what editor do I use", "neovim"),
        ("Builds run on GitHub Actions", "where does continuous integration run", "github actions"),
        ("The repo is mirrored nightly", "how is the repository mirrored", "repo"),
        ("用户喜欢用 pytest", "用什么测试框架", "pytest"),
        ("生产环境用 MySQL 8", "数据库是什么", "mysql"),
        ("We deploy with kubernetes", "k8s", "kubernetes"),
    ],
)
def test_recall_finds_a_memory_through_the_vocabulary(
    repo_path: Path, title: str, query: str, through: str
) -> None:
    repo = repo_with(repo_path, ("target000001", title))
    pack = repo.recall(query, k=3)
    assert ids(pack)[:1] == ["target000001"]
    assert through in pack.memories[0].expanded_terms
    assert through in json_data(pack.trace)["expansions"][next(iter(pack.trace.expansions))]


def test_the_users_own_word_ranks_above_a_related_term(repo_path: Path) -> None:
    """Two memories alike but for one word: the one holding the query's word wins,
    although the other's path sorts first (which would win a tie)."""
    repo = repo_with(
        repo_path,
        ("aaaa00000001", "I use postgres at work"),
        ("zzzz00000001", "I use a database at work"),
    )
    pack = repo.recall("database", k=5)
    assert ids(pack)[:2] == ["zzzz00000001", "aaaa00000001"]
    own, related = pack.memories[:2]
    assert own.matched_terms == ("database",) and own.expanded_terms == ()
    assert related.matched_terms == () and related.expanded_terms == ("postgres",)
    assert own.score == pytest.approx(2 * related.score, rel=0.2)


def test_an_added_term_does_not_match_the_type_of_a_memory(repo_path: Path) -> None:
    """`like` brings in `preference`, which is also a memory type: only text counts."""
    write_memory(repo_path, memory("tea000000001", "Green tea in the afternoon", type="preference"))
    commit_all(repo_path)
    pack = MemoryRepo.open(repo_path).recall("what do I like")
    assert "preference" in pack.trace.expansions["like"] and ids(pack) == []


def test_the_trace_and_the_text_output_say_what_came_through_the_vocabulary(
    repo_path: Path,
) -> None:
    repo_with(repo_path, ("target000001", "I prefer pytest"))
    data = json.loads(memgit_cli("recall", "which test framework", "--json", cwd=repo_path).stdout)
    assert data["memories"][0]["expanded_terms"] == ["pytest"]
    assert data["memories"][0]["matched_terms"] == []
    assert "pytest" in data["trace"]["expansions"]["test framework"]
    assert data["trace"]["unknown_terms"] == ["test", "framework"]
    text = memgit_cli("recall", "which test framework", cwd=repo_path).stdout.decode()
    assert "matched through the vocabulary: pytest" in text
    assert "also searched for 'test framework' (the vocabulary, half weight): " in text
    plain = json.loads(memgit_cli("recall", "pytest", "--json", cwd=repo_path).stdout)
    assert plain["memories"][0]["expanded_terms"] == []


def test_recall_vocabulary_false_searches_the_query_words_only(repo_path: Path) -> None:
    repo_with(repo_path, ("target000001", "I prefer pytest"))
    config = repo_path / "memgit.yaml"
    config.write_text(config.read_text("utf-8") + "recall:\n  vocabulary: false\n", "utf-8")
    git(repo_path, "commit", "-q", "-am", "recall without the vocabulary")
    pack = MemoryRepo.open(repo_path).recall("which test framework")
    assert pack.miss and pack.trace.expansions == {}
    assert ids(MemoryRepo.open(repo_path).recall("pytest")) == ["target000001"]


def test_a_recall_vocabulary_setting_that_is_not_a_boolean_is_refused(repo_path: Path) -> None:
    config = repo_path / "memgit.yaml"
    config.write_text(config.read_text("utf-8") + "recall:\n  vocabulary: sometimes\n", "utf-8")
    done = memgit_cli("recall", "pytest", cwd=repo_path)
    assert done.returncode == 3
    assert b"recall.vocabulary" in done.stderr


def test_the_snippet_shows_the_term_that_matched_through_the_vocabulary(repo_path: Path) -> None:
    filler = " ".join(f"note{number}" for number in range(80))
    write_memory(
        repo_path, memory("target000001", "Checks", f"{filler} We run pytest before merging.\n")
    )
    commit_all(repo_path)
    hit = MemoryRepo.open(repo_path).recall("which test framework").memories[0]
    assert "pytest" in hit.snippet and "note0 " not in hit.snippet


def test_a_captured_turn_says_which_added_terms_it_holds(repo_path: Path) -> None:
    """In the message itself, in English and Chinese; not for a turn that only sits
    next to one (its context counts towards its rank, unlisted)."""
    repo = repo_with(repo_path)
    repo.capture(turn(0, "Our unit tests run under vitest."))
    repo.capture(turn(1, "ok", session="s1"))
    repo.capture(turn(0, "线上用的是 MySQL 8。", session="s2"))
    pack = repo.recall("which test framework")
    found = {hit.turn.seq: hit.expanded_terms for hit in pack.turns if hit.turn.session == "s1"}
    assert found[0] == ("unit test", "vitest") and found.get(1, ()) == ()
    pack = repo.recall("数据库")
    assert [hit.expanded_terms for hit in pack.turns] == [("mysql",)]


def test_the_stemmer_answers_after_its_cache_is_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Words it knew before the cache was emptied are looked up again, not lost."""
    from memgit.derived import vocabulary

    monkeypatch.setattr(vocabulary, "_MAX_CACHED_WORDS", 3)
    stemmer = vocabulary.Stemmer()
    assert stemmer.tokens(["testing", "databases"]) == [("test",), ("databas",)]
    assert stemmer.tokens(["testing", "editors", "frameworks"]) == [
        ("test",),
        ("editor",),
        ("framework",),
    ]
