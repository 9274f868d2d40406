"""Short excerpts around the words a query matched, for people and agents to skim.

FTS5 matched the terms after stemming and CJK segmentation; here the raw text
is searched for the same words loosely (case-insensitive, any word that starts
with the term's stem, CJK terms as substrings) to choose the window to show.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from memgit.tokens import CJK_RUN

SNIPPET_CHARS = 200
_SUFFIXES = (
    "ational",
    "ization",
    "ations",
    "ation",
    "ingly",
    "ness",
    "ment",
    "ings",
    "ing",
    "ies",
    "ied",
    "ers",
    "er",
    "ed",
    "es",
    "ly",
    "s",
    "e",
    "y",
)
_SPACE = re.compile(r"\s+")


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


class Highlighter:
    """Finds the query's words in raw text: ``str.find`` per term, in C."""

    def __init__(self, terms: Sequence[str]) -> None:
        self.cjk = [term for term in terms if CJK_RUN.search(term)]
        self.stems = [_stem(term) for term in terms if not CJK_RUN.search(term)]

    def starts(self, text: str, limit: int = 64) -> list[int]:
        """Sorted offsets where a query word starts (at most ``limit`` per term)."""
        lower = text.lower()
        found: list[int] = []
        for needle, whole_word in [(s, True) for s in self.stems] + [(c, False) for c in self.cjk]:
            position = lower.find(needle)
            count = 0
            while position != -1 and count < limit:
                if not whole_word or position == 0 or not _word_char(lower[position - 1]):
                    found.append(position)
                    count += 1
                position = lower.find(needle, position + 1)
        return sorted(found)

    def snippet(self, text: str, *, width: int = SNIPPET_CHARS) -> str:
        """About ``width`` characters of ``text`` around the densest cluster of matches."""
        text = _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()
        if len(text) <= width:
            return text
        starts = self.starts(text)
        start = 0
        if starts:
            best, best_count, low = starts[0], 0, 0
            for high, first in enumerate(starts):
                while starts[low] < first - int(width * 0.8):
                    low += 1
                if high - low + 1 > best_count:
                    best, best_count = starts[low], high - low + 1
            start = max(0, best - width // 4)
            space = text.rfind(" ", max(0, start - 20), start + 1)
            if space > 0:
                start = space + 1
        end = min(len(text), start + width)
        if end < len(text):
            space = text.rfind(" ", end - 20, end)
            if space > start:
                end = space
        excerpt = text[start:end].strip()
        return ("…" if start > 0 else "") + excerpt + ("…" if end < len(text) else "")


def _word_char(char: str) -> bool:
    return char.isalnum()


def make_snippet(text: str, terms: Sequence[str], *, width: int = SNIPPET_CHARS) -> str:
    return Highlighter(terms).snippet(text, width=width)
