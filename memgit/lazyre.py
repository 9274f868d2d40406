"""Regular expressions compiled the first time they are used, not when their module loads.

The secret detectors are about 220 patterns, many of them long alternations over Unicode
classes; compiling them took about half of a new ``memgit`` process's start (0.2 of 0.45
CPU seconds), paid by every command that imports them, whether or not it scans any text
(recall, the hooks that never see a secret, ``--version`` of a hook script). A
:class:`LazyPattern` keeps the source and flags and compiles on the first ``search`` (or
``match``, ``finditer`` …): a process pays only for the patterns it runs, once.

After that first call the compiled pattern's own bound methods take the instance's place
(they shadow the class's methods in the instance ``__dict__``), so a hot loop calls
:mod:`re` directly, with no wrapper in between. A pattern with a syntax error raises
:class:`re.error` at first use, as :func:`re.compile` would have at import.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["LazyPattern", "lazy"]

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class LazyPattern:
    """A :class:`re.Pattern` over ``str`` that compiles when first used."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r}, {self.flags!r})"

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern; the first call compiles it and installs its methods."""
        found = self.__dict__.get("_compiled")
        if found is None:
            found = re.compile(self.pattern, self.flags)
            self.__dict__["_compiled"] = found
            for name in _METHODS:
                self.__dict__[name] = getattr(found, name)
        return found

    @property
    def groupindex(self) -> dict[str, int]:
        """The named groups, as :attr:`re.Pattern.groupindex` gives them."""
        return dict(self.compiled().groupindex)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().match(string, pos, endpos)

    def fullmatch(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[str] | None:
        return self.compiled().fullmatch(string, pos, endpos)

    def finditer(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled().findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled().sub(repl, string, count)

    def subn(
        self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0
    ) -> tuple[str, int]:
        return self.compiled().subn(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled().split(string, maxsplit)


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    """``re.compile(pattern, flags)``, compiled when first used."""
    return LazyPattern(pattern, flags)
