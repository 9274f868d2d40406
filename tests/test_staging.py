"""The staged tree the pre-commit hooks check is the tree ``git commit`` records.

Each case stages something with the git CLI, asks memgit for the staged tree, and
compares it with what ``git write-tree`` answers afterwards; memgit itself must
leave the index file as it found it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from memgit.errors import ConflictError
from memgit.store.repository import open_repository
from memgit.store.staging import staged_tree

from support import git


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(path))
    (path / "notes").mkdir()
    (path / "notes" / "a.md").write_text("a\n")
    (path / "notes" / "b.md").write_text("b\n")
    (path / "top.txt").write_text("top\n")
    (path / "gone").mkdir()
    (path / "gone" / "x").write_text("x\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return path


def _modify(path: Path) -> None:
    (path / "notes" / "a.md").write_text("a, edited\n")
    git(path, "add", "notes/a.md")


def _add_and_delete(path: Path) -> None:
    (path / "deep" / "er").mkdir(parents=True)
    (path / "deep" / "er" / "new.md").write_text("new\n")
    git(path, "add", "deep")
    git(path, "rm", "-q", "notes/b.md")
    git(path, "rm", "-q", "-r", "gone")


def _modes(path: Path) -> None:
    (path / "run.sh").write_text("#!/bin/sh\n")
    (path / "run.sh").chmod(0o755)
    os.symlink("notes/a.md", path / "link")
    git(path, "add", "run.sh", "link")
    git(path, "update-index", "--chmod=+x", "top.txt")


def _file_becomes_folder(path: Path) -> None:
    git(path, "rm", "-q", "top.txt")
    (path / "top.txt").mkdir()
    (path / "top.txt" / "inside").write_text("inside\n")
    git(path, "add", "top.txt/inside")


def _folder_becomes_file(path: Path) -> None:
    git(path, "rm", "-q", "-r", "gone")
    (path / "gone").write_text("a file now\n")
    git(path, "add", "gone")


def _odd_names(path: Path) -> None:
    for name in ("ünï cödé.md", "tab\there.md", 'quote"d.md', "new\nline.md"):
        (path / "notes" / name).write_text(name + "\n")
        git(path, "add", "--", f"notes/{name}")


def _split_index(path: Path) -> None:
    git(path, "update-index", "--split-index")
    _modify(path)
    (path / "later.md").write_text("later\n")
    git(path, "add", "later.md")


CASES: dict[str, Callable[[Path], None]] = {
    "nothing": lambda path: None,
    "modify": _modify,
    "add-and-delete": _add_and_delete,
    "modes": _modes,
    "file-becomes-folder": _file_becomes_folder,
    "folder-becomes-file": _folder_becomes_file,
    "odd-names": _odd_names,
    "split-index": _split_index,
}


@pytest.mark.parametrize("case", CASES)
def test_the_staged_tree_is_what_git_would_commit(work: Path, case: str) -> None:
    CASES[case](work)
    repo = open_repository(work)
    index_before = (work / ".git" / "index").read_bytes()
    tree = staged_tree(repo, repo.head.peel(pygit2.Commit))
    assert (work / ".git" / "index").read_bytes() == index_before
    assert str(tree.id) == git(work, "write-tree").strip()


def test_an_unborn_branch_stages_onto_nothing(tmp_path: Path) -> None:
    path = tmp_path / "fresh"
    git(tmp_path, "init", "-q", "-b", "main", str(path))
    (path / "first.md").write_text("first\n")
    git(path, "add", "first.md")
    tree = staged_tree(open_repository(path), None)
    assert str(tree.id) == git(path, "write-tree").strip()


def test_the_index_named_by_git_index_file_is_the_one_read(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As during ``git commit -a``: git stages into a temporary index and names it."""
    other = work / ".git" / "commit-all-index"
    (work / "notes" / "a.md").write_text("only in the other index\n")
    git(work, "add", "notes/a.md")
    (work / ".git" / "index").rename(other)
    git(work, "reset", "-q")  # the default index: back at HEAD
    repo = open_repository(work)
    head = repo.head.peel(pygit2.Commit)
    assert staged_tree(repo, head).id == head.tree.id
    monkeypatch.setenv("GIT_INDEX_FILE", str(other))
    staged = staged_tree(repo, head)
    assert staged.id != head.tree.id
    assert str(staged.id) == git(work, "write-tree").strip()


def test_an_unreadable_index_is_git_failed(work: Path) -> None:
    (work / ".git" / "index").write_bytes(b"DIRC not an index at all")
    repo = open_repository(work)
    with pytest.raises(ConflictError) as raised:
        staged_tree(repo, repo.head.peel(pygit2.Commit))
    assert raised.value.code == "git-failed"
    assert "index" in raised.value.message
