"""The capture flow: turns in, redacted inbox files out, one commit per call.

Capturing is idempotent: a turn already in the tree with the same content is
reported as a duplicate and not written again; the same (source, session, seq)
with different content is a conflict and nothing is overwritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pygit2

from memgit.capture.turn import Turn, redact_turn, render_capture, turn_from_data
from memgit.constants import TRAILER_CAPTURED
from memgit.errors import ConflictError, InvalidInputError
from memgit.governance.checks import GOVERNANCE
from memgit.store.engine import Change, publish
from memgit.store.tree import blob_at, read_blob
from memgit.trailers import render_message


@dataclass(frozen=True, slots=True, kw_only=True)
class CapturedTurn:
    """What happened to one turn: where it lives, what was redacted, whether it was new."""

    path: str
    key: str
    redactions: dict[str, int]
    duplicate: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "redactions": self.redactions,
            "duplicate": self.duplicate,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class CaptureResult:
    """The commit (None when every turn was a duplicate) and each turn's outcome."""

    commit: str | None
    turns: tuple[CapturedTurn, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "captures": [turn.to_dict() for turn in self.turns]}


def capture_turns(
    repo: pygit2.Repository,
    turns: Sequence[Turn],
    *,
    origins: Sequence[str],
    author_fallback: tuple[str, str] | None = None,
    lock_timeout: float | None = None,
) -> CaptureResult:
    """Redact and commit ``turns`` as one commit; ``origins[i]`` names where turn i came from."""
    prepared = _prepare(turns, origins)
    outcome: dict[str, bool] = {}

    def plan(tip: pygit2.Commit | None) -> Change | None:
        outcome.clear()
        files: dict[str, bytes | None] = {}
        for turn, data, origin in prepared:
            existing = blob_at(tip.tree if tip is not None else None, turn.path)
            if existing is not None:
                if read_blob(repo, existing) != data:
                    raise _conflict(turn, origin)
                outcome[turn.path] = True
                continue
            outcome[turn.path] = False
            files[turn.path] = data
        if not files:
            return None
        new_turns = [turn for turn, _, _ in prepared if not outcome[turn.path]]
        return Change(files=files, message=_message(new_turns))

    result = publish(
        repo, plan, guard=GOVERNANCE, author_fallback=author_fallback, lock_timeout=lock_timeout
    )
    captured = tuple(
        CapturedTurn(
            path=turn.path,
            key=turn.key,
            redactions=dict(turn.redactions),
            duplicate=outcome[turn.path],
        )
        for turn, _, _ in prepared
    )
    return CaptureResult(commit=result.commit, turns=captured)


def _prepare(turns: Sequence[Turn], origins: Sequence[str]) -> list[tuple[Turn, bytes, str]]:
    """Redact and render each turn; the same turn twice in one input counts once."""
    prepared: dict[str, tuple[Turn, bytes, str]] = {}
    for turn, origin in zip(turns, origins, strict=True):
        clean = _redacted(turn, origin)
        data = render_capture(clean).encode("utf-8")
        seen = prepared.get(clean.path)
        if seen is not None and seen[1] != data:
            raise _conflict(clean, origin, within_input=True)
        prepared.setdefault(clean.path, (clean, data, origin))
    return list(prepared.values())


def _redacted(turn: Turn, origin: str) -> Turn:
    """Redact, then check again: memgit never writes a file it could not read back."""
    clean = redact_turn(turn)
    if clean.redactions:
        try:
            turn_from_data(clean.to_dict(), source=origin, schema="capture")
        except InvalidInputError as err:
            raise InvalidInputError(
                f"after redacting {sum(clean.redactions.values())} secret(s): {err.message}",
                code=err.code,
                path=origin,
                field=err.field,
                hint="redaction placeholders are longer than short secrets; shorten the "
                "text or split it over several turns",
            ) from err
    return clean


def _conflict(turn: Turn, origin: str, *, within_input: bool = False) -> ConflictError:
    where = "earlier in this input" if within_input else "in the repository"
    return ConflictError(
        f"turn {turn.key} is already captured {where} with different content",
        code="capture-conflict",
        path=origin,
        field=turn.path,
        hint="a captured turn is never overwritten; give the new turn its own seq",
    )


def _message(turns: Sequence[Turn]) -> str:
    first = turns[0]
    if len(turns) == 1:
        summary = f"capture: {first.source}/{first.session} turn {first.seq}"
    else:
        sessions = {(turn.source, turn.session) for turn in turns}
        where = f"{first.source}/{first.session}" if len(sessions) == 1 else "several sessions"
        summary = f"capture: {len(turns)} turns from {where}"
    return render_message(summary, [(TRAILER_CAPTURED, turn.key) for turn in turns])
