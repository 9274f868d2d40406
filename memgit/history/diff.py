"""``memgit diff``: two versions of one memory, front matter as field changes, then the body.

A memory's front matter is data, and a line diff of YAML says ``sources`` changed by
showing six lines; a reader wants ``sources: +1``. So fields are compared as values
(``title: "a" -> "b"``, ``tags: +x -y``) and only the body is a unified diff.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from memgit.history.select import Snapshot
from memgit.jsonio import json_data, json_fields
from memgit.yamlio import split_front_matter

_LISTS = ("tags", "supersedes", "sources")


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldChange:
    """One front matter field that differs: ``old``/``new`` for a value, ``added``/
    ``removed`` for a list (tags as they are, sources and supersedes as objects)."""

    field: str
    old: Any = None
    new: Any = None
    added: tuple[Any, ...] = ()
    removed: tuple[Any, ...] = ()

    def render(self) -> str:
        if self.field not in _LISTS:
            return f"{self.field}: {_shown(self.old)} -> {_shown(self.new)}"
        if self.field == "tags":
            parts = [f"+{tag}" for tag in self.added] + [f"-{tag}" for tag in self.removed]
            return f"tags: {' '.join(parts) or 'reordered'}"
        counts = [f"+{len(self.added)}"] if self.added else []
        counts += [f"-{len(self.removed)}"] if self.removed else []
        return f"{self.field}: {' '.join(counts) or 'reordered'}"

    def to_dict(self) -> dict[str, Any]:
        """A list field shows what was added and removed, any other its old and new value."""
        if self.field in _LISTS:
            return json_fields(self, "field", "added", "removed")
        return json_fields(self, "field", "old", "new")


def _shown(value: Any) -> str:
    return "(none)" if value is None else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryDiff:
    memory_id: str
    old: Snapshot | None  # None: compared with nothing (the first version)
    new: Snapshot
    fields: tuple[FieldChange, ...]
    body: tuple[str, ...]  # unified diff lines, no trailing newlines

    def to_dict(self) -> dict[str, Any]:
        """Each side as its commit and version, not the whole snapshot."""
        return {
            "id": self.memory_id,
            "old": _side(self.old),
            "new": _side(self.new),
            "fields": json_data(self.fields),
            "body": list(self.body),
        }


def _side(snap: Snapshot | None) -> dict[str, Any] | None:
    if snap is None:
        return None
    number = snap.version.number if snap.version is not None else None
    return {"commit": snap.commit, "version": number, "date": snap.date, "path": snap.path}


def label(snap: Snapshot | None) -> str:
    if snap is None:
        return "/dev/null"
    number = f"v{snap.version.number}" if snap.version and snap.version.number else "?"
    return f"{snap.memory_id}@{number} ({snap.commit[:12]}, {snap.path})"


def diff_snapshots(old: Snapshot | None, new: Snapshot) -> MemoryDiff:
    before, old_body = split_front_matter(old.text, source=old.path) if old else ({}, "")
    after, new_body = split_front_matter(new.text, source=new.path)
    fields = []
    for key in dict.fromkeys([*before, *after]):
        was, now = before.get(key), after.get(key)
        if was == now:
            continue
        if key in _LISTS:
            old_items, new_items = list(was or []), list(now or [])
            fields.append(
                FieldChange(
                    field=key,
                    added=tuple(item for item in new_items if item not in old_items),
                    removed=tuple(item for item in old_items if item not in new_items),
                )
            )
        else:
            fields.append(FieldChange(field=key, old=was, new=now))
    body = tuple(
        line.rstrip("\n")
        for line in difflib.unified_diff(
            old_body.splitlines(keepends=True),
            new_body.splitlines(keepends=True),
            fromfile=label(old),
            tofile=label(new),
        )
    )
    return MemoryDiff(memory_id=new.memory_id, old=old, new=new, fields=tuple(fields), body=body)
