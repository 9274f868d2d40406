"""The Memory value and its file format: YAML front matter plus a Markdown body."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memgit.errors import InvalidInputError, field_error, text_field
from memgit.jsonio import decode_utf8, json_as, json_fields
from memgit.layout import memory_path
from memgit.schemas import iter_schema_problems
from memgit.yamlio import join_front_matter, parse_yaml, split_front_matter

# Crockford-style base32 without i, l, o, u: readable and safe in any file system.
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 12


def new_memory_id(seed: bytes | None = None) -> str:
    """A short id: derived from ``seed`` when given (stable across re-runs), else random."""
    digest = hashlib.sha256(seed).digest() if seed is not None else secrets.token_bytes(32)
    number = int.from_bytes(digest[:8], "big")
    chars = []
    for _ in range(ID_LENGTH):
        number, rest = divmod(number, 32)
        chars.append(_ALPHABET[rest])
    return "".join(chars)


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """An exact quote of one evidence unit of one capture, pinned by the capture's blob id."""

    capture: str
    unit: str
    quote: str
    blob: str
    start: int | None = field(default=None, metadata=json_as(omit="none"))
    end: int | None = field(default=None, metadata=json_as(omit="none"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Supersedes:
    """A memory this one replaced, and the last commit in which that one was active."""

    id: str
    commit: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Memory:
    """A memory, however it was read: by :func:`read_memory`, checked (hooks, runs) or
    fast (the index, which may lack ``created``/``updated``), or back from the index's
    rows (no body, origin, author or source offsets: recall reads the blob when it
    needs the body).

    ``file`` and ``blob`` are where it was read from a tree. A checked read of a file's
    text sets neither, nor does a memory built to be written: their :attr:`path` is
    where the scope and id say the file belongs, which the hooks compare with where it
    is.
    """

    id: str
    type: str
    scope: str
    title: str
    status: str = "active"
    tags: tuple[str, ...] = field(default=(), metadata=json_as(omit="empty"))
    created: str | None = field(default=None, metadata=json_as(omit="none"))
    updated: str | None = field(default=None, metadata=json_as(omit="none"))
    origin: str = "memgit"
    author: str | None = field(default=None, metadata=json_as(omit="none"))
    supersedes: tuple[Supersedes, ...] = field(default=(), metadata=json_as(omit="empty"))
    sources: tuple[Source, ...] = ()
    body: str = field(metadata=json_as(omit="always"))
    file: str | None = field(default=None, metadata=json_as(omit="always"))
    blob: str | None = field(default=None, metadata=json_as(omit="always"))

    @property
    def path(self) -> str:
        """The file it was read from, else the one its scope and id name."""
        return self.file if self.file is not None else memory_path(self.scope, self.id)

    def front_matter(self) -> dict[str, Any]:
        """The file's front matter: the fields in the order they are written, so that
        diffs stay small, without the empty optional ones."""
        return json_fields(self)


def render_memory(memory: Memory) -> str:
    return join_front_matter(memory.front_matter(), memory.body)


# The one reader of memory files. Reading 100,000 files through the JSON Schemas takes
# minutes (1.6 ms a file), so with ``check=False`` read_memory checks only what building
# the Memory needs, reading the front matter through libyaml's event parser with the
# strict loader's rules applied event by event (memgit.yamlio); anything that fast
# path does not accept outright goes to the strict loader, which reads it the same way
# or raises the precise error (about 40 us a file). By default (the hooks, runs and
# merges) the front matter is validated against the schema first, every problem named;
# ``check=False`` (the index, recall and the flows reading committed files) skips that.
_OPENING_FENCE = re.compile(r"---\r?\n")
_CLOSING_FENCE = re.compile(r"^---(?:\r?\n|\Z)", re.MULTILINE)


def read_memory(
    data: str | bytes, *, path: str, blob: str | None = None, check: bool = True
) -> Memory:
    """The memory in a file's text; InvalidInputError names what is wrong. With a
    ``blob`` (a file read from a tree) the Memory's ``file`` is ``path``; without, its
    :attr:`~Memory.path` is where its scope and id say it belongs, which the hooks
    compare with where it is. The id must match a ``.md`` file's name."""
    text = decode_utf8(data, source=path)
    front, body = _split(text, path)
    if check:
        problems = list(iter_schema_problems(front, "memory", path=path))
        if problems:
            raise InvalidInputError.from_problems(problems)
    memory_id = text_field(front, "id", path)
    if path.endswith(".md") and path.rpartition("/")[2].removesuffix(".md") != memory_id:
        raise InvalidInputError(
            f"id {memory_id!r} does not match the file name",
            code="id-mismatch",
            path=path,
            field="id",
            hint="a memory file is named after its id: <id>.md",
        )
    tags = front.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise field_error(path, "tags", "a list of strings")
    origin, author = front.get("origin"), front.get("author")
    return Memory(
        file=path if blob is not None else None,
        blob=blob,
        id=memory_id,
        type=text_field(front, "type", path),
        scope=text_field(front, "scope", path),
        title=text_field(front, "title", path),
        body=body,
        tags=tuple(tags),
        created=_optional_text(front, "created", path),
        updated=_optional_text(front, "updated", path),
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


def _split(text: str, path: str) -> tuple[dict[str, Any], str]:
    opening = _OPENING_FENCE.match(text)
    closing = _CLOSING_FENCE.search(text, opening.end()) if opening else None
    if opening is None or closing is None:
        return split_front_matter(text, source=path)  # raises the precise error
    front = parse_yaml(text[: closing.start()], source=path)
    if not isinstance(front, dict):
        return split_front_matter(text, source=path)
    return front, text[closing.end() :]


def _optional_text(data: dict[str, Any], key: str, path: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise field_error(path, key, "a string")
    return value


def _iter_sources(value: Any, path: str) -> Iterator[Source]:
    if value is None:
        return
    if not isinstance(value, list):
        raise field_error(path, "sources", "a list")
    for index, item in enumerate(value):
        fields = ("capture", "unit", "quote", "blob")
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in fields):
            raise field_error(path, f"sources[{index}]", "capture, unit, quote and blob strings")
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
        raise field_error(path, "supersedes", "a list")
    for index, item in enumerate(value):
        if not isinstance(item, dict) or not all(
            isinstance(item.get(k), str) for k in ("id", "commit")
        ):
            raise field_error(path, f"supersedes[{index}]", "id and commit strings")
        yield Supersedes(id=item["id"], commit=item["commit"])
