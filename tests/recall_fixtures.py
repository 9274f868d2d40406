"""Memory repositories for the recall tests, built as a person (or memgit) builds them.

Memory files are rendered with :func:`memgit.memory.render_memory` and
committed with the git CLI; retired refs are made with ``git update-ref``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memgit.jsonio import json_data
from memgit.memory import Memory, Source, Supersedes, render_memory

from support import git

STAMP = "2026-11-30T10:00:00Z"


def memory(
    memory_id: str,
    title: str,
    body: str = "",
    *,
    scope: str = "user",
    type: str = "fact",
    tags: tuple[str, ...] = (),
    sources: tuple[Source, ...] = (),
    supersedes: tuple[tuple[str, str], ...] = (),
    updated: str = STAMP,
) -> Memory:
    human = not sources
    return Memory(
        id=memory_id,
        type=type,
        scope=scope,
        title=title,
        body=body or f"{title}.\n",
        created=STAMP,
        updated=updated,
        origin="human" if human else "memgit",
        author="Test Person" if human else None,
        tags=tags,
        sources=sources,
        supersedes=tuple(Supersedes(id=old, commit=commit) for old, commit in supersedes),
    )


def write_memory(repo: Path, value: Memory) -> Path:
    path = repo / value.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_memory(value), "utf-8")
    return path


def commit_all(repo: Path, message: str = "edit memories", **env: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return head(repo)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def blob_of(repo: Path, path: str, rev: str = "HEAD") -> str:
    return git(repo, "rev-parse", f"{rev}:{path}").strip()


def source_for(repo: Path, capture: str, quote: str) -> Source:
    """A source quoting a committed capture, pinned by its blob id."""
    return Source(capture=capture, unit=f"{capture}#0", quote=quote, blob=blob_of(repo, capture))


def turn(
    seq: int,
    content: str,
    *,
    session: str = "s1",
    thread: str | None = None,
    role: str = "user",
    timestamp: str = STAMP,
    source: str = "test-agent",
    name: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": content}
    if name:
        message["name"] = name
    value: dict[str, Any] = {
        "source": source,
        "session": session,
        "seq": seq,
        "timestamp": timestamp,
        "messages": [message],
    }
    if thread:
        value["thread"] = thread
    return value


def ids(pack: Any) -> list[str]:
    return [hit.memory.id for hit in pack.memories]


def turn_keys(pack: Any) -> list[tuple[str, int, int]]:
    return [(hit.turn.session, hit.turn.seq, hit.index) for hit in pack.turns]


def comparable(pack: Any) -> str:
    """Everything about a pack that a stale index could get wrong, as JSON."""
    data = json_data(pack)
    data["trace"].pop("index")
    return json.dumps(data, sort_keys=True, ensure_ascii=False)
