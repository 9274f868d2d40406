"""The offline default backend: admits only explicit memory statements by the user.

"Remember that ...", "From now on ...", "I prefer ...", "Always/Never ...", "Call me
...", and Chinese forms such as "记住...", "以后...", "我喜欢...", "不要...". It needs
no model, answers in the same JSON contract as any other backend, and its answer
passes the same validation.

A statement is one sentence (:mod:`memgit.gate.sentences`), so its quote, title and
body never end inside a number, a domain, a path or a code span. A change of mind or
a correction of a related memory memgit showed it replaces that memory
(:mod:`memgit.gate.changes`); the scope is chosen by content
(:mod:`memgit.gate.scoping`). When a statement cannot be cut cleanly, nothing is
stored: a wrong memory is worse than a missing one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memgit.evidence import MIN_QUOTE_WEIGHT, EvidenceUnit, quote_weight
from memgit.gate.changes import change_kind, find_target, read_change, strip_lead_in
from memgit.gate.prompt import GateRequest
from memgit.gate.scoping import choose_scope
from memgit.gate.sentences import LIST_MARKER, shorten, split_sentences
from memgit.memory import Memory

# (pattern on one sentence, memory type). The group "what" is the statement.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE | re.DOTALL), kind)
    for pattern, kind in (
        (r"^(?:please,?\s+)?(?:always\s+)?remember(?:\s+that)?[:,]?\s+(?P<what>.+)", "fact"),
        (r"^(?:note|keep in mind)(?:\s+that)?[:,]?\s+(?P<what>.+)", "fact"),
        (r"^(?:from now on|going forward|in future|in the future),?\s+(?P<what>.+)", "procedure"),
        (
            r"^(?P<what>I\s+(?:really\s+|now\s+|still\s+)?"
            r"(?:prefer|like|love|hate|dislike|always|never)\b.+)",
            "preference",
        ),
        (r"^(?P<what>(?:please\s+)?call me\s+\S.*)", "preference"),
        (r"^(?P<what>(?:always|never)\s+.+)", "procedure"),
        (r"^(?:请)?记住[：:，,]?\s*(?P<what>.+)", "fact"),
        (r"^(?:请)?记得[：:，,]?\s*(?P<what>.+)", "fact"),
        (r"^以后[，,]?\s*(?P<what>.+)", "procedure"),
        (r"^(?P<what>我(?:现在|还是)?(?:更|很|最)?(?:喜欢|偏好|习惯|讨厌).+)", "preference"),
        (r"^(?P<what>(?:请)?叫我.+)", "preference"),
        (r"^(?P<what>(?:不要|别|永远不要|总是|一定要).+)", "procedure"),
    )
)
_TITLE_LIMIT = 80
_TITLE_MAX = 200  # the schema's bound: a title that cannot be cut within it is not stored
# A statement longer than this is quoted and kept only in part (its body too): the
# Gate contract bounds quotes (4,000 characters) and bodies (20,000).
_QUOTE_LIMIT = 1000
_TRAILING_STOPS = " \t.!。！；;"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a title holds none (the schema says so)
# Capture put this where a secret stood (memgit/capture/redact.py): a statement built
# around a credential keeps nothing worth recalling once the credential is gone.
_REDACTED = "[REDACTED"
# "Never mind ..." takes something back for this turn; it is no rule for ever after.
_IDIOM = re.compile(r"^never\s+mind\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Statement:
    """One sentence worth keeping: ``quote`` is exact text of the unit at ``start``."""

    quote: str
    start: int
    what: str
    kind: str | None  # None: no explicit form; it counts only as a change of a memory
    change: str | None  # "SUPERSEDE", "UPDATE" or None


def find_statements(text: str) -> list[_Statement]:
    """Explicit memory statements and changes of mind in ``text``, one per sentence at most."""
    found = []
    for sentence in split_sentences(text):
        if sentence.text.endswith(("?", "？")):
            continue
        marker = LIST_MARKER.match(sentence.text)
        skip = marker.end() if marker else 0
        quote = shorten(sentence.text[skip:], _QUOTE_LIMIT)
        if quote is None or quote_weight(quote) < MIN_QUOTE_WEIGHT:
            continue  # the evidence check would refuse it, and the whole answer with it
        if _REDACTED in quote or _IDIOM.match(quote):
            continue
        change = change_kind(quote)
        plain = strip_lead_in(quote)
        what, kind = _explicit(plain)
        if what is None and change is None:
            continue
        found.append(
            _Statement(
                quote=quote,
                start=sentence.start + skip,
                what=what if what is not None else plain,
                kind=kind,
                change=change,
            )
        )
    return found


def _explicit(sentence: str) -> tuple[str | None, str | None]:
    for pattern, kind in _RULES:
        hit = pattern.match(sentence)
        if hit:
            what = hit.group("what").strip()
            return what, _refine(what, kind)
    return None, None


def _refine(what: str, kind: str) -> str:
    """ "Remember that I prefer X" is a preference, not just a fact."""
    if kind != "fact":
        return kind
    for pattern, inner in _RULES:
        if inner != "fact" and pattern.match(what):
            return inner
    return kind


def _title(what: str) -> str | None:
    flat = " ".join(_CONTROL.sub(" ", what).split()).rstrip(_TRAILING_STOPS)
    title = shorten(flat, _TITLE_LIMIT) or shorten(flat, _TITLE_MAX - len("..."))
    if not title:
        return None
    if len(title) < len(flat):
        title += "..."
    return _sentence_case(title)


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


def _normal(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


class RulesBackend:
    name = "rules"
    model: str | None = None
    can_correct = True

    def answer(self, request: GateRequest) -> str:
        answer = _Answer(request)
        for unit in request.units:
            if unit.can_support:
                answer.cover(unit)
        return json.dumps(answer.result(), ensure_ascii=False)


class _Answer:
    """The Gate JSON for one request, built unit by unit."""

    def __init__(self, request: GateRequest) -> None:
        self.related = {m.id: m for m in request.related}
        self.related_text = {m.id: f"{m.title} {m.body}" for m in request.related}
        # What this answer creates, by candidate id: a change of mind about one of them
        # waits for the next run, where it is a memory that can be superseded.
        self.created: dict[str, str] = {}
        self.types = request.settings.memory_types
        self.scopes = request.settings.scopes
        self.known = {_normal(m.title) for m in request.related} | {
            _normal(m.body) for m in request.related
        }
        self.taken: set[str] = set()
        self.candidates: list[dict[str, Any]] = []
        self.coverage: list[dict[str, Any]] = []
        self.bindings: list[dict[str, Any]] = []

    def cover(self, unit: EvidenceUnit) -> None:
        statements = find_statements(unit.text) if unit.role == "user" else []
        if any(self._changes_this_run(statement) for statement in statements):
            self.coverage.append(
                {"unit_id": unit.id, "decision": "DEFERRED", "reason": "needs-context"}
            )
            return
        ids = []
        reason = "no-durable-content"
        for statement in statements:
            title, body = _title(statement.what), _sentence_case(statement.what)
            if title is None:
                reason = "ambiguous"
                continue
            if _normal(title) in self.known or _normal(statement.what) in self.known:
                reason = "already-known"
                continue
            candidate = self._candidate(statement, title, body)
            if candidate is None:
                continue
            self.known.add(_normal(title))
            cid = f"c{len(self.candidates) + 1}"
            ids.append(cid)
            self.candidates.append({"candidate_id": cid, **candidate})
            if candidate["action"] == "CREATE":
                self.created[cid] = f"{title} {body}"
            self.bindings.append({"candidate_id": cid, "claims": [_claim(unit, statement)]})
        if ids:
            self.coverage.append(
                {"unit_id": unit.id, "decision": "CANDIDATE", "candidate_ids": ids}
            )
        else:
            self.coverage.append({"unit_id": unit.id, "decision": "NO_CHANGE", "reason": reason})

    def _changes_this_run(self, statement: _Statement) -> bool:
        """Whether ``statement`` changes no memory yet, but one this answer creates."""
        if statement.change is None:
            return False
        if find_target(statement.quote, self.related_text, taken=self.taken) is not None:
            return False
        return find_target(statement.quote, self.created, taken=frozenset()) is not None

    def _candidate(self, statement: _Statement, title: str, body: str) -> dict[str, Any] | None:
        target: Memory | None = None
        change = read_change(statement.quote) if statement.change is not None else None
        if change is not None:
            found = find_target(statement.quote, self.related_text, taken=self.taken)
            target = self.related[found] if found is not None else None
            # "We switched from npm to pnpm" is said as an event: the memory says the state.
            title = (
                _title(change.wording) if statement.kind is None and change.wording else None
            ) or title
        if target is None:
            kind = statement.kind
            scope = choose_scope(statement.what, self.scopes)
            if kind is None and change is not None and change.alone:
                # A change of mind with no earlier memory still says what holds now, and
                # whose: "I no longer use pnpm, we moved to bun" is the project's.
                scope = choose_scope(change.wording or statement.what, self.scopes)
                kind = "preference" if scope == "user" else "fact"
            if kind is None:
                return None  # "actually ..." about nothing memgit knows: not a statement
            return {
                "action": "CREATE",
                "type": self._type(kind),
                "scope": scope,
                "title": title,
                "body": body,
            }
        self.taken.add(target.id)
        # A correction keeps the scope of what it corrects, and its type unless it says one.
        return {
            "action": statement.change,
            "target": target.id,
            "type": self._type(statement.kind or target.type),
            "scope": target.scope,
            "title": title,
            "body": body,
        }

    def _type(self, kind: str) -> str:
        return kind if kind in self.types else self.types[0]

    def result(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "coverage": self.coverage,
            "evidence_bindings": self.bindings,
        }


def _claim(unit: EvidenceUnit, statement: _Statement) -> dict[str, Any]:
    claim: dict[str, Any] = {"unit_id": unit.id, "quote": statement.quote, "role": "assertion"}
    if unit.text.count(statement.quote) > 1:
        claim["start"] = statement.start
        claim["end"] = statement.start + len(statement.quote)
    return claim
