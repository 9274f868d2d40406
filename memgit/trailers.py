"""Commit messages are an API: a summary line, an optional body, then trailers.

Trailers follow git's own format (``Key: value`` lines in the last paragraph),
so ``git log --format='%(trailers)'`` and ``git interpret-trailers`` read what
memgit writes, and :func:`parse_trailers` reads what either of them shows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memgit.errors import InvalidInputError

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_LINE = re.compile(r"(?P<key>[A-Za-z0-9][A-Za-z0-9-]*): (?P<value>.*)")


def render_message(
    summary: str, trailers: Iterable[tuple[str, str]] = (), body: str | None = None
) -> str:
    """A commit message whose trailers git itself recognises."""
    summary = summary.strip()
    if not summary or "\n" in summary:
        raise InvalidInputError("a commit summary is one non-empty line", code="invalid-message")
    lines = [f"{key}: {value}" for key, value in trailers if _check(key, value)]
    parts = [summary]
    if body and body.strip():
        parts.append(body.strip())
    if lines:
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _check(key: str, value: str) -> bool:
    if not _KEY.fullmatch(key):
        raise InvalidInputError(f"bad trailer key {key!r}", code="invalid-message")
    if not value or "\n" in value or "\r" in value or value != value.strip():
        raise InvalidInputError(
            f"trailer {key} needs a one-line value without surrounding blanks",
            code="invalid-message",
        )
    return True


def parse_trailers(message: str) -> list[tuple[str, str]]:
    """Trailers of a commit message, in order; empty when the last paragraph is not trailers."""
    paragraphs = [p for p in re.split(r"\n\s*\n", message.strip()) if p.strip()]
    if len(paragraphs) < 2:
        return []
    found = []
    for line in paragraphs[-1].splitlines():
        match = _LINE.fullmatch(line.rstrip())
        if match is None:
            return []
        found.append((match["key"], match["value"]))
    return found
