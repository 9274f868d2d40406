"""The subject slot of a statement or a memory: which thing it speaks of, and which one.

"Production now runs Postgres 16" shares "Postgres" with "The staging database runs
Postgres 15", and "docs.example.dev" shares ``example`` and ``dev`` with
"api.example.dev": shared words retired both memories once. A change of mind may
retire a memory only when both have the same *slot*: the same qualifiers (the
environment: staging, production, dev, test, local, CI; the part: API, docs,
frontend, backend, ..., and a host name's first label; the owner: "my" or "our"; a
numbered name: "Server 14", "the 2.4 release") and, read by :mod:`memgit.gate.changes`,
the same thing (a shared name, or two names of one family: pnpm and bun are both
package managers). The words are data (``subjects.yaml`` beside this module, loaded
once), so a language or a qualifier is added without a new code path.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from memgit.errors import InvalidInputError
from memgit.evidence import topic_terms
from memgit.yamlio import parse_yaml

# The Gate's word lists and forms are read in the first this many characters of a
# statement: the rules Gate quotes at most 1,000 (a longer sentence is cut there), and
# some forms scan a run of name characters from every position, which costs the square
# of the text's length.
READ_LIMIT = 1000

__all__ = [
    "Slot",
    "bounded",
    "compile_words",
    "invalid_rules",
    "load_subjects",
    "same_subject",
    "slot_of",
    "word_list",
]

SOURCE = "memgit/gate/subjects.yaml"
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# A host name: two or more labels, the last one letters (api.example.dev, stg.acme.dev).
_HOST = re.compile(
    r"(?:[a-z][a-z0-9+.-]*://)?(?<![\w.@-])((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,})"
    r"(?![\w-])(?:[/:][^\s,;)]*)?",
    re.IGNORECASE,
)
# A first label that tells nothing about the host's role.
_NO_ROLE = frozenset({"www", "ww2", "web"})
# "api2", "api-v2", "docs3": the same part of the system, renumbered.
_RENUMBERED = re.compile(r"(?:-?v?\d+)$", re.IGNORECASE)
# Names at the opening of a statement with a number: "Server 14 ...", "Python 3.12 is".
_OPENING_NUMBER = re.compile(
    r"^\W*(?:(?:please\s+)?(?:remember|note)(?:\s+that)?[:,]?\s+)?(?:the\s+)?"
    r"([^\W\d_][\w-]*)\s*#?\s*(\d[\w.]*)",
    re.IGNORECASE,
)
DIFFERS = "differs"
IGNORED = "ignored"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Value:
    name: str
    words: re.Pattern[str] | None
    labels: frozenset[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Group:
    name: str
    one_sided: str
    values: tuple[_Value, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Subjects:
    """The qualifier groups, numbered names and thing families, compiled."""

    groups: tuple[_Group, ...]
    numbered: tuple[re.Pattern[str], ...]
    things: tuple[tuple[str, re.Pattern[str]], ...]
    project_things: tuple[re.Pattern[str], ...]  # the families with ``scope: project``


@dataclass(frozen=True, slots=True, kw_only=True)
class Slot:
    """What a text speaks of: its qualifiers (group -> values) and thing families."""

    qualifiers: Mapping[str, frozenset[str]]
    numbers: frozenset[str]
    opening: tuple[str, str] | None
    things: frozenset[str]


def _words(patterns: list[str], *, whole: bool = False) -> re.Pattern[str] | None:
    """One pattern for a list of names: Latin ones at word boundaries (a hyphen before
    joins words too: "pre-prod" is not "prod", but "staging-db" is staging; a ``whole``
    name is joined to nothing: "pnpm-lock.yaml" names a file, not pnpm), CJK ones
    anywhere."""
    if not patterns:
        return None
    after = r"(?![\w-]|\.\w)" if whole else r"(?!\w)"
    parts = [p if _CJK.search(p) else rf"(?<![\w.-])(?:{p}){after}" for p in patterns]
    return re.compile("|".join(parts), re.IGNORECASE)


def bounded(entry: str) -> str:
    """``entry`` (a regular expression) held to word boundaries where it starts or ends
    with a word; a CJK entry matches anywhere (Chinese has no spaces)."""
    if _CJK.search(entry):
        return entry
    start = r"(?<!\w)" if entry[:1].isalnum() or entry[:1] == "(" else ""
    end = r"(?!\w)" if entry[-1:].isalnum() or entry[-1:] in ")?" else ""
    return f"{start}(?:{entry}){end}"


def compile_words(entries: list[str], source: str, field: str) -> re.Pattern[str]:
    """One case-insensitive pattern for a list of word entries (never matching when
    the list is empty); a malformed entry raises ``invalid-gate-rules``."""
    if not entries:
        return re.compile(r"(?!x)x")
    try:
        return re.compile("|".join(bounded(entry) for entry in entries), re.IGNORECASE)
    except re.error as err:
        raise invalid_rules(f"not a regular expression: {err}", source, field) from err


def word_list(value: Any, source: str, field: str) -> list[str]:
    """``value`` when it is a list of non-empty text, else ``invalid-gate-rules``."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise invalid_rules("expected a list of text", source, field)
    return value


def invalid_rules(message: str, source: str, field: str) -> InvalidInputError:
    """The error for a Gate rules file not of its documented shape."""
    return InvalidInputError(
        message,
        code="invalid-gate-rules",
        path=source,
        field=field,
        hint="see the rule at the top of the file and docs/gate.md",
    )


def _invalid(message: str, field: str) -> InvalidInputError:
    return invalid_rules(message, SOURCE, field)


def _strings(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _invalid("expected a list of text", field)
    for item in value:
        try:
            re.compile(item)
        except re.error as err:
            raise _invalid(f"not a regular expression: {err}", field) from err
    return value


def parse_subjects(text: str) -> Subjects:
    """The compiled slot vocabulary of a ``subjects.yaml`` text."""
    data = parse_yaml(text, source=SOURCE)
    if not isinstance(data, dict) or data.get("format") != 1:
        raise _invalid("the file must be a mapping with format: 1", "format")
    groups = []
    for n, group in enumerate(data.get("qualifiers") or []):
        field = f"qualifiers[{n}]"
        if not isinstance(group, dict) or group.get("one_sided") not in (DIFFERS, IGNORED):
            raise _invalid("a group needs name, one_sided (differs|ignored) and values", field)
        values = []
        for name, spec in (group.get("values") or {}).items():
            if not isinstance(spec, dict):
                raise _invalid("a value needs words and labels", f"{field}.values.{name}")
            words = _strings(spec.get("words", []), f"{field}.values.{name}.words")
            labels = _strings(spec.get("labels", []), f"{field}.values.{name}.labels")
            values.append(
                _Value(name=name, words=_words(words), labels=frozenset(x.lower() for x in labels))
            )
        groups.append(
            _Group(name=group["name"], one_sided=group["one_sided"], values=tuple(values))
        )
    numbered = tuple(
        re.compile(p, re.IGNORECASE) for p in _strings(data.get("numbered", []), "numbered")
    )
    things = []
    project = []
    for n, family in enumerate(data.get("things") or []):
        field = f"things[{n}]"
        if not isinstance(family, dict) or not isinstance(family.get("name"), str):
            raise _invalid("a family needs a name and values", field)
        if family.get("scope", "project") != "project":
            raise _invalid("scope may only be: project", f"{field}.scope")
        pattern = _words(_strings(family.get("values"), f"{field}.values"), whole=True)
        if pattern is not None:
            things.append((family["name"], pattern))
            if "scope" in family:
                project.append(pattern)
    return Subjects(
        groups=tuple(groups),
        numbered=numbered,
        things=tuple(things),
        project_things=tuple(project),
    )


@functools.cache
def load_subjects() -> Subjects:
    """The slot vocabulary memgit ships, read once per process."""
    return parse_subjects(resources.files(__package__).joinpath("subjects.yaml").read_text("utf-8"))


def _first_labels(text: str) -> list[str]:
    labels = []
    for host in _HOST.finditer(text):
        parts = host[1].lower().split(".")
        if len(parts) >= 3 and parts[0] not in _NO_ROLE:
            labels.append(_RENUMBERED.sub("", parts[0]) or parts[0])
    return labels


def slot_of(text: str) -> Slot:
    """The slot of ``text`` (a statement, or a memory's title and body)."""
    subjects = load_subjects()
    labels = _first_labels(text)
    prose = _HOST.sub(" ", text)
    qualifiers: dict[str, frozenset[str]] = {}
    unplaced = set(labels)
    for group in subjects.groups:
        found = set()
        for value in group.values:
            if value.words is not None and value.words.search(prose):
                found.add(value.name)
            hits = value.labels.intersection(labels)
            if hits:
                found.add(value.name)
                unplaced -= hits
        qualifiers[group.name] = frozenset(found)
    if "host" in qualifiers:
        qualifiers["host"] = frozenset(unplaced)
    numbers = frozenset(
        f"{hit['name'].lower()} {hit['number'].lower()}"
        for pattern in subjects.numbered
        for hit in pattern.finditer(prose)
    )
    opening = _OPENING_NUMBER.match(text)
    things = frozenset(name for name, pattern in subjects.things if pattern.search(text))
    return Slot(
        qualifiers=qualifiers,
        numbers=numbers,
        opening=(opening[1].lower(), opening[2].lower().rstrip(".")) if opening else None,
        things=things,
    )


def same_subject(one: Slot, other: Slot, *, named: bool = False) -> bool:
    """Whether two slots may be one subject: no qualifier tells them apart. ``named``:
    ``one`` names the very value ``other`` holds ("bullseye is gone" and "our CI images
    are built on Debian bullseye"), so only two different values of a qualifier part
    them."""
    for group in load_subjects().groups:
        mine, theirs = (
            one.qualifiers.get(group.name, frozenset()),
            other.qualifiers.get(group.name, frozenset()),
        )
        if mine == theirs:
            continue
        if (group.one_sided == DIFFERS and not named) or (mine and theirs):
            return False
    if one.numbers != other.numbers:
        return False
    return not (
        one.opening
        and other.opening
        and one.opening[0] == other.opening[0]
        and one.opening[1] != other.opening[1]
    )


def related_text(quoted: str, memory: str) -> bool:
    """Whether ``quoted`` speaks of ``memory`` at all: a topic word in common, or a thing
    of one family ("These days I'm on Zed" and "I use VS Code": both name an editor)."""
    if topic_terms(quoted) & topic_terms(memory):
        return True
    return bool(slot_of(quoted).things & slot_of(memory).things)
