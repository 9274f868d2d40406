"""``memgit demo``: a guided tour on a bundled conversation, with no model or network."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from memgit.pack import EvidencePack
from memgit.process import ProcessResult
from memgit.repo import CaptureOutcome, MemoryRepo

# What the demo asks at the end: one of the bundled statements, in other words.
DEMO_QUERY = "which test framework do I prefer"


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoResult:
    path: Path
    captures: tuple[CaptureOutcome, ...]
    processed: ProcessResult
    recalled: EvidencePack


def bundled_conversation() -> list[str]:
    """The demo's turns, one JSON object per line."""
    text = resources.files(__name__).joinpath("conversation.jsonl").read_text("utf-8")
    return [line for line in text.splitlines() if line.strip()]


def run_demo(target: Path | None = None) -> DemoResult:
    """Create a memory repository, capture the bundled conversation, process it offline,
    and recall what was stored."""
    path = target if target is not None else Path(tempfile.mkdtemp(prefix="memgit-demo-"))
    MemoryRepo.init(path)
    repo = MemoryRepo.open(path)
    captures = tuple(
        repo.capture(line, source=f"conversation.jsonl:{number}")
        for number, line in enumerate(bundled_conversation(), start=1)
    )
    processed = repo.process(backend="rules")
    recalled = repo.recall(DEMO_QUERY, k=3)
    return DemoResult(path=path, captures=captures, processed=processed, recalled=recalled)
