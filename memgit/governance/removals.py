"""A person's ``git rm`` of a memory is recorded as a retraction, not silently accepted.

memgit's own commits say what they retired in trailers (``Memgit-Retracted: ID``,
``Memgit-Superseded: OLD -> NEW``) and set ``refs/memgit/retired/<id>``, so a
retired id can never come back and recall can name what replaced it. A person's
commit that deletes a memory gets the same record from two hooks:

- ``memgit-record-removals`` (``commit-msg`` stage) adds the trailer for each
  memory the staged tree deletes: ``Memgit-Superseded: OLD -> NEW`` when a staged
  memory lists it in ``supersedes``, else ``Memgit-Retracted: OLD``. A memory
  moved to another path (same id) is not removed; an id the message already
  names in such a trailer, or in ``Memgit-Forgotten`` (forget it without retiring
  the id, as ``memgit forget`` does), is left as written. In a merge, a memory
  another side deleted is that side's change: its commits carry their trailers.
- ``memgit-record-retired-refs`` (``post-commit`` stage; it is
  :func:`memgit.sharing.refs.record_refs`, beside the refs sync records) sets the refs memgit
  would have set for the commit just made: ``refs/memgit/retired/<id>`` at its
  parent (the last commit the memory was in) for each id its trailers retire,
  and ``refs/memgit/runs/<id>`` for each run it names, where they are missing.
  With ``--merged`` (``post-merge`` stage) it does so for every commit a ``git
  merge`` or ``git pull`` brought: a proposal merged with a host's button comes
  without its refs, as ``memgit sync`` would otherwise record them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pygit2

from memgit import git
from memgit.constants import (
    MEMORIES_DIR,
    TRAILER_FORGOTTEN,
    TRAILER_RETRACTED,
    TRAILER_SUPERSEDED,
)
from memgit.errors import MemgitError
from memgit.governance.hooks import staged_view
from memgit.governance.retirements import retired_ids
from memgit.governance.secrets import message_as_recorded
from memgit.governance.view import CommitView
from memgit.memory import read_memory
from memgit.trailers import parse_trailers


def _memory_id(path: str) -> str | None:
    if path.startswith(f"{MEMORIES_DIR}/") and path.endswith(".md"):
        return path.rsplit("/", 1)[1].removesuffix(".md")
    return None


def removal_trailers(view: CommitView, message: str) -> list[str]:
    """The trailers (``Key: value``) the staged change needs for the memories it
    removes and the message does not already name."""
    removed = [
        (path, memory_id)
        for path in sorted(view.deleted)
        if (memory_id := _memory_id(path)) is not None
    ]
    if not removed:
        return []
    # A move adds the id at its new path in the same commit: no walk of the tree.
    present = {_memory_id(path) for path in view.changed}
    named = set(retired_ids(message)) | {
        value.strip() for key, value in parse_trailers(message) if key == TRAILER_FORGOTTEN
    }
    others = [tree for tree, _ in view.joins]
    successors = _successors(view)
    trailers = []
    for path, memory_id in removed:
        if memory_id in present or memory_id in named:
            continue
        if any(_blob(tree, path) is None for tree in others):
            continue  # a side of the merge removed it, with its own trailer
        successor = successors.get(memory_id)
        if successor is not None:
            trailers.append(f"{TRAILER_SUPERSEDED}: {memory_id} -> {successor}")
        else:
            trailers.append(f"{TRAILER_RETRACTED}: {memory_id}")
    return trailers


def _blob(tree: pygit2.Tree, path: str) -> pygit2.Object | None:
    try:
        return tree[path]
    except KeyError:
        return None


def _successors(view: CommitView) -> dict[str, str]:
    """Removed id -> the staged memory that says it supersedes it."""
    found: dict[str, str] = {}
    for path in sorted(view.changed):
        if _memory_id(path) is None:
            continue
        try:
            memory = view.parsed(path, read_memory)
        except MemgitError:
            continue  # memgit-schemas says why
        for old in memory.supersedes:
            found.setdefault(old.id, memory.id)
    return found


def record_trailers(argv: list[str] | None = None) -> int:
    """``memgit-record-removals FILE``: add the removal trailers to git's message file."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "error[usage]: memgit-record-removals takes the message file git passes",
            file=sys.stderr,
        )
        return 2
    message_file = Path(args[0])
    try:
        view = staged_view(Path.cwd(), ())
        message = message_as_recorded(message_file.read_bytes().decode("utf-8", "replace"))
        trailers = removal_trailers(view, message)
    except MemgitError as err:
        print(err.render(), file=sys.stderr)
        return int(err.exit_status)
    if not trailers:
        return 0
    # git's own trailer writer: it knows comment lines, the scissors line of
    # `git commit -v` and an existing trailer block.
    command = ["interpret-trailers", "--in-place"]
    for trailer in trailers:
        command += ["--trailer", trailer]
    done = git.run(Path.cwd(), *command, str(message_file))
    if not done.ok:
        print(f"error[git-failed]: git interpret-trailers: {done.said}", file=sys.stderr)
        return 1
    for trailer in trailers:
        print(f"memgit: recorded a removed memory: {trailer}", file=sys.stderr)
    return 0
