"""Related memories for the Gate: the batch's distinctive words, at a bounded cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from memgit import MemoryRepo
from memgit.derived.lexical import LexicalIndex
from memgit.derived.search import search_memories
from memgit.derived.similar import similar_memories
from memgit.tokens import parse_query

from recall_fixtures import commit_all, memory, write_memory

COMMON = "project deploy service pipeline"
POOL = 10


@pytest.fixture
def index(repo_path: Path) -> LexicalIndex:
    """36 memories hold the common words, 12 only one of them, a few rare ones."""
    for n in range(12):
        write_memory(repo_path, memory(f"a{n:03d}", f"A pipeline {n}", f"Pipeline {n}.\n"))
    for n in range(36):
        write_memory(repo_path, memory(f"c{n:03d}", f"The {COMMON} note {n}", f"Step {n}.\n"))
    write_memory(
        repo_path, memory("pnpm1", "Use pnpm for the web frontend", f"The {COMMON} uses pnpm.\n")
    )
    write_memory(repo_path, memory("yarn1", "Yarn is retired", f"The {COMMON} dropped yarn.\n"))
    write_memory(repo_path, memory("tabs1", "Tabs over spaces", "Indent with tabs.\n"))
    write_memory(repo_path, memory("tabs2", "Tabs in makefiles", "Makefiles need tabs.\n"))
    commit_all(repo_path)
    lexical = LexicalIndex(MemoryRepo.open(repo_path).git)
    yield lexical
    lexical.close()


def similar(index: LexicalIndex, text: str, limit: int = 5) -> list[str]:
    rows = index.read(lambda snap: similar_memories(snap.conn, text, limit=limit, pool=POOL))
    return [row.memory.id for row in rows]


def test_the_rare_word_finds_its_memory_among_common_ones(index: LexicalIndex) -> None:
    text = f"From now on the {COMMON} should use pnpm, not npm."
    assert similar(index, text)[0] == "pnpm1"


def test_rare_words_alone_rank_exactly_like_a_full_search(index: LexicalIndex) -> None:
    text = "tabs makefiles yarn"
    full = index.read(lambda snap: search_memories(snap.conn, parse_query(text).fts(), limit=5))
    assert similar(index, text) == [row.memory.id for row in full]
    assert similar(index, text)[0] == "tabs2"


def test_when_every_word_is_common_all_of_the_first_ones_must_occur(
    index: LexicalIndex,
) -> None:
    found = similar(index, "pipeline deploy project", limit=50)
    assert found and len(found) <= POOL
    assert all(memory_id.startswith("c") for memory_id in found)  # never a pipeline-only one


def test_words_in_no_memory_and_stop_words_find_nothing(index: LexicalIndex) -> None:
    assert similar(index, "the and of zyxwvut") == []
    assert similar(index, "   ") == []
    assert similar(index, "tabs", limit=0) == []


@pytest.mark.parametrize(
    "hostile", ['" OR * NEAR(tabs', "tabs AND NOT yarn", "title: tabs ^", "tabs\x00yarn", "{tabs}"]
)
def test_query_syntax_in_the_text_is_only_words(index: LexicalIndex, hostile: str) -> None:
    assert set(similar(index, hostile)) <= {"tabs1", "tabs2", "yarn1"}
    assert similar(index, hostile)


def test_a_batch_longer_than_a_recall_query_still_finds_related(index: LexicalIndex) -> None:
    text = "I now prefer tabs. " + "filler " * 20_000
    assert set(similar(index, text)[:2]) == {"tabs1", "tabs2"}
