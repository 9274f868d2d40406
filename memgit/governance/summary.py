"""``memgit verify --format markdown``: the result as a pull-request comment.

A comment is rendered by the forge as Markdown with some HTML, and the paths and
messages in it come from the pull request itself: a file may be named
``a|b<img src=x>`` or hold a newline or an ``@mention``. So every value in the
comment is escaped for a table cell (:func:`escape_cell`): it can end no cell,
start no line, open no tag, link, code span or emphasis, and notify nobody.
The counts come from the trailers memgit writes on its own commits, so they
cost one read of each commit's message.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import pygit2

from memgit.constants import (
    TRAILER_CAPTURED,
    TRAILER_CREATED,
    TRAILER_RETRACTED,
    TRAILER_SUPERSEDED,
    TRAILER_UPDATED,
)
from memgit.governance.verify import VerifyResult
from memgit.trailers import parse_trailers

MAX_ROWS = 200  # a forge's comment has a size limit (GitHub: 65,536 characters)
# Inline Markdown: escapes, code spans, emphasis, links and images, strikethrough, cells.
_PUNCTUATION = frozenset("\\`*_[]()!~|")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "@": "&#64;", '"': "&quot;"}
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


@dataclass(frozen=True, slots=True, kw_only=True)
class RangeCounts:
    """What the range's memgit commits say they did, from their trailers."""

    commits: int
    created: int = 0
    updated: int = 0
    superseded: int = 0
    retracted: int = 0
    captured: int = 0


def count_range(repo: pygit2.Repository, commits: Iterable[str]) -> RangeCounts:
    ids = list(commits)
    keys: Counter[str] = Counter()
    for oid in ids:
        commit = repo[oid]
        if isinstance(commit, pygit2.Commit):
            keys.update(key for key, _ in parse_trailers(commit.message))
    return RangeCounts(
        commits=len(ids),
        created=keys[TRAILER_CREATED],
        updated=keys[TRAILER_UPDATED],
        superseded=keys[TRAILER_SUPERSEDED],
        retracted=keys[TRAILER_RETRACTED],
        captured=keys[TRAILER_CAPTURED],
    )


def render_markdown(result: VerifyResult, counts: RangeCounts, *, range_label: str) -> str:
    verdict = "passed" if result.ok else "failed"
    lines = [
        f"## memgit verify: {verdict}",
        "",
        f"- Range: {escape_cell(range_label)}",
        f"- Commits checked: {counts.commits}",
        f"- Memories created: {counts.created}, updated: {counts.updated}, "
        f"superseded: {counts.superseded}, retracted: {counts.retracted}",
        f"- Captures added: {counts.captured}",
        "",
    ]
    if result.ok:
        lines.append("No problems found.")
        return "\n".join(lines) + "\n"
    problems = len(result.findings)
    lines += [
        f"{problems} problem{'s' if problems != 1 else ''}:",
        "",
        "| commit | code | path | field | message |",
        "| --- | --- | --- | --- | --- |",
    ]
    for finding in result.findings[:MAX_ROWS]:
        problem = finding.problem
        cells = [
            f"`{finding.commit[:12]}`",
            f"`{problem.code}`",  # memgit's own kebab-case codes
            escape_cell(problem.path or ""),
            escape_cell(problem.field or ""),
            escape_cell(problem.message),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if problems > MAX_ROWS:
        lines += ["", f"... and {problems - MAX_ROWS} more: run `memgit verify` to see them all."]
    return "\n".join(lines) + "\n"


def escape_cell(text: str) -> str:
    """``text`` as inert content of one Markdown table cell."""
    out = []
    for char in text:
        if char in _NAMED:
            out.append("\\" + _NAMED[char])  # a visible \n, its backslash escaped
        elif unicodedata.category(char) in _INVISIBLE:
            out.append(f"\\\\u{ord(char):04x}")
        elif char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in _PUNCTUATION:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)
