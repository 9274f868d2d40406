"""Sentences and clauses of a user's text, cut where a careful reader would cut them.

The rules Gate makes a memory's quote, title and body out of one sentence, so a wrong
cut becomes a wrong memory that passes every check (the quote is exact text): a full
stop inside ``3.11``, ``api.example.com`` or ``e.g.`` once gave the memories
``CI must run on Python 3`` and ``E``. So cutting starts from the *tokens* that must stay
whole: code spans and fenced code, URLs, e-mail addresses, domains, paths, versions and
decimals (anything with ``.``, ``/``, ``\\``, ``:`` between letters or digits), known
abbreviations, list markers, and quoted or bracketed phrases. A sentence ends at
``.`` ``!`` ``?`` ``…`` followed by a space or the end, at ``。`` ``！`` ``？`` ``；``
(Chinese needs no space), and at a line break, but never inside a token. A clause ends at
``,`` ``;`` ``:`` before a space, and at ``，`` ``；`` ``、`` ``：``.

Every span is exact text of the input at its offsets, so a quote cut from it stays a
quote the evidence check finds.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

from memgit.tokens import STOP_WORDS

__all__ = ["LIST_MARKER", "Span", "shorten", "split_clauses", "split_sentences", "token_spans"]

_CLOSERS = "\"'”\u2019)]）」』》"
_WORD = r"[A-Za-z0-9_%+@~-]"
# Abbreviations whose full stop never ends a sentence, and those whose stop ends one only
# before a capital (``... pears, etc. The next``) or the end of the text.
_NEVER_ENDS = (
    r"e\.g|i\.e|vs|cf|approx|incl|esp|viz|Dr|Mr|Mrs|Ms|Prof|Jr|Sr|St|Mt|Fig|No(?=\.\s*\d)|U\.S|U\.K"
    r"|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)(?=\.\s*\d)"
)
_MAY_END = r"etc|a\.m|p\.m|al"
_TOKENS = re.compile(
    "|".join(
        (
            r"(?P<fence>```[\s\S]*?(?:```|\Z))",
            r"(?P<code>`[^`\n]{1,400}`)",
            r"(?P<url>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s<>\"'`]*[^\s<>\"'`.,;:!?)\]}])",
            r"(?P<group>\([^()\n]{0,400}\)|\"[^\"\n]{0,400}\"|“[^”\n]{0,400}”"
            r"|（[^（）\n]{0,400}）|「[^」\n]{0,400}」|『[^』\n]{0,400}』)",
            rf"(?P<never>(?<![A-Za-z.])(?:{_NEVER_ENDS})\.)",
            rf"(?P<may>(?<![A-Za-z.])(?:{_MAY_END})\.)",
            rf"(?P<dotted>(?:\.{{1,2}}/|~/|/|\.)?(?<!{_WORD}){_WORD}+(?:[./\\:]\.{{0,2}}{_WORD}+)+/?)",
            r"(?P<marker>(?<![^\n \t])(?:\d{1,3}[.)]|[a-z]\)|\(\w{1,3}\)|[-*+•·])(?=[ \t]))",
        )
    ),
    re.IGNORECASE,
)
_STOPS = re.compile(
    rf"[.!?…]+[{re.escape(_CLOSERS)}]*(?=\s|\Z)|[。！？；]+[{re.escape(_CLOSERS)}]*|\n"
)
_CLAUSE_STOPS = re.compile(r"[,;:](?=\s)|[，；、：]|\s[\u2013—-]+(?=\s)")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# What a continued sentence may start with after ``etc.``: a capital or a CJK character.
_NEW_SENTENCE = re.compile(r"\s+(?:[A-Z]|[\u3400-\u9fff])")
LIST_MARKER = re.compile(r"[ \t]*(?:\d{1,3}[.)]|[a-z]\)|\(\w{1,3}\)|[-*+•·])[ \t]+")


@dataclass(frozen=True, slots=True)
class Span:
    """``text`` is exactly the input's ``[start:end]``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    start: int
    end: int


class _Tokens:
    """The tokens of a text in order, looked up by offset in logarithmic time."""

    def __init__(self, text: str) -> None:
        self.items: list[_Token] = []
        for match in _TOKENS.finditer(text):
            kind = match.lastgroup or ""
            if kind == "marker":
                line = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
                if line.strip(" \t"):
                    continue
            # An unclosed fence runs to the end of the text, but not over its last spaces.
            end = match.start() + len(match.group().rstrip())
            self.items.append(_Token(kind, match.start(), end))
        self.starts = [token.start for token in self.items]

    def covering(self, at: int) -> _Token | None:
        """The token holding the character at ``at``."""
        i = bisect_right(self.starts, at) - 1
        return self.items[i] if i >= 0 and at < self.items[i].end else None

    def splits(self, at: int) -> bool:
        """Whether a cut at ``at`` (between two characters) falls inside a token."""
        i = bisect_left(self.starts, at) - 1
        return i >= 0 and at < self.items[i].end


def token_spans(text: str) -> list[tuple[int, int]]:
    """The stretches of ``text`` no sentence, clause, title or body may end inside."""
    return [(token.start, token.end) for token in _Tokens(text).items]


def _ends_sentence(text: str, tokens: _Tokens, stop: re.Match[str]) -> bool:
    if stop.group() == "\n":
        return not tokens.splits(stop.start() + 1)
    # The stop's first character must not be the last of a token that keeps its stop.
    token = tokens.covering(stop.start())
    if token is not None:
        if token.kind in ("never", "marker"):
            return False
        if token.kind == "may":
            return stop.end() == len(text) or bool(_NEW_SENTENCE.match(text, stop.end()))
        if token.kind == "group":
            # A stop inside quotes or brackets ends the sentence only at the closing
            # mark and before a space: ``“好。”他说。`` is one sentence.
            return token.end == stop.end() and (
                stop.end() == len(text) or text[stop.end()].isspace()
            )
        if token.end > stop.start() + 1:
            return False
    return not tokens.splits(stop.end())


def _pieces(text: str, cuts: Iterator[int], offset: int = 0) -> list[Span]:
    spans = []
    start = 0
    for cut in [*cuts, len(text)]:
        piece = text[start:cut]
        stripped = piece.strip()
        if stripped:
            at = start + piece.index(stripped)
            spans.append(Span(offset + at, offset + at + len(stripped), stripped))
        start = cut
    return spans


def split_sentences(text: str) -> list[Span]:
    """The sentences of ``text`` in order, each stripped of surrounding space."""
    tokens = _Tokens(text)
    cuts = (stop.end() for stop in _STOPS.finditer(text) if _ends_sentence(text, tokens, stop))
    return _pieces(text, cuts)


def split_clauses(sentence: Span) -> list[Span]:
    """The clauses of one sentence, with offsets in the same text as the sentence's."""
    tokens = _Tokens(sentence.text)
    cuts = (
        stop.start() if stop.group()[0].isspace() else stop.end()  # a dash opens its clause
        for stop in _CLAUSE_STOPS.finditer(sentence.text)
        if not tokens.splits(stop.start()) and not tokens.splits(stop.end())
    )
    return _pieces(sentence.text, cuts, sentence.start)


def shorten(text: str, limit: int) -> str | None:
    """The longest prefix of ``text`` of at most ``limit`` characters that ends at a clause
    end, else at a word end, never inside a token; None when there is no such prefix.

    A prefix shorter than half the limit is taken only when nothing longer ends cleanly:
    a title of three words is better than one that stops mid-word, but worse than one
    that stops at the end of a clause further on.
    """
    text = text.strip()
    if len(text) <= limit:
        return text
    tokens = _Tokens(text)
    clause_ends = [
        stop.start()
        for stop in _CLAUSE_STOPS.finditer(text, 0, limit + 1)
        if not tokens.splits(stop.start())
    ]
    word_ends = [at for at in range(1, limit + 1) if _word_end(text, at) and not tokens.splits(at)]
    best = [at for at in clause_ends if at >= limit // 2] or word_ends or clause_ends
    if not best:
        return None
    cut = text[: max(best)].rstrip(" ,;:，；、：\u2013—-")
    # "... at api.example.com and" reads as cut off: a title does not end on a function word.
    words = cut.split(" ")
    while len(words) > 1 and words[-1].lower() in STOP_WORDS:
        words.pop()
    return " ".join(words).rstrip(" ,;:\u2013—-") or None


def _word_end(text: str, at: int) -> bool:
    """A cut at ``at`` ends a word: a space follows, or it falls between two CJK
    characters (Chinese has no spaces; a cut there splits at most a compound)."""
    before, after = text[at - 1], text[at] if at < len(text) else " "
    if after.isspace() and not before.isspace():
        return True
    return bool(_CJK.match(before) and _CJK.match(after))
