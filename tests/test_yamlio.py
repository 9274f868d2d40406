"""The narrow YAML schema, its dumper, and front matter: hostile input fails fast and cleanly."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from memgit.constants import MAX_JSON_DEPTH, MAX_YAML_BYTES
from memgit.errors import ExitStatus, InvalidInputError
from memgit.yamlio import join_front_matter, parse_yaml, render_yaml, split_front_matter

SOURCE = "memories/x.md"

BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""

# Plain scalars that PyYAML's defaults would type but memgit keeps as text.
STAY_STRINGS = [
    "2026-11-30",
    "2026-11-30T10:00:00Z",
    "yes",
    "no",
    "on",
    "off",
    "y",
    "True",
    "FALSE",
    "Null",
    "NULL",
    "1e3",
    "0x1F",
    "0o17",
    "0b101",
    "1_000",
    "0999",
    "007",
    "+1",
    "1:30",
    ".inf",
    "-.inf",
    ".nan",
    "3.14",
    "1.",
    "=",
    "<<",
]


def refused(text: str | bytes, code: str) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as info:
        parse_yaml(text, source=SOURCE)
    err = info.value
    assert (err.code, err.path) == (code, SOURCE)
    assert err.hint
    assert err.exit_status == ExitStatus.INVALID_INPUT
    return err


# --- the schema ----------------------------------------------------------------------


@pytest.mark.parametrize("scalar", STAY_STRINGS)
def test_other_plain_scalars_stay_strings(scalar: str) -> None:
    assert parse_yaml(f"v: {scalar}\n", source=SOURCE) == {"v": scalar}


@pytest.mark.parametrize(
    ("scalar", "value"),
    [
        ("true", True),
        ("false", False),
        ("null", None),
        ("~", None),
        ("", None),
        ("0", 0),
        ("-0", 0),
        ("42", 42),
        ("-17", -17),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ('"42"', "42"),
        ("'true'", "true"),
        ("!!str 12", "12"),
        ("!!int 12", 12),
        ("!!bool false", False),
        ("!!null", None),
    ],
)
def test_the_few_implicit_and_standard_types(scalar: str, value: Any) -> None:
    parsed = parse_yaml(f"v: {scalar}\n", source=SOURCE)["v"]
    assert parsed == value
    assert type(parsed) is type(value)


def test_collections_and_documents() -> None:
    text = "--- !!map\nlist: !!seq [a, 1]\nnested:\n  - {k: v}\n  - |\n    line\n...\n"
    assert parse_yaml(text, source=SOURCE) == {"list": ["a", 1], "nested": [{"k": "v"}, "line\n"]}
    assert parse_yaml("", source=SOURCE) is None
    assert parse_yaml(b"- a\n", source=SOURCE) == ["a"]


def test_escaped_surrogate_pairs_are_joined() -> None:
    assert parse_yaml('v: "\\ud83d\\ude00 \\U0001F600"', source=SOURCE) == {"v": "😀 😀"}


# --- anchors, aliases, tags -------------------------------------------------------------


def test_billion_laughs_fails_fast_at_the_first_anchor() -> None:
    started = time.process_time()
    err = refused(BILLION_LAUGHS, "yaml-alias")
    assert time.process_time() - started < 1
    assert err.field == "line 1, column 4"
    assert "anchor &a" in err.message


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("a: &x 1\n", "line 1, column 4", "anchor &x"),
        ("a: *x\n", "line 1, column 4", "alias *x"),
        ("- &x [1]\n", "line 1, column 3", "anchor &x"),
    ],
)
def test_anchors_and_aliases_are_refused(text: str, field: str, problem: str) -> None:
    err = refused(text, "yaml-alias")
    assert err.field == field
    assert problem in err.message


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ('!!python/object/apply:os.system ["echo hi"]\n', "!!python/object/apply:os.system"),
        ("a: !!python/name:os.system\n", "!!python/name:os.system"),
        ("a: !!binary aGk=\n", "!!binary"),
        ("a: !!timestamp 2026-11-30\n", "!!timestamp"),
        ("a: !!float 1.5\n", "!!float"),
        ("!!set {a: null}\n", "!!set"),
        ("!!omap [a: 1]\n", "!!omap"),
        ("a: !!merge <<\n", "!!merge"),
        ("a: !custom x\n", "!custom"),
        ("a: ! x\n", "!"),
        ("a: !<tag:example.com,2026:x> y\n", "tag:example.com,2026:x"),
        ("%TAG !! tag:evil.example,2026:\n--- !!str x\n", "tag:evil.example,2026:str"),
        ("a: !!str [b]\n", "!!str"),
        ("a: !!map [b]\n", "!!map"),
    ],
)
def test_tags_outside_the_standard_few_are_refused(text: str, name: str) -> None:
    err = refused(text, "yaml-tag")
    assert err.field is not None
    assert err.field.startswith("line ")
    assert f"tag {name} is not allowed" in err.message


@pytest.mark.parametrize(
    "text", ["a: !!int 0x1F\n", "a: !!int 1_000\n", "a: !!bool yes\n", "a: !!null nil\n"]
)
def test_standard_tags_need_a_value_of_their_type(text: str) -> None:
    err = refused(text, "yaml-tag")
    assert err.field == "line 1, column 4"
    assert "does not fit tag" in err.message


# --- keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("1: a\n", "line 1, column 1", "mapping key 1 is an integer"),
        ("a: {true: b}\n", "line 1, column 5", "mapping key true is a boolean"),
        ("~: a\n", "line 1, column 1", "mapping key ~ is null"),
        ("? [a]\n: b\n", "line 1, column 3", "mapping key is a sequence"),
        ("? {a: 1}\n: b\n", "line 1, column 3", "mapping key is a mapping"),
    ],
)
def test_keys_must_be_strings(text: str, field: str, problem: str) -> None:
    err = refused(text, "yaml-key")
    assert err.field == field
    assert problem in err.message


def test_quoted_keys_are_strings() -> None:
    assert parse_yaml('"1": a\n"true": b\n', source=SOURCE) == {"1": "a", "true": "b"}


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        (
            "a: 1\nb: 2\na: 3\n",
            "line 3, column 1",
            'duplicate key "a" in mapping (first at line 1)',
        ),
        ("x:\n  k: 1\n  'k': 2\n", "line 3, column 3", 'duplicate key "k"'),
        ('{"😀": 1, "\\ud83d\\ude00": 2}', "line 1, column 10", 'duplicate key "😀"'),
    ],
)
def test_duplicate_keys_are_refused(text: str, field: str, problem: str) -> None:
    err = refused(text, "yaml-duplicate-key")
    assert err.field == field
    assert problem in err.message


# --- syntax, encoding, size, depth ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("a: 1\n---\nb: 2\n", "line 2, column 1", "expected a single document"),
        ("a: [1, 2\n", "line 2, column 1", "expected ',' or ']'"),
        ("a: b: c\n", "line 1, column 5", "mapping values are not allowed here"),
        ("a:\n\tb: 1\n", "line 2, column 1", "found character '\\t'"),
        ('a: "unterminated\n', "line 2, column 1", "found unexpected end of stream"),
        ("a: \x07\n", "line 1, column 4", "U+0007"),
        ("a: 1\nb: \x7f\n", "line 2, column 4", "U+007F"),
        ("a: " + "9" * 5000 + "\n", "line 1, column 4", "integer has more than 4300 digits"),
        ('a: "x\\U00110000"\n', "line 1, column 8", "escape sequence beyond U+10FFFF"),
        ('a: "\\UFFFFFFFF"\n', "line 1, column 7", "escape sequence beyond U+10FFFF"),
    ],
)
def test_invalid_yaml_names_line_and_column(text: str, field: str, problem: str) -> None:
    err = refused(text, "invalid-yaml")
    assert err.field == field
    assert problem in err.message


@pytest.mark.parametrize(
    ("data", "field"),
    [(b"a: \xff\n", "byte 3"), (b"a: \xed\xa0\x80\n", "byte 3"), (b"\xef\xbb\xbfa: 1\n", "byte 0")],
)
def test_invalid_utf8_and_bom_are_refused(data: bytes, field: str) -> None:
    assert refused(data, "invalid-utf8").field == field
    if data.startswith(b"\xef\xbb\xbf"):
        assert refused(data.decode(), "invalid-utf8").field == field


@pytest.mark.parametrize(
    "text",
    [
        "x" * (MAX_YAML_BYTES + 1),
        b"x" * (MAX_YAML_BYTES + 1),
        "é" * (MAX_YAML_BYTES // 2 + 1),  # few characters, too many bytes
    ],
)
def test_oversized_input_is_refused(text: str | bytes) -> None:
    assert "larger than" in refused(text, "yaml-too-large").message


def test_nesting_is_limited() -> None:
    depth = MAX_JSON_DEPTH
    assert parse_yaml("[" * depth + "]" * depth, source=SOURCE) is not None
    err = refused("a:\n " + "[" * depth + "]" * depth, "yaml-too-deep")
    # The mapping is the first level, so the last bracket on line 2 is one too many.
    assert err.field == f"line 2, column {depth + 1}"
    assert f"more than {depth} levels" in err.message


@pytest.mark.parametrize("text", ["[" * 1_000_000, "- " * 100_000 + "x", "{a: " * 100_000])
def test_deep_nesting_fails_fast(text: str) -> None:
    # CPU time, not wall time: two suite workers and a benchmark share two cores.
    started = time.process_time()
    refused(text, "yaml-too-deep")
    assert time.process_time() - started < 1


def test_lone_surrogate_escape_is_refused() -> None:
    err = refused('a:\n  b: "x\\ud800"\n', "yaml-lone-surrogate")
    assert err.field == "line 2, column 6"
    assert "lone surrogate U+D800" in err.message


# --- rendering ----------------------------------------------------------------------------


def test_render_layout() -> None:
    value = {
        "id": "m1",
        "created": "2026-11-30",
        "count": 3,
        "pinned": False,
        "parent": None,
        "tags": ["a", "yes"],
        "body": "line one\nline two\n",
        "empty": "",
        "none": [],
        "long": "word " * 40 + "end",
    }
    assert render_yaml(value) == (
        "id: m1\n"
        "created: '2026-11-30'\n"
        "count: 3\n"
        "pinned: false\n"
        "parent: null\n"
        "tags:\n"
        "- a\n"
        "- 'yes'\n"
        "body: |\n"
        "  line one\n"
        "  line two\n"
        "empty: ''\n"
        "none: []\n"
        f"long: {'word ' * 40}end\n"
    )


@pytest.mark.parametrize("scalar", ["true", "false", "null", "~", "", "12", "-0"])
def test_strings_the_loader_would_type_are_quoted(scalar: str) -> None:
    text = render_yaml({"v": scalar})
    assert text == f"v: '{scalar}'\n"
    assert parse_yaml(text, source=SOURCE) == {"v": scalar}


@pytest.mark.parametrize("scalar", STAY_STRINGS)
def test_strings_read_back_the_same_by_memgit_and_pyyaml(scalar: str) -> None:
    text = render_yaml({"v": scalar})
    assert parse_yaml(text, source=SOURCE) == yaml.safe_load(text) == {"v": scalar}


def test_render_writes_shared_objects_in_full() -> None:
    shared = ["x"]
    text = render_yaml({"a": shared, "b": shared})
    assert "&" not in text
    assert parse_yaml(text, source=SOURCE) == {"a": ["x"], "b": ["x"]}


@pytest.mark.parametrize("value", [1.5, b"x", (1,), {1: "a"}, {"a": {2}}, [ExitStatus.OK]])
def test_render_refuses_values_outside_the_schema(value: Any) -> None:
    with pytest.raises(TypeError):
        render_yaml(value)


# --- front matter -------------------------------------------------------------------------


def test_front_matter_layout_and_split() -> None:
    text = join_front_matter({"id": "m1", "note": "a\n---\nb"}, "# Title\n\n---\nbody\n")
    assert text == "---\nid: m1\nnote: |-\n  a\n  ---\n  b\n---\n# Title\n\n---\nbody\n"
    assert split_front_matter(text, source=SOURCE) == (
        {"id": "m1", "note": "a\n---\nb"},
        "# Title\n\n---\nbody\n",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\na: 1\n---\n", ({"a": 1}, "")),
        ("---\na: 1\n---", ({"a": 1}, "")),
        ("---\na: 1\n---\n\n", ({"a": 1}, "\n")),
        ("---\r\na: 1\r\n---\r\nbody\r\n---\r\n", ({"a": 1}, "body\r\n---\r\n")),
        ("---\n{}\n---\n---\n", ({}, "---\n")),
        ("---\na: |\n  x\n  ---\n---\n", ({"a": "x\n---\n"}, "")),
    ],
)
def test_split_front_matter(text: str, expected: tuple[dict[str, Any], str]) -> None:
    assert split_front_matter(text, source=SOURCE) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "does not start with a '---' line"),
        ("# Title\n", "does not start with a '---' line"),
        ("--- \na: 1\n---\n", "does not start with a '---' line"),
        ("\n---\na: 1\n---\n", "does not start with a '---' line"),
        ("---\ra: 1\r---\r", "does not start with a '---' line"),
        ("---\na: 1\n", "has no closing '---' line"),
        ("---\na: 1\n--- \n", "has no closing '---' line"),
        ("---\na: 1\n----\n", "has no closing '---' line"),
    ],
)
def test_front_matter_fences_are_required(text: str, problem: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        split_front_matter(text, source=SOURCE)
    assert (info.value.code, info.value.field) == ("front-matter-missing", "line 1")
    assert problem in info.value.message


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("---\n---\n", "an empty document"),
        ("---\n- a\n---\n", "a sequence"),
        ("---\ntitle\n---\n", "a string"),
        ("---\n7\n---\n", "an integer"),
        ("---\ntrue\n---\n", "a boolean"),
    ],
)
def test_front_matter_must_be_a_mapping(text: str, kind: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        split_front_matter(text, source=SOURCE)
    assert (info.value.code, info.value.field) == ("front-matter-not-mapping", "line 2")
    assert f"not {kind}" in info.value.message


@pytest.mark.parametrize(
    ("text", "code", "field"),
    [
        ("---\nid: a\nid: b\n---\nbody\n", "yaml-duplicate-key", "line 3, column 1"),
        ("---\nid: a\nx: !!binary aGk=\n---\n", "yaml-tag", "line 3, column 4"),
        ("---\nid: a\nx: [\n---\n", "invalid-yaml", "line 4, column 1"),
        ("---\nx: &a 1\n---\n", "yaml-alias", "line 2, column 4"),
    ],
)
def test_front_matter_errors_count_lines_of_the_file(text: str, code: str, field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        split_front_matter(text, source=SOURCE)
    assert (info.value.code, info.value.field, info.value.path) == (code, field, SOURCE)


# --- properties ---------------------------------------------------------------------------

tricky_text = st.sampled_from(
    [
        *STAY_STRINGS,
        *("true", "null", "~", "", "0", "-1", "---", "...", "- a", "a: b", "#c", "a #c"),
        *("'", '"', "|", ">", "&a", "*a", "!t", "%x", "@", "`", "{", "[a]", "? x"),
        *(" lead", "trail ", "a\nb", "\n", "a\n\n", "\n\na", " \n", "x\n  y", "a\r\nb"),
        *("\t", "\ufeff", "\x85", "a\u2028b", "\u2029", "\x00", "\x7f", "\U0010ffff", "😀"),
        *("a\n---\nb", "---\n", "\n---", "x" * 200, "é" * 130),
    ]
)
strings = st.text() | tricky_text
yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | strings,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(strings, children, max_size=4)
    ),
    max_leaves=20,
)
front_matter = st.dictionaries(strings, yaml_values, max_size=5)
bodies = st.lists(
    st.sampled_from(["---", "---\r", "", "text", " ---", "...", "\r"]) | st.text(), max_size=6
).map("\n".join)


@settings(max_examples=400, deadline=None)
@given(yaml_values)
def test_round_trip_and_canonical(value: Any) -> None:
    text = render_yaml(value)
    assert parse_yaml(text, source=SOURCE) == value
    assert parse_yaml(text.encode(), source=SOURCE) == value
    assert render_yaml(parse_yaml(text, source=SOURCE)) == text
    # Quoting follows the YAML 1.1 resolver, so PyYAML's own safe loader agrees.
    assert yaml.safe_load(text) == value


@settings(max_examples=300, deadline=None)
@given(front_matter, bodies)
def test_front_matter_round_trip(data: dict[str, Any], body: str) -> None:
    text = join_front_matter(data, body)
    assert split_front_matter(text, source=SOURCE) == (data, body)


YAML_ALPHABET = st.sampled_from(
    [*"-?:,[]{}#&*!|>'\"%@`~ \t\n\\ab1.", "---", "...", "!!str ", "!!int ", "&a ", "*a", "\\u"]
)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.lists(YAML_ALPHABET, max_size=40).map("".join)))
def test_arbitrary_input_raises_only_invalid_input(data: str | bytes) -> None:
    try:
        parse_yaml(data, source=SOURCE)
    except InvalidInputError as err:
        assert err.code.startswith(("invalid-", "yaml-"))


@settings(max_examples=200, deadline=None)
@given(st.text() | st.lists(YAML_ALPHABET, max_size=40).map(lambda parts: "---\n" + "".join(parts)))
def test_arbitrary_front_matter_raises_only_invalid_input(text: str) -> None:
    try:
        split_front_matter(text, source=SOURCE)
    except InvalidInputError as err:
        assert err.code.startswith(("invalid-", "yaml-", "front-matter-"))


@settings(max_examples=300, deadline=None)
@given(yaml_values, st.data())
def test_corrupted_yaml_raises_only_invalid_input(value: Any, data: st.DataObject) -> None:
    text = render_yaml(value)
    position = data.draw(st.integers(0, len(text)))
    chunk = data.draw(st.text(max_size=4) | YAML_ALPHABET)
    try:
        parse_yaml(text[:position] + chunk + text[position + 1 :], source=SOURCE)
    except InvalidInputError as err:
        assert err.code.startswith(("invalid-", "yaml-"))
