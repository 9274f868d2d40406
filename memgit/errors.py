"""The one exception tree: every expected failure has a stable code and exit status.

Core code raises these and never prints; the CLI renders them as
``error[code]: path: field: message`` plus a ``hint:`` line.
"""

from __future__ import annotations

import unicodedata
from dataclasses import asdict, dataclass, replace
from enum import IntEnum
from typing import Any

FOREIGN_TEXT_CHARS = 200
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\"}
# Controls (C0, DEL, C1), format characters (bidi overrides, zero-width), surrogates,
# private-use and unassigned code points, and the line and paragraph separators.
_UNPRINTABLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def quote_foreign(text: str, *, limit: int = FOREIGN_TEXT_CHARS) -> str:
    """Text from outside memgit (a Gate's stderr, a server's error message) as it may be
    printed inside one of memgit's lines: its first ``limit`` characters, in double quotes,
    with every character a terminal would act on escaped (``\\x1b``, ``\\r``, ``\\n``,
    ``\\u202e``). So it can neither colour, clear or retitle the terminal nor start a line
    of its own, such as a forged ``error[...]`` verdict. Every such message goes through
    this one function.
    """
    shown = text[:limit]
    escaped = "".join(_escape(char) for char in shown)
    return f'"{escaped}"' + ("..." if len(text) > limit else "")


def _escape(char: str) -> str:
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    if unicodedata.category(char) not in _UNPRINTABLE:
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class ExitStatus(IntEnum):
    """Documented process exit statuses (docs/errors.md)."""

    OK = 0
    PROBLEMS = 1
    USAGE = 2
    INVALID_INPUT = 3
    CONFLICT = 4
    BACKEND = 5
    INTERNAL = 70
    INTERRUPTED = 130


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """One finding of a check: what is wrong, where, and what to do about it."""

    code: str
    message: str
    path: str | None = None
    field: str | None = None
    hint: str | None = None

    def render(self) -> str:
        where = "".join(f"{part}: " for part in (self.path, self.field) if part)
        line = f"error[{self.code}]: {where}{self.message}"
        return f"{line}\nhint: {self.hint}" if self.hint else line


class MemgitError(Exception):
    """Base of every expected memgit failure."""

    code = "memgit-error"
    exit_status = ExitStatus.INTERNAL

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        path: str | None = None,
        field: str | None = None,
        hint: str | None = None,
        problems: tuple[Problem, ...] = (),
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.path = path
        self.field = field
        self.hint = hint
        self.problems = problems

    @property
    def problem(self) -> Problem:
        return Problem(
            code=self.code, message=self.message, path=self.path, field=self.field, hint=self.hint
        )

    def render(self) -> str:
        """One line per problem, then each distinct hint once."""
        problems = [self.problem, *self.problems[1:]]
        lines = [replace(problem, hint=None).render() for problem in problems]
        hints = dict.fromkeys(problem.hint for problem in problems if problem.hint)
        return "\n".join([*lines, *(f"hint: {hint}" for hint in hints)])

    def to_dict(self) -> dict[str, Any]:
        """The first problem's fields, the exit status and every problem (``errors``
        sits below ``jsonio``, so it renders its plain fields with ``asdict``)."""
        return asdict(self.problem) | {
            "exit_status": int(self.exit_status),
            "problems": [asdict(problem) for problem in self.problems],
        }

    @classmethod
    def from_problems(cls, problems: list[Problem] | tuple[Problem, ...]) -> MemgitError:
        """Raise-ready error whose headline is the first of several collected problems."""
        first = problems[0]
        return cls(
            first.message,
            code=first.code,
            path=first.path,
            field=first.field,
            hint=first.hint,
            problems=tuple(problems),
        )


class UsageError(MemgitError):
    """The command was called wrongly, or not inside a memory repository."""

    code = "usage"
    exit_status = ExitStatus.USAGE


class InvalidInputError(MemgitError):
    """Input (a turn, a file, a setting) is malformed, hostile or too large."""

    code = "invalid-input"
    exit_status = ExitStatus.INVALID_INPUT


class ConflictError(MemgitError):
    """A lost race, a held lock, or local edits in the way: retry or resolve."""

    code = "conflict"
    exit_status = ExitStatus.CONFLICT


class BackendError(MemgitError):
    """A Gate backend could not be reached or gave up."""

    code = "backend-unavailable"
    exit_status = ExitStatus.BACKEND


class ChecksFailedError(MemgitError):
    """Checks ran and found problems (verify, hooks)."""

    code = "checks-failed"
    exit_status = ExitStatus.PROBLEMS


def text_field(data: dict[str, Any], key: str, path: str) -> str:
    """A committed file's required text field; ``schema`` error when it holds none."""
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise field_error(path, key, "a non-empty string")
    return value


def field_error(path: str, field: str, expected: str) -> InvalidInputError:
    """The schema error of a committed file's field that does not hold what it must."""
    return InvalidInputError(
        f"{field} must be {expected}",
        code="schema",
        path=path,
        field=field,
        hint="fix the file's front matter; `memgit verify` lists every problem",
    )
