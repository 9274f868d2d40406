"""The offline default backend: admits only explicit memory statements by the user.

"Remember that ...", "From now on ...", "I prefer ...", "Always/Never ...", and
Chinese forms such as "记住...", "以后...", "我喜欢...", "不要...". Everything else is
NO_CHANGE. It needs no model, answers in the same JSON contract as any other
backend, and its answer passes the same validation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memgit.evidence import EvidenceUnit
from memgit.gate.prompt import GateRequest

# (pattern on one sentence, memory type). The group "what" is the statement.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), kind)
    for pattern, kind in (
        (r"^(?:please,?\s+)?(?:always\s+)?remember(?:\s+that)?[:,]?\s+(?P<what>.+)", "fact"),
        (r"^(?:note|keep in mind)(?:\s+that)?[:,]?\s+(?P<what>.+)", "fact"),
        (r"^(?:from now on|going forward|in future|in the future),?\s+(?P<what>.+)", "procedure"),
        (
            r"^(?P<what>I\s+(?:really\s+)?(?:prefer|like|love|hate|dislike|always|never)\b.+)",
            "preference",
        ),
        (r"^(?P<what>(?:always|never)\s+.+)", "procedure"),
        (r"^(?:请)?记住[：:，,]?\s*(?P<what>.+)", "fact"),
        (r"^(?:请)?记得[：:，,]?\s*(?P<what>.+)", "fact"),
        (r"^以后[，,]?\s*(?P<what>.+)", "procedure"),
        (r"^(?P<what>我(?:更|很|最)?(?:喜欢|偏好|习惯|讨厌).+)", "preference"),
        (r"^(?P<what>(?:不要|别|永远不要|总是|一定要).+)", "procedure"),
    )
)
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_TITLE_LIMIT = 80
# A statement longer than this is quoted and kept only in part: the Gate
# contract bounds quotes (4,000 characters) and bodies (20,000).
_QUOTE_LIMIT = 1000
_BODY_LIMIT = 4000


@dataclass(frozen=True, slots=True, kw_only=True)
class _Statement:
    sentence: str
    start: int
    end: int
    what: str
    kind: str


def find_statements(text: str) -> list[_Statement]:
    """Explicit memory statements in ``text``, one per sentence at most."""
    found = []
    for match in _SENTENCE.finditer(text):
        raw = match.group(0)
        sentence = raw.strip()
        if not sentence or sentence.endswith(("?", "？")):
            continue
        start = match.start() + raw.index(sentence)
        for pattern, kind in _RULES:
            hit = pattern.match(sentence)
            if hit:
                what = hit.group("what").strip()
                kind = _refine(what, kind)
                found.append(
                    _Statement(
                        sentence=sentence,
                        start=start,
                        end=start + len(sentence),
                        what=what,
                        kind=kind,
                    )
                )
                break
    return found


def _refine(what: str, kind: str) -> str:
    """ "Remember that I prefer X" is a preference, not just a fact."""
    if kind != "fact":
        return kind
    for pattern, inner in _RULES:
        if inner != "fact" and pattern.match(what):
            return inner
    return kind


def _title(what: str) -> str:
    title = what.rstrip(" .!。！")
    if len(title) > _TITLE_LIMIT:
        cut = title[:_TITLE_LIMIT].rsplit(" ", 1)[0] if " " in title[:_TITLE_LIMIT] else title
        title = cut[:_TITLE_LIMIT].rstrip(" ,;:") + "..."
    return title[:1].upper() + title[1:]


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


def _normal(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


class RulesBackend:
    name = "rules"
    model: str | None = None
    can_correct = True

    def answer(self, request: GateRequest) -> str:
        known = {_normal(m.title) for m in request.related} | {
            _normal(m.body) for m in request.related
        }
        types = request.settings.memory_types
        scope = request.settings.scopes[0]
        candidates: list[dict[str, Any]] = []
        coverage: list[dict[str, Any]] = []
        bindings: list[dict[str, Any]] = []
        for unit in request.units:
            if not unit.can_support:
                continue
            ids = []
            already = False
            for statement in self._statements(unit):
                title = _title(statement.what)
                if _normal(title) in known or _normal(statement.what) in known:
                    already = True
                    continue
                known.add(_normal(title))
                cid = f"c{len(candidates) + 1}"
                ids.append(cid)
                candidates.append(
                    {
                        "candidate_id": cid,
                        "action": "CREATE",
                        "type": statement.kind if statement.kind in types else types[0],
                        "scope": scope,
                        "title": title,
                        "body": _sentence_case(statement.what[:_BODY_LIMIT]),
                    }
                )
                bindings.append(
                    {
                        "candidate_id": cid,
                        "claims": [_claim(unit, statement)],
                    }
                )
            if ids:
                coverage.append({"unit_id": unit.id, "decision": "CANDIDATE", "candidate_ids": ids})
            else:
                reason = "already-known" if already else "no-durable-content"
                coverage.append({"unit_id": unit.id, "decision": "NO_CHANGE", "reason": reason})
        answer = {"candidates": candidates, "coverage": coverage, "evidence_bindings": bindings}
        return json.dumps(answer, ensure_ascii=False)

    @staticmethod
    def _statements(unit: EvidenceUnit) -> list[_Statement]:
        return find_statements(unit.text) if unit.role == "user" else []


def _claim(unit: EvidenceUnit, statement: _Statement) -> dict[str, Any]:
    quote = statement.sentence[:_QUOTE_LIMIT]
    claim: dict[str, Any] = {"unit_id": unit.id, "quote": quote, "role": "assertion"}
    if unit.text.count(quote) > 1:
        claim["start"] = statement.start
        claim["end"] = statement.start + len(quote)
    return claim
