"""The text secret detection reads: NFKC-normalised, format characters removed, offsets kept.

A key typed in full-width letters (``ghp_…`` as U+FF47 U+FF48 U+FF50 U+FF3F …), or with a
zero-width space or soft hyphen inside it, works wherever the service folds it back, and
would pass a detector that reads the raw text. So detection reads a *view*: each character
NFKC-normalised on its own, and every format character (Unicode category Cf: zero-width
spaces and joiners, the soft hyphen, bidi controls, the byte-order mark) dropped. Each view
character remembers the original character it came from, so a match is mapped back and
redaction replaces the *original* characters: the full-width key is removed whole and never
written out as ASCII.

Normalising character by character (not the whole string) keeps that map exact; it differs
from whole-string NFKC only in composing sequences, which no secret shape depends on.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["TextView", "view_of"]


class _Folding(dict[int, str]):
    """Code point -> its view text, filled on first use (``str.translate`` reads it in C)."""

    def __init__(self) -> None:
        super().__init__()
        self.resizing: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def __missing__(self, code: int) -> str:
        char = chr(code)
        view = "" if unicodedata.category(char) == "Cf" else unicodedata.normalize("NFKC", char)
        if len(view) != 1:
            self.resizing.add(char)
            self._pattern = None
        self[code] = view
        return view

    def learn(self, chars: set[str]) -> None:
        """Fill in ``chars``, so that :attr:`resizing` knows about each of them."""
        for char in chars:
            if ord(char) not in self:
                self.__missing__(ord(char))

    def resizing_pattern(self) -> re.Pattern[str]:
        """The characters met so far whose view is not exactly one character."""
        if self._pattern is None:
            self._pattern = re.compile("[" + "".join(map(re.escape, sorted(self.resizing))) + "]")
        return self._pattern


_FOLDING = _Folding()


@dataclass(frozen=True, slots=True)
class TextView:
    """``text`` as detection reads it, and where each of its characters came from."""

    text: str
    # origin[j]: the offset in the original of view character j; None when they are the same.
    origin: list[int] | None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original offsets of view characters ``start:end`` (a non-empty range)."""
        if self.origin is None:
            return start, end
        return self.origin[start], self.origin[end - 1] + 1


def view_of(text: str) -> TextView:
    """The normalised view of ``text``; ASCII text (the usual case) is its own view."""
    if text.isascii():
        return TextView(text, None)
    chars = set(text)
    _FOLDING.learn(chars)
    if _FOLDING.resizing.isdisjoint(chars):
        return TextView(text.translate(_FOLDING), None)
    pieces: list[str] = []
    origin: list[int] = []
    done = 0
    for found in _FOLDING.resizing_pattern().finditer(text):
        index = found.start()
        pieces.append(text[done:index].translate(_FOLDING))
        origin.extend(range(done, index))
        folded = _FOLDING[ord(text[index])]
        pieces.append(folded)
        origin.extend([index] * len(folded))
        done = index + 1
    pieces.append(text[done:].translate(_FOLDING))
    origin.extend(range(done, len(text)))
    return TextView("".join(pieces), origin)
