"""The rules Gate's statement forms, as data: one YAML file per language beside this module.

What the offline Gate keeps and refuses is a list of sentence forms per language
("remember that ...", "I prefer ...", "we decided ...", "X owns ...", and the forms that
are never a memory: questions, hypotheticals, jokes, one-offs). Keeping them as data,
read once and applied together, lets a form or a language be added without a new code
path: a language is a file (``en.yaml`` explains the keys), and every file's forms apply
to every sentence, so a conversation that mixes languages needs no language detection.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from memgit.errors import InvalidInputError
from memgit.yamlio import parse_yaml

__all__ = ["Form", "Forms", "load_forms", "parse_forms"]

_FLAGS = re.IGNORECASE | re.DOTALL
# The lists a forms file may hold, in the order of Forms' fields.
_LISTS = (
    "requests",
    "openers",
    "statements",
    "never",
    "never_message",
    "agreements",
    "hesitations",
    "proposals",
    "errands",
    "continuations",
    "reasons",
    "anaphora",
    "speaker",
    "team",
)
_KEYS = {"format", "language", *_LISTS}
_SCOPES = {None, "user", "project"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Form:
    """One form: a compiled pattern, the memory type and scope it implies, and what the
    sentence must also hold (``needs``)."""

    name: str
    language: str
    pattern: re.Pattern[str]
    type: str | None = None
    scope: str | None = None
    needs: re.Pattern[str] | None = None

    def search(self, text: str) -> re.Match[str] | None:
        """The form's match in ``text``, when ``text`` also holds what it needs."""
        found = self.pattern.search(text)
        if found is None or (self.needs is not None and not self.needs.search(text)):
            return None
        return found


@dataclass(frozen=True, slots=True)
class Forms:
    """Every language's forms, by kind, in file order."""

    requests: tuple[Form, ...] = ()
    openers: tuple[Form, ...] = ()
    statements: tuple[Form, ...] = ()
    never: tuple[Form, ...] = ()
    never_message: tuple[Form, ...] = ()
    agreements: tuple[Form, ...] = ()
    hesitations: tuple[Form, ...] = ()
    proposals: tuple[Form, ...] = ()
    errands: tuple[Form, ...] = ()
    continuations: tuple[Form, ...] = ()
    reasons: tuple[Form, ...] = ()
    anaphora: tuple[Form, ...] = ()
    speaker: tuple[Form, ...] = ()
    team: tuple[Form, ...] = ()

    def __add__(self, other: Forms) -> Forms:
        return Forms(*(getattr(self, name) + getattr(other, name) for name in _LISTS))


def parse_forms(text: str, *, source: str) -> Forms:
    """The forms of one language file; a file of another shape raises ``invalid-forms``."""
    data = parse_yaml(text, source=source)
    if not isinstance(data, dict) or data.get("format") != 1:
        raise _invalid("the file must be a mapping with format: 1", source, "format")
    unknown = set(data) - _KEYS
    if unknown:
        raise _invalid(f"unknown key {sorted(unknown)[0]!r}", source, sorted(unknown)[0])
    language = data.get("language")
    if not isinstance(language, str) or not language:
        raise _invalid("language must be a non-empty string", source, "language")
    return Forms(*(tuple(_forms(data.get(key) or [], key, language, source)) for key in _LISTS))


def _forms(entries: Any, key: str, language: str, source: str) -> Iterable[Form]:
    if not isinstance(entries, list):
        raise _invalid(f"{key} must be a list", source, key)
    for number, entry in enumerate(entries):
        field = f"{key}[{number}]"
        item: Mapping[str, Any] = {"pattern": entry} if isinstance(entry, str) else entry
        if not isinstance(item, Mapping) or not isinstance(item.get("pattern"), str):
            raise _invalid("each entry is a pattern, or a mapping with one", source, field)
        scope = item.get("scope")
        if scope not in _SCOPES:
            raise _invalid("scope must be user or project", source, f"{field}.scope")
        needs = item.get("needs")
        yield Form(
            name=str(item.get("name", f"{key}-{number}")),
            language=language,
            pattern=_compile(item["pattern"], source, f"{field}.pattern"),
            type=item.get("type"),
            scope=scope,
            needs=_compile(needs, source, f"{field}.needs") if isinstance(needs, str) else None,
        )


def _compile(pattern: str, source: str, field: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, _FLAGS)
    except re.error as err:
        raise _invalid(f"not a regular expression: {err}", source, field) from err


def _invalid(message: str, source: str, field: str) -> InvalidInputError:
    return InvalidInputError(
        message,
        code="invalid-forms",
        path=source,
        field=field,
        hint="memgit/gate/forms/en.yaml explains the keys of a forms file",
    )


@functools.cache
def load_forms() -> Forms:
    """The forms memgit ships, every language's, read once per process."""
    folder = resources.files(__package__)
    forms = Forms()
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if entry.name.endswith(".yaml"):
            source = f"memgit/gate/forms/{entry.name}"
            forms = forms + parse_forms(entry.read_text("utf-8"), source=source)
    return forms
