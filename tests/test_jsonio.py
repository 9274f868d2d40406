"""Strict JSON: every hostile input is an InvalidInputError with a stable code and location."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memgit.constants import MAX_JSON_DEPTH
from memgit.errors import ExitStatus, InvalidInputError
from memgit.jsonio import (
    decode_utf8,
    json_as,
    json_data,
    json_fields,
    json_path,
    parse_json,
    render_json,
)

SOURCE = "turn.json"


def refused(data: bytes | str) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as info:
        parse_json(data, source=SOURCE)
    assert info.value.path == SOURCE
    assert info.value.hint
    assert info.value.exit_status == ExitStatus.INVALID_INPUT
    return info.value


# --- values that parse ---------------------------------------------------------------


def test_numbers_keep_their_type() -> None:
    value = parse_json(
        '{"i": 1, "n": -0, "f": 1.5, "e": 1e3, "big": 12345678901234567890}', source=SOURCE
    )
    assert value == {"i": 1, "n": 0, "f": 1.5, "e": 1000.0, "big": 12345678901234567890}
    assert [type(v) for v in value.values()] == [int, int, float, float, int]


def test_bytes_and_text_give_the_same_value() -> None:
    text = '{"content": "café ☕", "emoji": "\\ud83d\\ude00", "list": [true, false, null]}'
    expected = {"content": "café ☕", "emoji": "😀", "list": [True, False, None]}
    assert parse_json(text, source=SOURCE) == expected
    assert parse_json(text.encode(), source=SOURCE) == expected


def test_integers_up_to_the_digit_limit_parse() -> None:
    assert parse_json("9" * 4300, source=SOURCE) == int("9" * 4300)


def test_nesting_up_to_the_limit_parses() -> None:
    depth = MAX_JSON_DEPTH
    assert parse_json("[" * depth + "]" * depth, source=SOURCE) is not None
    assert parse_json('{"a":' * depth + "1" + "}" * depth, source=SOURCE) is not None


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps(["[" * 1000, "{" * 1000, '\\"[[[', "\\"])
    assert parse_json(text, source=SOURCE) == ["[" * 1000, "{" * 1000, '\\"[[[', "\\"]


# --- syntax and encoding ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ('{"a": }', "line 1, column 7", "Expecting value"),
        ('{"a": 1,\n "b": 2,\n}', "line 3, column 1", "Expecting property name"),
        ("", "line 1, column 1", "Expecting value"),
        ("[1] [2]", "line 1, column 5", "Extra data"),
        ("{'a': 1}", "line 1, column 2", "Expecting property name"),
        ('"unterminated', "line 1, column 1", "Unterminated string"),
        ('"tab\there"', "line 1, column 5", "Invalid control character"),
    ],
)
def test_syntax_errors_name_line_and_column(text: str, field: str, problem: str) -> None:
    err = refused(text)
    assert (err.code, err.field) == ("invalid-json", field)
    assert problem in err.message


def test_integer_beyond_python_digit_limit_is_invalid_json() -> None:
    err = refused('{"n": [' + "9" * 5000 + "]}")
    assert (err.code, err.field) == ("invalid-json", "n[0]")
    assert "digits" in err.message


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        (b'{"a": "\xff"}', "byte 7", "invalid start byte"),
        (b'{"a": "\xc3"}', "byte 7", "invalid continuation byte"),
        (b'"\xe2\x82', "byte 1", "unexpected end of data"),
        (b'"\xed\xa0\x80"', "byte 1", "invalid continuation byte"),  # encoded surrogate
        (b"\xc0\xaf", "byte 0", "invalid start byte"),  # overlong "/"
    ],
)
def test_invalid_utf8_names_the_byte_offset(data: bytes, field: str, problem: str) -> None:
    err = refused(data)
    assert (err.code, err.field) == ("invalid-utf8", field)
    assert "not valid UTF-8" in err.message
    assert problem in err.message


@pytest.mark.parametrize("data", [b"\xef\xbb\xbf{}", "\ufeff{}"])
def test_byte_order_mark_is_refused(data: bytes | str) -> None:
    err = refused(data)
    assert (err.code, err.field) == ("invalid-utf8", "byte 0")
    assert "byte order mark" in err.message


def test_decode_utf8_accepts_text_and_valid_bytes() -> None:
    assert decode_utf8("ä", source=SOURCE) == "ä"
    assert decode_utf8("ä".encode(), source=SOURCE) == "ä"


# --- semantic refusals ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "key"),
    [
        ('{"a": 1, "a": 2}', "a", "a"),
        ('{"messages": [{"role": "user", "role": "tool"}]}', "messages[0].role", "role"),
        ('{"a b": {"x": 1, "y": 2, "x": 3}}', '["a b"].x', "x"),
        ('{"k": 1, "k": {"k": [1, 2]}}', "k", "k"),
    ],
)
def test_duplicate_keys_are_refused(text: str, field: str, key: str) -> None:
    err = refused(text)
    assert (err.code, err.field) == ("json-duplicate-key", field)
    assert f'duplicate key "{key}"' in err.message


@pytest.mark.parametrize(
    ("text", "field", "name"),
    [
        ("NaN", None, "NaN"),
        ('{"x": Infinity}', "x", "Infinity"),
        ('{"x": [1, -Infinity]}', "x[1]", "-Infinity"),
        ('{"x": 1e999}', "x", "1e999"),
        ('{"x": -1.5e400}', "x", "-1.5e400"),
    ],
)
def test_non_finite_numbers_are_refused(text: str, field: str | None, name: str) -> None:
    err = refused(text)
    assert (err.code, err.field) == ("json-non-finite", field)
    assert name in err.message


@pytest.mark.parametrize(
    ("text", "field", "code_point"),
    [
        ('"\\ud800"', None, "U+D800"),
        ('{"messages": [{"content": "hi \\udfff there"}]}', "messages[0].content", "U+DFFF"),
        ('{"\\udc00": 1}', '["\\udc00"]', "U+DC00"),
        ('["\\ude00\\ud83d"]', "[0]", "U+DE00"),  # a pair in the wrong order
        ('{"a": {"b\\ud800": 1}}', 'a["b\\ud800"]', "U+D800"),
        ('["ok", "\ud800"]', "[1]", "U+D800"),  # a raw surrogate in str input
    ],
)
def test_lone_surrogates_are_refused(text: str, field: str | None, code_point: str) -> None:
    err = refused(text)
    assert (err.code, err.field) == ("json-lone-surrogate", field)
    assert f"lone surrogate {code_point}" in err.message


def test_nesting_one_past_the_limit_is_refused() -> None:
    err = refused('{"a":\n' + "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH + "}")
    # The object is the first level, so the last bracket on line 2 is one too many.
    assert (err.code, err.field) == ("json-too-deep", f"line 2, column {MAX_JSON_DEPTH}")
    assert f"more than {MAX_JSON_DEPTH} levels" in err.message


@pytest.mark.parametrize("depth", [10_000, 1_000_000])
@pytest.mark.parametrize(("opening", "closing"), [("[", "]"), ('{"a":', "}")])
def test_deep_nesting_fails_fast_without_recursion_error(
    depth: int, opening: str, closing: str
) -> None:
    for text in (opening * depth, opening * depth + "0" + closing * depth):
        started = time.process_time()
        err = refused(text)
        assert time.process_time() - started < 2
        assert err.code == "json-too-deep"


@pytest.mark.parametrize("tail", ["", "\\"])
def test_hostile_quoting_is_scanned_in_linear_time(tail: str) -> None:
    started = time.process_time()
    err = refused('"' + '\\"' * 200_000 + tail)
    assert time.process_time() - started < 2
    assert err.code == "invalid-json"


# --- rendering and paths ----------------------------------------------------------------


def test_render_is_indented_utf8_in_caller_order() -> None:
    value = {"z": 1, "a": [True, None], "é": "☕"}
    assert (
        render_json(value) == '{\n  "z": 1,\n  "a": [\n    true,\n    null\n  ],\n  "é": "☕"\n}\n'
    )


def test_render_refuses_non_finite_numbers() -> None:
    with pytest.raises(ValueError):
        render_json(float("nan"))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Inner:
    name: str
    note: str | None = field(default=None, metadata=json_as(omit="none"))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Outer:
    memory_id: str = field(metadata=json_as(key="id"))
    inner: tuple[_Inner, ...] = field(metadata=json_as(before=("count",)))
    tags: dict[str, int] = field(default_factory=dict, metadata=json_as(omit="empty"))
    file: str = field(default="x.md", metadata=json_as(omit="always"))

    @property
    def count(self) -> int:
        return len(self.inner)


def test_json_fields_follows_the_declared_field_options() -> None:
    """A rename, a computed property placed before a field, and the three kinds of
    omission, declared on the fields, with nested values rendered the same way."""
    value = _Outer(memory_id="m1", inner=(_Inner(name="a"), _Inner(name="b", note="n")))
    expected = {"id": "m1", "count": 2, "inner": [{"name": "a"}, {"name": "b", "note": "n"}]}
    assert json_fields(value) == expected
    assert list(json_data(value)) == ["id", "count", "inner"]
    tagged = _Outer(memory_id="m2", inner=(), tags={"k": 1})
    assert json_data(tagged) == {"id": "m2", "count": 0, "inner": [], "tags": {"k": 1}}
    assert json_fields(value, "file", "memory_id") == {"file": "x.md", "memory_id": "m1"}


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ([], ""),
        (["messages", 0, "content"], "messages[0].content"),
        ([0, "x", 1, 2], "[0].x[1][2]"),
        (["a b", "c"], '["a b"].c'),
        (["content-type", "1", "_ok9"], '["content-type"]["1"]._ok9'),
        (["é", 'q"', "\ud800"], '["é"]["q\\""]["\\ud800"]'),
    ],
)
def test_json_path(parts: list[str | int], expected: str) -> None:
    assert json_path(parts) == expected


# --- properties ---------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_round_trip_and_canonical(value: Any) -> None:
    text = render_json(value)
    assert parse_json(text, source=SOURCE) == value
    assert parse_json(text.encode(), source=SOURCE) == value
    assert render_json(parse_json(text, source=SOURCE)) == text


JSON_ALPHABET = st.sampled_from([*'[]{}",:-+.0123456789eEtrufalsnNIiy \n\\', "\\u", "\\ud800"])


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.lists(JSON_ALPHABET, max_size=60).map("".join)))
def test_arbitrary_input_raises_only_invalid_input(data: bytes | str) -> None:
    try:
        parse_json(data, source=SOURCE)
    except InvalidInputError as err:
        assert err.code.startswith(("invalid-", "json-"))


@settings(max_examples=300, deadline=None)
@given(json_values, st.data())
def test_corrupted_json_raises_only_invalid_input(value: Any, data: st.DataObject) -> None:
    text = render_json(value).encode()
    position = data.draw(st.integers(0, len(text)))
    chunk = data.draw(st.binary(max_size=4))
    try:
        parse_json(text[:position] + chunk + text[position + 1 :], source=SOURCE)
    except InvalidInputError as err:
        assert err.code.startswith(("invalid-", "json-"))
