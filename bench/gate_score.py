"""Scoring for the Gate quality set: stored memories against the labelled ones.

Pure functions, no repository: ``bench/gate_quality.py`` reads what a backend
stored and hands it here, and ``tests/test_gate_quality.py`` checks the numbers
on hand-made pairs. The matching rule is the one ``tests/gate_quality/README.md``
states: a stored memory is correct when its title and body hold every key term
of an expected memory unbroken, its top-level scope is the expected one and
its sources quote only what the user said or agreed to (strict precision: the
harness judges the quotes and sets ``Stored.supported``); each expected memory
is matched at most once. precision = correct / stored, with its Wilson 95 %
interval, recall = matched expected / expected, summed over items (an item
expecting nothing makes every stored memory wrong).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# A term is one word or a list of alternatives, any of which will do.
Term = str | tuple[str, ...]

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Expected:
    """A memory a careful person would write: its text, scope, type and key terms."""

    text: str
    scope: str
    type: str
    terms: tuple[Term, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Stored:
    """A memory a backend stored, as read from the tree."""

    title: str
    body: str
    scope: str
    type: str
    # False when a source quotes a tool message, or an assistant message without the
    # user's reply to it: such a memory is never correct, whatever its terms.
    supported: bool = True

    @property
    def text(self) -> str:
        return f"{self.title}\n{self.body}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What one stored memory was judged: ``correct``, or why it is wrong.

    Wrong kinds: ``unsupported`` (the terms and scope of an expected memory, but a
    source quotes what the user neither said nor agreed to), ``scope`` (the terms
    of an expected memory, in another scope),
    ``duplicate`` (an expected memory another stored memory already matched),
    ``stale`` (still says what a correction replaced), ``unexpected`` (matches
    nothing expected; every memory of an item that expects none), ``credential``
    (holds one of the item's credentials, whatever else it holds).
    """

    stored: Stored
    kind: str
    expected: int | None = None  # index into the item's expected memories
    missing: tuple[str, ...] = ()  # terms of the nearest expected memory not found


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemScore:
    verdicts: tuple[Verdict, ...]
    expected: tuple[Expected, ...]
    matched: frozenset[int]

    @property
    def correct(self) -> int:
        return sum(v.kind == "correct" for v in self.verdicts)

    @property
    def type_agreements(self) -> int:
        return sum(
            v.kind == "correct"
            and v.expected is not None
            and v.stored.type == self.expected[v.expected].type
            for v in self.verdicts
        )


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).casefold()


def _latin(char: str) -> bool:
    return char.isascii() and char.isalpha()


def _digit(char: str) -> bool:
    return char.isascii() and char.isdigit()


def _clean_left(text: str, at: int, first: str) -> bool:
    before = text[at - 1] if at > 0 else ""
    if _latin(first):
        return not (_latin(before) or _digit(before))
    if _digit(first):
        return not (_digit(before) or before == ".")
    return True


def _clean_right(text: str, end: int, last: str) -> bool:
    after = text[end] if end < len(text) else ""
    if _latin(last):
        return not (_latin(after) or _digit(after))
    if _digit(last):
        beyond = text[end + 1] if end + 1 < len(text) else ""
        return not (_digit(after) or (after in ".," and _digit(beyond)))
    return True


def occurs(term: str, text: str) -> bool:
    """Whether ``term`` occurs in ``text`` unbroken: ignoring case and runs of white
    space, and without cutting a Latin word or a number at either end."""
    needle, haystack = _normal(term.strip()), _normal(text)
    at = haystack.find(needle)
    while at != -1:
        end = at + len(needle)
        if _clean_left(haystack, at, needle[0]) and _clean_right(haystack, end, needle[-1]):
            return True
        at = haystack.find(needle, at + 1)
    return False


def term_found(term: Term, text: str) -> bool:
    alternatives = (term,) if isinstance(term, str) else term
    return any(occurs(choice, text) for choice in alternatives)


def missing_terms(terms: Iterable[Term], text: str) -> tuple[str, ...]:
    """The terms not found in ``text``, each shown as its first alternative."""
    return tuple(
        term if isinstance(term, str) else " | ".join(term)
        for term in terms
        if not term_found(term, text)
    )


def top_scope(scope: str) -> str:
    return scope.split("/", 1)[0]


def score_item(
    stored: Sequence[Stored],
    expected: Sequence[Expected],
    *,
    replaced: Sequence[tuple[Term, ...]] = (),
    credentials: Sequence[str] = (),
) -> ItemScore:
    """Judge every stored memory of one item; ``replaced`` are the key terms of what
    the item's correction made obsolete; a memory holding one of ``credentials`` is
    never correct."""
    leaked = [any(value in memory.text for value in credentials) for memory in stored]
    holds = [
        [i for i, want in enumerate(expected) if not missing_terms(want.terms, memory.text)]
        for memory in stored
    ]
    in_scope = [
        [i for i in found if top_scope(memory.scope) == expected[i].scope]
        for memory, found in zip(stored, holds, strict=True)
    ]
    assigned = _assign(
        [
            found if memory.supported and not leaks else []
            for memory, found, leaks in zip(stored, in_scope, leaked, strict=True)
        ]
    )
    verdicts = []
    for n, memory in enumerate(stored):
        if leaked[n]:
            verdicts.append(Verdict(stored=memory, kind="credential"))
            continue
        verdicts.append(_verdict(memory, n, assigned, holds[n], in_scope[n], expected, replaced))
    return ItemScore(
        verdicts=tuple(verdicts),
        expected=tuple(expected),
        matched=frozenset(assigned.values()),
    )


def _verdict(
    memory: Stored,
    n: int,
    assigned: Mapping[int, int],
    holds: Sequence[int],
    in_scope: Sequence[int],
    expected: Sequence[Expected],
    replaced: Sequence[tuple[Term, ...]],
) -> Verdict:
    if n in assigned:
        return Verdict(stored=memory, kind="correct", expected=assigned[n])
    if in_scope and not memory.supported:
        return Verdict(stored=memory, kind="unsupported", expected=in_scope[0])
    if in_scope:
        return Verdict(stored=memory, kind="duplicate", expected=in_scope[0])
    if holds:
        return Verdict(stored=memory, kind="scope", expected=holds[0])
    if any(not missing_terms(terms, memory.text) for terms in replaced):
        return Verdict(stored=memory, kind="stale")
    if not expected:
        return Verdict(stored=memory, kind="unexpected")
    nearest = min(
        range(len(expected)), key=lambda i: len(missing_terms(expected[i].terms, memory.text))
    )
    missing = missing_terms(expected[nearest].terms, memory.text)
    return Verdict(stored=memory, kind="unexpected", expected=nearest, missing=missing)


def _assign(options: Sequence[Sequence[int]]) -> dict[int, int]:
    """A maximum one-to-one matching of stored memories to expected ones (Kuhn's
    augmenting paths; an item has a handful of each). Stored index -> expected index."""
    owner: dict[int, int] = {}

    def place(memory: int, seen: set[int]) -> bool:
        for want in options[memory]:
            if want in seen:
                continue
            seen.add(want)
            if want not in owner or place(owner[want], seen):
                owner[want] = memory
                return True
        return False

    for memory in range(len(options)):
        place(memory, set())
    return {memory: want for want, memory in owner.items()}


def wilson(successes: int, total: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval (95 % by default) of a proportion; None for no trials.
    It stays inside [0, 1] and is honest for small counts and proportions near 1."""
    if total == 0:
        return None
    share = successes / total
    denominator = 1 + z * z / total
    centre = (share + z * z / (2 * total)) / denominator
    spread = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total)) / denominator
    return (max(0.0, centre - spread), min(1.0, centre + spread))


@dataclass(slots=True)
class Tally:
    """Sums over items: the figures of one row of the report."""

    items: int = 0
    stored: int = 0
    correct: int = 0
    expected: int = 0
    matched: int = 0
    scope_errors: int = 0
    type_agreements: int = 0
    failed_runs: int = 0
    controls: int = 0
    wrong_retirements: int = 0
    credentials_stored: int = 0
    kinds: dict[str, int] = field(default_factory=dict)

    def add(
        self,
        score: ItemScore,
        *,
        failed: bool = False,
        control: bool = False,
        retired: int = 0,
        credentials: int = 0,
    ) -> None:
        """Add one item: its score, whether its run failed, whether it is a must-not-retire
        control and how many of its expected memories were retired, and how many of its
        credential values a memory or Git object holds."""
        self.items += 1
        self.controls += control
        self.wrong_retirements += retired
        self.credentials_stored += credentials
        self.stored += len(score.verdicts)
        self.correct += score.correct
        self.expected += len(score.expected)
        self.matched += len(score.matched)
        self.type_agreements += score.type_agreements
        self.failed_runs += failed
        for verdict in score.verdicts:
            self.kinds[verdict.kind] = self.kinds.get(verdict.kind, 0) + 1
        self.scope_errors = self.kinds.get("scope", 0)

    @property
    def precision(self) -> float | None:
        """None when nothing was stored: precision is undefined, not perfect."""
        return self.correct / self.stored if self.stored else None

    @property
    def recall(self) -> float | None:
        return self.matched / self.expected if self.expected else None

    def to_dict(self) -> dict[str, Any]:
        interval = wilson(self.correct, self.stored)
        return {
            "items": self.items,
            "stored": self.stored,
            "correct": self.correct,
            "expected": self.expected,
            "matched": self.matched,
            "precision": self.precision,
            "precision_95": list(interval) if interval is not None else None,
            "recall": self.recall,
            "controls": self.controls,
            "wrong_retirements": self.wrong_retirements,
            "credentials_stored": self.credentials_stored,
            "scope_errors": self.scope_errors,
            "type_agreements": self.type_agreements,
            "failed_runs": self.failed_runs,
            "verdicts": dict(sorted(self.kinds.items())),
        }
