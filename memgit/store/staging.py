"""The staged tree: what ``git commit`` would commit now (for the pre-commit hooks).

git reads the index (``git diff-index --cached HEAD``), because only git reads
the index the commit in progress uses: ``git commit -a`` and ``git commit
PATH`` stage into a temporary index named by ``GIT_INDEX_FILE``, and an index
in split mode (``core.splitIndex``) is beyond libgit2. The staged changes are
then placed on HEAD's tree in memory. Nothing is written to the index, so
hooks running side by side never wait for its lock.
"""

from __future__ import annotations

import pygit2

from memgit import git
from memgit.errors import ConflictError
from memgit.store.tree import Entry, place_entries, read_tree

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_DIFF = ("diff-index", "--cached", "--no-renames", "--ignore-submodules=none", "-z")


def staged_tree(repo: pygit2.Repository, base: pygit2.Commit | None) -> pygit2.Tree:
    """The tree ``git commit`` would record on top of ``base`` (HEAD, None if unborn)."""
    listing = _git(repo, *_DIFF, str(base.id) if base is not None else EMPTY_TREE)
    fields = listing.split(b"\0")
    changes: dict[str, Entry | None] = {}
    for meta, raw_path in zip(fields[0::2], fields[1::2], strict=False):
        _old_mode, new_mode, _old_id, new_id, status = meta.lstrip(b":").split(b" ")
        path = raw_path.decode("utf-8", "surrogateescape")
        if status == b"U":
            raise ConflictError(
                "the index has unresolved merge conflicts",
                code="merge-conflict",
                path="index",
                hint="resolve the conflicts and stage the result first",
            )
        if status == b"D":
            changes[path] = None
        else:
            changes[path] = (pygit2.Oid(hex=new_id.decode("ascii")), int(new_mode, 8))
    return read_tree(repo, place_entries(repo, base.tree if base is not None else None, changes))


def _git(repo: pygit2.Repository, *args: str) -> bytes:
    done = git.run(repo.workdir, "-c", "core.quotePath=false", *args, in_hook=True)
    if not done.ok:
        raise git.failed(
            done,
            path="index",
            what=" on the index",
            hint="run `git status` to see what git says about the index, fix it, and retry",
        )
    return done.stdout
