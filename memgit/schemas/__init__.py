"""The JSON Schemas (draft 2020-12) of memgit's file formats, shipped in the wheel.

The ``*.schema.json`` files beside this module are the single source of the
formats; the top-level ``schemas/`` folder of the checkout links here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import relevance
from referencing import Registry, Resource

from memgit.errors import Problem
from memgit.jsonio import json_path

NAMES = ("common", "config", "capture", "turn", "memory", "run", "gate-output")
_MAX_MESSAGE = 200


@cache
def load_schema(name: str) -> dict[str, Any]:
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _registry() -> Registry:
    resources_by_id = [
        (load_schema(name)["$id"], Resource.from_contents(load_schema(name))) for name in NAMES
    ]
    return Registry().with_resources(resources_by_id)


@cache
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(name), registry=_registry())


def iter_schema_problems(instance: Any, name: str, *, path: str | None) -> Iterator[Problem]:
    """Every way ``instance`` breaks schema ``name``, most specific first."""
    errors = sorted(validator(name).iter_errors(instance), key=relevance)
    seen: set[tuple[str, str]] = set()
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        leaf = error
        while leaf.context:
            leaf = min(leaf.context, key=relevance)
        field = json_path(leaf.absolute_path) or None
        message = leaf.message
        if len(message) > _MAX_MESSAGE:
            message = message[: _MAX_MESSAGE - 3] + "..."
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
