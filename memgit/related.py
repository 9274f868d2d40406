"""Existing memories related to a batch of units, given to the Gate as context.

Seeing them lets a backend choose UPDATE or SUPERSEDE over a near-duplicate
CREATE. This scores every active memory by shared words; it is exact and
simple, and is the place where the recall index plugs in for large
repositories.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from memgit.catalog import Catalog
from memgit.evidence import EvidenceUnit
from memgit.memory import Memory

_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "which",
        "will",
        "with",
        "you",
        "your",
    ]
)


def _terms(text: str) -> Counter[str]:
    return Counter(w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1)


def related_memories(
    catalog: Catalog, units: Sequence[EvidenceUnit], *, limit: int
) -> tuple[Memory, ...]:
    """Up to ``limit`` active memories sharing the most distinctive words with ``units``."""
    if limit <= 0 or not catalog.paths:
        return ()
    wanted = _terms(" ".join(unit.text for unit in units))
    if not wanted:
        return ()
    scored = []
    memories = [m for m in (catalog.load(i) for i in sorted(catalog.paths)) if m is not None]
    document_frequency: Counter[str] = Counter()
    bags = []
    for memory in memories:
        bag = _terms(f"{memory.title} {memory.body} {' '.join(memory.tags)}")
        bags.append(bag)
        document_frequency.update(bag.keys())
    total = len(memories)
    for memory, bag in zip(memories, bags, strict=True):
        score = sum(
            math.log(1 + total / document_frequency[term]) for term in wanted.keys() & bag.keys()
        )
        if score > 0:
            scored.append((-score, memory.id, memory))
    scored.sort(key=lambda item: item[:2])
    return tuple(memory for _, _, memory in scored[:limit])
