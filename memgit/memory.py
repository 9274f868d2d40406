"""The Memory value and its file format: YAML front matter plus a Markdown body."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from memgit.errors import InvalidInputError
from memgit.jsonio import decode_utf8, json_fields
from memgit.layout import memory_path
from memgit.schemas import iter_schema_problems
from memgit.yamlio import join_front_matter, split_front_matter

# Crockford-style base32 without i, l, o, u: readable and safe in any file system.
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 12

# Front matter keys in the order they are written, so diffs stay small.
FIELD_ORDER = (
    "id",
    "type",
    "scope",
    "title",
    "status",
    "tags",
    "created",
    "updated",
    "origin",
    "author",
    "supersedes",
    "sources",
)
_OMITTED_WHEN_EMPTY = ("tags", "supersedes")


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
    start: int | None = None
    end: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = json_fields(self, "capture", "unit", "quote", "blob", "start", "end")
        return {key: value for key, value in data.items() if value is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class Supersedes:
    """A memory this one replaced, and the last commit in which that one was active."""

    id: str
    commit: str

    def to_dict(self) -> dict[str, Any]:
        return json_fields(self, "id", "commit")


@dataclass(frozen=True, slots=True, kw_only=True)
class Memory:
    """A memory, however it was read: strictly by :func:`parse_memory` (hooks, runs),
    fast by :func:`memgit.derived.documents.read_memory` (the index, which may lack
    ``created``/``updated``), or back from the index's rows (no body, origin, author
    or source offsets: recall reads the blob when it needs the body).

    ``file`` and ``blob`` are where the index read it. The strict parser sets
    neither, nor does a memory built to be written: their :attr:`path` is where
    the scope and id say the file belongs, which the hooks compare with where it is.
    """

    id: str
    type: str
    scope: str
    title: str
    body: str
    created: str | None = None
    updated: str | None = None
    origin: str = "memgit"
    status: str = "active"
    author: str | None = None
    tags: tuple[str, ...] = ()
    supersedes: tuple[Supersedes, ...] = ()
    sources: tuple[Source, ...] = ()
    file: str | None = None
    blob: str | None = None

    @property
    def path(self) -> str:
        """The file it was read from, else the one its scope and id name."""
        return self.file if self.file is not None else memory_path(self.scope, self.id)

    def to_dict(self, *names: str) -> dict[str, Any]:
        """The fields ``names`` lists (by default the front matter's) as JSON data."""
        return json_fields(self, *(names or FIELD_ORDER))

    def front_matter(self) -> dict[str, Any]:
        return {
            key: value
            for key, value in self.to_dict().items()
            if value is not None and (value or key not in _OMITTED_WHEN_EMPTY)
        }


def render_memory(memory: Memory) -> str:
    return join_front_matter(memory.front_matter(), memory.body)


def parse_memory(text: str | bytes, *, path: str) -> Memory:
    """Parse and check a memory file; the id must match the file name."""
    data, body = split_front_matter(decode_utf8(text, source=path), source=path)
    problems = list(iter_schema_problems(data, "memory", path=path))
    if problems:
        raise InvalidInputError.from_problems(problems)
    if path.endswith(".md") and PurePosixPath(path).stem != data["id"]:
        raise InvalidInputError(
            f"id {data['id']!r} does not match the file name",
            code="id-mismatch",
            path=path,
            field="id",
            hint="a memory file is named after its id: <id>.md",
        )
    return Memory(
        id=data["id"],
        type=data["type"],
        scope=data["scope"],
        title=data["title"],
        body=body,
        created=data["created"],
        updated=data["updated"],
        origin=data["origin"],
        status=data["status"],
        author=data.get("author"),
        tags=tuple(data.get("tags", ())),
        supersedes=tuple(Supersedes(**item) for item in data.get("supersedes", ())),
        sources=tuple(Source(**item) for item in data.get("sources", ())),
    )
