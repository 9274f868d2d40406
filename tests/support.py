"""Helpers for tests: the git CLI as a user runs it, the memgit command, snapshots."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import IO


def git(path: Path, *args: str, check: bool = True, input: str | None = None) -> str:
    """Run the git CLI as a user would and return its stdout."""
    done = subprocess.run(
        ["git", "-C", str(path), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        input=input,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def git_show_many(path: Path, rev: str, names: list[str]) -> dict[str, str]:
    """``git show REV:NAME`` for every name, read through one ``git cat-file --batch``:
    hundreds of blobs cost one process, not one each."""
    done = subprocess.run(
        ["git", "-C", str(path), "cat-file", "--batch"],
        input="".join(f"{rev}:{name}\n" for name in names).encode("utf-8"),
        capture_output=True,
        check=True,
        timeout=120,
    )
    out, at, found = done.stdout, 0, {}
    for name in names:
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split()
        assert len(header) == 3 and header[1] == b"blob", (name, header)
        start = header_end + 1
        end = start + int(header[2])
        found[name] = out[start:end].decode("utf-8")
        at = end + 1  # the newline after each object's content
    assert at == len(out)
    return found


def memgit_cli(
    *args: str,
    cwd: Path | None = None,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``memgit`` command in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "memgit.cli.main", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env={**os.environ, **(env or {})},
        check=False,
        timeout=120,
    )


def bounded_cli(
    cwd: Path, *args: str, stdin: int | IO[bytes] | None = None, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The real ``memgit`` in a subprocess that may use at most 1 GiB and 30 s: for
    endless inputs, whose unbounded read once grew to 24 GB."""
    limited = ["/bin/sh", "-c", 'ulimit -v 1048576; exec "$@"', "sh"]
    return subprocess.run(
        [*limited, sys.executable, "-m", "memgit.cli.main", *args],
        cwd=cwd,
        stdin=stdin,
        input=input,
        capture_output=True,
        timeout=30,
        check=False,
    )


def memgit_in_process(
    *args: str, cwd: Path | None = None, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run memgit's command line in this process, as ``memgit_cli`` runs the program: the
    same parser and error boundary, stdin, stdout and stderr as bytes, without an
    interpreter's start (about 0.35 s) per call. For tests that call it many times;
    ``cwd`` becomes ``-C``, so paths in ``args`` must be absolute."""
    from memgit.cli.main import main

    argv = ["-C", str(cwd), *args] if cwd is not None else list(args)
    streams = [io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="") for _ in range(2)]
    stdin = io.TextIOWrapper(io.BytesIO(input or b""), encoding="utf-8")
    saved = sys.stdin
    sys.stdin = stdin
    try:
        with contextlib.redirect_stdout(streams[0]), contextlib.redirect_stderr(streams[1]):
            status = main(argv)
    finally:
        sys.stdin = saved
    out, err = (_written(stream) for stream in streams)
    return subprocess.CompletedProcess(argv, status, out, err)


def _written(stream: io.TextIOWrapper) -> bytes:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue()


def snapshot(path: Path) -> dict[str, object]:
    """Everything a failed command must leave unchanged: refs, index, working tree."""
    refs = git(path, "for-each-ref", "--format=%(refname) %(objectname)")
    head = git(path, "symbolic-ref", "-q", "HEAD", check=False) + git(
        path, "rev-parse", "-q", "--verify", "HEAD", check=False
    )
    index = (path / ".git" / "index").read_bytes() if (path / ".git" / "index").exists() else b""
    # A lock git left behind makes the person's next git command fail.
    git_locks = sorted(
        str(p.relative_to(path / ".git"))
        for p in (path / ".git").rglob("*.lock")
        if "memgit" not in p.relative_to(path / ".git").parts
    )
    files = {
        str(p.relative_to(path)): p.read_bytes() if p.is_file() and not p.is_symlink() else "link"
        for p in sorted(path.rglob("*"))
        if ".git" not in p.relative_to(path).parts and not p.is_dir()
    }
    return {"refs": refs, "head": head, "index": index, "locks": git_locks, "files": files}


def make_turn(seq: int = 0, content: str = "hello", **fields: object) -> dict[str, object]:
    turn: dict[str, object] = {
        "source": "test-agent",
        "session": "s1",
        "seq": seq,
        "timestamp": "2026-11-30T10:00:00Z",
        "messages": [{"role": "user", "content": content}],
    }
    turn.update(fields)
    return turn


def assert_fsck_clean(path: Path) -> None:
    """`git fsck --strict` finds nothing wrong (dangling objects from a refused write are fine)."""
    done = subprocess.run(
        ["git", "-C", str(path), "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "", done.stdout
    assert "error" not in done.stderr and "warning" not in done.stderr, done.stderr


def git_environment(home: Path) -> dict[str, str]:
    """The isolated git setup of conftest.py, for module-scoped fixtures."""
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n",
        "utf-8",
    )
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def everything_git_keeps(repo: Path) -> dict[str, bytes]:
    """History with patches, every object's content, and every other file under .git."""

    def run(*args: str) -> bytes:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, check=True
        ).stdout

    kept = {
        "git log --all -p": run("log", "--all", "-p", "--format=raw"),
        "git cat-file --batch-all-objects --batch": run(
            "cat-file", "--batch-all-objects", "--batch"
        ),
    }
    for path in sorted((repo / ".git").rglob("*")):
        if path.is_file() and "objects" not in path.relative_to(repo / ".git").parts:
            kept[str(path.relative_to(repo))] = path.read_bytes()
    return kept
