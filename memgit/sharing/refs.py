"""``refs/memgit/*`` of a clone and its remote, joined: every ref either side has.

A run ref or a retired memory's ref that only one side has is taken as it is: the
clone takes the remote's, the push creates the clone's there. When both have one
and they differ (two clones made the same run in different commits, or retired the
same memory) the remote's wins: the first clone to push it decided, every clone
converges on that value, and no ref on the remote is ever moved or deleted (a
retired memory's ref only grows; pre-receive refuses anything else).

The ``memgit-record-retired-refs`` hook (post-commit, post-merge) records the same refs
for a person's commits and merges (:func:`record_refs`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pygit2

from memgit.constants import REFS_RETIRED, REFS_RUNS, TRAILER_RUN
from memgit.errors import MemgitError
from memgit.governance.retirements import retired_ids
from memgit.layout import is_memory_id, is_run_id
from memgit.store.refs import set_refs
from memgit.store.repository import open_repository
from memgit.trailers import parse_trailers

MEMGIT_REFS = "refs/memgit/"


def local_refs(repo: pygit2.Repository) -> dict[str, pygit2.Oid]:
    found = {}
    for name in repo.references:
        if name.startswith(MEMGIT_REFS):
            target = repo.references[name].target
            if isinstance(target, pygit2.Oid):
                found[name] = target
    return found


def adopt(repo: pygit2.Repository, fetched: Mapping[str, pygit2.Oid]) -> list[str]:
    """Set each local ``refs/memgit/*`` the remote has to the remote's value; the names
    that changed."""
    return sorted(set_refs(repo, fetched, message="memgit: sync"))


def recorded(
    repo: pygit2.Repository,
    commits: Iterable[pygit2.Commit],
    fetched: Mapping[str, pygit2.Oid],
) -> list[str]:
    """Make the refs memgit would have set for runs and retirements that came without
    them (a proposal merged with a hosted service's merge button or a plain ``git
    merge``): ``refs/memgit/runs/<id>`` at the commit whose ``Memgit-Run`` names it, and
    ``refs/memgit/retired/<id>`` at the parent of the commit that retired the memory
    (the last commit it was active in), for each one neither side has. The names made."""
    mine = local_refs(repo)
    wanted: dict[str, pygit2.Oid] = {}
    for commit in commits:
        if "Memgit-" not in commit.message:
            continue
        runs = [value for key, value in parse_trailers(commit.message) if key == TRAILER_RUN]
        targets = {REFS_RUNS + run_id: commit.id for run_id in runs if is_run_id(run_id)}
        if commit.parents:
            for memory_id in retired_ids(commit.message):
                if is_memory_id(memory_id):
                    targets[REFS_RETIRED + memory_id] = commit.parents[0].id
        for name, oid in targets.items():
            if name not in mine and name not in fetched:
                wanted.setdefault(name, oid)
    return sorted(set_refs(repo, wanted, message="memgit: sync records a merged run"))


def to_push(repo: pygit2.Repository, fetched: Mapping[str, pygit2.Oid]) -> dict[str, pygit2.Oid]:
    """The local ``refs/memgit/*`` the remote lacks."""
    return {name: oid for name, oid in local_refs(repo).items() if name not in fetched}


def record_refs(argv: list[str] | None = None) -> int:
    """``memgit-record-retired-refs [--merged]``: the refs memgit would have set for HEAD's
    commit (``post-commit``), or with ``--merged`` for every commit a merge or pull
    brought (``post-merge``: ``ORIG_HEAD..HEAD``), such as a proposal merged on a host."""
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--merged"]):
        print("error[usage]: memgit-record-retired-refs takes only --merged", file=sys.stderr)
        return 2
    try:
        repo = open_repository(Path.cwd())
        if repo.head_is_unborn:
            return 0
        made = recorded(repo, _brought(repo) if args else [repo.head.peel(pygit2.Commit)], {})
    except MemgitError as err:
        print(err.render(), file=sys.stderr)
        return int(err.exit_status)
    for name in made:
        print(f"memgit: set {name}", file=sys.stderr)
    return 0


MAX_BROUGHT = 100_000


def _brought(repo: pygit2.Repository) -> list[pygit2.Commit]:
    """The commits HEAD has that ``ORIG_HEAD`` (the tip before the merge) did not."""
    head = repo.head.peel(pygit2.Commit)
    before = repo.references.get("ORIG_HEAD")
    walker = repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL)
    if before is not None:
        walker.hide(before.peel(pygit2.Commit).id)
    return [commit for _, commit in zip(range(MAX_BROUGHT), walker, strict=False)]
