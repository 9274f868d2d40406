"""Gate backends: a Protocol and a registry, like pre-commit's languages.

A backend turns a :class:`GateRequest` into the text of one JSON answer.
Whatever it returns goes through the same validation
(:func:`memgit.gate.contract.check_gate_output`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from memgit.errors import UsageError
from memgit.gate.prompt import GateRequest


class Backend(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    @property
    def can_correct(self) -> bool:
        """False when a refused answer cannot be corrected by asking again (host)."""

    def answer(self, request: GateRequest) -> str: ...


Factory = Callable[[Mapping[str, Any]], Backend]


def _rules(config: Mapping[str, Any]) -> Backend:
    from memgit.gate.backends.rules import RulesBackend

    return RulesBackend()


def _openai(config: Mapping[str, Any]) -> Backend:
    from memgit.gate.backends.openai import OpenAIBackend

    return OpenAIBackend.from_config(config)


def _command(config: Mapping[str, Any]) -> Backend:
    from memgit.gate.backends.command import CommandBackend

    return CommandBackend.from_config(config)


REGISTRY: dict[str, Factory] = {
    "rules": _rules,
    "openai": _openai,
    "command": _command,
}


def make_backend(name: str, config: Mapping[str, Any]) -> Backend:
    """The backend ``name`` configured from ``gate:`` in memgit.yaml."""
    factory = REGISTRY.get(name)
    if factory is None:
        known = ", ".join(sorted([*REGISTRY, "host"]))
        raise UsageError(
            f"unknown Gate backend {name!r}",
            code="unknown-backend",
            field="gate.backend",
            hint=f"choose one of: {known}",
        )
    return factory(config)
