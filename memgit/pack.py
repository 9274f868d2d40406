"""The evidence pack: what recall returns, and how it explains a miss.

Every value here is frozen and renders to plain JSON with ``to_dict()``; the
shape is documented in docs/recall.md and is what ``memgit recall --json``
prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memgit.memory import Source


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceEvidence:
    """One source of a memory: the quote, and with ``--evidence`` the captured turn."""

    capture: str
    unit: str
    quote: str
    blob: str
    turn: dict[str, Any] | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        source = Source(capture=self.capture, unit=self.unit, quote=self.quote, blob=self.blob)
        data = source.to_dict()
        if self.turn is not None or self.error is not None:
            data["turn"] = self.turn
        if self.error is not None:
            data["error"] = self.error
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class Successor:
    """The memory that replaced a retired one (the end of the chain, if it is active)."""

    id: str
    title: str
    path: str
    active: bool

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "path": self.path, "active": self.active}


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryHit:
    id: str
    type: str
    scope: str
    title: str
    snippet: str
    score: float
    matched_terms: tuple[str, ...]
    path: str
    commit: str | None
    uncommitted: bool = False
    status: str = "active"
    tags: tuple[str, ...] = ()
    updated: str | None = None
    sources: tuple[SourceEvidence, ...] = ()
    superseded_by: Successor | None = None
    # The captured turns its sources quote, live or archived, found in the index: the
    # memory and these are one hit group (docs/recall.md, "Hit groups").
    source_turns: tuple[TurnHit, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "scope": self.scope,
            "title": self.title,
            "status": self.status,
            "score": round(self.score, 4),
            "matched_terms": list(self.matched_terms),
            "snippet": self.snippet,
            "path": self.path,
            "commit": self.commit,
            "uncommitted": self.uncommitted,
            "tags": list(self.tags),
            "updated": self.updated,
            "sources": [source.to_dict() for source in self.sources],
            "source_turns": [turn.to_dict() for turn in self.source_turns],
        }
        if self.status != "active":
            data["superseded_by"] = self.superseded_by.to_dict() if self.superseded_by else None
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnHit:
    """One message of a captured turn: raw evidence, not a memory.

    ``matched_terms`` are query terms in the message itself (or its speaker or
    tool name); ``context_terms`` those found only in the messages just before
    or after it, which also count towards its rank. ``removed_in`` is the commit
    that removed an archived capture from the inbox (None while it is in the tree).
    """

    capture: str
    source: str
    session: str
    seq: int
    message: int
    role: str
    name: str | None
    snippet: str
    score: float
    matched_terms: tuple[str, ...]
    timestamp: str
    thread: str | None
    blob: str
    uncommitted: bool = False
    context_terms: tuple[str, ...] = ()
    removed_in: str | None = None

    @property
    def archived(self) -> bool:
        return self.removed_in is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "capture": self.capture,
            "source": self.source,
            "session": self.session,
            "seq": self.seq,
            "message": self.message,
            "role": self.role,
            "name": self.name,
            "score": round(self.score, 4),
            "matched_terms": list(self.matched_terms),
            "context_terms": list(self.context_terms),
            "snippet": self.snippet,
            "timestamp": self.timestamp,
            "thread": self.thread,
            "blob": self.blob,
            "uncommitted": self.uncommitted,
            "archived": self.archived,
            "removed_in": self.removed_in,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class HiddenMatch:
    """A memory that matched but was left out by ``--scope`` or ``--type``."""

    id: str
    title: str
    scope: str
    type: str
    score: float
    hidden_by: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "scope": self.scope,
            "type": self.type,
            "score": round(self.score, 4),
            "hidden_by": list(self.hidden_by),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RetiredMatch:
    """A retired memory that matched: superseded (with its successor) or retracted."""

    id: str
    title: str
    scope: str
    type: str
    score: float
    matched_terms: tuple[str, ...]
    ref: str
    commit: str
    superseded_by: Successor | None

    @property
    def retracted(self) -> bool:
        return self.superseded_by is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "scope": self.scope,
            "type": self.type,
            "score": round(self.score, 4),
            "matched_terms": list(self.matched_terms),
            "ref": self.ref,
            "commit": self.commit,
            "superseded_by": self.superseded_by.to_dict() if self.superseded_by else None,
            "retracted": self.retracted,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class FileProblem:
    """A file recall skipped because it could not be read."""

    path: str
    code: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """Why the pack holds what it holds, and above all why it may hold nothing."""

    terms: tuple[str, ...]
    stop_words: tuple[str, ...] = ()
    dropped_terms: int = 0
    unknown_terms: tuple[str, ...] = ()
    term_locations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    hidden: tuple[HiddenMatch, ...] = ()
    hidden_total: int = 0
    retired: tuple[RetiredMatch, ...] = ()
    excluded_memories: tuple[str, ...] = ()
    excluded_turns: int = 0
    archived_turns: int = 0
    problems: tuple[FileProblem, ...] = ()
    problems_total: int = 0
    index: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "terms": list(self.terms),
            "stop_words": list(self.stop_words),
            "dropped_terms": self.dropped_terms,
            "unknown_terms": list(self.unknown_terms),
            "term_locations": {term: list(where) for term, where in self.term_locations.items()},
            "hidden": [match.to_dict() for match in self.hidden],
            "hidden_total": self.hidden_total,
            "retired": [match.to_dict() for match in self.retired],
            "excluded_memories": list(self.excluded_memories),
            "excluded_turns": self.excluded_turns,
            "archived_turns": self.archived_turns,
            "problems": [problem.to_dict() for problem in self.problems],
            "problems_total": self.problems_total,
            "index": self.index,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Ranked:
    """One place in the combined ranking: a memory (with its source turns beneath it)
    or a captured turn that is no memory's source; ``index`` points into the pack's
    ``memories`` or ``turns``."""

    kind: str  # "memory" or "turn"
    index: int
    score: float

    def to_dict(self, pack: EvidencePack) -> dict[str, Any]:
        if self.kind == "memory":
            return {"kind": "memory", "id": pack.memories[self.index].id, "score": self.rounded}
        turn = pack.turns[self.index]
        return {
            "kind": "turn",
            "capture": turn.capture,
            "message": turn.message,
            "score": self.rounded,
        }

    @property
    def rounded(self) -> float:
        return round(self.score, 4)


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidencePack:
    """Ranked memories, ranked captured turns, and the trace that explains them;
    ``ranked`` orders both together, a memory's source turns going with it."""

    query: str
    k: int
    as_of: str | None
    memories: tuple[MemoryHit, ...]
    turns: tuple[TurnHit, ...]
    trace: Trace
    filters: dict[str, Any] = field(default_factory=dict)
    ranked: tuple[Ranked, ...] = ()

    def grouped_turns(self, *, memories_only: bool = False) -> list[TurnHit]:
        """Every turn of the pack in ranked order, each memory's source turns where the
        memory ranks (``memories_only``: the memories' source turns, in memory order)."""
        if memories_only:
            return [turn for hit in self.memories for turn in hit.source_turns]
        found: list[TurnHit] = []
        for place in self.ranked:
            if place.kind == "memory":
                found += self.memories[place.index].source_turns
            else:
                found.append(self.turns[place.index])
        return found

    @property
    def miss(self) -> bool:
        """No active memory matched: a signal to retry with other words, not an answer."""
        return not any(hit.status == "active" for hit in self.memories)

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "k": self.k,
            "as_of": self.as_of,
            "filters": self.filters,
            "miss": self.miss,
            "memories": [hit.to_dict() for hit in self.memories],
            "turns": [hit.to_dict() for hit in self.turns],
            "ranked": [place.to_dict(self) for place in self.ranked],
            "trace": self.trace.to_dict(),
        }
