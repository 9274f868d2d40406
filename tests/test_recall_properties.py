"""Properties of recall's parsers: any query string, any YAML the index reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memgit.errors import InvalidInputError, MemgitError
from memgit.jsonio import json_data
from memgit.repo import MemoryRepo
from memgit.tokens import FTS_TOKENIZER, index_text, parse_query
from memgit.yamlio import parse_yaml, parse_yaml_strictly, render_yaml

from recall_fixtures import commit_all, memory, turn, write_memory

PIECES = [*"abcAND OR NOT NEAR\"'*-^:(){}[]+_.,;/\\\n\t\0", "咖啡", "茶", "é", "ß", "🙂"]
PIECES.append("postgres")
QUERY_TEXT = st.lists(st.sampled_from(PIECES), max_size=40).map("".join) | st.text(max_size=80)


def test_arbitrary_queries_raise_only_our_errors(repo_path: Path) -> None:
    write_memory(repo_path, memory("pgversion01", "Staging uses Postgres 16 AND NOT NEAR"))
    write_memory(repo_path, memory("coffee00001", "喜欢喝咖啡", "每天早上喝咖啡。"))
    commit_all(repo_path)
    repo = MemoryRepo.open(repo_path)
    repo.capture(turn(0, 'A captured turn with "quotes" and * stars'))

    @settings(
        max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(QUERY_TEXT, st.integers(min_value=1, max_value=20))
    def check(query: str, k: int) -> None:
        try:
            pack = repo.recall(query, k=k)
        except MemgitError as err:
            assert err.code == "invalid-query", err.render()
            return
        assert len(pack.memories) <= k and len(pack.turns) <= k
        json_data(pack)

    check()


@settings(max_examples=500, deadline=None)
@given(QUERY_TEXT)
def test_every_parsed_term_is_a_valid_fts5_string(query: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(a, tokenize='{FTS_TOKENIZER}')")
    conn.execute("INSERT INTO t VALUES (?)", (index_text(query),))
    try:
        parsed = parse_query(query)
    except InvalidInputError as err:
        assert err.code == "invalid-query"
        return
    assert 0 < len(parsed.terms) <= 32
    conn.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH ?", (parsed.fts(),)).fetchall()


# --- the index's fast YAML path agrees with the strict loader ---------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.text(max_size=30),
    st.sampled_from(
        ["yes", "no", "on", "1e3", "2026-11-30", "0x1F", "~", "null", "", "- a", "a: b"]
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(min_size=1, max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
YAMLISH = st.text(alphabet=st.sampled_from([*"ab1 :-'\"|>&*!#[]{},?\n\t%@`~", "\ud7ff", "\x85"]))


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=10), VALUES, max_size=6))
def test_fast_yaml_reads_what_render_yaml_writes(value: dict[str, Any]) -> None:
    text = render_yaml(value)
    assert parse_yaml(text, source="x") == parse_yaml_strictly(text, source="x") == value


@settings(max_examples=600, deadline=None)
@given(YAMLISH)
def test_fast_yaml_agrees_with_the_strict_loader_on_any_text(text: str) -> None:
    try:
        expected: Any = parse_yaml_strictly(text, source="x")
    except InvalidInputError as err:
        expected = ("error", err.code)
    try:
        got: Any = parse_yaml(text, source="x")
    except InvalidInputError as err:
        got = ("error", err.code)
    assert got == expected
