"""The writer lock: one memgit writer at a time, and a journal for crash recovery.

The lock is ``fcntl.flock`` on ``.git/memgit/lock``. The kernel releases it when
its holder dies, so a killed writer never blocks the next one. The file's
content is a small JSON journal naming the holder (PID, host) and, while a
commit is being published, what it is doing; a clean release empties it.
Whoever takes the lock and finds a non-empty journal knows the previous writer
died mid-operation and can finish or undo exactly that step (see
:mod:`memgit.store.recovery`).
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import socket
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from memgit.constants import CACHE_DIR, LOCK_FILE
from memgit.errors import ConflictError

DEFAULT_TIMEOUT = 30.0


def lock_timeout_from_env(default: float = DEFAULT_TIMEOUT) -> float:
    """``MEMGIT_LOCK_TIMEOUT`` (seconds) overrides how long a writer waits."""
    raw = os.environ.get("MEMGIT_LOCK_TIMEOUT")
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        return default
    return max(0.0, value)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class WriterLock:
    """Exclusive writer lock with a journal; use as a context manager."""

    def __init__(self, git_dir: Path, *, timeout: float | None = None) -> None:
        self.path = git_dir / CACHE_DIR / LOCK_FILE
        self.timeout = lock_timeout_from_env() if timeout is None else timeout
        self.previous: dict[str, Any] | None = None
        self._fd: int | None = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release(clean=exc_type is None)

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_journal(fd)
                    os.close(fd)
                    raise _busy_error(self.path, holder, self.timeout) from None
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.05)
        self._fd = fd
        previous = _read_journal(fd)
        self.previous = previous if previous.get("op") else None
        # Name ourselves at once; an unfinished operation stays in the journal
        # until recovery is done, so a crash during recovery loses nothing.
        self.write({k: v for k, v in (self.previous or {}).items() if k not in ("pid", "host")})

    def write(self, state: dict[str, Any]) -> None:
        """Replace the journal: who holds the lock, plus what it is doing now."""
        if self._fd is None:
            raise RuntimeError("WriterLock.write() needs the lock held")
        record = {"pid": os.getpid(), "host": socket.gethostname(), "at": time.time(), **state}
        data = json.dumps(record).encode("utf-8")
        # One write replaces the whole journal, padded with spaces (which JSON ignores)
        # over what a longer old one leaves: a writer killed between emptying the file
        # and writing it lost a dead writer's unfinished publish.
        size = os.fstat(self._fd).st_size
        os.pwrite(self._fd, data + b" " * max(0, size - len(data)), 0)
        os.ftruncate(self._fd, len(data))

    def release(self, *, clean: bool = True) -> None:
        """Unlock; a failed holder keeps its journal so the next writer can recover."""
        if self._fd is None:
            return
        if clean:
            os.ftruncate(self._fd, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def _read_journal(fd: int) -> dict[str, Any]:
    raw = os.pread(fd, 65536, 0)
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {"unreadable": True}
    return data if isinstance(data, dict) else {"unreadable": True}


def _busy_error(path: Path, holder: dict[str, Any], timeout: float) -> ConflictError:
    pid = holder.get("pid")
    if isinstance(pid, int):
        host = holder.get("host", "?")
        state = "running" if host != socket.gethostname() or pid_alive(pid) else "not running"
        who = f"memgit process {pid} on {host} ({state})"
    else:
        who = "another memgit process"
    return ConflictError(
        f"the repository is locked by {who}; gave up after {timeout:g}s",
        code="lock-busy",
        path=str(path),
        hint=(
            "wait for the other writer to finish and retry; MEMGIT_LOCK_TIMEOUT sets how long "
            "to wait. The lock is released automatically when its holder exits"
        ),
    )
