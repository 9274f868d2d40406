"""The command backend: any program that reads the prompt on stdin and prints the JSON.

For example the ``llm`` CLI: ``gate: {backend: command, command: [llm, -m, gpt-4o-mini]}``.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, cast

from memgit.errors import BackendError, InvalidInputError, quote_foreign
from memgit.gate.prompt import GateRequest
from memgit.settings import config_seconds

DEFAULT_TIMEOUT = 120.0
MAX_ANSWER_BYTES = 4 * 1024 * 1024
_CHUNK = 65536


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandBackend:
    argv: tuple[str, ...]
    timeout: float = DEFAULT_TIMEOUT
    model: str | None = None
    name: str = "command"
    can_correct: bool = True

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> CommandBackend:
        raw = config.get("command")
        argv = shlex.split(raw) if isinstance(raw, str) else raw
        if not argv or not all(isinstance(part, str) and part for part in argv):
            raise InvalidInputError(
                "the command backend needs `command`: a program and its arguments",
                code="backend-config",
                path="memgit.yaml",
                field="gate.command",
                hint="e.g. command: [llm, -m, gpt-4o-mini]",
            )
        model = config.get("model")
        return cls(
            argv=tuple(argv),
            timeout=config_seconds(config, "timeout", DEFAULT_TIMEOUT),
            model=model if isinstance(model, str) else argv[0],
        )

    def answer(self, request: GateRequest) -> str:
        try:
            process = subprocess.Popen(
                list(self.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # Its own process group, so that on timeout its children go with it.
                start_new_session=True,
            )
        except FileNotFoundError as err:
            raise BackendError(
                f"cannot run {self.argv[0]!r}: not found",
                code="backend-unreachable",
                field="gate.command",
                hint="install the program or fix gate.command in memgit.yaml",
            ) from err
        try:
            stdout, stderr = _communicate(process, request.text.encode("utf-8"), self.timeout)
        except _Stopped as stopped:
            _kill_group(process)
            raise self._stopped_error(stopped) from None
        if process.returncode != 0:
            said = stderr.decode("utf-8", "replace").strip()
            detail = f": {quote_foreign(said)}" if said else ""
            raise BackendError(
                f"{self.argv[0]} exited with status {process.returncode}{detail}",
                code="backend-failed",
                field="gate.command",
            )
        return stdout.decode("utf-8", "replace")

    def _stopped_error(self, stopped: _Stopped) -> BackendError:
        if stopped.stream is None:
            return BackendError(
                f"{self.argv[0]} gave no answer within {self.timeout:g}s",
                code="backend-timeout",
                field="gate.command",
                hint="raise gate.timeout in memgit.yaml",
            )
        return BackendError(
            f"{self.argv[0]} wrote more than {MAX_ANSWER_BYTES:,} bytes to {stopped.stream}",
            code="backend-answer-too-large",
            field="gate.command",
            hint="a Gate answers with one JSON object; check what the program prints",
        )


class _Stopped(Exception):
    """The program ran out of time (``stream`` None) or wrote too much to ``stream``."""

    def __init__(self, stream: str | None) -> None:
        super().__init__(stream)
        self.stream = stream


def _communicate(
    process: subprocess.Popen[bytes], prompt: bytes, timeout: float
) -> tuple[bytes, bytes]:
    """The program's stdout and stderr once it exits, each read as it comes and cut off
    at :data:`MAX_ANSWER_BYTES`, all within ``timeout`` seconds (else :class:`_Stopped`).

    ``subprocess.run(capture_output=True)`` kept everything a program wrote until it
    exited: a Gate writing forever grew memgit to gigabytes before any limit applied.
    """
    # Popen(stdin=PIPE, stdout=PIPE, stderr=PIPE) opened all three.
    stdin, stdout, stderr = cast(IO[bytes], process.stdin), process.stdout, process.stderr
    deadline = time.monotonic() + timeout
    feeder = threading.Thread(target=_feed, args=(stdin, prompt), daemon=True)
    feeder.start()
    output = {"stdout": bytearray(), "stderr": bytearray()}
    with selectors.DefaultSelector() as selector:
        selector.register(cast(IO[bytes], stdout), selectors.EVENT_READ, "stdout")
        selector.register(cast(IO[bytes], stderr), selectors.EVENT_READ, "stderr")
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Stopped(None)
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                kept = output[key.data]
                kept += chunk
                if len(kept) > MAX_ANSWER_BYTES:
                    raise _Stopped(key.data)
    try:
        process.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise _Stopped(None) from None
    feeder.join()
    cast(IO[bytes], stdout).close()
    cast(IO[bytes], stderr).close()
    return bytes(output["stdout"]), bytes(output["stderr"])


def _feed(stdin: IO[bytes], prompt: bytes) -> None:
    """Write the prompt and close stdin; a program that stops reading early may exit."""
    with contextlib.suppress(OSError, ValueError):  # a closed pipe, or closed after a kill
        stdin.write(prompt)
        stdin.close()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the program and everything it started (its process group), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
