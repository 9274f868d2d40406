"""MemoryRepo: the Python API, one method per command, nothing clever."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from memgit.capture.inbox import CaptureResult, capture_turns
from memgit.capture.read import parse_turn
from memgit.capture.turn import Turn
from memgit.init import InitResult, init_repository
from memgit.settings import Settings, load_settings
from memgit.store.repository import open_repository

TurnInput = Turn | Mapping[str, Any] | str | bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class CaptureOutcome:
    """The result of capturing one turn, as ``memgit capture --json`` prints it."""

    path: str
    commit: str | None
    redactions: dict[str, int]
    duplicate: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "commit": self.commit,
            "redactions": self.redactions,
            "duplicate": self.duplicate,
        }


class MemoryRepo:
    """A memory repository: a Git repository with ``memgit.yaml`` at its top."""

    def __init__(self, git: pygit2.Repository, settings: Settings) -> None:
        self.git = git
        self.settings = settings

    @classmethod
    def open(cls, path: str | Path = ".") -> MemoryRepo:
        """Open the memory repository containing ``path`` (searched upward)."""
        git = open_repository(Path(path))
        return cls(git, load_settings(Path(git.workdir)))

    @classmethod
    def init(cls, path: str | Path = ".") -> InitResult:
        """Create or adopt a repository at ``path``; running it again is safe."""
        return init_repository(Path(path))

    @property
    def workdir(self) -> Path:
        return Path(self.git.workdir)

    @property
    def git_dir(self) -> Path:
        return Path(self.git.path)

    def capture(self, turn: TurnInput, *, source: str = "<api>") -> CaptureOutcome:
        """Redact and commit one turn; the same turn again is a no-op."""
        result = self.capture_many([turn], source=source)
        captured = result.turns[0]
        return CaptureOutcome(
            path=captured.path,
            commit=result.commit,
            redactions=captured.redactions,
            duplicate=captured.duplicate,
        )

    def capture_many(self, turns: Iterable[TurnInput], *, source: str = "<api>") -> CaptureResult:
        """Redact and commit many turns as one commit."""
        parsed = [
            item if isinstance(item, Turn) else parse_turn(_as_json(item), source=source)
            for item in turns
        ]
        return capture_turns(self.git, parsed, source=source, author_fallback=self.settings.author)


def _as_json(item: Mapping[str, Any] | str | bytes) -> dict[str, Any] | str | bytes:
    return dict(item) if isinstance(item, Mapping) else item
