"""``memgit.yaml`` -> :class:`Settings`: the repository's own configuration."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memgit.constants import CONFIG_FILE, FORMAT_VERSION, MAX_YAML_BYTES
from memgit.errors import InvalidInputError, Problem, UsageError
from memgit.schemas import iter_schema_problems
from memgit.yamlio import parse_yaml

DEFAULT_RETENTION_DAYS = 30
# The longest timeout or backoff memgit.yaml may set (as the config schema says): a day.
MAX_SECONDS = 86400.0

DEFAULT_CONFIG = f"""\
# memgit repository settings. Reference: docs/configuration.md
format_version: {FORMAT_VERSION}

# The kinds of memory this repository holds.
memory_types:
  - preference
  - fact
  - decision
  - procedure

# Top-level scopes. A memory's scope is one of these, optionally followed by
# sub-scopes, e.g. project/memgit.
scopes:
  - user
  - project

# The Gate decides what becomes a memory. `rules` works offline with no model.
gate:
  backend: rules

# Processed captures older than this many days leave the tree (Git keeps them).
inbox:
  retention_days: {DEFAULT_RETENTION_DAYS}
"""
# The template as git stores it: a repository that kept it is valid without asking the
# schema validator, whose import is a fifth of a command's start (tests/test_startup.py
# checks the template against the schema).
_DEFAULT_FORMS = frozenset({DEFAULT_CONFIG, DEFAULT_CONFIG.encode("utf-8")})


# The review policy (``review:`` in memgit.yaml): which of a run's decisions need review.
# A run is proposed (committed on ``refs/heads/memgit/proposals/<run-id>``) when the
# policy covers any of its decisions; a run that changes no memory never is.


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    format_version: int
    memory_types: tuple[str, ...]
    scopes: tuple[str, ...]
    gate: dict[str, Any]
    retention_days: int
    author: tuple[str, str] | None
    review: ReviewPolicy = dataclasses.field(default_factory=ReviewPolicy)
    # recall.vocabulary: add the recall vocabulary's related terms to queries.
    recall_vocabulary: bool = True
    # sharing.allow_rewrite: a remote holding this accepts a forced memory branch.
    allow_rewrite: bool = False


def parse_settings(text: str | bytes, *, path: str = CONFIG_FILE) -> Settings:
    """Check memgit.yaml's content and read it; the same content is parsed once per process
    (a run reads the working tree's copy, then its checks read the committed one)."""
    return _parse_settings(text, path)


@functools.lru_cache(maxsize=8)
def _parse_settings(text: str | bytes, path: str) -> Settings:
    data = parse_yaml(text, source=path)
    problems = (
        [] if text in _DEFAULT_FORMS else list(iter_schema_problems(data, "config", path=path))
    )
    if problems:
        raise InvalidInputError.from_problems(problems)
    author = data.get("author")
    review = parse_policy(
        data.get("review"), memory_types=data["memory_types"], scopes=data["scopes"], path=path
    )
    return Settings(
        format_version=data["format_version"],
        memory_types=tuple(data["memory_types"]),
        scopes=tuple(data["scopes"]),
        gate=dict(data["gate"]),
        retention_days=data.get("inbox", {}).get("retention_days", DEFAULT_RETENTION_DAYS),
        author=(author["name"], author["email"]) if author else None,
        review=review,
        recall_vocabulary=data.get("recall", {}).get("vocabulary", True),
        allow_rewrite=data.get("sharing", {}).get("allow_rewrite", False),
    )


def read_config(workdir: Path) -> bytes:
    """``memgit.yaml`` from the working tree (read there, as git reads .gitattributes),
    no further than one byte past the YAML limit, which the parser then refuses."""
    try:
        with (workdir / CONFIG_FILE).open("rb") as config:
            return config.read(MAX_YAML_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(
            f"this Git repository is not a memory repository (no {CONFIG_FILE})",
            code="not-initialised",
            path=str(workdir),
            hint="run `memgit init` to set it up",
        ) from None


def gate_setting(settings: Settings, key: str, default: int) -> int:
    """A whole-number ``gate:`` setting, or ``default`` when unset or not a number."""
    value = settings.gate.get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def config_seconds(config: Mapping[str, Any], key: str, default: float) -> float:
    """Seconds from memgit.yaml's ``gate:`` (decimals arrive as text: ``timeout: 0.5``).

    The schema bounds them; this refuses what it would refuse, so that no value can
    become an infinite wait or an OverflowError deep inside a backend.
    """
    value = config.get(key, default)
    try:
        seconds = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError, OverflowError):
        seconds = math.nan
    if not 0 <= seconds <= MAX_SECONDS:
        raise InvalidInputError(
            f"gate.{key} must be a number of seconds from 0 to {MAX_SECONDS:g}",
            code="backend-config",
            path=CONFIG_FILE,
            field=f"gate.{key}",
            hint="see docs/gate.md#backends",
        )
    return seconds
