"""Memory and capture files as the index sees them: the same :class:`Memory` and
:class:`Turn` values as the strict parsers', holding the fields recall needs.

Reading 100,000 files through the strict YAML loader and the JSON Schemas
takes minutes (1.6 ms a memory file), so the index reads them through
libyaml's event parser with the strict loader's rules applied event by event
(no anchors, aliases or tags; only ``true``/``false``, ``null`` and plain
integers typed; string keys, each once). Anything the fast path does not
accept outright goes to the strict loader in :mod:`memgit.yamlio`, which then
either reads it the same way or raises the precise error. The result is about
40 us a file.

The index is a reader, not a validator: a file is indexed when its front
matter parses and holds the fields recall uses with the right types (id
matching the file name, type, scope, title; optional tags, sources,
supersedes); the other fields are read as they are when they have the
right type. For a valid file, the value is the strict parser's (with
``file`` and ``blob`` set). Full checks are the hooks' and ``memgit
verify``'s job.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from memgit.errors import InvalidInputError
from memgit.jsonio import decode_utf8
from memgit.memory import Memory, Source, Supersedes
from memgit.turn import Message, Turn, moment
from memgit.yamlio import parse_yaml, split_front_matter

_OPENING_FENCE = re.compile(r"---\r?\n")
_CLOSING_FENCE = re.compile(r"^---(?:\r?\n|\Z)", re.MULTILINE)


def is_memory_path(path: str) -> bool:
    return path.startswith("memories/") and path.endswith(".md")


def is_capture_path(path: str) -> bool:
    return path.startswith("inbox/") and path.endswith(".yaml")


def read_memory(data: bytes, *, path: str, blob: str) -> Memory:
    """The memory in a file's bytes; InvalidInputError names what is wrong."""
    text = decode_utf8(data, source=path)
    front, body = _split(text, path)
    where = {"path": path}
    memory_id = _text(front, "id", where)
    if path.rpartition("/")[2].removesuffix(".md") != memory_id:
        raise InvalidInputError(
            f"id {memory_id!r} does not match the file name",
            code="id-mismatch",
            path=path,
            field="id",
            hint="a memory file is named after its id: <id>.md",
        )
    tags = front.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise _field_error(path, "tags", "a list of strings")
    origin, author = front.get("origin"), front.get("author")
    return Memory(
        file=path,
        blob=blob,
        id=memory_id,
        type=_text(front, "type", where),
        scope=_text(front, "scope", where),
        title=_text(front, "title", where),
        body=body,
        tags=tuple(tags),
        created=_optional_text(front, "created", where),
        updated=_optional_text(front, "updated", where),
        origin=origin if isinstance(origin, str) else "memgit",
        author=author if isinstance(author, str) else None,
        sources=tuple(_iter_sources(front.get("sources"), path)),
        supersedes=tuple(_iter_supersedes(front.get("supersedes"), path)),
    )


def memory_body(data: bytes) -> str | None:
    """The Markdown body of a memory file, without parsing its front matter."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    opening = _OPENING_FENCE.match(text)
    closing = _CLOSING_FENCE.search(text, opening.end()) if opening else None
    return text[closing.end() :] if closing else None


def read_capture(data: bytes, *, path: str, blob: str) -> Turn:
    """The captured turn in a file's bytes; InvalidInputError names what is wrong."""
    value = parse_yaml(decode_utf8(data, source=path), source=path)
    if not isinstance(value, dict):
        raise InvalidInputError("a capture file must be a mapping", code="schema", path=path)
    where = {"path": path}
    seq = value.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise _field_error(path, "seq", "a non-negative integer")
    items = value.get("messages")
    if not isinstance(items, list) or not items:
        raise _field_error(path, "messages", "a non-empty list")
    messages = []
    for index, item in enumerate(items):
        field = f"messages[{index}]"
        if not isinstance(item, dict):
            raise _field_error(path, field, "a mapping")
        content = item.get("content")
        role = item.get("role")
        name = item.get("name")
        complete = item.get("complete")
        if not isinstance(content, str) or not isinstance(role, str):
            raise _field_error(path, field, "a mapping with role and content strings")
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
    timestamp = _text(value, "timestamp", where)
    try:
        moment(timestamp)  # what retention and the prompt count time from
    except ValueError:
        raise _field_error(path, "timestamp", "an ISO 8601 time") from None
    return Turn(
        file=path,
        blob=blob,
        source=_text(value, "source", where),
        session=_text(value, "session", where),
        seq=seq,
        timestamp=timestamp,
        thread=thread if isinstance(thread, str) else None,
        messages=tuple(messages),
        redactions=redactions,
    )


def _split(text: str, path: str) -> tuple[dict[str, Any], str]:
    opening = _OPENING_FENCE.match(text)
    closing = _CLOSING_FENCE.search(text, opening.end()) if opening else None
    if opening is None or closing is None:
        return split_front_matter(text, source=path)  # raises the precise error
    front = parse_yaml(text[: closing.start()], source=path)
    if not isinstance(front, dict):
        return split_front_matter(text, source=path)
    return front, text[closing.end() :]


def _text(data: dict[str, Any], key: str, where: dict[str, str]) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise _field_error(where["path"], key, "a non-empty string")
    return value


def _optional_text(data: dict[str, Any], key: str, where: dict[str, str]) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _field_error(where["path"], key, "a string")
    return value


def _iter_sources(value: Any, path: str) -> Iterator[Source]:
    if value is None:
        return
    if not isinstance(value, list):
        raise _field_error(path, "sources", "a list")
    for index, item in enumerate(value):
        fields = ("capture", "unit", "quote", "blob")
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in fields):
            raise _field_error(path, f"sources[{index}]", "capture, unit, quote and blob strings")
        yield Source(
            capture=item["capture"],
            unit=item["unit"],
            quote=item["quote"],
            blob=item["blob"],
            start=_offset(item.get("start")),
            end=_offset(item.get("end")),
        )


def _offset(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _iter_supersedes(value: Any, path: str) -> Iterator[Supersedes]:
    if value is None:
        return
    if not isinstance(value, list):
        raise _field_error(path, "supersedes", "a list")
    for index, item in enumerate(value):
        if not isinstance(item, dict) or not all(
            isinstance(item.get(k), str) for k in ("id", "commit")
        ):
            raise _field_error(path, f"supersedes[{index}]", "id and commit strings")
        yield Supersedes(id=item["id"], commit=item["commit"])


def _field_error(path: str, field: str, expected: str) -> InvalidInputError:
    return InvalidInputError(
        f"{field} must be {expected}",
        code="schema",
        path=path,
        field=field,
        hint="fix the file's front matter; `memgit verify` lists every problem",
    )
