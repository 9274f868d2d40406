"""What each ``refs/memgit/*`` ref claims, and whether the commit it names bears it out.

memgit reads its refs as facts about history: ``runs/<id>`` says "this commit made run
<id>" (so its turns are processed), ``retired/<id>`` "memory <id> was last active here
and a later commit retired it" (so the id may not come back), ``applied/<id>`` and
``rejected/<id>`` "this proposal was approved / rejected" (so nobody is asked again).
A ref that names a commit which does not hold what it claims would steer every clone
that reads it: a forged ``retired`` ref blocks a run forever, a deleted ``rejected``
ref lets a rejected proposal be approved. So a remote's pre-receive hook checks every
memgit ref a push creates (or, in a rewrite the remote allows, moves) against the
commit it names, one rule per namespace; a fetch can ask the same question.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pygit2

from memgit.constants import (
    MEMORIES_DIR,
    REFS_APPLIED,
    REFS_REJECTED,
    REFS_RETIRED,
    REFS_RUNS,
    TRAILER_REJECTED,
    TRAILER_RUN,
)
from memgit.errors import Problem, quote_foreign
from memgit.layout import is_memory_id, is_run_id, run_path
from memgit.store.tree import blob_at, iter_blobs
from memgit.trailers import parse_trailers

MEMGIT_REFS = "refs/memgit/"


class Targets:
    """The question "does this commit hold what the ref claims?", asked of one repository
    whose branches are at ``branch_tips`` (after the push, when a push is checked)."""

    def __init__(self, repo: pygit2.Repository, branch_tips: Iterable[pygit2.Oid]) -> None:
        self.repo = repo
        self.branch_tips = tuple(dict.fromkeys(branch_tips))

    def problem(self, name: str, target: str) -> Problem | None:
        """Why ``name`` may not name ``target``, or None when the commit bears it out
        (and for a ref outside the namespaces memgit reads, which claims nothing)."""
        kind = kind_of(name)
        if kind is None:
            return None
        ref_id = name[len(kind.prefix) :]
        commit = self.repo.get(target)
        if not isinstance(commit, pygit2.Commit):
            why = f"{target[:12]} is not a commit"
        else:
            why = kind.check(self, ref_id, commit)
        if why is None:
            return None
        return Problem(
            code="memgit-ref-target",
            message=f"{kind.what} is set where it does not belong: {why}",
            path=name,
            hint=f"{kind.prefix}<id> names {kind.names}; memgit sets it, do not push one by hand",
        )

    def run_commit(self, run_id: str, commit: pygit2.Commit) -> str | None:
        """Why ``commit`` is not the commit of run ``run_id``: its message must name the
        run (``Memgit-Run``) and its tree hold the run's record."""
        short = str(commit.id)[:12]
        if not is_run_id(run_id):
            return f"{quote_foreign(run_id)} is not a run id"
        if run_id not in _trailer_values(commit, TRAILER_RUN):
            return f"commit {short} is not run {run_id}'s (no {TRAILER_RUN}: {run_id})"
        if blob_at(commit.tree, run_path(run_id)) is None:
            return f"commit {short} holds no run record {run_path(run_id)}"
        return None

    def rejection(self, run_id: str, commit: pygit2.Commit) -> str | None:
        """Why ``commit`` does not record run ``run_id``'s rejection: a commit saying so
        (``Memgit-Rejected``) on top of the proposal's commit."""
        if not is_run_id(run_id):
            return f"{quote_foreign(run_id)} is not a run id"
        if run_id in _trailer_values(commit, TRAILER_REJECTED) and commit.parents:
            return self.run_commit(run_id, commit.parents[0])
        return f"commit {str(commit.id)[:12]} records no rejection of run {run_id}"

    def retired_at(self, memory_id: str, commit: pygit2.Commit) -> str | None:
        """Why ``commit`` is not where memory ``memory_id`` was last active before it was
        retired: it must hold the memory, and a branch that descends from it must no
        longer hold it (a retired id never comes back, so every branch that retired it
        lacks it; a branch that merely has not retired it yet keeps it)."""
        short = str(commit.id)[:12]
        if not is_memory_id(memory_id):
            return f"{quote_foreign(memory_id)} is not a memory id"
        if not self.holds(commit, memory_id):
            return f"commit {short} holds no memory {memory_id}"
        later = [
            tip
            for tip in self.branch_tips
            if tip != commit.id and self.repo.descendant_of(tip, commit.id)
        ]
        if not later:
            return f"no branch descends from {short}"
        if all(self.holds(self.repo[tip].peel(pygit2.Commit), memory_id) for tip in later):
            return f"{memory_id} is still active on every branch that descends from {short}"
        return None

    def holds(self, commit: pygit2.Commit, memory_id: str) -> bool:
        """Whether ``commit``'s tree has memory ``memory_id``, in any scope."""
        name = f"{memory_id}.md"
        return any(
            path.rsplit("/", 1)[-1] == name
            for path, _ in iter_blobs(self.repo, commit.tree, MEMORIES_DIR)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RefKind:
    """One namespace of ``refs/memgit/``: what its refs claim and how that is checked."""

    prefix: str
    what: str  # the ref, as an error names it
    names: str  # what the ref must name, as a hint says it
    rewritten_code: str  # the problem code when one is deleted or moved
    check: Callable[[Targets, str, pygit2.Commit], str | None]


KINDS: dict[str, RefKind] = {
    kind.prefix: kind
    for kind in (
        RefKind(
            prefix=REFS_RUNS,
            what="a run's ref",
            names="the commit that made the run (its Memgit-Run trailer and record)",
            rewritten_code="memgit-ref-rewritten",
            check=Targets.run_commit,
        ),
        RefKind(
            prefix=REFS_RETIRED,
            what="a retired memory's ref",
            names="the last commit the memory was active in, below the commit that retired it",
            # The code this ref's protection has always had.
            rewritten_code="retired-ref-rewritten",
            check=Targets.retired_at,
        ),
        RefKind(
            prefix=REFS_APPLIED,
            what="an approved proposal's ref",
            names="the proposal's commit (its Memgit-Run trailer and record)",
            rewritten_code="memgit-ref-rewritten",
            check=Targets.run_commit,
        ),
        RefKind(
            prefix=REFS_REJECTED,
            what="a rejected proposal's ref",
            names="the commit recording the rejection, on top of the proposal's commit",
            rewritten_code="memgit-ref-rewritten",
            check=Targets.rejection,
        ),
    )
}


def kind_of(name: str) -> RefKind | None:
    """The namespace ``name`` is in, or None outside the ones memgit reads."""
    return next((kind for prefix, kind in KINDS.items() if name.startswith(prefix)), None)


def rewritten(name: str) -> Problem:
    """The problem with deleting or moving memgit ref ``name`` (outside a rewrite the
    remote allows)."""
    kind = kind_of(name)
    return Problem(
        code=kind.rewritten_code if kind is not None else "memgit-ref-rewritten",
        message=f"{kind.what if kind is not None else 'a memgit ref'} is deleted or moved",
        path=name,
        hint="refs/memgit/* only grow: what they record stays recorded (only a history "
        "rewrite the remote allows, sharing.allow_rewrite in its memgit.yaml, may move them)",
    )


def _trailer_values(commit: pygit2.Commit, key: str) -> list[str]:
    if "Memgit-" not in commit.message:
        return []
    return [value.strip() for found, value in parse_trailers(commit.message) if found == key]
