"""The file formats: names, trailers, memories, run records, settings, captures.

Every parser gets a Hypothesis round trip (render then parse gives the value
back, and canonical text re-renders to the same bytes) and a fuzz property
(arbitrary input raises only our own error).
"""

from __future__ import annotations

import contextlib
import string
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memgit.errors import InvalidInputError, MemgitError
from memgit.layout import (
    capture_path,
    check_memory_id,
    check_scope,
    check_segment,
    memory_path,
    parse_capture_path,
    run_moment,
    run_path,
    windows_problem,
)
from memgit.memory import (
    Memory,
    Source,
    Supersedes,
    new_memory_id,
    read_memory,
    render_memory,
)
from memgit.runrecord import RunInput, RunRecord, parse_run_record, render_run_record
from memgit.settings import DEFAULT_CONFIG, parse_settings
from memgit.trailers import parse_trailers, render_message
from memgit.turn import Message, Turn, read_capture, render_capture

from support import git

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Safe names: no Windows device name (CON, nul.txt) and no trailing dot (tested apart).
names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True).filter(
    lambda name: windows_problem(name) is None
)
one_line = (
    st.text(
        alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")),
        min_size=1,
        max_size=40,
    )
    .map(str.strip)
    .filter(bool)
)
any_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
timestamps = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1), timezones=st.just(UTC)
).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))
hex40 = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)


# --- names and paths -------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["", "../x", "..", "/abs", "a/b", "a\x00b", "a\nb", ".hidden", "a b", "x" * 129, "é"]
)
def test_unsafe_names_are_refused(bad: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        check_segment(bad, field="session", source="<stdin>")
    assert caught.value.code == "invalid-name"
    assert caught.value.field == "session"
    assert caught.value.path == "<stdin>"


def test_non_string_name_is_refused() -> None:
    with pytest.raises(InvalidInputError) as caught:
        check_segment(3, field="source")
    assert "got int" in caught.value.message


@pytest.mark.parametrize("bad", ["", "/user", "user/", "a//b", "a/../b", "/".join("a" * 9)])
def test_unsafe_scopes_are_refused(bad: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        check_scope(bad)
    assert caught.value.code == "invalid-scope"


@given(source=names, session=names, seq=st.integers(0, 999_999_999))
def test_capture_paths_are_sharded_and_reversible(source: str, session: str, seq: int) -> None:
    path = capture_path(source, session, seq)
    assert parse_capture_path(path) == (source, session, seq)
    assert ".." not in path.split("/")
    assert len(path.split("/")) == 5


def test_layout_examples() -> None:
    assert capture_path("agent", "s1", 7).endswith("/s1/000007.yaml")
    assert memory_path("project/memgit", "k3v9x2m7q1ab") == (
        "memories/project/memgit/k3/k3v9x2m7q1ab.md"
    )
    assert run_path("20261130T103500Z-k3v9x2") == "runs/2026/11/20261130T103500Z-k3v9x2.json"
    assert parse_capture_path("inbox/a/zz/s1/000001.yaml") is None


def test_generated_ids_are_short_stable_and_safe() -> None:
    assert new_memory_id(b"seed") == new_memory_id(b"seed")
    assert new_memory_id(b"seed") != new_memory_id(b"other")
    ids = {new_memory_id() for _ in range(1000)}
    assert len(ids) == 1000
    for memory_id in ids:
        assert len(memory_id) == 12
        assert check_memory_id(memory_id) == memory_id


# --- trailers --------------------------------------------------------------

trailer_keys = st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,20}", fullmatch=True)


@given(
    summary=one_line,
    trailers=st.lists(st.tuples(trailer_keys, one_line), min_size=1, max_size=5),
)
def test_trailers_round_trip(summary: str, trailers: list[tuple[str, str]]) -> None:
    assert parse_trailers(render_message(summary, trailers)) == trailers


@FUZZ
@given(any_text)
def test_trailer_parser_never_crashes(text: str) -> None:
    assert isinstance(parse_trailers(text), list)


def test_git_reads_our_trailers(tmp_path) -> None:
    message = render_message(
        "capture: a/s1 turn 0", [("Memgit-Captured", "a/s1/0"), ("Memgit-Run", "r1")]
    )
    path = tmp_path / "msg"
    path.write_text(message)
    parsed = git(tmp_path, "interpret-trailers", "--parse", str(path))
    assert parsed == "Memgit-Captured: a/s1/0\nMemgit-Run: r1\n"
    assert parse_trailers(message) == [("Memgit-Captured", "a/s1/0"), ("Memgit-Run", "r1")]


@pytest.mark.parametrize("value", ["two\nlines", " padded", ""])
def test_trailer_values_are_one_line(value: str) -> None:
    with pytest.raises(InvalidInputError):
        render_message("summary", [("Memgit-Run", value)])


# --- memories ----------------------------------------------------------------

sources = st.builds(
    Source,
    capture=st.builds(capture_path, names, names, st.integers(0, 99)),
    unit=names,
    quote=one_line,
    blob=hex40,
    start=st.none() | st.integers(0, 1000),
    end=st.none() | st.integers(0, 1000),
)
memories = st.builds(
    Memory,
    id=st.builds(new_memory_id, st.binary(max_size=8)),
    type=st.sampled_from(["fact", "preference", "decision"]),
    scope=st.sampled_from(["user", "project/memgit", "project/a.b/c-d"]),
    title=one_line,
    body=any_text,
    created=timestamps,
    updated=timestamps,
    origin=st.just("memgit"),
    tags=st.lists(names, max_size=4, unique=True).map(tuple),
    supersedes=st.lists(
        st.builds(Supersedes, id=st.builds(new_memory_id, st.binary()), commit=hex40), max_size=2
    ).map(tuple),
    sources=st.lists(sources, min_size=1, max_size=3).map(tuple),
)


@FUZZ
@given(memories)
def test_memory_round_trips_canonically(memory: Memory) -> None:
    text = render_memory(memory)
    parsed = read_memory(text, path=memory.path)
    assert parsed == memory
    assert render_memory(parsed) == text
    assert text.startswith(f"---\nid: {memory.id}\ntype: {memory.type}\n")


@FUZZ
@given(memories, st.just(("memgit", None)) | st.tuples(st.just("human"), one_line), hex40)
def test_the_index_reads_a_memory_as_the_strict_parser_does(
    memory: Memory, written_by: tuple[str, str | None], blob: str
) -> None:
    """One Memory value: the index's fast reader gives what the hooks' strict parser
    gives, plus where it read it."""
    origin, author = written_by
    data = render_memory(replace(memory, origin=origin, author=author)).encode("utf-8")
    strict = read_memory(data, path=memory.path)
    assert read_memory(data, path=memory.path, blob=blob, check=False) == replace(
        strict, file=memory.path, blob=blob
    )


def test_the_index_reads_past_fields_recall_does_not_use() -> None:
    """A wrong origin, author or source offset is the hooks' business: the index still
    reads the memory (and leaves those fields out)."""
    source = "[{capture: inbox/a.yaml, unit: u, quote: q, blob: b, start: one}]"
    text = _memory_text(origin="5", author="[x]", sources=source)
    path = "memories/user/k3/k3v9x2m7q1ab.md"
    memory = read_memory(text.encode("utf-8"), path=path, blob="0" * 40, check=False)
    assert (memory.origin, memory.author, memory.sources[0].start) == ("memgit", None, None)


@FUZZ
@given(st.text(max_size=300) | st.binary(max_size=300))
def test_memory_parser_raises_only_our_errors(data: str | bytes) -> None:
    with pytest.raises(MemgitError):
        read_memory(b"---\n" + data if isinstance(data, bytes) else data, path="x.md")


def _memory_text(**changes: str) -> str:
    fields = {
        "id": "k3v9x2m7q1ab",
        "type": "fact",
        "scope": "user",
        "title": "Likes tea",
        "status": "active",
        "created": "'2026-11-30T10:00:00Z'",
        "updated": "'2026-11-30T10:00:00Z'",
        "origin": "human",
        "author": "Test Person",
        "sources": "[]",
    }
    fields.update(changes)
    front = "".join(f"{key}: {value}\n" for key, value in fields.items() if value != "-")
    return f"---\n{front}---\nBody.\n"


def test_hand_written_memory_parses() -> None:
    memory = read_memory(_memory_text(), path="memories/user/k3/k3v9x2m7q1ab.md")
    assert memory.origin == "human"
    assert memory.body == "Body.\n"


@pytest.mark.parametrize(
    ("changes", "code", "field"),
    [
        ({"id": "Bad Id"}, "schema", "id"),
        ({"status": "retired"}, "schema", "status"),
        ({"author": "-"}, "schema", None),
        ({"origin": "memgit"}, "schema", "sources"),
        ({"created": "2026-11-30"}, "schema", "created"),
        ({"title": "&a x"}, "yaml-alias", None),
        ({"title": "!!python/object:os.system x"}, "yaml-tag", None),
        ({"id": "abcdefabcdef"}, "id-mismatch", "id"),
    ],
)
def test_broken_memory_files_name_the_field(changes, code: str, field: str | None) -> None:
    with pytest.raises(InvalidInputError) as caught:
        read_memory(_memory_text(**changes), path="memories/user/k3/k3v9x2m7q1ab.md")
    assert caught.value.code == code
    if field is not None:
        assert caught.value.field == field
    assert caught.value.path == "memories/user/k3/k3v9x2m7q1ab.md"


def test_memory_without_front_matter() -> None:
    with pytest.raises(InvalidInputError) as caught:
        read_memory("just text\n", path="m.md")
    assert caught.value.code == "front-matter-missing"


# --- run records ---------------------------------------------------------------

runs = st.builds(
    RunRecord,
    run_id=st.from_regex(r"20[0-9]{6}T[0-9]{6}Z-[a-z0-9]{6}", fullmatch=True),
    created=timestamps,
    backend=st.sampled_from(["rules", "openai"]),
    model=st.none() | one_line,
    prompt_digest=st.text("0123456789abcdef", min_size=64, max_size=64).map("sha256:".__add__),
    gate_output=st.builds(
        lambda units: {
            "candidates": [],
            "coverage": [
                {"unit_id": unit, "decision": "NO_CHANGE", "reason": "no-durable-content"}
                for unit in units
            ],
            "evidence_bindings": [],
        },
        st.lists(names, max_size=3),
    ),
    inputs=st.lists(st.builds(RunInput, path=st.just("inbox/a/00/s/000001.yaml"), blob=hex40)).map(
        tuple
    ),
    decisions=st.lists(
        st.fixed_dictionaries(
            {"action": st.sampled_from(["CREATE", "UPDATE"]), "memory_id": st.just("ab12")}
        ),
        max_size=3,
    ).map(tuple),
)


@FUZZ
@given(runs)
def test_run_record_round_trips(record: RunRecord) -> None:
    text = render_run_record(record)
    parsed = parse_run_record(text, path=record.path)
    assert parsed == record
    assert render_run_record(parsed) == text


def test_run_record_rejects_duplicate_keys() -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_run_record('{"run_id": 1, "run_id": 2}', path="runs/x.json")
    assert caught.value.code == "json-duplicate-key"


# --- settings --------------------------------------------------------------------


def test_default_settings_parse() -> None:
    parsed = parse_settings(DEFAULT_CONFIG)
    assert parsed.gate == {"backend": "rules"}
    assert parsed.scopes == ("user", "project")
    assert parsed.retention_days == 30
    assert "review" not in DEFAULT_CONFIG


OLD_TEMPLATE_REVIEW = "\n# With review on, processing runs go to proposal branches for approval.\n"
OLD_TEMPLATE_REVIEW += "review:\n  enabled: false\n"


def test_review_disabled_as_memgit_init_wrote_it_still_parses() -> None:
    """Repositories made before review.enabled was removed keep working: `enabled: false`
    asks for what memgit does, so it is accepted (and means nothing else)."""
    old = DEFAULT_CONFIG.replace(
        "\n# Processed captures", OLD_TEMPLATE_REVIEW + "\n# Processed captures"
    )
    assert "review:\n  enabled: false" in old
    assert parse_settings(old) == parse_settings(DEFAULT_CONFIG)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (DEFAULT_CONFIG.replace("format_version: 1", "format_version: 2"), "format_version"),
        (
            DEFAULT_CONFIG.replace("retention_days: 30", "retention_days: soon"),
            "inbox.retention_days",
        ),
        (DEFAULT_CONFIG.replace("  - user\n", "  - ../user\n"), "scopes[0]"),
        (DEFAULT_CONFIG + "surprise: 1\n", None),
    ],
)
def test_bad_settings_name_the_field(text: str, field: str | None) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_settings(text)
    assert caught.value.code == "schema"
    assert caught.value.path == "memgit.yaml"
    if field:
        assert caught.value.field == field


# --- captures ----------------------------------------------------------------------

messages = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant", "tool"]),
    content=any_text,
    name=st.none() | one_line,
    complete=st.none() | st.booleans(),
)
turns = st.builds(
    Turn,
    source=names,
    session=names,
    seq=st.integers(0, 999_999_999),
    timestamp=timestamps,
    thread=st.none() | one_line,
    messages=st.lists(messages, min_size=1, max_size=4).map(tuple),
    redactions=st.dictionaries(
        st.text(string.ascii_lowercase + "-", min_size=1, max_size=10).filter(
            lambda s: s[0] != "-"
        ),
        st.integers(1, 5),
        max_size=3,
    ).map(lambda d: dict(sorted(d.items()))),
)


@FUZZ
@given(turns)
def test_capture_file_round_trips(turn: Turn) -> None:
    text = render_capture(turn)
    parsed = read_capture(text, path=turn.path)
    assert parsed == turn
    assert render_capture(parsed) == text


@FUZZ
@given(turns, hex40)
def test_the_index_reads_a_capture_as_the_strict_parser_does(turn: Turn, blob: str) -> None:
    """One Turn value: the index's fast reader gives what the strict parser gives, plus
    where it read it."""
    data = render_capture(turn).encode("utf-8")
    strict = read_capture(data, path=turn.path)
    assert read_capture(data, path=turn.path, blob=blob, check=False) == replace(
        strict, file=turn.path, blob=blob
    )


@FUZZ
@given(st.text(max_size=300) | st.binary(max_size=300))
def test_capture_parser_raises_only_our_errors(data: str | bytes) -> None:
    with contextlib.suppress(MemgitError):
        read_capture(data, path="inbox/x.yaml")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("runs/2026/11/20261130T100000Z-abcdef.json", 1796032800.0),
        ("runs/2026/13/20261330T100000Z-abcdef.json", None),  # no month 13
        ("runs/2026/11/20261130T106100Z-abcdef.json", None),  # no minute 61
        ("runs/2026/11/not-a-run.json", None),
    ],
)
def test_a_run_record_path_names_the_moment_of_its_run(path: str, expected: float | None) -> None:
    """A forged record path naming no real moment is no run time, never a crash."""
    assert run_moment(path) == expected
