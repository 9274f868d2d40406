"""The command backend: any program that reads the prompt on stdin and prints the JSON.

For example the ``llm`` CLI: ``gate: {backend: command, command: [llm, -m, gpt-4o-mini]}``.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memgit.errors import BackendError, InvalidInputError, quote_foreign
from memgit.gate.prompt import GateRequest
from memgit.settings import config_seconds

DEFAULT_TIMEOUT = 120.0
MAX_ANSWER_BYTES = 4 * 1024 * 1024


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
            done = subprocess.run(
                list(self.argv),
                input=request.text.encode("utf-8"),
                capture_output=True,
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError as err:
            raise BackendError(
                f"cannot run {self.argv[0]!r}: not found",
                code="backend-unreachable",
                field="gate.command",
                hint="install the program or fix gate.command in memgit.yaml",
            ) from err
        except subprocess.TimeoutExpired as err:
            raise BackendError(
                f"{self.argv[0]} gave no answer within {self.timeout:g}s",
                code="backend-timeout",
                field="gate.command",
                hint="raise gate.timeout in memgit.yaml",
            ) from err
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip()
            detail = f": {quote_foreign(said)}" if said else ""
            raise BackendError(
                f"{self.argv[0]} exited with status {done.returncode}{detail}",
                code="backend-failed",
                field="gate.command",
            )
        if len(done.stdout) > MAX_ANSWER_BYTES:
            raise BackendError(
                f"{self.argv[0]} answered {len(done.stdout):,} bytes; the limit is "
                f"{MAX_ANSWER_BYTES:,}",
                code="backend-answer-too-large",
                field="gate.command",
            )
        return done.stdout.decode("utf-8", "replace")
