"""One file of the memory as HEAD holds it, named by a memory id, a turn id or a path.

An agent (through MCP) names what it wants to read; what it gets is a blob of the
branch's commit, never a file of the file system: a path is looked up in HEAD's
tree, so neither ``..``, a symlink nor an uncommitted file can lead outside what
the repository has committed, and captures are already redacted. Paths are
still checked first, so a hostile one is refused by name rather than reported
as missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pygit2

from memgit.catalog import find_memory_file
from memgit.constants import MEMORIES_DIR
from memgit.errors import InvalidInputError, UsageError
from memgit.jsonio import decode_utf8
from memgit.layout import capture_path, check_memory_id, check_segment
from memgit.store.tree import iter_blobs, read_blob

MAX_PATH_CHARS = 1024
_TURN_ID = re.compile(r"(?P<source>[^/]+)/(?P<session>[^/]+)/(?P<seq>[0-9]{1,9})")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrackedFile:
    """A committed file: where it is, the commit and blob it was read from, its text."""

    path: str
    commit: str | None
    blob: str
    text: str

    def page(self, offset: int, limit: int) -> dict[str, Any]:
        """``limit`` characters of the text from ``offset``, and where the next page
        starts (None at the end)."""
        end = min(offset + limit, len(self.text))
        return {
            "path": self.path,
            "commit": self.commit,
            "blob": self.blob,
            "offset": offset,
            "total_chars": len(self.text),
            "next_offset": end if end < len(self.text) else None,
            "text": self.text[offset:end],
        }


def check_tree_path(path: str, *, field: str = "path") -> str:
    """A relative path inside the repository, or ``unsafe-path``."""
    problem = None
    if not path or len(path) > MAX_PATH_CHARS:
        problem = "is empty or too long"
    elif path.startswith("/") or re.match(r"[A-Za-z]:", path) or "\\" in path:
        problem = "is not a relative path with / separators"
    elif any(ord(char) < 32 or char == "\x7f" for char in path):
        problem = "holds a control character"
    elif any(part in ("", ".", "..") for part in path.split("/")):
        problem = "has an empty, '.' or '..' part"
    elif path.split("/", 1)[0] == ".git":
        problem = "is inside .git"
    if problem is not None:
        shown = path if len(path) <= 80 else path[:77] + "..."
        raise InvalidInputError(
            f"path {shown!r} {problem}: only files the repository tracks can be read",
            code="unsafe-path",
            field=field,
            hint="name a file as `git ls-files` shows it, e.g. memories/user/ab/abc.md",
        )
    return path


def load_file(repo: pygit2.Repository, path: str) -> TrackedFile:
    """The file at ``path`` in HEAD's tree; ``unknown-file`` when there is none."""
    check_tree_path(path)
    commit = _head(repo)
    try:
        entry = commit.tree[path] if commit is not None else None
    except KeyError:
        entry = None
    if entry is None or not isinstance(repo[entry.id], pygit2.Blob):
        raise UsageError(
            f"no file {path!r} in HEAD",
            code="unknown-file",
            field="path",
            hint="memory_map and memory_recall name the paths of memories and captures",
        )
    text = decode_utf8(read_blob(repo, entry.id), source=path)
    return TrackedFile(
        path=path, commit=str(commit.id) if commit else None, blob=str(entry.id), text=text
    )


def load_memory(repo: pygit2.Repository, memory_id: str) -> TrackedFile | None:
    """Active memory ``memory_id``'s file in HEAD; None when HEAD does not hold it."""
    check_memory_id(memory_id)
    commit = _head(repo)
    found = find_memory_file(repo, commit.tree, memory_id) if commit is not None else None
    if commit is None or found is None:
        return None
    path, blob = found
    text = decode_utf8(read_blob(repo, blob), source=path)
    return TrackedFile(path=path, commit=str(commit.id), blob=str(blob), text=text)


def turn_path(turn_id: str) -> str | None:
    """``inbox/...`` for a turn id ``source/session/seq`` (as units name it), else None."""
    match = _TURN_ID.fullmatch(turn_id)
    if match is None:
        return None
    source = check_segment(match["source"], field="id")
    session = check_segment(match["session"], field="id")
    return capture_path(source, session, int(match["seq"]))


def iter_memory_paths(repo: pygit2.Repository) -> Iterator[str]:
    """Every memory file in HEAD's tree, in tree order."""
    commit = _head(repo)
    if commit is None:
        return
    for path, _ in iter_blobs(repo, commit.tree, MEMORIES_DIR):
        if path.endswith(".md"):
            yield path


def _head(repo: pygit2.Repository) -> pygit2.Commit | None:
    if repo.head_is_unborn:
        return None
    return repo.head.peel(pygit2.Commit)
