"""Paths as memgit may print them: a secret in a path is redacted like one in text."""

from __future__ import annotations

from dataclasses import replace

from memgit.errors import Problem
from memgit.secrets.redact import redact


def shown_path(path: str) -> str:
    """``path`` as a problem may print it: any secret in it redacted."""
    return redact(path)[0]


def without_secret_path(problem: Problem) -> Problem:
    """``problem`` with a secret in its path redacted: every check names paths, and a
    folder named after a token must not print that token in a hook or in CI."""
    if problem.path is None:
        return problem
    return replace(problem, path=shown_path(problem.path))
