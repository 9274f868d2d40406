"""Strict JSON in, canonical JSON out.

Python's json module accepts input other tools choke on or read differently:
NaN and Infinity, duplicate keys (the last silently wins), lone surrogates that
cannot be written back as UTF-8, and nesting deep enough to exhaust the stack.
Turns and records come from outside, so each of these is refused with its own
stable error code instead.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, fields, is_dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Literal, overload

from memgit.constants import MAX_JSON_DEPTH
from memgit.errors import InvalidInputError, MemgitError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON string, or the unterminated rest of the text. Possessive, so that hostile
# quoting cannot make the nesting scan backtrack into quadratic time.
_STRING = r'"(?:[^"\\]++|\\.?)*+"?'
_STRINGS = re.compile(_STRING, re.DOTALL)
_TOKENS = re.compile(_STRING + r"|[\[\]{}]", re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]++")
_NESTING = {"[": 1, "{": 1, "]": -1, "}": -1}
_JSON_AS = "memgit.json_as"

Omit = Literal["always", "none", "empty"]


@dataclass(frozen=True, slots=True)
class _As:
    """How ``json_fields`` renders one field (see ``json_as``)."""

    key: str | None = None
    omit: Omit | None = None
    before: tuple[str, ...] = ()


_PLAIN = _As()


def decode_utf8(data: bytes | str, *, source: str) -> str:
    """Text of an input, refusing invalid UTF-8 and a leading byte order mark.

    A BOM is invisible in editors yet changes the bytes that digests and diffs
    see, so it is refused rather than silently dropped; ``str`` input is only
    checked for the BOM.
    """
    if isinstance(data, str):
        text = data
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InvalidInputError(
                f"input is not valid UTF-8: {err.reason} at byte {err.start}",
                code="invalid-utf8",
                path=source,
                field=f"byte {err.start}",
                hint="save the input as UTF-8",
            ) from err
    if text.startswith("\ufeff"):
        raise InvalidInputError(
            "input starts with a byte order mark (U+FEFF)",
            code="invalid-utf8",
            path=source,
            field="byte 0",
            hint="save the input as UTF-8 without a byte order mark",
        )
    return text


def parse_json(data: bytes | str, *, source: str) -> Any:
    """Parse one JSON value strictly; ``source`` names the input in errors.

    Integers stay ``int``, other numbers are finite floats. Every failure is an
    InvalidInputError, whatever the input.
    """
    text = decode_utf8(data, source=source)
    _check_nesting(text, source)
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as err:
        raise InvalidInputError(
            f"invalid JSON: {err.msg}",
            code="invalid-json",
            path=source,
            field=f"line {err.lineno}, column {err.colno}",
            hint="fix the JSON syntax at that position",
        ) from err
    _check_value(value, source)
    return value


def render_json(value: Any) -> str:
    """Canonical JSON text: two-space indent, UTF-8 as is, keys in the caller's order."""
    return json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def json_as(
    *, key: str | None = None, omit: Omit | None = None, before: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Field metadata telling ``json_fields`` how a field renders: under another
    ``key``; left out ``always``, when ``none`` or when ``empty``; and after the
    computed properties named in ``before``. Declared once on the field, so that no
    value restates its fields in a ``to_dict`` of its own."""
    return {_JSON_AS: _As(key, omit, before)}


def json_fields(value: Any, *names: str) -> dict[str, Any]:
    """The named attributes (by default every field, as ``json_as`` declares it) of a
    frozen dataclass value as JSON data, in that order."""
    if names:
        return {name: json_data(getattr(value, name)) for name in names}
    data: dict[str, Any] = {}
    for field in fields(value):
        how: _As = field.metadata.get(_JSON_AS, _PLAIN)
        for name in how.before:
            data[name] = json_data(getattr(value, name))
        item = getattr(value, field.name)
        if how.omit == "always" or (how.omit == "none" and item is None):
            continue
        if how.omit == "empty" and not item:
            continue
        data[how.key or field.name] = json_data(item)
    return data


@overload
def json_data(value: DataclassInstance | MemgitError) -> dict[str, Any]: ...
@overload
def json_data(value: tuple[Any, ...] | list[Any]) -> list[Any]: ...
@overload
def json_data(value: Any) -> Any: ...
def json_data(value: Any) -> Any:
    """Any memgit value as JSON data: the one serialiser, so that a value nested in
    another (a memory in a recall hit) renders the same everywhere. Tuples become
    lists; a value with a ``to_dict`` (one that computes its form) gives that, any
    other dataclass its ``json_fields``."""
    if isinstance(value, tuple | list):
        return [json_data(item) for item in value]
    if isinstance(value, dict):
        return {key: json_data(item) for key, item in value.items()}
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return json_fields(value)
    return value


def json_path(parts: Iterable[str | int]) -> str:
    """A readable location such as ``messages[0].content``; the root is ``""``.

    Keys that are not plain identifiers are quoted, as in ``headers["content-type"]``.
    """
    out: list[str] = []
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.fullmatch(part):
            out.append(f".{part}" if out else part)
        else:
            out.append(f"[{_quote(part)}]")
    return "".join(out)


def _quote(text: str) -> str:
    """JSON-quoted text that can be printed even when it holds lone surrogates."""
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace").decode()


def _check_nesting(text: str, source: str) -> None:
    """Refuse deep nesting before json's recursive scanner can hit the recursion limit.

    The fast pass counts brackets outside strings at C speed; only when it finds
    too deep a nesting does a slower pass locate the offending bracket.
    """
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    if max(accumulate(map(_NESTING.__getitem__, brackets)), default=0) <= MAX_JSON_DEPTH:
        return
    depth = 0
    for match in _TOKENS.finditer(text):
        depth += _NESTING.get(text[match.start()], 0)
        if depth > MAX_JSON_DEPTH:
            line = text.count("\n", 0, match.start()) + 1
            column = match.start() - text.rfind("\n", 0, match.start())
            raise InvalidInputError(
                f"JSON is nested more than {MAX_JSON_DEPTH} levels deep",
                code="json-too-deep",
                path=source,
                field=f"line {line}, column {column}",
                hint=f"flatten the structure to at most {MAX_JSON_DEPTH} levels",
            )


@dataclass(frozen=True, slots=True)
class _Refused:
    """Placeholder the decoder hooks return, so the error can name its JSON path."""

    code: str
    message: str
    hint: str
    key: str | None = None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Refused:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    counts = Counter(key for key, _ in pairs)
    key = next(key for key, _ in pairs if counts[key] > 1)
    return _Refused(
        "json-duplicate-key",
        f"duplicate key {_quote(key)} in object",
        "each key may appear only once in an object; merge or rename the entries",
        key,
    )


def _constant(name: str) -> _Refused:
    return _Refused(
        "json-non-finite",
        f"{name} is not a JSON number",
        "use null or a string for values that are not finite numbers",
    )


def _float(text: str) -> float | _Refused:
    value = float(text)
    if math.isfinite(value):
        return value
    return _Refused(
        "json-non-finite",
        f"number {text} is too large to be finite",
        "use a smaller number, or a string",
    )


def _int(text: str) -> int | _Refused:
    try:
        return int(text)
    except ValueError:  # more digits than sys.get_int_max_str_digits()
        return _Refused(
            "invalid-json",
            f"integer has more than {sys.get_int_max_str_digits()} digits",
            "write very large numbers as strings",
        )


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object, parse_constant=_constant, parse_float=_float, parse_int=_int
)


def _check_value(value: Any, source: str) -> None:
    """Report the first refused value or lone surrogate, with its path, in document order.

    Clean values, nearly all of them, are recognised by a C-speed screen first:
    dumping fails on a refused placeholder and keeps lone surrogates as they are.
    The path-tracking walk that follows is iterative, so depth cannot hurt it.
    """
    try:
        if not _SURROGATE.search(json.dumps(value, ensure_ascii=False)):
            return
    except TypeError:  # a _Refused placeholder
        pass
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _Refused):
            where = path if item.key is None else (*path, item.key)
            raise InvalidInputError(
                item.message,
                code=item.code,
                path=source,
                field=json_path(where) or None,
                hint=item.hint,
            )
        if isinstance(item, str):
            _check_string(item, path, source)
        elif isinstance(item, list):
            stack.extend((item[i], (*path, i)) for i in reversed(range(len(item))))
        elif isinstance(item, dict):
            for key in item:
                _check_string(key, (*path, key), source)
            stack.extend((child, (*path, key)) for key, child in reversed(item.items()))


def _check_string(text: str, path: tuple[str | int, ...], source: str) -> None:
    match = _SURROGATE.search(text)
    if match:
        raise InvalidInputError(
            f"string contains a lone surrogate U+{ord(match.group()):04X}",
            code="json-lone-surrogate",
            path=source,
            field=json_path(path) or None,
            hint=r"surrogates must come in pairs such as \ud83d\ude00; remove or replace it",
        )
