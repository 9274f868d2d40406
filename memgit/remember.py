"""``memgit remember TEXT``: a statement stored as a memory through the same doors as any.

A person or an agent says what to remember, so no Gate needs to judge whether it is
worth keeping; but the memory must still be evidence-backed, checked and committed as
every other. So the text is captured as a user turn (redacted before a blob exists),
then one run over that capture alone answers with one CREATE quoting the captured
text whole, and that answer goes through the Gate contract, the governance checks
and the commit engine as ``memgit process`` sends any backend's answer. The memory's
body is the captured (redacted) text, never the text as given.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pygit2

from memgit.duplicates import find_same
from memgit.errors import ConflictError, InvalidInputError
from memgit.gate.prompt import GateRequest
from memgit.layout import check_scope
from memgit.secrets.redact import redact

if TYPE_CHECKING:
    from memgit.derived.lexical import LexicalIndex
    from memgit.settings import Settings

SOURCE = "memgit-remember"
MIN_TEXT = 8  # the Gate contract's shortest quote
MAX_TEXT = 4000  # the Gate contract's longest quote: the whole text is quoted
TITLE_LIMIT = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class Remembered:
    """The memory made, the capture that backs it and the run that made it (on a
    proposal branch when the review policy holds the run back); or, ``already_held``,
    the active memory that already says the same (memgit.duplicates), with nothing
    written (``capture``, ``run_id`` and ``commit`` None) unless another command made
    it while this one ran."""

    memory_id: str
    path: str
    already_held: bool = False
    capture: str | None
    run_id: str | None
    commit: str | None
    proposal: str | None


@dataclass(frozen=True, slots=True)
class StatementBackend:
    """Answers the Gate for a remember run: its one user unit becomes one memory."""

    title: str | None
    scope: str
    kind: str
    name: str = "remember"
    model: str | None = None
    can_correct: bool = False

    def answer(self, request: GateRequest) -> str:
        candidates: list[dict[str, Any]] = []
        coverage: list[dict[str, Any]] = []
        bindings: list[dict[str, Any]] = []
        for unit in request.units:
            if not unit.can_support:
                continue
            text = unit.text.strip()
            cid = f"c{len(candidates) + 1}"
            candidates.append(
                {
                    "candidate_id": cid,
                    "action": "CREATE",
                    "type": self.kind,
                    "scope": self.scope,
                    "title": self.title or default_title(text),
                    "body": text,
                }
            )
            coverage.append({"unit_id": unit.id, "decision": "CANDIDATE", "candidate_ids": [cid]})
            claim = {"unit_id": unit.id, "quote": text, "role": "assertion"}
            bindings.append({"candidate_id": cid, "claims": [claim]})
        answer = {"candidates": candidates, "coverage": coverage, "evidence_bindings": bindings}
        return json.dumps(answer, ensure_ascii=False)


def default_title(text: str) -> str:
    """The first line, cut at a word (never inside one) when it is long."""
    line = text.splitlines()[0].strip()
    if len(line) <= TITLE_LIMIT:
        return line
    cut = line[:TITLE_LIMIT]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "..."


def remember(
    git: pygit2.Repository,
    settings: Settings,
    text: str,
    *,
    index: LexicalIndex,
    capture: Callable[[dict[str, Any]], str],
    title: str | None = None,
    scope: str | None = None,
    kind: str | None = None,
    now: datetime | None = None,
) -> Remembered:
    """Capture ``text`` as a user turn (``capture`` commits it and returns its path) and
    make it a memory in one checked run."""
    from memgit.process import process_inbox

    chosen_scope, chosen_kind = _check(settings, text, title=title, scope=scope, kind=kind)
    held = _held(git, index, text, title=title, scope=chosen_scope)
    if held is not None:
        return held
    moment = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    session = "r-" + hashlib.sha256(f"{moment}\n{text}".encode()).hexdigest()[:16]
    captured = capture(
        {
            "source": SOURCE,
            "session": session,
            "seq": 0,
            "timestamp": moment,
            "messages": [{"role": "user", "content": text}],
        }
    )
    backend = StatementBackend(title=title, scope=chosen_scope, kind=chosen_kind)
    result = process_inbox(git, settings, backend, index=index, only={captured})
    for run in result.runs:
        if captured in run.captures and run.decisions:
            decision = run.decisions[0]
            return Remembered(
                memory_id=decision.memory_id,
                path=decision.path,
                capture=captured,
                run_id=run.run_id,
                commit=run.commit,
                proposal=run.proposal,
            )
    # Another command made the same memory while this one ran: the run dropped its CREATE.
    late = _held(git, index, text, title=title, scope=chosen_scope)
    if late is not None:
        return replace(late, capture=captured)
    raise ConflictError(
        "the turn captured for this text was already decided: the same text was "
        "remembered in the same second, or another run decided the turn first",
        code="already-decided",
        path=captured,
        hint="`memgit recall` finds what was made of it; run the command again to add it anew",
    )


def _check(
    settings: Settings, text: str, *, title: str | None, scope: str | None, kind: str | None
) -> tuple[str, str]:
    """The scope and type the memory gets; every refusal comes before anything is written."""
    stripped = text.strip()
    if not MIN_TEXT <= len(stripped) <= MAX_TEXT:
        raise InvalidInputError(
            f"the text to remember has {len(stripped)} characters; it needs "
            f"{MIN_TEXT} to {MAX_TEXT}",
            code="invalid-text",
            field="TEXT",
            hint="say one thing to remember; capture a long document as a turn instead",
        )
    if title is not None and (not title.strip() or len(title) > 200 or not title.isprintable()):
        raise InvalidInputError(
            "a title is 1 to 200 printable characters on one line",
            code="invalid-text",
            field="--title",
        )
    chosen_scope = check_scope(scope or settings.scopes[0], field="--scope")
    if chosen_scope.split("/", 1)[0] not in settings.scopes:
        raise InvalidInputError(
            f"scope {chosen_scope!r} does not start with one of memgit.yaml's scopes "
            f"({', '.join(settings.scopes)})",
            code="unknown-scope",
            field="--scope",
        )
    chosen_kind = kind or ("fact" if "fact" in settings.memory_types else settings.memory_types[0])
    if chosen_kind not in settings.memory_types:
        raise InvalidInputError(
            f"type {chosen_kind!r} is not one of memgit.yaml's memory_types "
            f"({', '.join(settings.memory_types)})",
            code="unknown-type",
            field="--type",
        )
    return chosen_scope, chosen_kind


def _held(
    git: pygit2.Repository, index: LexicalIndex, text: str, *, title: str | None, scope: str
) -> Remembered | None:
    """The active memory that already says ``text`` (as its capture would store it,
    redacted) in ``scope``, as a result that writes nothing; None when there is none."""
    body = redact(text)[0].strip()
    tree = None if git.head_is_unborn else git.head.peel(pygit2.Commit).tree
    same = find_same(index, tree, scope=scope, title=title or default_title(body), body=body)
    if same is None:
        return None
    return Remembered(
        memory_id=same.id,
        path=same.path,
        capture=None,
        run_id=None,
        commit=None,
        proposal=None,
        already_held=True,
    )
