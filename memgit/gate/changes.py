"""Corrections and changes of mind, and the related memory each one replaces.

"I prefer unittest now, not pytest" after "I prefer pytest" must replace that memory,
not sit beside it. A statement is a *change* when it carries a change-of-mind marker
or form ("now", "instead", "no longer", "switched from X to Y", "dropped X", 不再,
改用, "ya no", "nicht mehr", ...) and a *correction* when it carries only a correction
marker ("actually", "I meant", 其实, "en realidad", "eigentlich", ...). The markers and
forms are data, per language (``changes.yaml`` beside this module, loaded once).

Its target is a related memory memgit showed the Gate with the same subject slot
(:mod:`memgit.gate.subjects`: no environment, part, owner or number tells them apart)
that the statement speaks of: one that holds the old value the change names ("from npm
to pnpm" targets the memory that says npm), else one that names a thing of the same
family (pnpm and bun are both package managers) and nothing else the statement does
not, else one sharing enough topic words (two, or one that is at least half of what
each is about), once the words that say *how* something is held ("prefer", "always",
"switched", 喜欢) and the parts every address has (``com``, ``www``) are set aside.
Two memories that fit equally well are no target: retiring the wrong memory loses a
true one. "from now on" / 以后 alone is no change: it opens a new rule ("From now on,
tag release 8 ...") as often as it replaces one (the rules Gate lets a rule from now on
replace a memory of its subject, found as a change's target is). A sentence that is a
hypothetical, a plan or someone else's words ("if we switched to Postgres ...") changes nothing.

A change form that names its new value ("we switched to pnpm", "cambiamos a bun") is a
memory of its own when no earlier memory holds the old one (one that names only the old
value, "we dropped Redis", is not), worded as the state it
leaves ("We use pnpm (no longer npm)"), unless it is a request or a state of the moment
("please switch to ...", "for now").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Set
from dataclasses import dataclass
from importlib import resources
from typing import Any

from memgit.evidence import topic_terms
from memgit.gate.forms import load_forms
from memgit.gate.subjects import (
    READ_LIMIT,
    bounded,
    compile_words,
    invalid_rules,
    load_subjects,
    related_text,
    same_subject,
    slot_of,
    word_list,
)
from memgit.yamlio import parse_yaml

__all__ = [
    "Change",
    "change_kind",
    "find_target",
    "opens_rule",
    "read_change",
    "strip_lead_in",
    "topic_of",
]

SOURCE = "memgit/gate/changes.yaml"
_LISTS = (
    "how",
    "lead_in",
    "opens_rule",
    "change",
    "correction",
    "not_a_change",
    "not_alone",
    "points_back",
)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
# Parts of an address every address has: "api.example.com" and "docs.example.com" are
# not one topic.
_TEAM = re.compile(r"\b(?:we|we're|we've|our|ours|us|the team)\b|我们|nosotros|\bwir\b", re.I)
_SOMEONE_ELSE = re.compile(
    r"^\W*(?:(?-i:[A-Z][a-z]+)(?:\s+(?:has|have|just|also|finally|now))?\s+"
    r"(?:switched|moved|migrated|changed|uses?|prefers?|likes?|went|upgraded|is on)\b"
    # "Lena ist auf Emacs umgestiegen", "Camila se pasó a Mac"
    r"|(?-i:[A-Z][a-z]+)\s+(?:ist|hat|nutzt|benutzt|verwendet|mag)\b.*\b(?:umgestiegen|gewechselt"
    r"|umgezogen|nutzt|benutzt|verwendet|mag)\b"
    r"|(?-i:[A-Z][a-z]+)\s+(?:se (?:pasó|cambió|mudó)|usa|prefiere|cambió)\b"
    r"|(?:he|she|they|él|ella)\b)|\b(?:his|her|their)\b",
    re.I,
)
_NOISE = frozenset({"com", "org", "net", "io", "www", "http", "https", "html"})
_MIN_SHARED = 2
_TRAILING = " \t.,;:!?。，；：！？"
# A host, not a file: "bun.lock" and "pnpm-lock.yaml" name nothing a change moves to.
_HOST = re.compile(
    r"\w(?:[\w-]*\.)+(?!(?:lock|ya?ml|json|toml|md|txt|py|js|ts|sh|cfg|ini|log)\b)[a-z]{2,}\b",
    re.IGNORECASE,
)
_VERSION = re.compile(r"\d+\.\d+")
_DIGIT = re.compile(r"\d")
_CAPITAL = re.compile(r"(?<![\w'])[A-Z]")
_ARTICLE = re.compile(
    r"(?:the|an?|el|la|los|las|una?|der|die|das|den|dem|des|eine[mnrs]?|ein)\s", re.IGNORECASE
)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Form:
    pattern: re.Pattern[str]
    wording: Mapping[str, str]
    was: str
    needs_thing: bool
    removal: bool  # says only what no longer holds ("dropped X")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rules:
    how: re.Pattern[str]
    lead_in: re.Pattern[str]
    opens_rule: re.Pattern[str]
    change: re.Pattern[str]
    correction: re.Pattern[str]
    not_a_change: re.Pattern[str]
    not_alone: re.Pattern[str]
    points_back: re.Pattern[str]
    not_values: re.Pattern[str]
    points_at: tuple[re.Pattern[str], ...]
    forms: tuple[_Form, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """What a statement says changed: ``action`` SUPERSEDE (a change of mind) or UPDATE
    (a correction); the ``old`` and ``new`` values it names; ``wording`` the new state
    in words, when a form says it; ``alone`` whether it may be a memory of its own."""

    action: str
    old: tuple[str, ...]
    new: tuple[str, ...]
    wording: str | None
    alone: bool


def _compile(entries: list[str], field: str, *, lead: bool = False) -> re.Pattern[str]:
    if not lead:
        return compile_words(entries, SOURCE, field)
    if not entries:
        return re.compile(r"(?!x)x")
    body = "|".join(bounded(entry) for entry in entries)
    try:
        return re.compile(rf"^(?:(?:{body})[,:!，：！。]?\s*)+", re.IGNORECASE)
    except re.error as err:
        raise invalid_rules(f"not a regular expression: {err}", SOURCE, field) from err


def _form(raw: Any, language: Mapping[str, Any], field: str) -> _Form:
    if not isinstance(raw, dict) or not isinstance(raw.get("pattern"), str):
        raise invalid_rules("a form needs a pattern", SOURCE, field)
    value, end = language.get("value"), language.get("end")
    if not isinstance(value, str) or not isinstance(end, str):
        raise invalid_rules("a language with forms needs value and end", SOURCE, field)
    text = (
        raw["pattern"]
        .replace("<new>", f"(?P<new>{value})")
        .replace("<old>", f"(?P<old>{value})")
        .replace("<end>", f"(?={end})")
    )
    wording = raw.get("wording", {})
    if not isinstance(wording, dict) or not all(isinstance(v, str) for v in wording.values()):
        raise invalid_rules("wording must map who to text", SOURCE, f"{field}.wording")
    try:
        pattern = re.compile(text, re.IGNORECASE)
    except re.error as err:
        raise invalid_rules(f"not a regular expression: {err}", SOURCE, field) from err
    if raw.get("needs", "thing") != "thing":
        raise invalid_rules("needs may only be: thing", SOURCE, f"{field}.needs")
    return _Form(
        pattern=pattern,
        wording={str(k).lower(): v for k, v in wording.items()},
        was=str(language.get("was", "")),
        needs_thing="needs" in raw,
        removal=raw.get("removal") is True,
    )


def parse_changes(text: str) -> _Rules:
    """The compiled markers and forms of a ``changes.yaml`` text (all languages at once:
    a statement may mix them)."""
    data = parse_yaml(text, source=SOURCE)
    if not isinstance(data, dict) or data.get("format") != 1:
        raise invalid_rules("the file must be a mapping with format: 1", SOURCE, "format")
    languages = data.get("languages")
    if not isinstance(languages, dict) or not languages:
        raise invalid_rules("languages must be a non-empty mapping", SOURCE, "languages")
    lists: dict[str, list[str]] = {name: [] for name in _LISTS}
    forms = []
    pointers = []
    for code, language in languages.items():
        if not isinstance(language, dict):
            raise invalid_rules("a language must be a mapping", SOURCE, f"languages.{code}")
        for name in _LISTS:
            lists[name] += word_list(language.get(name, []), SOURCE, f"languages.{code}.{name}")
        field = f"languages.{code}.points_at"
        for entry in word_list(language.get("points_at", []), SOURCE, field):
            pointers.append(_pointer(entry, field))
        for n, raw in enumerate(language.get("forms") or []):
            forms.append(_form(raw, language, f"languages.{code}.forms[{n}]"))
    not_values = word_list(data.get("not_values", []), SOURCE, "not_values")
    return _Rules(
        **{name: _compile(lists[name], name, lead=name == "lead_in") for name in _LISTS},
        not_values=re.compile(
            "(?:" + "|".join(not_values) + ")" if not_values else r"(?!x)x", re.IGNORECASE
        ),
        points_at=tuple(pointers),
        forms=tuple(forms),
    )


def _pointer(entry: str, field: str) -> re.Pattern[str]:
    try:
        pattern = re.compile(entry, re.IGNORECASE)
    except re.error as err:
        raise invalid_rules(f"not a regular expression: {err}", SOURCE, field) from err
    if "subject" not in pattern.groupindex:
        raise invalid_rules("a pointer needs a group named subject", SOURCE, field)
    return pattern


@functools.cache
def _rules() -> _Rules:
    return parse_changes(resources.files(__package__).joinpath("changes.yaml").read_text("utf-8"))


def strip_lead_in(text: str) -> str:
    """``text`` without an opening "Actually," or "其实，" or "Changed my mind:"."""
    lead = _rules().lead_in.match(text)
    return text[lead.end() :] if lead and lead.end() < len(text) else text


def _value(raw: str | None) -> str | None:
    if raw is None:
        return None
    value = raw.strip().rstrip(_TRAILING).strip()
    if not value or _rules().not_values.fullmatch(value):
        return None
    return value


def _thing(value: str) -> bool:
    """Whether ``value`` names a thing of a family in ``subjects.yaml`` (pnpm, Postgres 16)."""
    return any(pattern.search(value) for _name, pattern in load_subjects().things)


def _durable(value: str) -> bool:
    """Whether ``value`` names something a memory can hold: a known thing, a host, a
    version, a proper name (a capital counts only without an article before it:
    German writes every noun so, "die neue Version")."""
    if _thing(value) or _HOST.search(value) or _DIGIT.search(value):
        return True
    return bool(_CAPITAL.search(_ARTICLE.sub("", value, count=1)) and not _ARTICLE.match(value))


def _countable(value: str, text: str) -> bool:
    """Whether ``value`` is a thing, a version, or a number beside a thing ("bumped Node
    to 20"): "moved the standup to 10am" is none."""
    return bool(_thing(value) or _VERSION.search(value) or (_DIGIT.search(value) and _thing(text)))


def _names_more(text: str, old: list[str]) -> bool:
    """Whether ``text`` names a thing, a version or a host besides the ``old`` values."""
    for value in old:
        text = text.replace(value, " ")
    return bool(_thing(text) or _VERSION.search(text) or _HOST.search(text))


def _same_family(text: str, old: list[str], new: list[str]) -> list[str]:
    """The names of the old values' families that ``text`` gives besides them: in "Not
    using black anymore, ruff format does the job", ruff format is the new value."""
    found: list[str] = []
    for _name, pattern in load_subjects().things:
        if not any(pattern.search(value) for value in old):
            continue
        for hit in pattern.finditer(text):
            value = hit.group()
            if not any(value.lower() in known.lower() for known in (*old, *new, *found)):
                found.append(value)
    return found


def _wording(worded: list[tuple[bool, str, str]], old: list[str], new: list[str]) -> str | None:
    """The new state in words: a form's wording of the new value (with the old one it
    replaced), or of the old value alone ("We no longer use Redis") when no new value is
    named; None when the statement says its new state better as it is."""
    for says_new, text, was in worded:
        if says_new:
            gone = [value for value in old if value not in new]
            return _sentence_case(text + (was.format(old=gone[0]) if gone else ""))
    if worded and not new:
        return _sentence_case(worded[0][1])
    return None


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


# A sentence is read as a change several times over (its own statement, the sentence
# after it asking whether it announced a correction, the target search): the last few
# readings are kept. The rules are read once per process, so a reading never goes stale.
@functools.lru_cache(maxsize=256)
def read_change(text: str) -> Change | None:
    """The change or correction ``text`` says, or None when it says neither (read in its
    first ``READ_LIMIT`` characters)."""
    text = text[:READ_LIMIT]
    rules = _rules()
    if _hedged(text):
        return None
    scan = rules.opens_rule.sub(" ", text)
    old: list[str] = []
    new: list[str] = []
    contrast: list[str] = []  # old values of forms that also say the new state ("Y, not X")
    worded: list[tuple[bool, str, str]] = []  # (names the new value, new state, old suffix)
    for form in rules.forms:
        for hit in form.pattern.finditer(scan):
            groups = {k: v for k, v in hit.groupdict().items() if v is not None}
            was, now = _value(groups.get("old")), _value(groups.get("new"))
            if form.needs_thing and not any(_countable(v, scan) for v in (was, now) if v):
                continue
            old += [was] if was else []
            new += [now] if now else []
            contrast += [was] if was and not form.removal else []
            who = groups.get("who", "*").lower()
            # "We use {new}" fits a tool, not a city: "I moved to Berlin" stays as said.
            named = now if now is not None else was
            if named and _thing(named) and who in form.wording:
                state = form.wording[who].format_map({**groups, "new": now, "old": was})
                worded.append((now is not None, state, form.was if now else ""))
    new += _same_family(scan, old, new)
    words = _wording(worded, old, new)
    if old or new or rules.change.search(scan):
        action = "SUPERSEDE"
    elif rules.correction.search(scan):
        action = "UPDATE"
    else:
        return None
    # "Heroku is out" alone says only what no longer holds: a memory of it would keep the
    # old value current-looking. "Y, not X" says Y, and a removal beside another name
    # says the rest ("we dropped 3.9; the matrix covers Python 3.10 to 3.12").
    said = any(_durable(value) for value in (*new, *contrast)) or (
        any(_durable(value) for value in old) and _names_more(scan, old)
    )
    alone = said and not rules.not_alone.search(text)
    return Change(
        action=action,
        old=tuple(dict.fromkeys(old)),
        new=tuple(dict.fromkeys(new)),
        wording=words,
        alone=alone,
    )


def opens_rule(text: str) -> bool:
    """Whether ``text`` says a rule holds from now on ("from now on", 以后, "ab jetzt")."""
    return _rules().opens_rule.search(text[:READ_LIMIT]) is not None


# Where a sentence's clauses part: "We bumped the minimum to iOS 16, the analytics said
# under 2% were still on 15" is a change said, then a reason someone else gave.
_CLAUSE = re.compile(r"[,;:]\s+|\.\s+|[，；。：]")


def _hedged(text: str) -> bool:
    """Whether a clause of ``text`` that says a change also hedges it, or puts it in
    someone else's mouth ("if we switched ...", "Dana said we moved ...")."""
    rules = _rules()
    for clause in _CLAUSE.split(text):
        if not rules.not_a_change.search(clause):
            continue
        if rules.change.search(clause) or rules.correction.search(clause):
            return True
        if any(form.pattern.search(clause) for form in rules.forms):
            return True
    return False


def change_kind(text: str) -> str | None:
    """SUPERSEDE for a change of mind, UPDATE for a correction, None for neither.

    A change of mind retires the old memory (it held until now, and its history shows
    that); a correction says the old memory was wrong, so the same memory is fixed."""
    change = read_change(text)
    return change.action if change else None


# A number and its unit written together ("10MB") say what "10 MB" says.
_UNIT = re.compile(
    r"(?<=\d)(?=(?:[kmgt]i?b|ms|s|secs?|mins?|h|hrs?|px|rem|em|pt|k|m|rps|qps)\b)", re.I
)


def topic_of(text: str) -> frozenset[str]:
    """The topic words of ``text``, without the words that say how a thing is held."""
    return topic_terms(_UNIT.sub(" ", _rules().how.sub(" ", text))) - _NOISE


def _words_only(terms: frozenset[str]) -> frozenset[str]:
    """``terms`` without the ones that are numbers; all of them when all are."""
    words = frozenset(term for term in terms if not term.isdigit())
    return words or terms


def near_subject(text: str, content: str) -> bool:
    """Whether ``text`` may speak of the memory ``content`` said just before it: a word
    of what they are about in common (numbers and the words of change aside), or no
    subject of its own ("sorry, it's the 15th"); no qualifier that tells them apart,
    and both in the same person."""
    plain = strip_lead_in(text)
    shared = _words_only(topic_of(plain)) & _words_only(topic_of(content))
    if not shared and not _rules().points_back.search(plain):
        return False
    if not _same_person(plain, content):
        return False
    # With no subject of its own ("it's 75, we lowered it"), a correction cannot name
    # the memory's qualifiers (CI, staging): only a different one parts them.
    return same_subject(slot_of(plain), slot_of(content), named=not shared)


def _person(text: str) -> str | None:
    """Whose ``text`` speaks of: ``self`` (I, my, 我, mi, mein), ``team`` (we, our),
    ``other`` (a name or he/she/they doing something), or None when it says no one
    ("moved to zsh finally") or both me and us ("... my weekends, so we're on ...")."""
    mine = any(form.search(text) for form in load_forms().speaker)
    ours = _TEAM.search(text) is not None
    if mine and ours:
        return None
    if mine:
        return "self"
    if ours:
        return "team"
    return "other" if _SOMEONE_ELSE.search(text) else None


def _same_person(text: str, content: str) -> bool:
    """Whether ``text`` and ``content`` may speak of the same person's things: both of
    the same one, or one of them of no one."""
    mine, theirs = _person(text), _person(content)
    return mine is None or theirs is None or mine == theirs


def _family_words(text: str) -> frozenset[str]:
    """The topic words of the thing names ``text`` holds ("pnpm", "postgres")."""
    found = []
    for _name, pattern in load_subjects().things:
        found += [hit.group() for hit in pattern.finditer(text)]
    return topic_terms(" ".join(found))


def _level(text: str, content: str, change: Change | None) -> tuple[int, int, float] | None:
    """How surely ``text`` speaks of the memory ``content``: (level, shared, share), or
    None when it does not, or not surely enough."""
    if not related_text(text, content):
        return None  # the Gate contract refuses a replacement that quotes nothing of it
    words, about = topic_of(text), topic_of(content)
    shared = len(words & about)
    # Numbers are values, not what a statement is about: "Standup got moved to 10:00"
    # speaks of "The team standup is at 9:30" as much as its words say.
    wordy, aboutish = _words_only(words), _words_only(about)
    common = len(wordy & aboutish)
    share = min(common / len(aboutish), common / len(wordy)) if common else 0.0
    if change is not None and _bumps(change.new, content):
        return (2, shared, share)  # "migramos a Vue 3" speaks of "... hecho en Vue 2"
    if change is not None and change.old:
        named = topic_of(" ".join(change.old))
        if named:
            # Every word of it ("main.py" is not "main"), or every thing it names ("the
            # MySQL instance is switched off" names MySQL).
            things = _family_words(" ".join(change.old))
            held = named <= about or bool(things and things <= about)
            return (3, shared, share) if held else None
    mine, theirs = slot_of(text).things, slot_of(content).things
    if mine & theirs:
        # The family's own name is no more than the family: "My shell is bash".
        family = _family_words(text) | _family_words(content) | topic_terms(" ".join(mine & theirs))
        if not (words - family - about) or not (about - family - words):
            return (2, shared, share)
    if shared == 0 or (shared < _MIN_SHARED and share < 0.5):
        return None
    return (1, shared, share)


# A name and its version: "Vue 3", "node 22", "iOS 16", "Python 3.12".
_VERSIONED = re.compile(r"^(?:the |el |la |der |die |das )?([A-Za-z][\w.+#-]*) v?(\d+(?:\.\d+)*)$")


def _bumps(new: tuple[str, ...], content: str) -> bool:
    """Whether a new value is a name at a version and ``content`` holds the same name at
    another one: the change moves that very thing to a new version."""
    for value in new:
        found = _VERSIONED.match(value.strip())
        if found is None:
            continue
        name, version = found.groups()
        held = re.findall(rf"(?<![\w.-]){re.escape(name)} ?v?(\d+(?:\.\d+)*)", content, re.I)
        if held and version not in held:
            return True
    return False


def _pointed_at(text: str, known: Mapping[str, str], taken: Set[str]) -> str | None:
    """The one memory of ``known`` that ``text`` names by what it said ("scratch what I
    said about farah: ..."), if it names one: "" when it names a subject no single
    memory holds, None when it names none."""
    for pointer in _rules().points_at:
        found = pointer.search(text)
        if found is None:
            continue
        subject = topic_of(found.group("subject"))
        if not subject:
            return None
        held = [
            memory_id
            for memory_id, content in known.items()
            if memory_id not in taken and subject <= topic_of(content)
        ]
        return held[0] if len(held) == 1 else ""
    return None


def find_target(text: str, known: Mapping[str, str], *, taken: Set[str]) -> str | None:
    """The id of the memory in ``known`` (id -> its title and body) that ``text`` speaks
    of, or None when none is clear enough; ``taken`` ids are passed over (another
    candidate of the answer already changes them). A statement that names what it
    corrects ("scratch what I said about farah: ...") targets that memory alone."""
    pointed = _pointed_at(text, known, taken)
    if pointed is not None:
        return pointed or None
    change = read_change(text)
    plain = strip_lead_in(text)
    slot = slot_of(plain)
    scored = []
    for memory_id, content in known.items():
        if memory_id in taken:
            continue
        level = _level(plain, content, change)
        if level is None or not same_subject(slot, slot_of(content), named=level[0] == 3):
            continue
        if level[0] < 3 and not _same_person(plain, content):
            continue  # "Priya switched to Zed" leaves "I use VS Code" alone
        # Of two memories holding the value named, one no qualifier parts from the
        # statement fits better.
        plainly = same_subject(slot, slot_of(content))
        scored.append(((level[0], int(plainly), level[1], level[2]), memory_id))
    if not scored:
        return None
    scored.sort(key=lambda pair: pair[0], reverse=True)
    if len(scored) > 1 and scored[1][0][:3] == scored[0][0][:3]:
        return None  # two memories fit as well: retiring the wrong one loses a true one
    return scored[0][1]
