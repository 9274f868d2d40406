"""The JSON Schemas (draft 2020-12) of memgit's file formats, shipped in the wheel.

The ``*.schema.json`` files beside this module are the single source of the
formats; the top-level ``schemas/`` folder of the checkout links here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from memgit.errors import Problem
from memgit.jsonio import json_path

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

NAMES = ("common", "config", "capture", "turn", "memory", "run", "gate-output")


@cache
def load_schema(name: str) -> dict[str, Any]:
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _registry() -> Registry:
    # jsonschema and referencing load here, on the first validation, not with this module:
    # their import is a fifth of a command's start, and reading a file needs no validator.
    from referencing import Registry, Resource

    resources_by_id = [
        (load_schema(name)["$id"], Resource.from_contents(load_schema(name))) for name in NAMES
    ]
    return Registry().with_resources(resources_by_id)


@cache
def validator(name: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(name), registry=_registry())


def iter_schema_problems(instance: Any, name: str, *, path: str | None) -> Iterator[Problem]:
    """Every way ``instance`` breaks schema ``name``, most specific first.

    Messages are memgit's own and never repeat the offending value: input may
    hold secrets, and error output ends up in agent hosts' logs.
    """
    from jsonschema.exceptions import relevance

    errors = sorted(validator(name).iter_errors(instance), key=relevance)
    seen: set[tuple[str, str]] = set()
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        leaf = error
        while leaf.context:
            leaf = min(leaf.context, key=relevance)
        parts = list(leaf.absolute_path)
        if leaf.validator == "required":
            missing = _missing_property(leaf)
            if missing is not None:
                parts.append(missing)
        field = json_path(parts) or None
        message = describe_error(leaf)
        key = (field or "", message)
        if key in seen:
            continue
        seen.add(key)
        yield Problem(
            code="schema",
            message=message,
            path=path,
            field=field,
            hint=f"see the {name} format in docs/formats.md",
        )


_TYPE_NAMES = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "an object",
    type(None): "null",
}


def _kind(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _missing_property(error: ValidationError) -> str | None:
    """The property a ``required`` error is about (jsonschema makes one error per property)."""
    named = re.match(r"^'(.*)' is a required property$", error.message)
    return named.group(1) if named else None


def _names(values: Any) -> str:
    shown = ", ".join(repr(v)[:40] for v in list(values)[:12])
    return shown + (", ..." if len(values) > 12 else "")


def describe_error(error: ValidationError) -> str:
    """A short message for one schema error that names the rule, never the value."""
    rule, expected = error.validator, error.validator_value
    value: Any = error.instance  # the instance that failed: JSON, whatever its shape
    if rule == "type":
        wanted = expected if isinstance(expected, list) else [expected]
        return f"expected {' or '.join(str(w) for w in wanted)}, got {_kind(value)}"
    if rule == "required":
        missing = _missing_property(error)
        return (
            f"required field {missing!r} is missing" if missing else "a required field is missing"
        )
    if rule in ("additionalProperties", "unevaluatedProperties"):
        # jsonschema alone knows which properties other keywords evaluated.
        listed = re.search(r"\((.*) (?:was|were) unexpected\)", error.message)
        return f"unexpected field(s): {listed.group(1)[:200]}" if listed else "unexpected fields"
    if rule == "enum":
        return f"must be one of: {_names(expected)}"
    if rule == "const":
        return f"must be {expected!r}"
    if rule in ("maxItems", "minItems"):
        bound = "at most" if rule == "maxItems" else "at least"
        return f"has {len(value)} items; {bound} {expected} allowed"
    if rule == "minProperties":
        return f"is empty; at least {expected} field(s) needed"
    if rule in ("maxLength", "minLength"):
        bound = "at most" if rule == "maxLength" else "at least"
        return f"is {len(value)} characters long; {bound} {expected} allowed"
    if rule in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"is out of range ({rule} {expected})"
    if rule == "pattern":
        return f"is not in the expected form (pattern {expected})"
    if rule == "uniqueItems":
        return "has duplicate items"
    if rule == "propertyNames":
        return "has a field name that is not allowed"
    if rule == "not":
        return "has a field or value that is not allowed here"
    return f"is not valid here ({rule})"
