"""The merge ``memgit sync`` makes: path by path, with no rename detection.

A memory's file name is its id, so two files are one memory exactly when their names
match; git's rename detection pairs files by similar bytes instead, and two memories
of one fact (a teammate's new memory, and the one forgotten there and edited here)
look alike. git then takes the new memory for the old one renamed: the merge puts
both into one file, at the new one's path, under one of the two ids, and the
resolution can only fail ``id-mismatch``. So sync merges each path on its own, as
``git merge`` does with rename detection off (``memgit init`` sets that for the
person's merge too): a file only one side changed takes that side, a memory, run
record or capture both changed goes through the memory-aware merge
(:func:`memgit.merge.merge_file`), any other file both changed
through a line merge, and anything else (one side changed what the other removed;
lines both changed) is a conflict for a person.
"""

from __future__ import annotations

import pygit2

from memgit.errors import ConflictError, quote_foreign
from memgit.merge import merge_file
from memgit.store.tree import Entry, diff_trees, read_blob

_BLOB = pygit2.enums.FileMode.BLOB
_MEMGIT_FILES = (("memories/", ".md"), ("runs/", ".json"), ("inbox/", ".yaml"))


def merge_changes(
    git: pygit2.Repository,
    base: pygit2.Tree | None,
    ours: pygit2.Tree,
    theirs: pygit2.Tree,
    *,
    hint: str,
) -> dict[str, bytes | None]:
    """The files to change in ``ours`` (None: remove) to merge ``theirs`` into it from
    ``base``; a ConflictError naming every path in conflict (with ``hint``)."""
    mine = diff_trees(git, base, ours)
    changes: dict[str, bytes | None] = {}
    conflicted: list[str] = []
    for path, entry in sorted(diff_trees(git, base, theirs).items()):
        if path not in mine:
            changes[path] = file_content(git, path, entry)
            continue
        if mine[path] == entry:
            continue
        current = mine[path]
        merged = _both_changed(git, path, base, current, entry)
        if merged is None:
            conflicted.append(path)
        elif current is not None and merged != read_blob(git, current[0]):
            changes[path] = merged
    if conflicted:
        raise ConflictError(
            f"{len(conflicted)} file(s) changed on both sides in ways that do not merge: "
            + ", ".join(quote_foreign(path) for path in conflicted[:5]),
            code="sync-conflict",
            path=conflicted[0],
            hint=hint,
        )
    return changes


def _both_changed(
    git: pygit2.Repository,
    path: str,
    base: pygit2.Tree | None,
    ours: Entry | None,
    theirs: Entry | None,
) -> bytes | None:
    """The merge of a file both sides changed differently; None for a conflict."""
    if ours is None or theirs is None:
        return None  # one side changed what the other removed
    for side in (ours, theirs):
        file_content(git, path, side)  # refuses a file that is not a regular one
    old = _entry(base, path)
    before = read_blob(git, old[0]) if old is not None and old[1] == _BLOB else b""
    mine, other = read_blob(git, ours[0]), read_blob(git, theirs[0])
    if any(path.startswith(folder) and path.endswith(suffix) for folder, suffix in _MEMGIT_FILES):
        merged = merge_file(before, mine, other, path=path)
        return None if merged.conflict else merged.data
    try:
        result = git.merge_file_from_index(
            _index_entry(path, old) if old is not None else None,
            _index_entry(path, ours),
            _index_entry(path, theirs),
        )
    except (pygit2.GitError, UnicodeDecodeError):
        return None
    if not result.automergeable:
        return None
    return result.contents.encode("utf-8", "surrogateescape")


def file_content(git: pygit2.Repository, path: str, entry: Entry | None) -> bytes | None:
    """A side's file as publish takes it. memgit writes only regular files, so an
    executable, a symlink or a submodule the merge would bring is left to git."""
    if entry is None:
        return None
    if entry[1] != _BLOB:
        raise ConflictError(
            f"{path} is not a regular file (mode {entry[1]:o}); memgit sync joins "
            "only regular files",
            code="sync-conflict",
            path=path,
            hint="join this once with git itself (`git pull`), then sync again",
        )
    return read_blob(git, entry[0])


def _index_entry(path: str, entry: Entry) -> pygit2.IndexEntry:
    return pygit2.IndexEntry(path, entry[0], pygit2.enums.FileMode(entry[1]))


def _entry(tree: pygit2.Tree | None, path: str) -> Entry | None:
    if tree is None:
        return None
    try:
        item = tree[path]
    except KeyError:
        return None
    return (item.id, item.filemode)
