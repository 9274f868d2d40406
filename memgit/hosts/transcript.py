"""The final answer of a Claude Code turn, read from the session's transcript (JSON Lines).

Each line of the transcript is one entry: ``type`` ``user`` (a prompt, or tool
results handed back) or ``assistant`` (one content block of a reply: text, or a
tool call), among others. The final answer is the text of the assistant entries
after the last user entry. Only the transcript's end is read: a long session's
file grows to many megabytes, and the answer is at its end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memgit.errors import InvalidInputError

TAIL_BYTES = 4 * 1024 * 1024


def final_answer(path: Path) -> str | None:
    """The text the assistant ended its turn with, or None when it ended without text."""
    texts: list[str] = []
    for entry in _tail_entries(path):
        kind = entry.get("type")
        if kind == "user":
            texts = []
        elif kind == "assistant":
            texts += _texts(entry.get("message"))
    return "\n\n".join(texts) if texts else None


def _texts(message: Any) -> list[str]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


def _tail_entries(path: Path) -> list[dict[str, Any]]:
    """The transcript's last ``TAIL_BYTES`` as entries; lines that are not JSON objects
    (a line cut by the tail, or one the host is still writing) are skipped."""
    try:
        with path.open("rb") as stream:
            size = stream.seek(0, 2)
            stream.seek(max(0, size - TAIL_BYTES))
            data = stream.read()
    except OSError as err:
        raise InvalidInputError(
            f"cannot read the transcript: {err.strerror or err}",
            code="host-event-invalid",
            path=str(path),
            field="transcript_path",
            hint="the Stop event names the session's transcript; is it readable?",
        ) from err
    lines = data.split(b"\n")
    if size > TAIL_BYTES:
        lines = lines[1:]
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries
