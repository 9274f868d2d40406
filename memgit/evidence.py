"""Turns -> evidence units, and exact quote lookup.

The evidence boundary (DESIGN decision 3): only what the user wrote and
complete tool or document observations can support a memory. Assistant text,
system messages (the host's instructions to the agent, which the user did not
say) and cut-short observations are context, never evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memgit.tokens import CJK_RUN, STOP_WORDS, iter_query_words
from memgit.turn import Turn

# A quote must carry a claim: "I" or "ok" can be found in nearly any message, and a
# one-character source would let a Gate support (or retract) anything. A CJK
# character carries about a word, so it counts as two.
MIN_QUOTE_WEIGHT = 8
# Words are compared by their first letters, a crude stem: "prefer", "preferred".
_STEM = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceUnit:
    """One message of one captured turn, with a stable id."""

    id: str
    capture: str
    blob: str
    index: int
    role: str
    text: str
    can_support: bool
    timestamp: str
    thread: str | None = None
    name: str | None = None

    def to_prompt(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "unit_id": self.id,
            "role": self.role,
            "can_support": self.can_support,
            "timestamp": self.timestamp,
            "text": self.text,
        }
        if self.name:
            data["name"] = self.name
        return data


def unit_id(turn: Turn, index: int) -> str:
    """``source/session/seq#index``: derived from the capture, so it never changes."""
    return f"{turn.key}#{index}"


def previous_turn(unit: str) -> str:
    """``source/session/seq`` of the turn just before the one unit id ``unit`` is in
    ("" for a session's first turn, or an id of another shape)."""
    key, _, index = unit.rpartition("#")
    parts = key.split("/")
    if len(parts) != 3 or not parts[2].isdigit() or not index.isdigit() or int(parts[2]) < 1:
        return ""
    return f"{parts[0]}/{parts[1]}/{int(parts[2]) - 1}"


def agrees_to(user_unit: str, assistant_unit: str) -> bool:
    """Whether ``user_unit`` stands in the turn right after ``assistant_unit``'s: the one
    place a user's agreement can make the assistant's proposal quotable (docs/gate.md)."""
    before = previous_turn(user_unit)
    return bool(before) and assistant_unit.rpartition("#")[0] == before


def can_support(role: str, text: str, complete: bool | None) -> bool:
    if not text.strip():
        return False
    return role == "user" or (role == "tool" and complete is True)


def units_of(turn: Turn, *, capture: str, blob: str) -> list[EvidenceUnit]:
    return [
        EvidenceUnit(
            id=unit_id(turn, index),
            capture=capture,
            blob=blob,
            index=index,
            role=message.role,
            name=message.name,
            text=message.content,
            can_support=can_support(message.role, message.content, message.complete),
            timestamp=turn.timestamp,
            thread=turn.thread,
        )
        for index, message in enumerate(turn.messages)
    ]


def locate_quote(
    text: str,
    quote: str,
    start: int | None = None,
    end: int | None = None,
    *,
    whole: bool = False,
) -> tuple[int, int] | str:
    """Where ``quote`` stands in ``text``, or the evidence-check code saying why not.

    With offsets, the quote must stand exactly there; without, it must occur
    exactly once, so that a source always points at one place. A quote too short
    to carry a claim is refused first; ``whole``: unless it is the whole of ``text``
    (a user's "yes" to the proposal the same memory quotes points at one place).
    """
    short = quote_weight(quote) < MIN_QUOTE_WEIGHT
    if short and not (whole and quote.strip() and quote.strip() == text.strip()):
        return "quote-too-short"
    if start is not None or end is not None:
        if start is None or end is None or not 0 <= start <= end <= len(text):
            return "quote-offsets-mismatch"
        return (start, end) if text[start:end] == quote else "quote-offsets-mismatch"
    first = text.find(quote)
    if first < 0:
        return "quote-not-found"
    if text.find(quote, first + 1) >= 0:
        return "quote-ambiguous"
    return first, first + len(quote)


def quote_weight(quote: str) -> int:
    """Characters that carry meaning: no surrounding space; a CJK character counts two."""
    text = quote.strip()
    cjk = sum(len(run) for run in CJK_RUN.findall(text))
    return len(text) + cjk


def topic_terms(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about: no function words, crudely stemmed
    (a CJK bigram stays whole)."""
    return frozenset(
        word if CJK_RUN.fullmatch(word) else word[:_STEM]
        for word in iter_query_words(text)
        if word not in STOP_WORDS
    )
