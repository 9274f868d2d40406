"""The capture flow: turns in, redacted inbox files out, one commit per batch.

Capturing is idempotent: a turn already in the tree with the same content is
reported as a duplicate and not written again; the same (source, session, seq)
with different content is a conflict and nothing is overwritten.

A large input (``capture --file``) is committed :data:`CAPTURE_BATCH` turns at a
time, so that each commit (and its governance checks) stays small and an
interrupted capture keeps the batches it finished; running it again captures the
rest. Every turn is checked, and compared with the branch, before the first
batch is committed: bad input or a conflict anywhere writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import pygit2

from memgit.constants import TRAILER_CAPTURED
from memgit.errors import ConflictError, InvalidInputError
from memgit.jsonio import json_as, json_data
from memgit.layout import capture_path
from memgit.store.engine import Change, Guard, publish
from memgit.store.tree import blob_at, read_blob
from memgit.trailers import render_message
from memgit.turn import Turn, redact_turn, render_capture, turn_from_data

CAPTURE_BATCH = 1000
"""Turns per commit: small enough that a commit's checks take a second or two, large
enough that a 100,000-line file is a hundred commits, not a hundred thousand."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CapturedTurn:
    """What happened to one turn: where it lives, the commit that wrote it (None when
    it was there already), what was redacted, whether it was new."""

    path: str
    seq: int
    commit: str | None
    redactions: dict[str, int]
    duplicate: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CaptureResult:
    """The commits made (none when every turn was a duplicate) and each turn's outcome."""

    commits: tuple[str, ...] = field(metadata=json_as(before=("commit",)))
    turns: tuple[CapturedTurn, ...] = field(metadata=json_as(key="captures"))

    @property
    def commit(self) -> str | None:
        """The last commit made: the branch tip once the capture is done."""
        return self.commits[-1] if self.commits else None


_SEQ_ZERO = b"\nseq: 0\n"

KnownSeq = Callable[[str], int | None]
"""The highest seq a session's inbox folder ever held, as far as it is known."""

Prepared = tuple[Turn, bytes, str]
"""A redacted turn, its capture file's bytes (without a seq line for a turn capture
numbers), and where it came from."""


def capture_turns(
    repo: pygit2.Repository,
    turns: Sequence[Turn],
    *,
    origins: Sequence[str],
    guard: Guard,
    author_fallback: tuple[str, str] | None = None,
    lock_timeout: float | None = None,
    batch_size: int = CAPTURE_BATCH,
    progress: Callable[[int, int], None] | None = None,
    known_seq: KnownSeq | None = None,
) -> CaptureResult:
    """Redact and commit ``turns``, ``batch_size`` per commit; ``origins[i]`` names where
    turn i came from. ``progress(done, total)`` is called after each batch. ``guard``
    checks each commit as the published hooks would (memgit's commands pass
    :class:`~memgit.governance.checks.Governance` over the derived store's lookup). A
    turn without a seq is numbered when its batch is planned, under the writer lock (see
    :func:`_numbered`), past ``known_seq(folder)`` too: the highest seq a session's
    folder ever had, captures that left the tree included (the tree alone without it)."""
    prepared = _prepare(turns, origins)
    tip = _tip(repo)
    # The highest seq given in the whole input for each session: a turn numbered by
    # capture never takes one of them, in its batch or a later one's.
    given: dict[tuple[str, str], int] = {}
    for turn, data, origin in prepared:
        if turn.seq is not None:
            _is_duplicate(repo, tip, turn, data, origin)
            session = (turn.source, turn.session)
            given[session] = max(given.get(session, -1), turn.seq)
    captured: list[CapturedTurn] = []
    commits: list[str] = []
    for start in range(0, len(prepared), batch_size):
        batch = prepared[start : start + batch_size]
        commit, outcomes = _commit_batch(
            repo,
            batch,
            given=given,
            known_seq=known_seq,
            guard=guard,
            author_fallback=author_fallback,
            lock_timeout=lock_timeout,
        )
        if commit is not None:
            commits.append(commit)
        captured += (
            CapturedTurn(
                path=turn.path,
                seq=turn.number,
                commit=None if duplicate else commit,
                redactions=dict(turn.redactions),
                duplicate=duplicate,
            )
            for turn, duplicate in outcomes
        )
        if progress is not None:
            progress(start + len(batch), len(prepared))
    return CaptureResult(commits=tuple(commits), turns=tuple(captured))


def _commit_batch(
    repo: pygit2.Repository,
    batch: Sequence[Prepared],
    *,
    given: dict[tuple[str, str], int],
    known_seq: KnownSeq | None,
    guard: Guard,
    author_fallback: tuple[str, str] | None,
    lock_timeout: float | None,
) -> tuple[str | None, list[tuple[Turn, bool]]]:
    """One commit of the batch's new turns (None if all were there), and each turn as
    captured (numbered) with whether it was there already; ``given`` is the highest seq
    the input gives each session."""
    outcomes: list[tuple[Turn, bool]] = []

    def plan(tip: pygit2.Commit | None) -> Change | None:
        outcomes.clear()
        files: dict[str, bytes | None] = {}
        taken = dict(given)
        for turn, data, origin in batch:
            if turn.seq is None:
                numbered, data, duplicate = _numbered(repo, tip, turn, taken, known_seq)
            else:
                numbered, duplicate = turn, _is_duplicate(repo, tip, turn, data, origin)
            outcomes.append((numbered, duplicate))
            if not duplicate:
                files[numbered.path] = data
        if not files:
            return None
        return Change(files=files, message=_message([turn for turn, seen in outcomes if not seen]))

    result = publish(
        repo, plan, guard=guard, author_fallback=author_fallback, lock_timeout=lock_timeout
    )
    return result.commit, outcomes


def _numbered(
    repo: pygit2.Repository,
    tip: pygit2.Commit | None,
    turn: Turn,
    taken: dict[tuple[str, str], int],
    known_seq: KnownSeq | None,
) -> tuple[Turn, bytes, bool]:
    """Give a turn without a seq the next one of its session: one more than the highest
    in ``tip``'s tree, in ``taken`` (the input's seqs and those given out already) and known to
    ``known_seq`` (which also knows the captures that left the tree). The
    planner runs under the writer lock on the tip it publishes on, so two writers never
    give out the same seq. A turn the session holds already, identical but for the seq
    (a host that sent the same event twice), is that capture: a duplicate.

    Returns the numbered turn, its file's bytes, and whether it is a duplicate."""
    session = (turn.source, turn.session)
    folder = _session_folder(turn)
    existing = _session_seqs(repo, tip, folder)
    # The file it would be at seq N is the one at seq 0 with its seq line changed (the
    # lines before it are the source and session names): hashing each costs microseconds
    # where rendering each cost half a millisecond, 0.5 s a capture at 1,000 turns.
    at_zero = _render(replace(turn, seq=0))
    for seq, blob_id in existing.items():
        if pygit2.hash(at_zero.replace(_SEQ_ZERO, b"\nseq: %d\n" % seq, 1)) == blob_id:
            return replace(turn, seq=seq), read_blob(repo, blob_id), True
    known = known_seq(folder) if known_seq is not None else None
    floor = max([taken.get(session, -1), -1 if known is None else known, *existing])
    seq = taken[session] = floor + 1
    numbered = replace(turn, seq=seq)
    return numbered, _render(numbered), False


def _session_folder(turn: Turn) -> str:
    return capture_path(turn.source, turn.session, 0).rsplit("/", 1)[0]


def _session_seqs(
    repo: pygit2.Repository, tip: pygit2.Commit | None, folder: str
) -> dict[int, pygit2.Oid]:
    """The seqs of the session's captures in ``tip``'s tree, with their blobs."""
    if tip is None:
        return {}
    try:
        entry = tip.tree[folder]
    except KeyError:
        return {}
    found = repo[entry.id]
    if not isinstance(found, pygit2.Tree):
        return {}
    seqs: dict[int, pygit2.Oid] = {}
    for item in found:
        name = str(item.name)
        digits = name.removesuffix(".yaml")
        if name.endswith(".yaml") and digits.isdigit() and item.type_str == "blob":
            seqs[int(digits)] = item.id
    return seqs


def _tip(repo: pygit2.Repository) -> pygit2.Commit | None:
    """HEAD's commit, if any (the commit engine refuses a detached or unborn HEAD)."""
    if repo.head_is_unborn:
        return None
    return repo.head.peel(pygit2.Commit)


def _is_duplicate(
    repo: pygit2.Repository, tip: pygit2.Commit | None, turn: Turn, data: bytes, origin: str
) -> bool:
    """Whether ``tip`` holds the turn already; a different file there is a conflict."""
    existing = blob_at(tip.tree if tip is not None else None, turn.path)
    if existing is None:
        return False
    if read_blob(repo, existing) != data:
        raise _conflict(turn, origin)
    return True


def _prepare(turns: Sequence[Turn], origins: Sequence[str]) -> list[Prepared]:
    """Redact and render each turn; the same turn twice in one input counts once (for
    turns without a seq: the same content in the same session)."""
    prepared: dict[str | bytes, Prepared] = {}
    for turn, origin in zip(turns, origins, strict=True):
        clean = _redacted(turn, origin)
        data = _render(clean)
        if clean.seq is None:
            prepared.setdefault(data, (clean, data, origin))
            continue
        seen = prepared.get(clean.path)
        if seen is not None and seen[1] != data:
            raise _conflict(clean, origin, within_input=True)
        prepared.setdefault(clean.path, (clean, data, origin))
    return list(prepared.values())


def _render(turn: Turn) -> bytes:
    return render_capture(turn).encode("utf-8")


def _redacted(turn: Turn, origin: str) -> Turn:
    """Redact, then check again: memgit never writes a file it could not read back."""
    clean = redact_turn(turn)
    if clean.redactions:
        # A turn without a seq is numbered later, under the writer lock: check the file it
        # will become, whatever seq it gets, and not the seq it does not have yet.
        data = json_data(clean) if clean.seq is not None else {**json_data(clean), "seq": 0}
        try:
            turn_from_data(data, source=origin, schema="capture")
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
        summary = f"capture: {first.source}/{first.session} turn {first.number}"
    else:
        sessions = {(turn.source, turn.session) for turn in turns}
        where = f"{first.source}/{first.session}" if len(sessions) == 1 else "several sessions"
        summary = f"capture: {len(turns)} turns from {where}"
    return render_message(summary, [(TRAILER_CAPTURED, turn.key) for turn in turns])
