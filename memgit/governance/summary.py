"""``memgit verify --format markdown``: the result as a pull-request comment.

A comment is rendered by the forge as Markdown with some HTML, and the paths and
messages in it come from the pull request itself: a file may be named
``a|b<img src=x>`` or hold a newline or an ``@mention``. So every value in the
comment is escaped for a table cell (:func:`escape_cell`): it can end no cell,
start no line, open no tag, link, code span or emphasis, and notify nobody.
The counts are the result's (:mod:`memgit.governance.counts`).
"""

from __future__ import annotations

import unicodedata

from memgit.governance.verify import VerifyResult

MAX_ROWS = 200  # a forge's comment has a size limit (GitHub: 65,536 characters)
# Inline Markdown: escapes, code spans, emphasis, links and images, strikethrough, cells.
_PUNCTUATION = frozenset("\\`*_[]()!~|")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "@": "&#64;", '"': "&quot;"}
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def render_markdown(result: VerifyResult, *, range_label: str) -> str:
    counts = result.counts
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
    for found in result.contradictions[:MAX_ROWS]:
        lines.append(f"Warning: contradiction: {escape_cell(found.describe())}")
    if result.contradictions:
        lines += ["Resolve each with `memgit review show ID` and keep one.", ""]
    for apart in result.decided_apart[:MAX_ROWS]:
        lines.append(
            f"Warning: decided apart in `{apart.commit[:12]}`: {escape_cell(apart.describe())}"
        )
    if result.decided_apart:
        lines += ["Both runs are kept; if a fact is now held twice, `memgit forget` one.", ""]
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
