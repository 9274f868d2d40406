"""Remotes for sharing tests: a bare repository, and one served by a real ``git daemon``."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support import git

DAEMON_START_TIMEOUT = 10.0


def bare_remote(path: Path) -> Path:
    """An empty bare repository at ``path``, as a shared server holds one."""
    git(path.parent, "init", "-q", "--bare", path.name)
    return path


def remote_and_clones(tmp_path: Path, *names: str, init: bool) -> tuple[Path, list[Path]]:
    """A bare remote holding a new memory repository, and a clone of it per name; with
    ``init``, ``memgit init`` in each clone too (the merge driver, hooks and refs), as
    docs/sharing.md says."""
    from memgit import MemoryRepo

    seed = tmp_path / "seed"
    MemoryRepo.init(seed)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    clones = []
    for name in names:
        git(tmp_path, "clone", "-q", str(remote), str(tmp_path / name))
        if init:
            MemoryRepo.init(tmp_path / name)
        clones.append(tmp_path / name)
    return remote, clones


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """Serve every repository under ``base`` over git:// (fetch and push) on 127.0.0.1;
    yield the URL prefix ``git://127.0.0.1:PORT``, and stop the daemon on the way out."""
    port = free_port()
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            f"--base-path={base}",
            "--export-all",
            "--enable=receive-pack",
            f"--port={port}",
            "--listen=127.0.0.1",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for_listener(daemon, port)
        yield f"git://127.0.0.1:{port}"
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
        if daemon.stderr is not None:
            daemon.stderr.close()


def _wait_for_listener(daemon: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + DAEMON_START_TIMEOUT
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            stderr = daemon.stderr.read().decode() if daemon.stderr is not None else ""
            raise AssertionError(f"git daemon exited with {daemon.returncode}: {stderr}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.01)
    raise AssertionError(f"git daemon did not listen on port {port} in {DAEMON_START_TIMEOUT} s")
