"""Open the Git repository behind a memory repository and find its branch."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pygit2

from memgit import git
from memgit.errors import ConflictError, MemgitError, UsageError

_configured = False
# libgit2 caches no tree object over 4 KiB by default, so each path looked up in a
# folder of more than about a hundred files read and parsed that folder's tree
# again: capturing a session of n turns cost O(n^2). A session of 100,000 turns
# is a 4 MB tree; the cache's total size stays libgit2's (256 MiB).
MAX_CACHED_TREE_BYTES = 16 * 1024 * 1024


def configure_libgit2() -> None:
    """Process-wide libgit2 options: fsync what we write to the git directory, and
    keep large tree objects in the object cache."""
    global _configured
    if not _configured:
        pygit2.settings.enable_fsync_gitdir(True)
        pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, MAX_CACHED_TREE_BYTES)
        _configured = True


def open_repository(start: Path) -> pygit2.Repository:
    """The non-bare repository containing ``start`` (searched upward, as git does)."""
    configure_libgit2()
    start = start.resolve()
    try:
        found = pygit2.discover_repository(str(start))
    except pygit2.GitError as err:
        raise UsageError(str(err), code="not-a-repository", path=str(start)) from err
    if found is None:
        raise UsageError(
            "not inside a Git repository",
            code="not-a-repository",
            path=str(start),
            hint="run `memgit init` to create a memory repository, or pass -C PATH",
        )
    repo = pygit2.Repository(found)
    if repo.is_bare or repo.workdir is None:
        raise UsageError(
            "memgit needs a repository with a working tree, not a bare one",
            code="bare-repository",
            path=found,
        )
    return repo


def open_for_reading(start: Path) -> pygit2.Repository:
    """Any repository, bare ones included, for commands that only read objects.

    Inside a Git hook (``GIT_DIR`` set, as in pre-receive) the environment is
    honoured, including the quarantine object directory of a push in progress.
    """
    configure_libgit2()
    if os.environ.get("GIT_DIR"):
        try:
            return pygit2.Repository(
                os.environ["GIT_DIR"], flags=pygit2.enums.RepositoryOpenFlag.FROM_ENV
            )
        except pygit2.GitError as err:
            raise UsageError(str(err), code="not-a-repository", path=os.environ["GIT_DIR"]) from err
    start = start.resolve()
    found = pygit2.discover_repository(str(start))
    if found is None:
        raise UsageError("not inside a Git repository", code="not-a-repository", path=str(start))
    return pygit2.Repository(found)


def init_or_adopt(path: Path) -> tuple[pygit2.Repository, bool]:
    """Open the repository at ``path``, creating it (branch ``main``) if there is none.

    Either way, turn on reflogs for every ref so memgit's own refs keep history.
    """
    configure_libgit2()
    if path.exists() and not path.is_dir():
        raise UsageError("not a folder", code="not-a-folder", path=str(path))
    created = not (path / ".git").exists()
    if created:
        repo = pygit2.init_repository(str(path), bare=False, initial_head="main")
    else:
        repo = pygit2.Repository(str(path))
        if repo.is_bare:
            raise UsageError(
                "cannot adopt a bare repository", code="bare-repository", path=str(path)
            )
    repo.config["core.logAllRefUpdates"] = "always"
    repo.config["index.version"] = 4
    return repo, created


def compact_index(repo: pygit2.Repository) -> None:
    """Convert the index to version 4 (prefix-compressed paths), if git is at hand.

    Until the index is large enough to be split, every write rewrites the whole
    file; at 100,000 files version 4 makes it 40% smaller and each write about as
    much faster.
    """
    with contextlib.suppress(MemgitError):  # only for speed
        git.run(repo.workdir, "update-index", "--index-version", "4", timeout=120)


def head_branch(repo: pygit2.Repository, *, allow_unborn: bool = False) -> str:
    """The full name of the branch HEAD points at (``refs/heads/...``)."""
    if repo.head_is_detached:
        raise ConflictError(
            "HEAD is detached; memgit writes only to a branch",
            code="detached-head",
            path="HEAD",
            hint="check out a branch first, e.g. `git switch main`",
        )
    name = repo.references["HEAD"].target
    if not isinstance(name, str):  # a symbolic HEAD names a ref; a detached one was refused
        raise ConflictError("HEAD names no branch", code="detached-head", path="HEAD")
    if not allow_unborn and repo.head_is_unborn:
        raise ConflictError(
            f"branch {name.removeprefix('refs/heads/')} has no commits yet",
            code="unborn-branch",
            path="HEAD",
            hint="run `memgit init` here to make the first commit",
        )
    return name
