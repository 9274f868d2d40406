"""memgit-supersession: replaced memories are really retired, and ids stay unique.

- A memory's ``supersedes`` targets are gone from the tree, and the commit it
  names exists and held the target (so ``refs/memgit/retired/<id>`` can point
  there).
- No memory id is both active and retired: a memory changed in a commit (or
  brought in by a merge) was not retired earlier in that commit's history
  (``refs/memgit/retired/<id>``, or a retiring commit's trailers), and a merge does
  not keep a memory another of its parents retired, or forgot (``memgit forget``)
  since the merge base.
- Following ``supersedes`` never leads back to where it started.
- A memory id lives at one path only, across all scopes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import PurePosixPath

from memgit.catalog import Catalog
from memgit.constants import MEMORIES_DIR
from memgit.errors import MemgitError, Problem
from memgit.governance.view import CommitView
from memgit.layout import memory_path
from memgit.memory import Memory, read_memory
from memgit.store.tree import blob_at, read_blob

HOOK_ID = "memgit-supersession"
MAX_CHAIN = 1000


def _memory_in(view: CommitView, commit: str, memory_id: str, scope: str) -> Memory | None:
    """The memory ``memory_id`` as ``commit`` held it; its successor's scope is tried first."""
    tree = view.commit_tree(commit)
    if tree is None:
        return None
    guess = memory_path(scope, memory_id)
    blob = blob_at(tree, guess)
    try:
        if blob is not None:
            return read_memory(read_blob(view.repo, blob), path=guess)
        return Catalog(view.repo, tree).load(memory_id)
    except MemgitError:
        return None


def _retired_active(path: str, memory_id: str) -> Problem:
    return Problem(
        code="retired-id-active",
        message=f"memory {memory_id} was retired earlier in this history but is active again",
        path=path,
        field="id",
        hint="give a new memory a new id; a retired id stays retired",
    )


def iter_supersession_problems(view: CommitView) -> Iterator[Problem]:
    for path in sorted(view.merged_in):
        try:
            memory = view.parsed(path, read_memory)
        except MemgitError:
            continue
        if view.retired_before(memory.id):
            yield _retired_active(path, memory.id)
    for path in sorted(view.retired_beside):
        try:
            memory = view.parsed(path, read_memory)
        except MemgitError:
            continue
        yield _retired_active(path, memory.id)
    for path in sorted(view.forgotten_beside):
        yield Problem(
            code="forgotten-id-active",
            message=f"memory {PurePosixPath(path).stem} was forgotten (memgit forget) on one "
            "side of this merge, which keeps the other side's copy",
            path=path,
            field="id",
            hint=f"`git rm -f {path}`, then commit: the forget wins, as `memgit sync` "
            "decides; a memory to keep is written again under a new id",
        )
    for path in view.changed_under(f"{MEMORIES_DIR}/", ".md"):
        try:
            memory = view.parsed(path, read_memory)
        except MemgitError:
            continue
        others = [p for p in view.paths_of(memory.id) if p != path]
        if others:
            yield Problem(
                code="duplicate-id",
                message=f"id {memory.id} is also used by {others[0]}",
                path=path,
                field="id",
                hint="every memory has its own id, across all scopes",
            )
        if view.retired_before(memory.id):
            yield _retired_active(path, memory.id)
        for i, old in enumerate(memory.supersedes):
            field = f"supersedes[{i}]"
            if view.paths_of(old.id):
                yield Problem(
                    code="supersedes-active",
                    message=f"it supersedes {old.id}, which is still in the tree",
                    path=path,
                    field=f"{field}.id",
                    hint="a superseded memory leaves the tree in the commit that replaces it",
                )
            if view.commit_tree(old.commit) is None:
                yield Problem(
                    code="supersedes-unknown-commit",
                    message=f"commit {old.commit[:12]} is not in the repository",
                    path=path,
                    field=f"{field}.commit",
                )
            elif _memory_in(view, old.commit, old.id, memory.scope) is None:
                yield Problem(
                    code="supersedes-commit-mismatch",
                    message=f"commit {old.commit[:12]} does not hold memory {old.id}",
                    path=path,
                    field=f"{field}.commit",
                    hint="name the last commit in which the replaced memory was active",
                )
        if _leads_back(view, memory):
            yield Problem(
                code="supersedes-cycle",
                message=f"following supersedes from {memory.id} leads back to it",
                path=path,
                field="supersedes",
            )


def _leads_back(view: CommitView, memory: Memory) -> bool:
    """Whether following ``supersedes`` reaches ``memory`` again. Two roads to one earlier
    memory (a diamond: two clones decided the same turn from different tips, and the merge
    kept both entries) are no cycle; that memory is followed once."""
    seen = {memory.id}
    frontier = list(memory.supersedes)
    steps = 0
    while frontier and steps < MAX_CHAIN:
        steps += 1
        old = frontier.pop()
        if old.id == memory.id:
            return True
        if old.id in seen:
            continue
        seen.add(old.id)
        earlier = _memory_in(view, old.commit, old.id, memory.scope)
        if earlier is not None:
            frontier.extend(earlier.supersedes)
    return False


def main(argv: list[str] | None = None) -> int:
    from memgit.governance.hooks import run_hook

    return run_hook(HOOK_ID, iter_supersession_problems, sys.argv[1:] if argv is None else argv)
