"""A second identical memory is never made: what "the same memory" means, and how the
one that already holds a text is found.

Two memories are the same when they have the same scope and the same body once
normalised (NFKC, case-folded, words only, one space between them, a CJK character a
word of its own), or, for memories without a body, the same normalised title.
``memgit remember`` asks before it captures anything; ``memgit process`` drops a
CREATE that would make such a second memory, whatever the backend, from the answer it
records (its unit becomes ``NO_CHANGE``, ``already-known``), so the run record, the
commit and the governance checks that apply the record again all agree.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import pygit2

from memgit.derived.lexical import LexicalIndex, Snapshot
from memgit.derived.search import MemoryRow
from memgit.derived.similar import memories_holding
from memgit.errors import MemgitError
from memgit.gate.contract import GateOutput
from memgit.memory import Memory, read_memory
from memgit.store.tree import blob_at, read_blob
from memgit.tokens import CJK_RUN

_WORD = re.compile(r"[^\W_]+")
# Memories whose text holds the phrase, compared in full: more than this many memories
# holding one whole text word for word are not looked through.
MAX_HOLDERS = 50


def normal_text(text: str) -> str:
    """``text`` as sameness sees it: NFKC, case-folded, its words joined by one space,
    each CJK character a word (so "用 pytest" and "用pytest" are the same)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = CJK_RUN.sub(lambda run: " " + " ".join(run.group()) + " ", text)
    return " ".join(_WORD.findall(text))


def content_key(scope: str, title: str, body: str) -> tuple[str, str] | None:
    """What two memories share when they are the same; None for a text without words."""
    text = normal_text(body) or normal_text(title)
    return (scope.strip("/"), text) if text else None


def find_same(
    index: LexicalIndex, tree: pygit2.Tree | None, *, scope: str, title: str, body: str
) -> Memory | None:
    """The active memory of ``tree`` that is the same as the one described, if any."""
    key = content_key(scope, title, body)
    if tree is None or key is None:
        return None
    column, text = ("body", body) if normal_text(body) else ("title", title)

    def search(snap: Snapshot) -> tuple[str | None, list[MemoryRow]]:
        return snap.state.tree, memories_holding(snap.conn, text, column=column, limit=MAX_HOLDERS)

    stamped, rows = index.read(search, use_overlay=False)
    for row in rows:
        memory = _load(index.repo, tree, row, stamped)
        if memory is not None and content_key(memory.scope, memory.title, memory.body) == key:
            return memory
    return None


def _load(
    repo: pygit2.Repository, tree: pygit2.Tree, row: MemoryRow, stamped: str | None
) -> Memory | None:
    """The memory as ``tree`` holds it (the index may be stamped with another tree)."""
    path = row.memory.path
    blob = row.blob if stamped == str(tree.id) else blob_at(tree, path)
    if blob is None:
        return None
    try:
        return read_memory(read_blob(repo, blob), path=path, blob=str(blob), check=False)
    except MemgitError:
        return None  # a broken file is memgit-schemas' business


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    """A CREATE dropped from an answer, the units it quoted, and what already holds what
    it says: an active memory (``memory_id``, ``path``), or another CREATE of the same
    answer (``same_as``, its candidate id: the run's decisions name its memory)."""

    candidate_id: str
    units: tuple[str, ...]
    memory_id: str | None = None
    path: str | None = None
    same_as: str | None = None


def without_duplicates(
    gate: GateOutput,
    index: LexicalIndex,
    tree: pygit2.Tree | None,
    diagnostics: list[dict[str, Any]],
) -> tuple[GateOutput, tuple[Held, ...]]:
    """``gate`` without the CREATEs that would make a second identical memory (of an
    active memory of ``tree``, or of an earlier CREATE of the same answer), and what
    holds what each dropped one says;
    a unit left with no candidate is ``NO_CHANGE``, ``already-known``. Each drop is
    counted in ``diagnostics`` as ``already-held``."""
    held: list[Held] = []
    made: dict[tuple[str, str], str] = {}
    for candidate in gate.candidates:
        if candidate.action != "CREATE":
            continue
        scope, title, body = candidate.scope or "", candidate.title or "", candidate.body or ""
        key = content_key(scope, title, body)
        if key is None:
            continue
        units = tuple(dict.fromkeys(claim.unit_id for claim in candidate.claims))
        cid = candidate.candidate_id
        if key in made:
            held.append(Held(candidate_id=cid, units=units, same_as=made[key]))
            continue
        same = find_same(index, tree, scope=scope, title=title, body=body)
        if same is not None:
            held.append(Held(candidate_id=cid, units=units, memory_id=same.id, path=same.path))
        else:
            made[key] = cid
    if not held:
        return gate, ()
    diagnostics.append({"code": "already-held", "count": len(held)})
    return _drop(gate, {item.candidate_id for item in held}), tuple(held)


def _drop(gate: GateOutput, dropped: Iterable[str]) -> GateOutput:
    gone = set(dropped)
    raw = gate.raw
    coverage = []
    decisions = dict(gate.decisions)
    for row in raw["coverage"]:
        ids = row.get("candidate_ids")
        if ids is not None and gone & set(ids):
            kept = [cid for cid in ids if cid not in gone]
            if kept:
                row = {**row, "candidate_ids": kept}
            else:
                row = {
                    "unit_id": row["unit_id"],
                    "decision": "NO_CHANGE",
                    "reason": "already-known",
                }
                decisions[row["unit_id"]] = "NO_CHANGE"
        coverage.append(row)
    narrowed = {
        **raw,
        "candidates": [c for c in raw["candidates"] if c["candidate_id"] not in gone],
        "coverage": coverage,
        "evidence_bindings": [b for b in raw["evidence_bindings"] if b["candidate_id"] not in gone],
    }
    return replace(
        gate,
        candidates=tuple(c for c in gate.candidates if c.candidate_id not in gone),
        decisions=decisions,
        raw=narrowed,
    )
