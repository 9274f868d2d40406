"""The checks' questions about whole trees (memory ids to paths, memories of a type or
scope), answered by the derived store (``memgit/derived/lookup.py``) for memgit's own
commits and by a walk of the tree (``memgit/state/lookup.py``) for the hooks: the
answer must be the tree's own, whether the store is stamped with that tree, with an
older one (commits made with git since memgit last refreshed it), or with a tree the
repository no longer has."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pygit2
import pytest

from memgit import MemoryRepo
from memgit.derived.lexical import LexicalIndex
from memgit.derived.lookup import IndexLookup
from memgit.governance.schemas import iter_schema_problems
from memgit.governance.supersession import iter_supersession_problems
from memgit.governance.view import view_of_commit
from memgit.state.lookup import Lookup, TreeWalk
from memgit.store.tree import iter_blobs

from recall_fixtures import commit_all, memory, write_memory
from support import git

IDS = ("m-alpha", "m-beta", "m-gamma")


def listed(repo: pygit2.Repository, tree: pygit2.Tree, memory_id: str) -> list[str]:
    """The reference: every file of the tree named after the id."""
    leaf = f"/{memory_id}.md"
    return sorted(path for path, _ in iter_blobs(repo, tree, "memories") if path.endswith(leaf))


def stamp_index(path: Path) -> str:
    """Refresh the recall index to HEAD (a recall does) and give HEAD's tree id."""
    MemoryRepo.open(path).recall("anything")
    return git(path, "rev-parse", "HEAD^{tree}").strip()


@pytest.fixture
def stamped(repo_path: Path) -> Path:
    for memory_id in IDS:
        write_memory(repo_path, memory(memory_id, f"Memory {memory_id}"))
    commit_all(repo_path)
    stamp_index(repo_path)
    return repo_path


def lookups(repo: pygit2.Repository) -> list[Lookup]:
    return [IndexLookup(LexicalIndex(repo)), TreeWalk(repo)]


def assert_answers_as_listed(path: Path) -> None:
    repo = pygit2.Repository(str(path))
    tree = repo.head.peel(pygit2.Tree)
    for lookup in lookups(repo):
        for memory_id in (*IDS, "m-delta", "m-unknown"):
            assert lookup.memory_paths(tree, memory_id) == listed(repo, tree, memory_id), (
                memory_id,
                lookup,
            )


def test_an_index_stamped_with_the_tree_answers(stamped: Path) -> None:
    assert_answers_as_listed(stamped)


def test_an_index_stamped_with_an_older_tree_answers_for_the_new_one(stamped: Path) -> None:
    """Commits made with git since the stamp: a second file with an existing id, a
    deleted one, a moved one, a new one, an edited one."""
    write_memory(stamped, memory("m-alpha", "Alpha again", scope="project"))
    commit_all(stamped, "a second m-alpha")
    beta = next(p for p in git(stamped, "ls-files", "memories").split() if "m-beta" in p)
    git(stamped, "rm", "-q", beta)
    git(stamped, "commit", "-q", "-m", "m-beta removed")
    gamma = next(p for p in git(stamped, "ls-files", "memories").split() if "m-gamma" in p)
    (stamped / "memories" / "moved").mkdir(parents=True)
    git(stamped, "mv", gamma, "memories/moved/m-gamma.md")
    write_memory(stamped, memory("m-delta", "Delta"))
    write_memory(stamped, memory("m-alpha", "Alpha edited"))
    commit_all(stamped, "moved, added, edited")
    index_stamp = git(stamped, "rev-parse", "HEAD~3^{tree}").strip()
    assert index_stamp != git(stamped, "rev-parse", "HEAD^{tree}").strip()
    assert_answers_as_listed(stamped)


def test_a_stamp_the_repository_cannot_read_still_answers(stamped: Path) -> None:
    """A store stamped with a tree gone from the repository (a rewritten history, then
    gc) answers by walking the tree."""
    conn = sqlite3.connect(stamped / ".git" / "memgit" / "index.sqlite")
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'tree'", ("0" * 40,))
    conn.close()
    write_memory(stamped, memory("m-delta", "Delta"))
    commit_all(stamped, "m-delta")
    assert_answers_as_listed(stamped)


def index_stamp(path: Path) -> str:
    conn = sqlite3.connect(path / ".git" / "memgit" / "index.sqlite")
    try:
        return str(conn.execute("SELECT value FROM meta WHERE key = 'tree'").fetchone()[0])
    finally:
        conn.close()


def test_the_check_refuses_a_duplicate_id_behind_a_stale_stamp(stamped: Path) -> None:
    """memgit-supersession on a commit made with git that adds a second m-delta, the
    first added by its parent, also made with git: the index is stamped two trees back
    and has never seen m-delta."""
    write_memory(stamped, memory("m-delta", "Delta"))
    commit_all(stamped, "a commit memgit did not see")
    write_memory(stamped, memory("m-delta", "Delta again", scope="project"))
    commit_all(stamped, "a second m-delta")
    repo = pygit2.Repository(str(stamped))
    commit = repo.head.peel(pygit2.Commit)
    assert index_stamp(stamped) == str(commit.parents[0].parents[0].tree_id)
    for lookup in lookups(repo):
        problems = list(iter_supersession_problems(view_of_commit(repo, commit, lookup)))
        assert [problem.code for problem in problems] == ["duplicate-id"]
        assert "m-delta" in problems[0].message


# ---------------------------------------------------------------- memgit.yaml edits


def config_without(path: Path, line: str) -> None:
    """Commit memgit.yaml without one list item (``  - value``), as a person would."""
    config = path / "memgit.yaml"
    text = config.read_text("utf-8")
    assert f"\n{line}\n" in text
    config.write_text(text.replace(f"\n{line}\n", "\n"), "utf-8")
    git(path, "commit", "-q", "-m", f"memgit.yaml: drop {line.strip()}", "--", "memgit.yaml")


def config_problems(path: Path) -> list[tuple[str, str | None, str]]:
    """The problems through both lookups, which must agree."""
    repo = pygit2.Repository(str(path))
    found = []
    for lookup in lookups(repo):
        view = view_of_commit(repo, repo.head.peel(pygit2.Commit), lookup)
        found.append([(p.code, p.field, p.message) for p in iter_schema_problems(view)])
    assert found[0] == found[1]
    return found[0]


@pytest.mark.parametrize("index", ["current", "stale", "none"])
def test_a_scope_still_in_use_cannot_leave_memgit_yaml(stamped: Path, index: str) -> None:
    """m-delta, added after the index was stamped, is the only project memory; the
    answer is the same from a current index, a stale one, or a walk of the tree."""
    write_memory(stamped, memory("m-delta", "Delta", scope="project/api"))
    commit_all(stamped, "a project memory")
    if index == "current":
        stamp_index(stamped)
    elif index == "none":
        (stamped / ".git" / "memgit" / "index.sqlite").unlink()
    config_without(stamped, "  - project")
    (delta,) = [p for p in git(stamped, "ls-files", "memories").split() if "m-delta" in p]
    assert config_problems(stamped) == [
        (
            "unknown-scope",
            "scopes",
            f"'project' is removed from scopes, but 1 memories still use it (first: {delta})",
        )
    ]


@pytest.mark.parametrize("index", ["stale", "none"])
def test_a_type_no_memory_uses_may_leave_memgit_yaml(stamped: Path, index: str) -> None:
    if index == "none":
        (stamped / ".git" / "memgit" / "index.sqlite").unlink()
    write_memory(stamped, memory("m-delta", "Delta", type="decision"))
    commit_all(stamped, "a decision")
    config_without(stamped, "  - procedure")
    assert config_problems(stamped) == []
    config_without(stamped, "  - decision")
    assert [code for code, *_ in config_problems(stamped)] == ["unknown-type"]
