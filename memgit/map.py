"""``memgit map``: a bounded overview of a memory repository for a session's start.

Whatever the repository's size, the map holds at most ``MAX_LIST`` scopes and
types, ``recent`` memories and ``terms`` terms, so an agent can load it into
its context without a budget surprise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memgit.derived.lexical import LexicalIndex, Snapshot
from memgit.derived.overview import read_overview
from memgit.derived.refresh import Progress
from memgit.jsonio import json_fields
from memgit.memory import Memory

MAX_LIST = 50
MAX_RECENT = 100
MAX_TERMS = 100
_RECENT_KEYS = ("id", "title", "type", "scope", "updated", "path")


@dataclass(frozen=True, slots=True, kw_only=True)
class RepoMap:
    """Counts by scope and type, the latest memories, and the distinctive terms."""

    memories: int
    captures: int
    retired: int
    problems: int
    scopes: tuple[tuple[str, int], ...]
    more_scopes: int
    types: tuple[tuple[str, int], ...]
    more_types: int
    recent: tuple[Memory, ...]  # as the index holds them: no body
    terms: tuple[tuple[str, int], ...]
    commit: str | None

    def summary_lines(self) -> list[str]:
        """The map as ``memgit map`` prints it, one line each: the counts first (also as
        the host hooks show it to an agent, memgit/hosts/context.py)."""
        lines = [
            f"{self.memories} memories, {self.captures} captured turns, {self.retired} retired"
        ]
        if self.scopes:
            more = f" (+{self.more_scopes} more)" if self.more_scopes else ""
            lines.append("scopes: " + ", ".join(f"{s} {n}" for s, n in self.scopes) + more)
        if self.types:
            more = f" (+{self.more_types} more)" if self.more_types else ""
            lines.append("types:  " + ", ".join(f"{t} {n}" for t, n in self.types) + more)
        if self.recent:
            lines.append("recent:")
            lines += [f"  {m.id}  {m.title}  ({m.type}, {m.scope})" for m in self.recent]
        if self.terms:
            lines.append("terms:  " + ", ".join(term for term, _ in self.terms))
        if self.problems:
            lines.append(f"{self.problems} files could not be read; `memgit recall` lists them")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """Each (name, count) pair as an object, the recent memories as their front matter."""
        return {
            "commit": self.commit,
            "memories": self.memories,
            "captures": self.captures,
            "retired": self.retired,
            "problems": self.problems,
            "scopes": [{"scope": name, "memories": count} for name, count in self.scopes],
            "more_scopes": self.more_scopes,
            "types": [{"type": name, "memories": count} for name, count in self.types],
            "more_types": self.more_types,
            "recent": [json_fields(memory, *_RECENT_KEYS) for memory in self.recent],
            "terms": [{"term": term, "memories": count} for term, count in self.terms],
        }


def build_map(
    index: LexicalIndex, *, recent: int = 10, terms: int = 20, progress: Progress | None = None
) -> RepoMap:
    """The map of HEAD plus the working tree."""
    recent = max(0, min(recent, MAX_RECENT))
    terms = max(0, min(terms, MAX_TERMS))
    return index.read(lambda snap: _collect(snap, recent, terms), progress=progress)


def _collect(snap: Snapshot, recent: int, terms: int) -> RepoMap:
    found = read_overview(snap.conn, recent=recent, terms=terms)
    return RepoMap(
        memories=found.memories,
        captures=found.captures,
        retired=found.retired,
        problems=found.problems,
        scopes=tuple(found.scopes[:MAX_LIST]),
        more_scopes=max(0, len(found.scopes) - MAX_LIST),
        types=tuple(found.types[:MAX_LIST]),
        more_types=max(0, len(found.types) - MAX_LIST),
        recent=tuple(
            Memory(id=r[0], title=r[1], type=r[2], scope=r[3], body="", updated=r[4], file=r[5])
            for r in found.recent
        ),
        terms=tuple(found.terms),
        commit=snap.state.commit,
    )
