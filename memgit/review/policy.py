"""The review policy (``review:`` in memgit.yaml): which of a run's decisions need review.

A run is proposed (committed on ``refs/heads/memgit/proposals/<run-id>``) when the
policy covers any of its decisions; a run that changes no memory never is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from memgit.errors import InvalidInputError, Problem


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewPolicy:
    """``always``: every memory change; otherwise a decision whose action is one of
    ``actions``, or that writes or retires a memory of one of ``types``, or in one of
    ``scopes`` (a scope covers its sub-scopes). All empty: review is off."""

    always: bool = False
    actions: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()

    def covers(self, action: str, *, types: Collection[str], scopes: Collection[str]) -> bool:
        """Whether a decision of ``action`` touching memories of ``types`` and ``scopes``
        (the memory written and the one it replaces) needs review."""
        if self.always or action in self.actions:
            return True
        if any(kind in self.types for kind in types):
            return True
        return any(_within(scope, listed) for scope in scopes for listed in self.scopes)

    def to_json(self) -> dict[str, Any]:
        return {
            "always": self.always,
            "actions": list(self.actions),
            "types": list(self.types),
            "scopes": list(self.scopes),
        }


def _within(scope: str, listed: str) -> bool:
    return scope == listed or scope.startswith(listed + "/")


def parse_policy(
    review: Mapping[str, Any] | None,
    *,
    memory_types: Collection[str],
    scopes: Collection[str],
    path: str,
) -> ReviewPolicy:
    """The policy of a schema-checked ``review:`` section; a type or scope memgit.yaml
    does not declare is refused by name, as it could never match."""
    if review is None:
        return ReviewPolicy()
    problems = [
        Problem(
            code="unknown-type",
            message=f"{kind!r} is not one of memory_types",
            path=path,
            field=f"review.types[{i}]",
            hint="list types from memory_types",
        )
        for i, kind in enumerate(review.get("types", ()))
        if kind not in memory_types
    ]
    problems += [
        Problem(
            code="unknown-scope",
            message=f"{scope!r} does not start with one of scopes",
            path=path,
            field=f"review.scopes[{i}]",
            hint="list scopes under the top-level scopes",
        )
        for i, scope in enumerate(review.get("scopes", ()))
        if scope.split("/")[0] not in scopes
    ]
    if problems:
        raise InvalidInputError.from_problems(problems)
    return ReviewPolicy(
        always=bool(review.get("required", False)),
        actions=tuple(review.get("actions", ())),
        types=tuple(review.get("types", ())),
        scopes=tuple(review.get("scopes", ())),
    )


def policy_from_json(data: Mapping[str, Any]) -> ReviewPolicy:
    return ReviewPolicy(
        always=bool(data["always"]),
        actions=tuple(data["actions"]),
        types=tuple(data["types"]),
        scopes=tuple(data["scopes"]),
    )
