"""A captured turn: the value, its input checks, and its inbox file format."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memgit.constants import MAX_MESSAGE_BYTES
from memgit.errors import InvalidInputError, field_error, text_field
from memgit.jsonio import json_as, json_data, json_fields
from memgit.layout import capture_path, check_segment
from memgit.schemas import iter_schema_problems
from memgit.secrets.redact import find_secrets, redact_together
from memgit.yamlio import parse_yaml, render_yaml


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message of a turn (read back from the index's rows: no content)."""

    role: str
    content: str
    name: str | None = field(default=None, metadata=json_as(omit="none"))
    complete: bool | None = field(default=None, metadata=json_as(omit="none"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One turn of a conversation as memgit stores it (after redaction).

    Read by :func:`read_capture`, checked (capture, hooks, runs) or fast (the index);
    ``file`` and ``blob`` are where it read the turn from a tree, else None, so its
    :attr:`path` is where the file belongs. Rows read back from the index hold no
    messages.

    ``seq`` is None only for a turn handed to capture without one: capture numbers it,
    under the writer lock, before anything asks for its :attr:`path` or :attr:`key`.
    """

    source: str
    session: str
    seq: int | None = field(metadata=json_as(omit="none"))
    timestamp: str
    thread: str | None = field(default=None, metadata=json_as(omit="none"))
    messages: tuple[Message, ...]
    redactions: dict[str, int] = field(default_factory=dict, metadata=json_as(omit="empty"))
    file: str | None = field(default=None, metadata=json_as(omit="always"))
    blob: str | None = field(default=None, metadata=json_as(omit="always"))

    @property
    def path(self) -> str:
        """The file it was read from, else the one its source, session and seq name."""
        if self.file is not None:
            return self.file
        return capture_path(self.source, self.session, self.number)

    @property
    def key(self) -> str:
        """``source/session/seq``: the turn's identity, as in the Memgit-Captured trailer."""
        return f"{self.source}/{self.session}/{self.number}"

    @property
    def number(self) -> int:
        """The seq of a numbered turn (every turn read from a capture file is one)."""
        if self.seq is None:
            raise ValueError("the turn has no seq yet: capture numbers it")
        return self.seq

    def to_dict(self) -> dict[str, Any]:
        """The capture file's content, its redaction counts sorted by kind so that the
        file is the same in whatever order they were counted."""
        return json_fields(replace(self, redactions=dict(sorted(self.redactions.items()))))


def turn_from_data(data: Any, *, source: str, schema: str = "turn") -> Turn:
    """Check parsed input (or a parsed capture file) and build the Turn."""
    _check_sizes(data, source=source)
    if isinstance(data, dict):
        for name in ("source", "session"):
            if isinstance(data.get(name), str):
                _check_not_secret(data[name], field=name, source=source)
                check_segment(data[name], field=name, source=source)
        if isinstance(data.get("timestamp"), str):
            _check_timestamp(data["timestamp"], source=source)
        if isinstance(data.get("seq"), float):
            raise InvalidInputError(
                "expected an integer, got a number with a decimal point or exponent",
                code="schema",
                path=source,
                field="seq",
                hint="write seq as a plain whole number, e.g. 3",
            )
    problems = list(iter_schema_problems(data, schema, path=source))
    if problems:
        raise InvalidInputError.from_problems(problems)
    return _turn_from_checked(data)


def _turn_from_checked(data: dict[str, Any]) -> Turn:
    """Build the Turn from data the schema check passed."""
    messages = tuple(
        Message(
            role=item["role"],
            content=item["content"],
            name=item.get("name"),
            complete=item.get("complete"),
        )
        for item in data["messages"]
    )
    return Turn(
        source=data["source"],
        session=data["session"],
        seq=data.get("seq"),
        timestamp=data["timestamp"],
        thread=data.get("thread"),
        messages=messages,
        redactions=dict(data.get("redactions", {})),
    )


def _check_not_secret(value: str, *, field: str, source: str) -> None:
    """A source or session is a folder name in the repository, so a secret there cannot be
    redacted: refuse it, naming the field, and never echo the value (not even in part)."""
    found = find_secrets(value)
    if found:
        raise InvalidInputError(
            f"the {field} holds a secret ({found[0].kind}); it would become a path in the "
            "repository, so it cannot be captured",
            code="secret-in-name",
            path=source,
            field=field,
            hint=f"name the {field} plainly (an agent or session id, not a credential), and "
            "rotate the secret if it was ever stored elsewhere",
        )


def _check_sizes(data: Any, *, source: str) -> None:
    """Refuse oversized messages by name before anything else looks at them."""
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return
    for index, item in enumerate(data["messages"]):
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, str) and len(content) * 4 > MAX_MESSAGE_BYTES:
            size = len(content.encode("utf-8", "surrogatepass"))
            if size > MAX_MESSAGE_BYTES:
                raise InvalidInputError(
                    f"message is {size:,} bytes; the limit is {MAX_MESSAGE_BYTES:,}",
                    code="too-large",
                    path=source,
                    field=f"messages[{index}].content",
                    hint="capture long tool output as a summary, or split it over several turns",
                )


_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})"
)


def moment(timestamp: str) -> datetime:
    """The moment a capture's (checked) timestamp names, time zone included."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def _check_timestamp(value: str, *, source: str) -> None:
    """RFC 3339 with a time zone, and a real moment (no February 30th)."""
    problem = None
    if not _RFC3339.fullmatch(value):
        problem = "needs a date, a time and a time zone"
    else:
        try:
            moment(value)
        except ValueError:
            problem = "is not a real date and time"
    if problem is not None:
        raise InvalidInputError(
            f"the timestamp {problem}",
            code="invalid-timestamp",
            path=source,
            field="timestamp",
            hint="use RFC 3339, e.g. 2026-11-30T10:35:00Z",
        )


def redact_turn(turn: Turn) -> Turn:
    """The turn with every secret removed from its free text, and the counts by kind.

    The turn's texts are redacted together: a value found in one message (a password the
    user typed) is also removed where another repeats it (the assistant echoing it back).
    """
    texts: list[str | None] = [turn.thread]
    for message in turn.messages:
        texts += (message.content, message.name)
    cleaned, counts = redact_together(texts)
    messages = tuple(
        replace(message, content=cleaned[1 + 2 * index] or "", name=cleaned[2 + 2 * index])
        for index, message in enumerate(turn.messages)
    )
    return replace(turn, messages=messages, thread=cleaned[0], redactions=counts)


def render_capture(turn: Turn) -> str:
    return render_yaml(json_data(turn))


def read_capture(
    data: str | bytes, *, path: str, blob: str | None = None, check: bool = True
) -> Turn:
    """The captured turn in a capture file; InvalidInputError names what is wrong. By
    default the file is checked as capture and the hooks check it (schema, sizes, names,
    timestamp); ``check=False`` (the index and the flows reading committed files, beside
    read_memory's fast path) checks only what building the Turn needs. With a ``blob``
    (a file read from a tree) the Turn's ``file`` is ``path``."""
    value = parse_yaml(data, source=path)
    if check:
        turn = turn_from_data(value, source=path, schema="capture")
        return turn if blob is None else replace(turn, file=path, blob=blob)
    if not isinstance(value, dict):
        raise InvalidInputError("a capture file must be a mapping", code="schema", path=path)
    seq = value.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise field_error(path, "seq", "a non-negative integer")
    items = value.get("messages")
    if not isinstance(items, list) or not items:
        raise field_error(path, "messages", "a non-empty list")
    messages = []
    for index, item in enumerate(items):
        field = f"messages[{index}]"
        if not isinstance(item, dict):
            raise field_error(path, field, "a mapping")
        content = item.get("content")
        role = item.get("role")
        name = item.get("name")
        complete = item.get("complete")
        if not isinstance(content, str) or not isinstance(role, str):
            raise field_error(path, field, "a mapping with role and content strings")
        messages.append(
            Message(
                role=role,
                content=content,
                name=name if isinstance(name, str) else None,
                complete=complete if isinstance(complete, bool) else None,
            )
        )
    thread = value.get("thread")
    found = value.get("redactions")
    redactions = {
        kind: count
        for kind, count in (found.items() if isinstance(found, dict) else ())
        if isinstance(kind, str) and isinstance(count, int)
    }
    timestamp = text_field(value, "timestamp", path)
    try:
        moment(timestamp)  # what retention and the prompt count time from
    except ValueError:
        raise field_error(path, "timestamp", "an ISO 8601 time") from None
    return Turn(
        file=None if blob is None else path,
        blob=blob,
        source=text_field(value, "source", path),
        session=text_field(value, "session", path),
        seq=seq,
        timestamp=timestamp,
        thread=thread if isinstance(thread, str) else None,
        messages=tuple(messages),
        redactions=redactions,
    )
