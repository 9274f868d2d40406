"""Forget memories: their files leave the tree in one checked commit; history keeps them.

A forgotten memory gets no ``refs/memgit/retired/<id>``: that ref is what recall
reads to say "matched, but superseded" and what ``--include-retired`` ranks, and a
memory someone asked to forget must not come back in either. The commit's trailers
(``Memgit-Forgotten: ID``) say what left and why, as ``git log`` shows them.

``with_sources`` also removes the captures the forgotten memories quote, but only
those that no memory left in the tree mentions (its sources name a capture by
path and blob id, so a file holding either keeps the capture). A capture that
already left the inbox stays in history, as it did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pygit2

from memgit.catalog import Catalog
from memgit.constants import MEMORIES_DIR, TRAILER_FORGOTTEN
from memgit.errors import MemgitError, UsageError
from memgit.governance.checks import Governance
from memgit.layout import check_memory_id
from memgit.memory import read_memory
from memgit.state.lookup import Lookup
from memgit.store.engine import Change, publish
from memgit.store.tree import blob_at, iter_blobs, read_blob
from memgit.trailers import render_message


@dataclass(frozen=True, slots=True, kw_only=True)
class Forgotten:
    """The commit a forget made, the memories it removed (id, path) and the captures."""

    commit: str | None
    memories: tuple[tuple[str, str], ...]
    captures: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Each (id, path) pair as an object."""
        return {
            "commit": self.commit,
            "memories": [{"id": memory_id, "path": path} for memory_id, path in self.memories],
            "captures": list(self.captures),
        }


def forget_memories(
    git: pygit2.Repository,
    lookup: Lookup,
    memory_ids: Iterable[str],
    *,
    with_sources: bool = False,
    author_fallback: tuple[str, str] | None = None,
) -> Forgotten:
    """Remove the active memories ``memory_ids`` (and, ``with_sources``, the captures only
    they quote) from the checked-out branch in one commit through the governance checks.
    Any id that is malformed or not in the tree refuses the whole call."""
    wanted = list(dict.fromkeys(check_memory_id(m, field="ID") for m in memory_ids))
    if not wanted:
        raise UsageError("name at least one memory id", code="usage", field="ID")
    removed: list[tuple[str, str]] = []
    captures: list[str] = []

    def plan(tip: pygit2.Commit | None) -> Change:
        removed.clear()
        captures.clear()
        tree = tip.tree if tip is not None else None
        catalog = Catalog(git, tree)
        quoted: dict[str, str] = {}
        for memory_id in wanted:
            found = catalog.find(memory_id)
            if found is None or tree is None:
                raise UsageError(
                    f"no active memory {memory_id!r} in HEAD",
                    code="unknown-memory",
                    field="ID",
                    hint="`memgit recall WORDS` finds a memory's id; "
                    "a retired memory already left the tree",
                )
            path, blob = found
            removed.append((memory_id, path))
            if with_sources:
                quoted.update(_quoted_captures(git, tree, path, blob))
        if with_sources and tree is not None:
            captures.extend(_unquoted(git, tree, quoted, {path for _, path in removed}))
        files: dict[str, bytes | None] = dict.fromkeys([path for _, path in removed] + captures)
        return Change(files=files, message=_message(len(removed), len(captures), wanted))

    result = publish(git, plan, guard=Governance(lookup), author_fallback=author_fallback)
    return Forgotten(commit=result.commit, memories=tuple(removed), captures=tuple(captures))


def _quoted_captures(
    git: pygit2.Repository, tree: pygit2.Tree, path: str, blob: pygit2.Oid
) -> dict[str, str]:
    """(path -> blob id) of the captures in ``tree`` a memory's sources quote; none for a
    memory file that cannot be read (it names no captures that can be trusted)."""
    try:
        memory = read_memory(read_blob(git, blob), path=path, blob=str(blob), check=False)
    except MemgitError:
        return {}
    found = {}
    for source in memory.sources:
        held = blob_at(tree, source.capture)
        if held is not None and str(held) == source.blob:
            found[source.capture] = source.blob
    return found


def _unquoted(
    git: pygit2.Repository, tree: pygit2.Tree, quoted: dict[str, str], leaving: set[str]
) -> list[str]:
    """The captures of ``quoted`` that no memory staying in ``tree`` mentions by path or
    blob id: read as bytes, so a memory file too broken to parse still keeps its captures."""
    left = dict(quoted)
    for path, blob in iter_blobs(git, tree, MEMORIES_DIR):
        if not left:
            break
        if path in leaving:
            continue
        data = read_blob(git, blob)
        for capture, capture_blob in list(left.items()):
            if capture.encode("utf-8") in data or capture_blob.encode("ascii") in data:
                del left[capture]
    return sorted(left)


def _message(memories: int, captures: int, memory_ids: list[str]) -> str:
    summary = f"forget: remove {_count(memories, 'memory', 'memories')}"
    if captures:
        summary += f" and {_count(captures, 'capture', 'captures')}"
    return render_message(summary, [(TRAILER_FORGOTTEN, m) for m in memory_ids])


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"
