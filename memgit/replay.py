"""``memgit replay RUN_ID...``: ask a backend again what a committed run was asked, and
diff its answer against what the run committed, without writing anything.

A run's record names the captures it read (by blob) and the Gate answer it stored, so
the question can be put again as it was: the same units (those the stored answer
covered can support a memory; the others were decided before, and are context), and
the related memories as the run's parent commit holds them, found by the recall index
as that commit was (as ``memgit process`` found them then: a memory a later run retired
is still there to supersede, one a later run made is not). The prompt's digest says
whether it is the very prompt the run was asked (``same_prompt``). The answer is
checked against the parent's tree as the run's was, applied there in memory, and each
memory file it would write is compared with the run's commit. Nothing is written: no
object, ref or working file (the recall index in ``.git/memgit/`` is brought up to date,
as any command does).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from itertools import chain
from typing import Any

import pygit2

from memgit.catalog import Catalog
from memgit.constants import MEMORIES_DIR, REFS_RUNS, TRAILER_RUN
from memgit.derived.lexical import LexicalIndex
from memgit.derived.lookup import IndexLookup
from memgit.errors import Problem, UsageError
from memgit.gate.backends import Backend
from memgit.gate.contract import GateOutputError
from memgit.jsonio import json_as, json_data
from memgit.layout import check_run_id, run_path
from memgit.process import RunSpec, check_answer, recorded_batch, request_for, run_change
from memgit.runrecord import parse_run_record
from memgit.settings import Settings
from memgit.store.tree import blob_at, diff_trees, read_blob
from memgit.trailers import parse_trailers

# How far back along the first parents a run without its ref is looked for.
MAX_WALK = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChange:
    """One memory file the run and the replay leave differently (``None``: not written)."""

    path: str
    committed: str | None
    replayed: str | None

    @property
    def diff(self) -> str:
        """A unified diff, ``committed/PATH`` against ``replayed/PATH``."""
        return "".join(
            difflib.unified_diff(
                (self.committed or "").splitlines(keepends=True),
                (self.replayed or "").splitlines(keepends=True),
                fromfile=f"committed/{self.path}",
                tofile=f"replayed/{self.path}",
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """Whether each side holds the file, not its blob ids, beside the diff."""
        return {
            "path": self.path,
            "committed": self.committed is not None,
            "replayed": self.replayed is not None,
            "diff": self.diff,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """One run asked again: what it committed, what the backend answers now."""

    run_id: str
    commit: str
    backend: str
    model: str | None
    same_prompt: bool
    committed: tuple[dict[str, Any], ...] = field(metadata=json_as(before=("same",)))
    replayed: tuple[dict[str, Any], ...]
    refused: tuple[Problem, ...]
    files: tuple[FileChange, ...]

    @property
    def same(self) -> bool:
        """Whether the replay would have written exactly what the run did."""
        return not self.refused and not self.files


def replay_runs(
    git: pygit2.Repository,
    settings: Settings,
    index: LexicalIndex,
    backend: Backend,
    run_ids: Iterable[str],
    *,
    last: int | None = None,
) -> tuple[Replay, ...]:
    """Each run of ``run_ids`` (in HEAD's history), then the ``last`` runs along HEAD's
    first parents (oldest first), asked again of ``backend``."""
    ids = [check_run_id(run_id, field="RUN_ID") for run_id in run_ids]
    if last is not None:
        if last < 1:
            raise UsageError("--last takes a number of runs, 1 or more", field="--last")
        ids += [run_id for run_id in recent_runs(git, last) if run_id not in ids]
    if not ids:
        raise UsageError("name a run id, or --last N", code="usage", field="RUN_ID")
    index.refresh()
    lookup = IndexLookup(index)
    return tuple(_replay(git, settings, index, lookup, backend, run_id) for run_id in ids)


def _replay(
    git: pygit2.Repository,
    settings: Settings,
    index: LexicalIndex,
    lookup: IndexLookup,
    backend: Backend,
    run_id: str,
) -> Replay:
    commit, entry = run_commit(git, run_id)
    record = parse_run_record(read_blob(git, entry), path=run_path(run_id))
    parent = commit.parents[0] if commit.parents else None
    catalog = Catalog(git, parent.tree if parent is not None else None)
    batch = recorded_batch(git, record)
    request = request_for(settings, batch, index, catalog.tree, as_of=parent)
    replayed: tuple[dict[str, Any], ...] = ()
    refused: tuple[Problem, ...] = ()
    written: dict[str, bytes | None] = {}
    try:
        gate = check_answer(backend.answer(request), batch, settings, catalog)
    except GateOutputError as err:
        refused = err.problems
    else:
        spec = RunSpec(
            run_id=run_id,
            now=datetime.fromisoformat(record.created.replace("Z", "+00:00")),
            backend=backend.name,
            model=backend.model,
            prompt_digest=request.digest,
            batch=batch,
            gate=gate,
        )
        applied: list[Any] = []
        change = run_change(lookup, settings, spec, catalog, parent, applied)
        replayed = tuple(json_data(decision) for decision in applied)
        written = dict(change.files) if change is not None else {}
    return Replay(
        run_id=run_id,
        commit=str(commit.id),
        backend=backend.name,
        model=backend.model,
        same_prompt=request.digest == record.prompt_digest,
        committed=record.decisions,
        replayed=replayed,
        refused=refused,
        files=() if refused else _memory_changes(git, parent, commit, written),
    )


def _memory_changes(
    git: pygit2.Repository,
    parent: pygit2.Commit | None,
    commit: pygit2.Commit,
    written: dict[str, bytes | None],
) -> tuple[FileChange, ...]:
    """The memory files the run's commit and the replay leave differently: each path
    either changed, as the commit holds it against as the replay would leave it."""
    before = parent.tree if parent is not None else None
    paths = {
        path
        for path in [*diff_trees(git, before, commit.tree), *written]
        if path.startswith(f"{MEMORIES_DIR}/")
    }
    changes = []
    for path in sorted(paths):
        committed = _text(git, commit.tree, path)
        if path in written:
            data = written[path]
            replayed = data.decode("utf-8") if data is not None else None
        else:
            replayed = _text(git, before, path)
        if committed != replayed:
            changes.append(FileChange(path=path, committed=committed, replayed=replayed))
    return tuple(changes)


def _text(git: pygit2.Repository, tree: pygit2.Tree | None, path: str) -> str | None:
    blob = blob_at(tree, path) if tree is not None else None
    return read_blob(git, blob).decode("utf-8") if blob is not None else None


def _first_parents(git: pygit2.Repository) -> Iterable[pygit2.Commit]:
    if git.head_is_unborn:
        return
    walker = git.walk(git.head.target, pygit2.enums.SortMode.TOPOLOGICAL)
    walker.simplify_first_parent()
    for number, commit in enumerate(walker):
        if number >= MAX_WALK:
            return
        yield commit


def _runs_of(commit: pygit2.Commit) -> list[str]:
    if TRAILER_RUN not in commit.message:
        return []
    return [value for key, value in parse_trailers(commit.message) if key == TRAILER_RUN]


def recent_runs(git: pygit2.Repository, count: int) -> list[str]:
    """The ids of the last ``count`` runs along HEAD's first parents, oldest first."""
    found: list[str] = []
    for commit in _first_parents(git):
        found += _runs_of(commit)
        if len(found) >= count:
            break
    return found[:count][::-1]


def run_commit(git: pygit2.Repository, run_id: str) -> tuple[pygit2.Commit, pygit2.Oid]:
    """The commit that made run ``run_id`` and its record's blob: its
    ``refs/memgit/runs/`` ref, else the first commit along HEAD's first parents whose
    ``Memgit-Run`` trailer names it; either must hold the record."""
    ref = git.references.get(REFS_RUNS + run_id)
    named = git.get(ref.target) if ref is not None else None
    walked = (commit for commit in _first_parents(git) if run_id in _runs_of(commit))
    # Lazily: the walk is taken only when the ref is missing or holds no record.
    candidates = chain([named] if isinstance(named, pygit2.Commit) else [], walked)
    for commit in candidates:
        entry = blob_at(commit.tree, run_path(run_id))
        if entry is not None:
            return commit, entry
    raise UsageError(
        f"no run {run_id} in this branch's history",
        code="unknown-run",
        field="RUN_ID",
        hint="`git log --format='%h %(trailers:key=Memgit-Run)'` lists the runs",
    )
