"""Three-way merges of memgit's files, as pure functions of the three sides' bytes.

Every result depends only on the two sides as a set, never on which is "ours":
two clones that merge each other's branches must end with the same bytes, or
they would never converge. So lists are merged into sorted order, timestamps by
time, and a run record or capture both sides changed keeps the bytewise smaller
side (docs/decisions/0008-sharing-refs.md says why that is safe).

A memory whose body, or one of whose scalar fields, both sides changed
differently is a real conflict for a person: the result holds everything that
could be merged once, and git's conflict markers around the lines that differ.
A side that does not parse is never guessed at: both are kept, in markers.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from memgit.errors import MemgitError
from memgit.jsonio import json_data
from memgit.memory import Memory, Supersedes, read_memory, render_memory

MARKER_SIZE = 7
_SCALARS = ("type", "scope", "title", "status", "origin", "author", "body")
_LISTS = ("tags", "supersedes", "sources")


@dataclass(frozen=True, slots=True, kw_only=True)
class Merged:
    """The merged bytes; ``conflict`` when they hold conflict markers for a person;
    ``note`` a warning worth a line on stderr (a side was dropped on purpose)."""

    data: bytes
    conflict: bool = False
    note: str | None = None


def merge_file(base: bytes, ours: bytes, theirs: bytes, *, path: str) -> Merged:
    """The merge of one file by the kind its path says it is."""
    trivial = merge_trivially(base, ours, theirs)
    if trivial is not None:
        return Merged(data=trivial)
    if path.startswith("memories/") and path.endswith(".md"):
        return merge_memory(base, ours, theirs, path=path)
    if (path.startswith("runs/") and path.endswith(".json")) or (
        path.startswith("inbox/") and path.endswith(".yaml")
    ):
        return pick_side(ours, theirs, path=path)
    return conflict(ours, theirs)


def merge_trivially(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """The result when the sides agree or only one changed; None when both changed."""
    if ours == theirs or base == theirs:
        return ours
    if base == ours:
        return theirs
    return None


def merge_memory(base: bytes, ours: bytes, theirs: bytes, *, path: str) -> Merged:
    """Field-wise merge of one memory file (an empty base: the file is new on both)."""
    try:
        old = read_memory(base, path=path) if base.strip() else None
        mine, other = (
            read_memory(ours, path=path),
            read_memory(theirs, path=path),
        )
    except MemgitError:
        return conflict(ours, theirs)
    resolved: dict[str, Any] = {}
    conflicting: list[str] = []
    for name in _SCALARS:
        value = _three_way(old, mine, other, name, _unchanged)
        if value is _CONFLICT:
            conflicting.append(name)
        else:
            resolved[name] = value
    for name in _LISTS:
        resolved[name] = _three_way(old, mine, other, name, _set_merge)
    resolved["supersedes"] = _one_per_memory(resolved["supersedes"])
    resolved["created"] = _by_time(mine.created, other.created, min)
    resolved["updated"] = _by_time(mine.updated, other.updated, max)
    if conflicting:
        return conflict(
            render_memory(replace(mine, **resolved)).encode("utf-8"),
            render_memory(replace(other, **resolved)).encode("utf-8"),
        )
    merged = render_memory(replace(mine, **resolved))
    try:
        read_memory(merged, path=path)
    except MemgitError:  # e.g. more tags together than a memory may have
        return conflict(ours, theirs)
    return Merged(data=merged.encode("utf-8"))


def pick_side(ours: bytes, theirs: bytes, *, path: str) -> Merged:
    """A run record or capture both sides changed: the bytewise smaller side, so that
    every clone keeps the same one."""
    kept, side = (ours, "ours") if ours <= theirs else (theirs, "theirs")
    note = f"memgit: {path}: both sides changed it differently; kept {side} (the bytewise smaller)"
    return Merged(data=kept, note=note)


def conflict(ours: bytes, theirs: bytes) -> Merged:
    """Both sides whole, with conflict markers around the lines where they differ."""
    mine = ours.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    other = theirs.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=mine, b=other, autojunk=False)
    for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        if tag == "equal":
            out.extend(mine[a_start:a_end])
            continue
        out.append("<" * MARKER_SIZE + " ours\n")
        out.extend(_ended(mine[a_start:a_end]))
        out.append("=" * MARKER_SIZE + "\n")
        out.extend(_ended(other[b_start:b_end]))
        out.append(">" * MARKER_SIZE + " theirs\n")
    return Merged(data="".join(out).encode("utf-8", "surrogateescape"), conflict=True)


_CONFLICT = object()  # "both sides changed this field differently"


def _three_way(
    base: Memory | None,
    ours: Memory,
    theirs: Memory,
    name: str,
    both_changed: Callable[[Any, Any, Any], Any],
) -> Any:
    old = getattr(base, name) if base is not None else _empty(name)
    mine, other = getattr(ours, name), getattr(theirs, name)
    if mine == other or other == old:
        return mine
    if mine == old:
        return other
    return both_changed(old, mine, other)


def _unchanged(old: Any, mine: Any, other: Any) -> Any:
    return _CONFLICT


def _set_merge(old: Sequence[Any], mine: Sequence[Any], other: Sequence[Any]) -> tuple[Any, ...]:
    """What both kept, plus what either added; what either removed stays removed. In a
    canonical order, the same whichever side is ours."""
    keyed = {_key(item): item for item in (*old, *mine, *other)}
    before = {_key(item) for item in old}
    kept_mine, kept_other = {_key(item) for item in mine}, {_key(item) for item in other}
    result = (before & kept_mine & kept_other) | (kept_mine - before) | (kept_other - before)
    return tuple(keyed[key] for key in sorted(result))


def _one_per_memory(supersedes: Sequence[Supersedes]) -> tuple[Supersedes, ...]:
    """One entry per replaced memory. Two clones that decided the same turn from different
    tips name different commits as the one the old memory was last active in; both held
    it, so either is true, and the smaller id is the one every clone picks."""
    kept: dict[str, Supersedes] = {}
    for item in supersedes:
        if item.id not in kept or item.commit < kept[item.id].commit:
            kept[item.id] = item
    return tuple(sorted(kept.values(), key=_key))


def _key(item: Any) -> str:
    return json.dumps(json_data(item), sort_keys=True, ensure_ascii=False)


def _by_time(mine: str | None, other: str | None, choose: Callable[..., Any]) -> str | None:
    if mine is None or other is None:
        return mine if other is None else other
    try:
        picked: str = choose((_moment(mine), mine), (_moment(other), other))[1]
    except (ValueError, TypeError):  # not a time, or one without a zone
        picked = choose(mine, other)
    return picked


def _moment(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp)


def _empty(name: str) -> Any:
    """A field's value in a memory that does not exist yet (the base of an add/add):
    nothing, so any value on either side counts as a change."""
    return () if name in _LISTS else None


def _ended(lines: list[str]) -> list[str]:
    """Lines whose last one ends with a newline, so a marker starts a line of its own."""
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + "\n"]
    return lines
