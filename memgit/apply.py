"""Apply a validated Gate output: memory files, retired refs and trailers for one run.

Ids of new memories derive from their evidence and content, so re-running the
same input yields the same ids; a person or a crash never sees a half run,
because everything here only builds the change the commit engine publishes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pygit2

from memgit.catalog import Catalog
from memgit.constants import (
    REFS_RETIRED,
    TRAILER_CREATED,
    TRAILER_RETRACTED,
    TRAILER_SUPERSEDED,
    TRAILER_UPDATED,
)
from memgit.errors import InvalidInputError
from memgit.evidence import EvidenceUnit
from memgit.gate.contract import Candidate, GateOutput
from memgit.jsonio import json_as
from memgit.layout import memory_path
from memgit.memory import Memory, Source, Supersedes, new_memory_id, render_memory
from memgit.secrets.redact import redact
from memgit.store.tree import blob_at


def _target(catalog: Catalog, candidate: Candidate) -> Memory | None:
    """The memory an UPDATE, SUPERSEDE or RETRACT names; the contract checked that it is
    in the tree the catalog reads, so a miss is refused, not guessed around."""
    if candidate.action not in ("UPDATE", "SUPERSEDE", "RETRACT"):
        return None
    found = catalog.load(candidate.target) if candidate.target else None
    if found is None:
        raise InvalidInputError(
            f"{candidate.action} names {candidate.target!r}, which is not an active memory",
            code="unknown-target",
            field=f"candidates[{candidate.candidate_id}].target",
            hint="the memory may have been retired meanwhile; run `memgit process` again",
        )
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """One change a run made to the memories."""

    action: str
    memory_id: str
    candidate_id: str | None = field(default=None, metadata=json_as(omit="none"))
    target: str | None = field(default=None, metadata=json_as(omit="none"))
    path: str


def redact_candidates(gate: GateOutput, diagnostics: list[dict[str, Any]]) -> GateOutput:
    """A model may echo or invent a secret: remove it before it can become a blob."""
    found = 0
    cleaned = []
    for candidate in gate.candidates:
        changes: dict[str, Any] = {}
        for name in ("title", "body"):
            value = getattr(candidate, name)
            if value:
                text, kinds = redact(value)
                if kinds:
                    changes[name] = text
                    found += sum(kinds.values())
        cleaned.append(replace(candidate, **changes) if changes else candidate)
    if not found:
        return gate
    diagnostics.append({"code": "redacted-candidate-text", "count": found})
    raw = dict(gate.raw)
    by_id = {c.candidate_id: c for c in cleaned}
    raw["candidates"] = [
        {
            **item,
            **{
                key: getattr(by_id[item["candidate_id"]], key)
                for key in ("title", "body")
                if key in item
            },
        }
        for item in gate.raw["candidates"]
    ]
    return replace(gate, candidates=tuple(cleaned), raw=raw)


def _sources(candidate: Candidate, units: dict[str, EvidenceUnit]) -> tuple[Source, ...]:
    sources = []
    for claim in candidate.claims:
        unit = units[claim.unit_id]
        pinned = unit.text.count(claim.quote) > 1
        sources.append(
            Source(
                capture=unit.capture,
                unit=claim.unit_id,
                quote=claim.quote,
                blob=unit.blob,
                start=claim.start if pinned else None,
                end=claim.end if pinned else None,
            )
        )
    return tuple(sources)


def _body(text: str | None) -> str:
    text = (text or "").strip()
    return text + "\n" if text else ""


def apply_gate_output(
    gate: GateOutput,
    units: dict[str, EvidenceUnit],
    catalog: Catalog,
    tip: pygit2.Commit | None,
    now: str,
    applied: list[Decision],
) -> tuple[dict[str, bytes | None], dict[str, str], list[tuple[str, str]]]:
    """Memory files, refs and trailers for the validated decisions."""
    stamp = now.replace("+00:00", "Z")
    files: dict[str, bytes | None] = {}
    refs: dict[str, str] = {}
    trailers: list[tuple[str, str]] = []
    taken: set[str] = set()
    tip_id = str(tip.id) if tip is not None else ""
    for candidate in gate.candidates:
        sources = _sources(candidate, units)
        old = _target(catalog, candidate)
        if candidate.action == "RETRACT" and old is not None:
            files[old.path] = None
            refs[f"{REFS_RETIRED}{old.id}"] = tip_id
            trailers.append((TRAILER_RETRACTED, old.id))
            applied.append(_decision(candidate, old.id, old.path))
            continue
        if candidate.action == "UPDATE" and old is not None:
            memory = Memory(
                id=old.id,
                type=candidate.type or old.type,
                scope=candidate.scope or old.scope,
                title=candidate.title or old.title,
                body=_body(candidate.body),
                created=old.created,
                updated=max(stamp, old.updated or stamp),
                tags=candidate.tags,
                supersedes=old.supersedes,
                sources=old.sources + tuple(s for s in sources if s not in old.sources),
            )
            if memory.path != old.path:
                files[old.path] = None
            trailers.append((TRAILER_UPDATED, old.id))
        else:
            scope = candidate.scope or "user"

            def in_use(memory_id: str, scope: str = scope) -> bool:
                # Elsewhere in the tree, a duplicate id is memgit-supersession's refusal.
                path = memory_path(scope, memory_id)
                return memory_id in taken or blob_at(catalog.tree, path) is not None

            memory_id = _fresh_id(candidate, sources, in_use)
            taken.add(memory_id)
            supersedes: tuple[Supersedes, ...] = ()
            if candidate.action == "SUPERSEDE" and old is not None:
                files[old.path] = None
                refs[f"{REFS_RETIRED}{old.id}"] = tip_id
                supersedes = (Supersedes(id=old.id, commit=tip_id),)
                trailers.append((TRAILER_SUPERSEDED, f"{old.id} -> {memory_id}"))
            else:
                trailers.append((TRAILER_CREATED, memory_id))
            memory = Memory(
                id=memory_id,
                type=candidate.type or "fact",
                scope=scope,
                title=candidate.title or memory_id,
                body=_body(candidate.body),
                created=stamp,
                updated=stamp,
                tags=candidate.tags,
                supersedes=supersedes,
                sources=sources,
            )
        files[memory.path] = render_memory(memory).encode("utf-8")
        applied.append(_decision(candidate, memory.id, memory.path))
    return files, refs, trailers


def _decision(candidate: Candidate, memory_id: str, path: str) -> Decision:
    return Decision(
        action=candidate.action,
        memory_id=memory_id,
        path=path,
        candidate_id=candidate.candidate_id,
        target=candidate.target,
    )


def _fresh_id(
    candidate: Candidate, sources: Sequence[Source], in_use: Callable[[str], bool]
) -> str:
    """An id derived from the evidence and content, so a re-run yields the same id."""
    seed = "|".join(
        [
            *sorted(f"{s.unit}:{s.quote}" for s in sources),
            candidate.title or "",
            candidate.body or "",
        ]
    ).encode("utf-8")
    memory_id = new_memory_id(seed)
    while in_use(memory_id):
        seed += b"+"
        memory_id = new_memory_id(seed)
    return memory_id


PAST_TENSE = {
    "CREATE": "created",
    "UPDATE": "updated",
    "SUPERSEDE": "superseded",
    "RETRACT": "retracted",
}


def describe_decisions(decisions: Sequence[Decision]) -> str:
    """ "2 created, 1 superseded": the words of commit summaries and CLI output."""
    counts = Counter(decision.action for decision in decisions)
    parts = [f"{counts[action]} {word}" for action, word in PAST_TENSE.items() if counts[action]]
    return ", ".join(parts) or "no memory changes"
