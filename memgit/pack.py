"""The evidence pack: what recall returns, and how it explains a miss.

Every value here is frozen and renders to plain JSON with ``to_dict()``; the
shape is documented in docs/recall.md and is what ``memgit recall --json``
prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pygit2

from memgit.errors import InvalidInputError
from memgit.jsonio import json_data, json_fields
from memgit.memory import Memory, Source
from memgit.turn import Message, Turn, read_capture

# The keys of a memory hit and of a turn hit, in the order --json prints them.
_MEMORY_HIT_KEYS = (
    "id",
    "type",
    "scope",
    "title",
    "status",
    "score",
    "matched_terms",
    "expanded_terms",
    "snippet",
    "path",
    "commit",
    "uncommitted",
    "tags",
    "updated",
    "sources",
    "source_turns",
    "superseded_by",
    "chain",
)
_TURN_HIT_KEYS = (
    "capture",
    "source",
    "session",
    "seq",
    "message",
    "role",
    "name",
    "score",
    "matched_terms",
    "context_terms",
    "expanded_terms",
    "snippet",
    "timestamp",
    "thread",
    "blob",
    "uncommitted",
    "archived",
    "removed_in",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceEvidence:
    """One source of a memory: the quote, and with ``--evidence`` the captured turn."""

    source: Source
    turn: Turn | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The source's fields, with its turn (or why it could not be read) when looked up."""
        data = json_data(self.source)
        if self.turn is not None or self.error is not None:
            data["turn"] = _evidence_turn(self.turn) if self.turn is not None else None
        if self.error is not None:
            data["error"] = self.error
        return data


def source_evidence(repo: pygit2.Repository, source: Source) -> SourceEvidence:
    """The source with the captured turn its blob holds (``recall --evidence``,
    ``review show``), or the reason it cannot be read."""
    obj = repo.get(source.blob)
    if not isinstance(obj, pygit2.Blob):
        return SourceEvidence(
            source=source,
            error=f"blob {source.blob[:12]} is not in this repository (not fetched, or purged)",
        )
    try:
        turn = read_capture(obj.data, path=source.capture, blob=source.blob, check=False)
    except InvalidInputError as err:
        return SourceEvidence(source=source, error=err.message)
    return SourceEvidence(source=source, turn=turn)


def _evidence_turn(turn: Turn) -> dict[str, Any]:
    """The turn as ``--evidence`` shows it: ``thread`` even when null, and each message's
    role, content and name, without ``complete`` (unlike the capture file)."""
    data = json_fields(turn, "source", "session", "seq", "timestamp", "thread")
    data["messages"] = [_evidence_message(message) for message in turn.messages]
    return data


def _evidence_message(message: Message) -> dict[str, Any]:
    names = ("role", "content", "name") if message.name else ("role", "content")
    return json_fields(message, *names)


@dataclass(frozen=True, slots=True, kw_only=True)
class Successor:
    """The memory that replaced a retired one (the end of the chain, if it is active)."""

    id: str
    title: str
    path: str
    active: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryHit:
    """A memory recall found (as the index holds it: no body), and why and where.

    ``commit`` is the commit that last changed its file (None while uncommitted);
    ``sources`` its sources with their turns when asked; ``source_turns`` the
    captured turns its sources quote, live or archived, found in the index: the
    memory and these are one hit group (docs/recall.md, "Hit groups").
    ``expanded_terms`` are the terms the recall vocabulary added to the query that
    it matched: why a memory without the query's words was found.
    """

    memory: Memory
    score: float
    matched_terms: tuple[str, ...]
    snippet: str
    commit: str | None
    expanded_terms: tuple[str, ...] = ()
    uncommitted: bool = False
    retired: bool = False
    sources: tuple[SourceEvidence, ...] = ()
    superseded_by: Successor | None = None
    source_turns: tuple[TurnHit, ...] = ()
    chain: tuple[Successor, ...] = ()

    @property
    def status(self) -> str:
        return "retired" if self.retired else "active"

    def to_dict(self) -> dict[str, Any]:
        """The memory's recall fields beside the hit's, the score rounded, successors only
        when retired, in the documented key order."""
        data = json_fields(self.memory, "id", "type", "scope", "title", "path", "tags", "updated")
        data |= json_fields(self, "status", "matched_terms", "expanded_terms", "snippet")
        data |= json_fields(self, "commit", "uncommitted")
        data |= json_fields(self, "sources", "source_turns", "superseded_by", "chain")
        data["score"] = round(self.score, 4)
        if not self.retired:
            del data["superseded_by"], data["chain"]
        return {key: data[key] for key in _MEMORY_HIT_KEYS if key in data}


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnHit:
    """One message of a captured turn: raw evidence, not a memory.

    ``turn`` is the turn as the index holds it (no messages), ``index`` the
    message's place in the capture file and ``message`` its role and name (no
    content: ``snippet`` shows it). ``matched_terms`` are query terms in the
    message itself (or its speaker or tool name); ``context_terms`` those found
    only in the messages just before or after it, which also count towards its
    rank. ``expanded_terms`` are the terms the recall vocabulary added that the
    message itself (or its name) holds. ``removed_in`` is the commit that
    removed an archived capture from the inbox (None while it is in the tree).
    """

    turn: Turn
    index: int
    message: Message
    snippet: str
    score: float
    matched_terms: tuple[str, ...]
    uncommitted: bool = False
    context_terms: tuple[str, ...] = ()
    expanded_terms: tuple[str, ...] = ()
    removed_in: str | None = None

    @property
    def capture(self) -> str:
        return self.turn.path

    @property
    def archived(self) -> bool:
        return self.removed_in is not None

    def to_dict(self) -> dict[str, Any]:
        """The turn's and message's fields flattened beside the hit's, the score rounded,
        in the documented key order."""
        data = json_fields(self.turn, "source", "session", "seq", "timestamp", "thread", "blob")
        data |= json_fields(self.message, "role", "name")
        data |= json_fields(self, "capture", "matched_terms", "context_terms", "snippet")
        data |= json_fields(self, "expanded_terms")
        data |= json_fields(self, "uncommitted", "archived", "removed_in")
        data |= {"message": self.index, "score": round(self.score, 4)}
        return {key: data[key] for key in _TURN_HIT_KEYS}


@dataclass(frozen=True, slots=True, kw_only=True)
class HiddenMatch:
    """A memory that matched but was left out by ``--scope`` or ``--type``."""

    memory: Memory
    score: float
    hidden_by: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The memory's identifying fields beside the rounded score."""
        data = json_fields(self.memory, "id", "title", "scope", "type")
        return data | {"score": round(self.score, 4), "hidden_by": list(self.hidden_by)}


@dataclass(frozen=True, slots=True, kw_only=True)
class RetiredMatch:
    """A retired memory that matched: superseded (with its successor) or retracted;
    ``ref`` is its retired ref and ``commit`` the last commit in which it was active.
    ``chain`` is every memory that superseded it in turn, ending at ``superseded_by``
    when that is active."""

    memory: Memory
    score: float
    matched_terms: tuple[str, ...]
    ref: str
    commit: str
    superseded_by: Successor | None
    chain: tuple[Successor, ...] = ()

    @property
    def retracted(self) -> bool:
        return self.superseded_by is None

    def to_dict(self) -> dict[str, Any]:
        """The memory's identifying fields beside the rounded score and the retirement."""
        data = json_fields(self.memory, "id", "title", "scope", "type")
        data["score"] = round(self.score, 4)
        return data | json_fields(
            self, "matched_terms", "ref", "commit", "superseded_by", "retracted", "chain"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class FileProblem:
    """A file recall skipped because it could not be read."""

    path: str
    code: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """Why the pack holds what it holds, and above all why it may hold nothing."""

    terms: tuple[str, ...]
    stop_words: tuple[str, ...] = ()
    dropped_terms: int = 0
    unknown_terms: tuple[str, ...] = ()
    term_locations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    expansions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    hidden: tuple[HiddenMatch, ...] = ()
    hidden_total: int = 0
    retired: tuple[RetiredMatch, ...] = ()
    excluded_memories: tuple[str, ...] = ()
    excluded_turns: int = 0
    archived_turns: int = 0
    problems: tuple[FileProblem, ...] = ()
    problems_total: int = 0
    index: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Ranked:
    """One place in the combined ranking: a memory (with its source turns beneath it)
    or a captured turn that is no memory's source; ``index`` points into the pack's
    ``memories`` or ``turns``."""

    kind: str  # "memory" or "turn"
    index: int
    score: float

    def to_dict(self, pack: EvidencePack) -> dict[str, Any]:
        """A place in the ranking, named by memory id or by capture and message."""
        if self.kind == "memory":
            return {
                "kind": "memory",
                "id": pack.memories[self.index].memory.id,
                "score": self.rounded,
            }
        turn = pack.turns[self.index]
        return {
            "kind": "turn",
            "capture": turn.capture,
            "message": turn.index,
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

    def relevance(self, hit: MemoryHit | TurnHit) -> float:
        """``hit``'s score as a share of the best of its kind in this pack, from 0 to 1:
        1.0 for the best memory (the best turn), 0.5 for half its score.

        BM25 has no fixed scale, and with few memories it is near 0 for a term most of
        them hold (FTS5 floors a term's weight there), so the raw score of the only,
        correct hit can read 0.00. Memories and turns are BM25 over different tables,
        so each is compared with its own kind (a memory's source turns with the turns)."""
        if isinstance(hit, MemoryHit):
            best = max((other.score for other in self.memories), default=0.0)
        else:
            best = max((other.score for other in self._all_turns()), default=0.0)
        return share(hit.score, best)

    def _all_turns(self) -> list[TurnHit]:
        return [*self.turns, *(turn for hit in self.memories for turn in hit.source_turns)]

    def to_dict(self) -> dict[str, Any]:
        """Each hit with its relevance, and the ranking named through the hits."""
        memories = []
        for hit in self.memories:
            data = _with_relevance(json_data(hit), self.relevance(hit))
            data["source_turns"] = [
                _with_relevance(item, self.relevance(turn))
                for item, turn in zip(data["source_turns"], hit.source_turns, strict=True)
            ]
            memories.append(data)
        return {
            "query": self.query,
            "k": self.k,
            "as_of": self.as_of,
            "filters": self.filters,
            "miss": self.miss,
            "memories": memories,
            "turns": [_with_relevance(json_data(hit), self.relevance(hit)) for hit in self.turns],
            "ranked": [place.to_dict(self) for place in self.ranked],
            "trace": json_data(self.trace),
        }


def share(score: float, best: float) -> float:
    """``score`` over ``best``, within 0 to 1 (1.0 when nothing scored above 0)."""
    if best <= 0:
        return 1.0 if score >= best else 0.0
    return round(min(max(score / best, 0.0), 1.0), 4)


def _with_relevance(data: dict[str, Any], relevance: float) -> dict[str, Any]:
    """``data`` with ``relevance`` right after its raw ``score``."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        out[key] = value
        if key == "score":
            out["relevance"] = relevance
    return out
