"""The host backend: the calling agent supplies the Gate answer itself."""

from __future__ import annotations

from dataclasses import dataclass

from memgit.gate.prompt import GateRequest


@dataclass(slots=True)
class HostBackend:
    """Returns the answer given with ``--gate-output``; a refusal cannot be corrected here."""

    text: str
    name: str = "host"
    model: str | None = None
    can_correct: bool = False

    def answer(self, request: GateRequest) -> str:
        return self.text
