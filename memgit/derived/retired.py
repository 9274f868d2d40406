"""Retired memories: the file each ``refs/memgit/retired/<id>`` commit holds.

When memory A is superseded or retracted, its file leaves the tree and the ref
keeps the last commit in which it was active. The index reads A's file from
that commit, so a query that matches A can say "matched, but superseded by B".
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

import pygit2

from memgit.catalog import find_memory_file
from memgit.constants import REFS_RETIRED
from memgit.derived import rows
from memgit.errors import InvalidInputError
from memgit.memory import read_memory
from memgit.store.tree import read_blob


def read_retired_refs(repo: pygit2.Repository) -> tuple[tuple[str, str], ...]:
    refs = []
    for name in repo.listall_references():
        if not name.startswith(REFS_RETIRED):
            continue
        try:
            target = repo.references[name].resolve().target
        except (KeyError, pygit2.GitError):
            continue
        refs.append((name, str(target)))
    return tuple(sorted(refs))


def sync_retired(
    conn: sqlite3.Connection, repo: pygit2.Repository, refs: Iterable[tuple[str, str]]
) -> int:
    """Index the memory file each retired ref's commit holds; drop refs that went."""
    wanted = dict(refs)
    have = dict(conn.execute("SELECT ref, target FROM retired").fetchall())
    changed = 0
    for name, target in have.items():
        if wanted.get(name) != target:
            rows.delete_retired(conn, name)
            rows.clear_problems(conn, [name])
            changed += 1
    scopes = [row[0] for row in conn.execute("SELECT DISTINCT scope FROM memory")]
    for name, target in sorted(wanted.items()):
        if have.get(name) == target:
            continue
        changed += 1
        memory_id = name[len(REFS_RETIRED) :]
        commit = repo.get(target)
        if not isinstance(commit, pygit2.Commit):
            rows.set_problem(conn, name, None, "retired-target", f"{target} is not a commit")
            continue
        found = find_memory_file(repo, commit.tree, memory_id, scopes)
        if found is None:
            message = f"no memory file {memory_id}.md in commit {target[:12]}"
            rows.set_problem(conn, name, None, "retired-missing", message)
            continue
        path, blob = found
        try:
            doc = read_memory(read_blob(repo, blob), path=path, blob=str(blob), check=False)
        except InvalidInputError as err:
            rows.set_problem(conn, name, str(blob), err.code, f"{path}: {err.message}")
            continue
        rows.insert_retired(conn, name, target, doc)
    return changed
