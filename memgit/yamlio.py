"""The one YAML loader and dumper, and Markdown front matter.

PyYAML's defaults read ``2026-11-30`` as a date, ``yes`` as True and ``1e3`` as a
float, build objects from tags, and expand aliases without bound (a few hundred
bytes can become gigabytes). Memory and capture files are data that people edit
and other tools read, so the loader types only ``true``/``false``, ``null`` and
plain decimal integers, and refuses anchors, aliases and non-standard tags event
by event, before anything is built. The dumper writes only what the loader reads
back unchanged.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from typing import Any, ClassVar

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.representer import SafeRepresenter

from memgit.constants import MAX_JSON_DEPTH, MAX_YAML_BYTES
from memgit.errors import InvalidInputError
from memgit.jsonio import decode_utf8

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _BOOL, _NULL, _SEQ, _MAP = (
    _TAG + name for name in ("str", "int", "bool", "null", "seq", "map")
)
# The only implicit types; any other plain scalar is a string.
_IMPLICIT = {
    _BOOL: re.compile(r"true|false"),
    _NULL: re.compile(r"~|null|"),
    _INT: re.compile(r"-?(?:0|[1-9][0-9]*)"),
}
# Tags allowed explicitly, by event kind; a scalar's value must also read as its tag's type.
_ALLOWED_TAGS: dict[type[Event], dict[str, re.Pattern[str] | None]] = {
    ScalarEvent: {_STR: None, **_IMPLICIT},
    SequenceStartEvent: {_SEQ: None},
    MappingStartEvent: {_MAP: None},
}
_KINDS = {ScalarEvent: "scalar", SequenceStartEvent: "sequence", MappingStartEvent: "mapping"}
_KEY_TYPES = {_INT: "an integer", _BOOL: "a boolean", _NULL: "null"}
_SURROGATE = re.compile("[\ud800-\udfff]")
_LONE_SURROGATE = re.compile(
    "[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)
# Line breaks other than \n: a literal block would turn \x85 into \n, so such strings
# are double-quoted, where they are escaped.
_OTHER_BREAKS = re.compile("[\x85\u2028\u2029]")
_OPENING_FENCE = re.compile(r"---\r?\n")
_CLOSING_FENCE = re.compile(r"^---(?:\r?\n|\Z)", re.MULTILINE)
# The fast path: libyaml's C parser, its events read by the same narrow rules.
_CLoader = getattr(yaml, "CBaseLoader", None)
_PLAIN_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_INT_START = frozenset("-0123456789")
_PLAIN = {"true": True, "false": False, "null": None, "~": None, "": None}
# Where libyaml is more lenient than PyYAML's pure loader (found by
# tests/test_recall_properties.py): tabs, byte order marks inside the text, a
# comment right after a block scalar indicator, "?" in flow collections.
_LIBYAML_LENIENT = re.compile("[\t\ufeff]|[|>][-+0-9]*#|[{\\[].*\\?", re.DOTALL)


def parse_yaml(text: str | bytes, *, source: str) -> Any:
    """Parse one YAML document with memgit's narrow schema; ``source`` names it in errors.

    Values are dicts with string keys, lists, strings, ints, bools and None. Every
    failure is an InvalidInputError, whatever the input. Where libyaml's C parser is
    installed and the text holds nothing it reads more leniently, its events are read
    by the same rules (several times faster: the recall index reads every memory);
    on any doubt, and for every error, PyYAML's strict loader decides.
    """
    text = _checked_text(text, source)
    if not _lenient_spot(text):
        try:
            return _fast_load(text)
        except _Fallback:
            pass
    return _strict_load(text, source)


def parse_yaml_strictly(text: str | bytes, *, source: str) -> Any:
    """:func:`parse_yaml` by PyYAML's loader alone (what the fast path is tested against)."""
    return _strict_load(_checked_text(text, source), source)


def _checked_text(text: str | bytes, source: str) -> str:
    if _utf8_size(text) > MAX_YAML_BYTES:
        raise InvalidInputError(
            f"YAML input is larger than {MAX_YAML_BYTES} bytes",
            code="yaml-too-large",
            path=source,
            hint="split the content into smaller files",
        )
    return decode_utf8(text, source=source)


def _strict_load(text: str, source: str) -> Any:
    try:
        return _load(text, source)
    except yaml.reader.ReaderError as err:
        raise InvalidInputError(
            f"invalid YAML: {err.reason}: U+{err.character:04X}",
            code="invalid-yaml",
            path=source,
            field=_offset_location(text, err.position),
            hint="remove the character, or write it as an escape in a double-quoted string",
        ) from err
    except yaml.MarkedYAMLError as err:
        problem = ", ".join(part for part in (err.context, err.problem) if part)
        raise InvalidInputError(
            f"invalid YAML: {problem}",
            code="invalid-yaml",
            path=source,
            field=_mark_location(err.problem_mark or err.context_mark),
            hint="fix the YAML syntax at that position",
        ) from err


class _Fallback(Exception):
    """The fast path is not sure; the strict loader decides."""


def _lenient_spot(text: str) -> bool:
    """Whether ``text`` may hold something libyaml reads and PyYAML refuses."""
    if "\t" in text or "\ufeff" in text:
        return True
    if "#" not in text and "?" not in text:
        return False
    return _LIBYAML_LENIENT.search(text) is not None


def _fast_load(text: str) -> Any:
    if _CLoader is None:
        raise _Fallback
    if _SURROGATE.search(text):
        raise _Fallback
    loader = _CLoader(text)
    # Escapes such as "\ud83d" make surrogates only once parsed: check scalars then.
    reader = _Reader(loader.get_event, escapes="\\" in text)
    try:
        if type(reader.next()) is not StreamStartEvent:
            raise _Fallback
        if type(reader.next()) is not DocumentStartEvent:
            raise _Fallback
        value = reader.node(reader.next(), 0)
        if type(reader.next()) is not DocumentEndEvent:
            raise _Fallback
        if type(reader.next()) is not StreamEndEvent:
            raise _Fallback
        return value
    except (yaml.YAMLError, RecursionError) as err:
        raise _Fallback from err
    finally:
        loader.dispose()


class _Reader:
    """Values from libyaml's events, by the strict loader's rules."""

    __slots__ = ("escapes", "next")

    def __init__(self, next_event: Any, *, escapes: bool) -> None:
        self.next = next_event
        self.escapes = escapes

    def node(self, event: Any, depth: int) -> Any:
        kind = type(event)
        if kind is ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise _Fallback
            value = event.value
            if self.escapes and _SURROGATE.search(value):
                raise _Fallback
            if not event.implicit[0]:
                return value
            if value in _PLAIN:
                return _PLAIN[value]
            if value[:1] in _INT_START and _PLAIN_INT.fullmatch(value):
                if len(value) > 4000:
                    raise _Fallback
                return int(value)
            return value
        if kind is AliasEvent or event is None or event.anchor is not None:
            raise _Fallback
        if depth >= MAX_JSON_DEPTH or event.tag is not None:
            raise _Fallback
        if kind is SequenceStartEvent:
            items: list[Any] = []
            while True:
                item = self.next()
                if type(item) is SequenceEndEvent:
                    return items
                items.append(self.node(item, depth + 1))
        if kind is MappingStartEvent:
            mapping: dict[str, Any] = {}
            while True:
                key_event = self.next()
                if type(key_event) is MappingEndEvent:
                    return mapping
                key = self.node(key_event, depth + 1)
                if type(key) is not str or key in mapping:
                    raise _Fallback
                mapping[key] = self.node(self.next(), depth + 1)
        raise _Fallback


def render_yaml(value: Any) -> str:
    """Canonical block-style YAML that parse_yaml reads back as ``value``.

    Keys keep the caller's order and long lines are never folded. Strings with
    newlines become literal ``|`` blocks where YAML allows it. Strings are
    quoted whenever PyYAML's YAML 1.1 resolver would type them, a superset of
    what parse_yaml types, so yaml.safe_load and similar readers see the same
    strings. Raises TypeError for values outside dicts with string keys, lists,
    str, int, bool and None.
    """
    return yaml.dump(
        value,
        Dumper=_Dumper,
        allow_unicode=True,
        sort_keys=False,
        default_flow_style=False,
        width=sys.maxsize,
    )


def split_front_matter(text: str, *, source: str) -> tuple[dict[str, Any], str]:
    """Split Markdown into its YAML front matter mapping and its body.

    The text must start with a line ``---`` and the front matter ends at the next
    line that is exactly ``---``; the body is everything after that line, byte for
    byte. Fences may end in ``\\n`` or ``\\r\\n`` (files checked out on Windows);
    the closing fence may also end the text. Error locations are lines of the
    whole text.
    """
    opening = _OPENING_FENCE.match(text)
    if opening is None:
        raise _fence_missing("does not start with a '---' line", source)
    closing = _CLOSING_FENCE.search(text, opening.end())
    if closing is None:
        raise _fence_missing("has no closing '---' line", source)
    # The opening fence is also a YAML document start, so marks count lines of the file.
    data = parse_yaml(text[: closing.start()], source=source)
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"front matter must be a mapping of keys to values, not {_KIND_NAMES[type(data)]}",
            code="front-matter-not-mapping",
            path=source,
            field="line 2",
            hint="write the front matter as 'key: value' lines",
        )
    return data, text[closing.end() :]


def join_front_matter(data: Mapping[str, Any], body: str) -> str:
    """Markdown with ``data`` as YAML front matter; split_front_matter reverses it."""
    return f"---\n{render_yaml(dict(data))}---\n{body}"


def _load(text: str, source: str) -> Any:
    loader = _Loader(text, source)
    try:
        return loader.get_single_data()
    except (ValueError, OverflowError) as err:  # PyYAML's chr() on escapes like "\UFFFFFFFF"
        raise InvalidInputError(
            "invalid YAML: escape sequence beyond U+10FFFF",
            code="invalid-yaml",
            path=source,
            field=_mark_location(loader.get_mark()),
            hint="fix the escape sequence at that position",
        ) from err
    finally:
        loader.dispose()


class _Loader(yaml.SafeLoader):
    """SafeLoader with memgit's schema, enforced on each event as it is parsed."""

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text)
        self._source = source
        self._depth = 0

    def get_event(self) -> Event:
        event: Event = super().get_event()  # type: ignore[no-untyped-call]  # unannotated stub
        if isinstance(event, NodeEvent) and event.anchor is not None:
            sigil, kind = ("*", "alias") if isinstance(event, AliasEvent) else ("&", "anchor")
            raise self._refuse(
                "yaml-alias",
                f"YAML {kind} {sigil}{event.anchor} is not allowed",
                event,
                "write each value out in full; anchors and aliases let a small file "
                "expand into a huge one",
            )
        if isinstance(event, ScalarEvent | CollectionStartEvent) and event.tag is not None:
            self._check_tag(event)
        if isinstance(event, CollectionStartEvent):
            self._depth += 1
            if self._depth > MAX_JSON_DEPTH:
                raise self._refuse(
                    "yaml-too-deep",
                    f"YAML is nested more than {MAX_JSON_DEPTH} levels deep",
                    event,
                    f"flatten the structure to at most {MAX_JSON_DEPTH} levels",
                )
        elif isinstance(event, CollectionEndEvent):
            self._depth -= 1
        return event

    def _check_tag(self, event: ScalarEvent | CollectionStartEvent) -> None:
        allowed = _ALLOWED_TAGS[type(event)]
        tag = event.tag
        if tag is None:
            return
        name = "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag
        hint = (
            "only !!str, !!int, !!bool, !!null, !!seq and !!map are allowed, on values "
            "of that type; quote text instead of tagging it"
        )
        if tag not in allowed:
            message = f"tag {name} is not allowed on a {_KINDS[type(event)]}"
            raise self._refuse("yaml-tag", message, event, hint)
        pattern = allowed[tag]
        if (
            pattern is not None
            and isinstance(event, ScalarEvent)
            and not pattern.fullmatch(event.value)
        ):
            message = f"value {event.value!r} does not fit tag {name}"
            raise self._refuse("yaml-tag", message, event, hint)

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return next((tag for tag, p in _IMPLICIT.items() if p.fullmatch(value)), _STR)
        tag: str = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
        return tag

    def construct_scalar(self, node: yaml.ScalarNode) -> str:  # type: ignore[override]
        """Join escaped surrogate pairs (``"\\ud83d\\ude00"``, as in JSON); refuse lone ones."""
        value = super().construct_scalar(node)
        if not _SURROGATE.search(value):
            return value
        lone = _LONE_SURROGATE.search(value)
        if lone:
            raise self._refuse(
                "yaml-lone-surrogate",
                f"string contains a lone surrogate U+{ord(lone.group()):04X}",
                node,
                "surrogates cannot be written as UTF-8; remove or replace the escape",
            )
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")

    def construct_mapping(  # type: ignore[override]  # keys are refused unless text
        self, node: yaml.MappingNode, deep: bool = False
    ) -> dict[str, Any]:
        """Refuse non-string keys, and duplicate keys where PyYAML would keep the last."""
        mapping: dict[str, Any] = {}
        lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                kind = "sequence" if isinstance(key_node, yaml.SequenceNode) else "mapping"
                raise self._key_error(f"mapping key is a {kind}, not a string", key_node)
            if key_node.tag != _STR:
                shown = key_node.value or "(empty)"
                message = f"mapping key {shown} is {_KEY_TYPES[key_node.tag]}, not a string"
                raise self._key_error(message, key_node)
            key = self.construct_object(key_node, deep=deep)
            if key in mapping:
                quoted = json.dumps(key, ensure_ascii=False)
                raise self._refuse(
                    "yaml-duplicate-key",
                    f"duplicate key {quoted} in mapping (first at line {lines[key]})",
                    key_node,
                    "each key may appear only once in a mapping; merge or rename the entries",
                )
            lines[key] = key_node.start_mark.line + 1
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_int(self, node: yaml.ScalarNode) -> int:
        try:
            return int(self.construct_scalar(node))
        except ValueError as err:  # more digits than sys.get_int_max_str_digits()
            raise self._refuse(
                "invalid-yaml",
                f"integer has more than {sys.get_int_max_str_digits()} digits",
                node,
                "quote very large numbers to keep them as strings",
            ) from err

    yaml_constructors: ClassVar[dict[str | None, Any]] = {
        _STR: SafeConstructor.construct_yaml_str,
        _INT: construct_int,
        _BOOL: SafeConstructor.construct_yaml_bool,
        _NULL: SafeConstructor.construct_yaml_null,
        _SEQ: SafeConstructor.construct_yaml_seq,
        _MAP: SafeConstructor.construct_yaml_map,
    }

    def _key_error(self, message: str, node: yaml.Node) -> InvalidInputError:
        return self._refuse(
            "yaml-key", message, node, 'mapping keys must be text; quote keys such as "1"'
        )

    def _refuse(
        self, code: str, message: str, at: Event | yaml.Node, hint: str
    ) -> InvalidInputError:
        return InvalidInputError(
            message, code=code, path=self._source, field=_mark_location(at.start_mark), hint=hint
        )


class _Dumper(yaml.SafeDumper):
    """SafeDumper limited to the types parse_yaml returns, so nothing changes type in a round trip.

    It keeps PyYAML's YAML 1.1 resolver for deciding which strings need quotes.
    """

    def ignore_aliases(self, data: Any) -> bool:
        return True  # the loader refuses anchors, so repeated objects are written in full

    def represent_str(self, data: str) -> yaml.ScalarNode:
        style = '"' if _OTHER_BREAKS.search(data) else "|" if "\n" in data else None
        return self.represent_scalar(_STR, data, style=style)

    def represent_dict(self, data: dict[Any, Any]) -> yaml.MappingNode:  # type: ignore[override]
        if not all(isinstance(key, str) for key in data):
            raise TypeError("YAML mapping keys must be strings")
        return self.represent_mapping(_MAP, data)

    def represent_undefined(self, data: Any) -> yaml.Node:  # type: ignore[override]
        raise TypeError(f"cannot render {type(data).__name__} as YAML")

    yaml_representers: ClassVar[dict[type | None, Any]] = {  # type: ignore[assignment]
        type(None): SafeRepresenter.represent_none,
        bool: SafeRepresenter.represent_bool,
        int: SafeRepresenter.represent_int,
        str: represent_str,
        list: SafeRepresenter.represent_list,
        dict: represent_dict,
        None: represent_undefined,
    }


def _utf8_size(text: str | bytes) -> int:
    if isinstance(text, bytes):
        return len(text)
    # A character is at least one byte, so a long text is too large without encoding it.
    return len(text) if len(text) > MAX_YAML_BYTES else len(text.encode("utf-8", "surrogatepass"))


def _mark_location(mark: Any) -> str | None:
    """Where a PyYAML mark (of the Python or the C parser) points, or None."""
    return None if mark is None else f"line {mark.line + 1}, column {mark.column + 1}"


def _offset_location(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - text.rfind("\n", 0, offset)
    return f"line {line}, column {column}"


def _fence_missing(problem: str, source: str) -> InvalidInputError:
    return InvalidInputError(
        f"front matter {problem}",
        code="front-matter-missing",
        path=source,
        field="line 1",
        hint="start the file with YAML front matter between two lines of '---'",
    )


_KIND_NAMES = {
    type(None): "an empty document",
    list: "a sequence",
    str: "a string",
    int: "an integer",
    bool: "a boolean",
}


def scalar_lines(text: str, keys: tuple[str | int, ...], *, source: str) -> tuple[int, int, str]:
    """Where the scalar at ``keys`` (mapping keys and list indexes) stands in ``text``:
    (first line, last line, style), lines counted from 1 and style PyYAML's (``|``
    for a literal block, ``''`` plain, ``'"'``...). Read through the same checked
    loader as :func:`parse_yaml`; KeyError when there is no such scalar."""
    loader = _Loader(text, source)
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    for key in keys:
        if isinstance(key, int) and isinstance(node, yaml.SequenceNode):
            if not 0 <= key < len(node.value):
                raise KeyError(key)
            node = node.value[key]
        elif isinstance(key, str) and isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == key), None)
            if node is None:
                raise KeyError(key)
        else:
            raise KeyError(key)
    if not isinstance(node, yaml.ScalarNode):
        raise KeyError(keys[-1] if keys else "")
    end = node.end_mark.line + (1 if node.end_mark.column else 0)
    return node.start_mark.line + 1, max(end, node.start_mark.line + 1), node.style or ""
