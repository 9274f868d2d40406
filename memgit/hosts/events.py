"""Turns from host events: what Claude Code and Codex hand their hooks, as capture input.

The shapes are the hosts' documented ones (docs/hosts.md cites them). Every turn is
left without a ``seq``: capture gives it the next one of its session, so a host
never keeps a counter. The host's session id is the capture's session.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memgit.errors import InvalidInputError
from memgit.hosts.transcript import final_answer

CLAUDE_CODE = "claude-code"
CODEX = "codex"
CODEX_TURN_COMPLETE = "agent-turn-complete"
CODEX_NO_THREAD = "default"
"""The session of a Codex turn whose notification names no thread (older Codex)."""

Turn = dict[str, Any]


def now() -> str:
    """The capture's timestamp: host events carry none, so the moment the hook runs, to
    the microsecond, so that two turns with the same words in one second stay two turns
    (capture takes a turn identical to one already captured for a duplicate)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def text_field(event: Mapping[str, Any], name: str, *, source: str) -> str:
    """A string field the event must have; its absence is the host's input error."""
    value = event.get(name)
    if not isinstance(value, str):
        raise InvalidInputError(
            f"the event has no {name} string",
            code="host-event-invalid",
            path=source,
            field=name,
            hint="the hook reads the host's documented event JSON (docs/hosts.md)",
        )
    return value


def prompt_turn(event: Mapping[str, Any], *, source: str, at: str) -> Turn | None:
    """Claude Code ``UserPromptSubmit``: the user's prompt; None for an empty one."""
    prompt = text_field(event, "prompt", source=source)
    if not prompt.strip():
        return None
    return _turn(CLAUDE_CODE, event, [{"role": "user", "content": prompt}], source=source, at=at)


def answer_turn(event: Mapping[str, Any], *, source: str, at: str) -> Turn | None:
    """Claude Code ``Stop``: the final assistant answer, from ``last_assistant_message``
    when the host sends it, else from the transcript; None when the turn ended
    without text (only tool calls)."""
    given = event.get("last_assistant_message")
    if isinstance(given, str):
        answer: str | None = given
    else:
        answer = final_answer(Path(text_field(event, "transcript_path", source=source)))
    if answer is None or not answer.strip():
        return None
    messages = [{"role": "assistant", "content": answer}]
    return _turn(CLAUDE_CODE, event, messages, source=source, at=at)


def _turn(
    host: str, event: Mapping[str, Any], messages: list[dict[str, str]], *, source: str, at: str
) -> Turn:
    session = text_field(event, "session_id", source=source)
    return {"source": host, "session": session, "timestamp": at, "messages": messages}


def codex_turn(payload: Mapping[str, Any], *, source: str, at: str) -> Turn | None:
    """Codex ``notify`` ``agent-turn-complete``: the user's input messages and the last
    assistant message, as one turn of the thread; None for other notifications."""
    if payload.get("type") != CODEX_TURN_COMPLETE:
        return None
    inputs = payload.get("input-messages", [])
    if not isinstance(inputs, list) or not all(isinstance(item, str) for item in inputs):
        raise InvalidInputError(
            "input-messages is not a list of strings",
            code="host-event-invalid",
            path=source,
            field="input-messages",
            hint="the hook reads Codex's documented notify JSON (docs/hosts.md)",
        )
    messages = [{"role": "user", "content": text} for text in inputs if text.strip()]
    answer = payload.get("last-assistant-message")
    if isinstance(answer, str) and answer.strip():
        messages.append({"role": "assistant", "content": answer})
    if not messages:
        return None
    thread = payload.get("thread-id")
    session = thread if isinstance(thread, str) and thread else CODEX_NO_THREAD
    return {"source": CODEX, "session": session, "timestamp": at, "messages": messages}
