"""Purge: rewrite every local ref's history so a memory (or a leaked string) is gone.

What goes, in every commit of every branch, tag, remote-tracking and memgit ref:

- every file of the memories named (``memories/**/<id>.md``, every version, any
  scope), and their ``refs/memgit/retired/<id>``;
- their title and body lines (and, ``with_sources``, their source quotes) in the
  run records that name the memory, and in commit and tag messages, replaced by
  ``(purged)``;
- ``with_sources``: every capture a version of those memories quotes that no
  other memory file of the history mentions (by blob id);
- each ``texts`` string, wherever it stands: in any file, as written or
  JSON-escaped, and in messages.

Memory files naming a rewritten commit (a successor's ``supersedes``) are made to
name the new one. Everything else keeps its blob id. The rewrite is published
by :mod:`memgit.store.rewrite` (all refs at once, journaled), which also expires
the reflogs, prunes the old objects and drops the derived caches.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from memgit.constants import INBOX_DIR, MEMORIES_DIR, REFS_RETIRED, RUNS_DIR
from memgit.errors import ConflictError, InvalidInputError, MemgitError, UsageError
from memgit.layout import check_memory_id
from memgit.memory import read_memory
from memgit.sharing.rewrite_push import RemotePush, push_rewrite
from memgit.store import recovery
from memgit.store.lock import WriterLock
from memgit.store.repository import head_branch
from memgit.store.rewrite import (
    HistoryRewriter,
    RefMove,
    local_refs,
    publish_rewrite,
    record_purged,
)
from memgit.store.tree import read_blob

PLACEHOLDER = b"(purged)"
# Shorter strings would be found inside unrelated words and rewrite them too.
MIN_TEXT = 4
_COMMIT_ID = re.compile(rb"\b[0-9a-f]{40}\b")


@dataclass(frozen=True, slots=True, kw_only=True)
class Purged:
    """The refs a purge moved (old -> new, or deleted), what ``push`` did to each
    remote, and the remotes left holding the old history."""

    refs: tuple[RefMove, ...]
    remotes: tuple[str, ...]
    pushed: tuple[RemotePush, ...] = ()


@dataclass(slots=True)
class _Found:
    """What the history holds of the memories to purge."""

    blobs: set[str] = field(default_factory=set)  # every version's blob id
    ids: set[str] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)
    captures: set[str] = field(default_factory=set)  # blob ids their sources quote


def purge_history(
    git: pygit2.Repository,
    memory_ids: Iterable[str],
    *,
    texts: Iterable[str] = (),
    with_sources: bool = False,
    push: bool = False,
) -> Purged:
    """Rewrite history without ``memory_ids`` and ``texts``; see the module docstring.
    Refused while another writer holds the lock or the checkout has uncommitted changes.
    ``push``: then replace the old history on every configured remote that holds it
    (:mod:`memgit.sharing.rewrite_push`), still under the lock."""
    ids = list(dict.fromkeys(check_memory_id(m, field="ID") for m in memory_ids))
    strings = list(dict.fromkeys(texts))
    for i, text in enumerate(strings):
        if len(text.strip()) < MIN_TEXT:
            raise InvalidInputError(
                f"purge text {i + 1} is shorter than {MIN_TEXT} characters",
                code="invalid-purge-text",
                field="--purge-text",
                hint="a short string stands inside unrelated words; give the whole leaked value",
            )
    if not ids and not strings:
        raise UsageError("name a memory id or a --purge-text to purge", code="usage", field="ID")
    with WriterLock(Path(git.path), timeout=0) as lock:
        recovery.recover(git, lock.previous)
        lock.write({})
        _check_checkout(git)
        names = local_refs(git)
        found = _scan(git, names, ids, with_sources)
        unknown = [m for m in ids if m not in found.ids]
        if unknown:
            raise UsageError(
                f"no memory {unknown[0]!r} in the history of any local ref",
                code="unknown-memory",
                field="ID",
                hint="nothing was changed; `git log --all -- 'memories/**/ID.md'` looks too",
            )
        dropped = _unquoted(git, names, found) if with_sources else set()
        rule = _Rules(git, ids, found, dropped, strings)
        rewriter = HistoryRewriter(git, rule.file, rule.message)
        retired = [n for n in names if n.removeprefix(REFS_RETIRED) in ids]
        moves = rewriter.rewrite_refs(names, drop=retired)
        # Before any ref moves (a purge killed after would still be finished): so that
        # memgit sync never takes the old history back from a remote.
        record_purged(git, (old for old, new in rewriter.commits.items() if old != new))
        publish_rewrite(git, lock, moves, _checkout(git, moves))
        if not push:
            return Purged(refs=moves, remotes=_remotes(git, moves))
        replaced = dict(rewriter.commits)
        replaced.update((move.old, move.new) for move in moves if move.new is not None)
        dropped = {f"{REFS_RETIRED}{memory_id}" for memory_id in ids}
        pushed = push_rewrite(
            git, [str(name) for name in git.remotes.names() if name], replaced, dropped
        )
    held = tuple(sorted(remote.remote for remote in pushed if remote.error is not None))
    return Purged(refs=moves, remotes=held, pushed=pushed)


def _check_checkout(git: pygit2.Repository) -> None:
    """Nothing outside the refs may keep the old objects alive (a detached HEAD, another
    worktree's HEAD and index), and no uncommitted change may be in the way."""
    head_branch(git)
    if git.list_worktrees():
        raise ConflictError(
            f"the repository has linked worktrees ({', '.join(sorted(git.list_worktrees()))})",
            code="linked-worktrees",
            path="worktrees",
            hint="their HEAD and index keep the old history; `git worktree remove` them first",
        )
    changed = sorted(
        path
        for path, flags in git.status(untracked_files="no").items()
        if flags not in (pygit2.enums.FileStatus.CURRENT, pygit2.enums.FileStatus.IGNORED)
    )
    if changed:
        raise ConflictError(
            f"the checkout has uncommitted changes ({len(changed)} files)",
            code="local-edits",
            path=changed[0],
            hint="commit or stash them first: a rewrite replaces the checked-out history",
        )


def _memory_id(path: str) -> str | None:
    if path.startswith(f"{MEMORIES_DIR}/") and path.endswith(".md"):
        return path.rsplit("/", 1)[1].removesuffix(".md")
    return None


def _commits(git: pygit2.Repository, names: list[str]) -> Iterable[pygit2.Commit]:
    tips: list[pygit2.Oid] = []
    for name in names:
        found = git.get(git.references[name].target)
        while isinstance(found, pygit2.Tag):
            found = git.get(found.target)
        if isinstance(found, pygit2.Commit):
            tips.append(found.id)
    if not tips:
        return []
    walker = git.walk(tips[0], pygit2.enums.SortMode.NONE)
    for tip in tips[1:]:
        walker.push(tip)
    return walker


def _memory_blobs(git: pygit2.Repository, names: list[str]) -> Iterable[tuple[str, str]]:
    """(path, blob id) of every memory file of the history, each tree visited once."""
    seen: set[str] = set()
    for commit in _commits(git, names):
        try:
            top = commit.tree[MEMORIES_DIR]
        except KeyError:
            continue
        stack = [(MEMORIES_DIR, top.id)]
        while stack:
            prefix, oid = stack.pop()
            if str(oid) in seen:
                continue
            seen.add(str(oid))
            tree = git.get(oid)
            if not isinstance(tree, pygit2.Tree):
                continue
            for entry in tree:
                path = f"{prefix}/{entry.name}"
                if entry.type_str == "tree":
                    stack.append((path, entry.id))
                elif entry.type_str == "blob" and path.endswith(".md"):
                    yield path, str(entry.id)


def _scan(git: pygit2.Repository, names: list[str], ids: list[str], with_sources: bool) -> _Found:
    found = _Found()
    wanted = set(ids)
    for path, blob in _memory_blobs(git, names):
        memory_id = _memory_id(path)
        if memory_id not in wanted or blob in found.blobs:
            continue
        found.ids.add(memory_id)
        found.blobs.add(blob)
        try:
            memory = read_memory(read_blob(git, blob), path=path, blob=blob, check=False)
        except MemgitError:
            continue
        found.texts.add(memory.title)
        found.texts.update(line.strip() for line in memory.body.splitlines())
        if with_sources:
            found.captures.update(source.blob for source in memory.sources)
            found.texts.update(source.quote for source in memory.sources)
    found.texts = {text for text in found.texts if len(text) >= MIN_TEXT}
    return found


def _unquoted(git: pygit2.Repository, names: list[str], found: _Found) -> set[str]:
    """The capture blobs of ``found`` that no other memory file of the history mentions."""
    left = set(found.captures)
    checked: set[str] = set()
    for _, blob in _memory_blobs(git, names):
        if not left:
            break
        if blob in found.blobs or blob in checked:
            continue
        checked.add(blob)
        data = read_blob(git, blob)
        left = {capture for capture in left if capture.encode("ascii") not in data}
    return left


class _Rules:
    """The rewrite's rules for files and messages; each blob is decided once."""

    def __init__(
        self,
        git: pygit2.Repository,
        ids: list[str],
        found: _Found,
        dropped: set[str],
        texts: list[str],
    ) -> None:
        self.git = git
        self.ids = set(ids)
        self.dropped = dropped
        self.memory_texts = _forms(found.texts)
        self.texts = _forms(texts)
        self._kept: dict[tuple[str, str], pygit2.Oid | bytes] = {}

    def file(
        self, path: str, oid: pygit2.Oid, commits: Mapping[str, str]
    ) -> pygit2.Oid | bytes | None:
        if _memory_id(path) in self.ids:
            return None
        if path.startswith(f"{INBOX_DIR}/") and str(oid) in self.dropped:
            return None
        kind = "memory" if _memory_id(path) else "run" if path.startswith(f"{RUNS_DIR}/") else ""
        key = (kind, str(oid))
        if key not in self._kept:
            self._kept[key] = self._content(kind, oid, commits)
        return self._kept[key]

    def _content(
        self, kind: str, oid: pygit2.Oid, commits: Mapping[str, str]
    ) -> pygit2.Oid | bytes:
        data = read_blob(self.git, oid)
        new = _replace(data, self.texts)
        if kind == "run" and any(m.encode("ascii") in new for m in self.ids):
            new = _replace(new, self.memory_texts)
        if kind == "memory":
            new = _COMMIT_ID.sub(lambda m: commits.get(m[0].decode(), m[0].decode()).encode(), new)
        return oid if new == data else new

    def message(self, data: bytes) -> bytes:
        return _replace(_replace(data, self.texts), self.memory_texts)


def _forms(texts: Iterable[str]) -> list[bytes]:
    """Each text as written and as a JSON string holds it, longest first (so a text
    inside a longer one does not leave the rest behind)."""
    forms = set()
    for text in texts:
        forms.add(text.encode("utf-8"))
        forms.add(json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8"))
    return sorted(forms, key=len, reverse=True)


def _replace(data: bytes, forms: list[bytes]) -> bytes:
    for form in forms:
        if form in data:
            data = data.replace(form, PLACEHOLDER)
    return data


def _checkout(git: pygit2.Repository, moves: tuple[RefMove, ...]) -> tuple[str, str] | None:
    """The checked-out branch's tree before and after, when the rewrite moves it."""
    if git.head_is_unborn or git.head_is_detached or git.is_bare:
        return None
    branch = git.references["HEAD"].target
    for move in moves:
        if move.name == branch and move.new is not None:
            old = git.get(move.old)
            new = git.get(move.new)
            if isinstance(old, pygit2.Commit) and isinstance(new, pygit2.Commit):
                return str(old.tree_id), str(new.tree_id)
    return None


def _remotes(git: pygit2.Repository, moves: tuple[RefMove, ...]) -> tuple[str, ...]:
    """Configured remotes that still hold the old history: those whose tracking refs
    moved, and those never fetched (memgit cannot tell what they hold)."""
    held = []
    names = local_refs(git)
    for remote in git.remotes:
        prefixes = (f"refs/remotes/{remote.name}/", f"refs/memgit-sync/{remote.name}/")
        tracked = [n for n in names if n.startswith(prefixes)]
        moved = any(move.name.startswith(prefixes) for move in moves)
        if moved or not tracked:
            held.append(str(remote.name))
    return tuple(sorted(held))
