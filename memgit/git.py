"""The one place memgit starts the ``git`` command (docs/decisions/0013-one-git-runner.md).

One environment for every git memgit runs:

- the variables that point git at a repository (``GIT_DIR``, ``GIT_WORK_TREE``,
  ``GIT_INDEX_FILE``, the object directories, ...) are dropped: memgit runs inside
  git's hooks, which inherit those of the command that ran them, and memgit names
  its repository by the folder git starts in. A hook that reads what the git command
  running it is doing (the staged tree of a ``git commit -a``, which has its own
  index) keeps them with ``in_hook=True``; a caller with an index of its own passes
  ``index``;
- ``LC_ALL=C``: git's porcelain output and its messages (quoted in memgit's errors,
  which are English) do not depend on the person's language;
- ``GIT_TERMINAL_PROMPT=0``: git never waits for a password on a terminal no one
  is watching (an agent's hook, the MCP server); it fails instead;
- ``GIT_LITERAL_PATHSPECS=1``: a path memgit passes is a path, never a pattern.

Errors are known by git's exit status, its porcelain output and the files it
leaves (a held ``index.lock`` is a file that exists), never by the words of its
messages: those are only quoted, as foreign text, in memgit's own errors.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memgit.errors import ConflictError, quote_foreign

_LOCATING = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)
_SET = {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_LITERAL_PATHSPECS": "1"}


@dataclass(frozen=True, slots=True)
class Ran:
    """A finished git command: its exit status and what it wrote."""

    args: tuple[str, ...]
    status: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "surrogateescape")

    @property
    def err(self) -> str:
        """git's messages, to quote (never to match: see the module docstring)."""
        return self.stderr.decode("utf-8", "replace")

    @property
    def said(self) -> str:
        return self.err.strip()


def environment(*, in_hook: bool = False, index: Path | None = None) -> dict[str, str]:
    """The environment git runs in (see the module docstring)."""
    env = dict(os.environ)
    if not in_hook:
        env = {key: value for key, value in env.items() if key not in _LOCATING}
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    env.update(_SET)
    return env


def run(
    where: Path | str,
    *args: str,
    stdin: bytes | None = None,
    timeout: float | None = None,
    in_hook: bool = False,
    index: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> Ran:
    """``git ARGS`` started in folder ``where``; raises only when git cannot run
    (``git-missing``) or outlives ``timeout`` (``git-timeout``): a failing git is a
    :class:`Ran` whose status the caller reads."""
    env = environment(in_hook=in_hook, index=index)
    if extra_env:
        env.update(extra_env)
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=where,
            input=stdin if stdin is not None else b"",
            capture_output=True,
            env=env,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ConflictError(
            f"git {args[0]} did not finish in {timeout:g} s",
            code="git-timeout",
            path=str(where),
            hint=f"run `git {args[0]}` yourself to see what it waits for, then retry",
        ) from None
    except OSError as err:
        raise ConflictError(
            f"cannot run git: {quote_foreign(str(err))}",
            code="git-missing",
            path="git",
            hint="install git and make it runnable on PATH, then retry",
        ) from None
    return Ran(tuple(args), done.returncode, done.stdout, done.stderr)


def failed(ran: Ran, *, path: str, hint: str, what: str = "") -> ConflictError:
    """git's failure as memgit reports it (``git-failed``, exit 4), git's own message
    quoted."""
    said = quote_foreign(ran.said.splitlines()[-1]) if ran.said else f"exit status {ran.status}"
    return ConflictError(
        f"git {ran.args[0]} failed{what}: {said}", code="git-failed", path=path, hint=hint
    )


@dataclass(frozen=True, slots=True)
class PushedRef:
    """One line of ``git push --porcelain``: the flag (``!`` rejected, ``=`` up to date,
    ``*`` new, ``-`` deleted, ``+`` forced, `` `` fast-forward), the remote ref, and
    whether the remote end itself refused it (a hook; summary ``[remote rejected]``)."""

    flag: str
    ref: str
    by_remote: bool
    line: str


def pushed_refs(ran: Ran) -> list[PushedRef]:
    """The per-ref lines of a ``git push --porcelain``."""
    refs = []
    for line in ran.out.splitlines():
        fields = line.split("\t")
        if len(fields) < 3 or len(fields[0]) != 1 or ":" not in fields[1]:
            continue
        refs.append(
            PushedRef(
                flag=fields[0],
                ref=fields[1].rsplit(":", 1)[1],
                by_remote=fields[2].startswith("[remote "),
                line=line,
            )
        )
    return refs
