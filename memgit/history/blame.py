"""``memgit blame``: for each line of a memory's body, the version that last changed it
and the source quotes behind that version's run.

git's own blame does the line work (``git blame --porcelain``: every side of a
merge, the history ``memgit log`` walks, so a line a teammate's run wrote is that
run's, not the merge's). Where a version moved the file to another scope and git
did not see a rename (an UPDATE that changed much of the file), the lines git gives
to that commit are blamed again on the old path in its parent, matched by content.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import pygit2

from memgit import git
from memgit.history.provenance import Quote, run_quotes
from memgit.history.select import Snapshot
from memgit.history.versions import MemoryHistory, Version, run_record
from memgit.jsonio import json_data
from memgit.store.tree import blob_at, read_blob
from memgit.yamlio import split_front_matter

# How many scope moves blame follows back (each one costs another git blame).
MAX_MOVES = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class BlameLine:
    line: int  # in the body, from 1
    text: str
    commit: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BlameCommit:
    """A commit that last changed some lines: its version (None off the walked history)
    and the quotes behind its run's candidate for this memory (none for a person's)."""

    commit: str
    version: Version | None
    quotes: tuple[Quote, ...]

    def to_dict(self) -> dict[str, Any]:
        """The version's facts flattened beside the commit, when a version wrote it."""
        data: dict[str, Any] = {"commit": self.commit}
        if self.version is not None:
            version = json_data(self.version)
            for key in ("version", "change", "date", "author", "run_id", "backend", "model"):
                data[key] = version[key]
        data["quotes"] = json_data(self.quotes)
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class Blame:
    memory_id: str
    snapshot: Snapshot
    lines: tuple[BlameLine, ...]
    commits: tuple[BlameCommit, ...]

    def to_dict(self) -> dict[str, Any]:
        """The snapshot reduced to its commit, version number and path."""
        snap = self.snapshot
        return {
            "id": self.memory_id,
            "commit": snap.commit,
            "version": snap.version.number if snap.version is not None else None,
            "path": snap.path,
            "lines": json_data(self.lines),
            "commits": json_data(self.commits),
        }


def blame_memory(repo: pygit2.Repository, history: MemoryHistory, snap: Snapshot) -> Blame:
    """Blame the body of the file ``snap`` shows."""
    _, body = split_front_matter(snap.text, source=snap.path)
    file_lines = snap.text.splitlines()
    body_lines = body.splitlines()
    offset = len(file_lines) - len(body_lines)
    versions = {version.commit: version for version in history.versions}
    origins = _blame(repo, snap.commit, snap.path, versions, MAX_MOVES)
    lines = tuple(
        BlameLine(line=number, text=text, commit=origins[offset + number - 1])
        for number, text in enumerate(body_lines, start=1)
    )
    commits = []
    for commit_id in dict.fromkeys(line.commit for line in lines):
        version = versions.get(commit_id)
        quotes: tuple[Quote, ...] = ()
        if version is not None and version.run_id is not None:
            commit = repo[commit_id].peel(pygit2.Commit)
            record = run_record(repo, commit, version.run_id)
            if record is not None:
                quotes = run_quotes(repo, record, history.memory_id)
        commits.append(BlameCommit(commit=commit_id, version=version, quotes=quotes))
    return Blame(memory_id=history.memory_id, snapshot=snap, lines=lines, commits=tuple(commits))


def _blame(
    repo: pygit2.Repository, commit: str, path: str, versions: dict[str, Version], moves: int
) -> list[str]:
    """The commit each line of ``path`` at ``commit`` comes from."""
    rows = _git_blame(repo, commit, path)
    result = [row[0] for row in rows]
    for moved_in, version in versions.items():
        if version.moved_from is None or moves <= 0 or moved_in not in result:
            continue
        target = repo[moved_in].peel(pygit2.Commit)
        parent = next(
            (p for p in target.parents if blob_at(p.tree, version.moved_from) is not None),
            target.parents[0],
        )
        old = _lines_at(repo, parent, version.moved_from)
        new = _lines_at(repo, target, version.path)
        if old is None or new is None:
            continue
        earlier = _blame(repo, str(parent.id), version.moved_from, versions, moves - 1)
        mapped = _matching(old, new)
        for number, (origin, orig_line) in enumerate(rows):
            if origin == moved_in and orig_line - 1 in mapped:
                result[number] = earlier[mapped[orig_line - 1]]
    return result


def _lines_at(repo: pygit2.Repository, commit: pygit2.Commit, path: str) -> list[str] | None:
    blob = blob_at(commit.tree, path)
    if blob is None:
        return None
    return read_blob(repo, blob).decode("utf-8", "replace").splitlines()


def _matching(old: list[str], new: list[str]) -> dict[int, int]:
    """new line index -> old line index, for the lines a diff keeps."""
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    mapped = {}
    for block in matcher.get_matching_blocks():
        for step in range(block.size):
            mapped[block.b + step] = block.a + step
    return mapped


def _git_blame(repo: pygit2.Repository, commit: str, path: str) -> list[tuple[str, int]]:
    """(commit, line number in that commit's version of the file) for each line."""
    done = git.run(repo.path, "blame", "--porcelain", commit, "--", path)
    if not done.ok:
        raise git.failed(
            done, path=path, hint=f"run `git blame {commit[:12]} -- {path}` to see the whole error"
        )
    rows = []
    for line in done.stdout.split(b"\n"):
        parts = line.split(b" ")
        if len(parts) in (3, 4) and len(parts[0]) == 40 and not line.startswith(b"\t"):
            try:
                rows.append((parts[0].decode("ascii"), int(parts[1])))
            except (UnicodeDecodeError, ValueError):
                continue
    return rows
