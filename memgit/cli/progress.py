"""A progress bar on stderr for long index builds, captures and syncs; nothing for short work."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

ProgressCallback = Callable[[str, int, int], None]
_LABELS = {
    "history": "reading history for archived captures",
    "index": "indexing files",
    "optimize": "optimizing the index",
    "capture": "capturing turns",
    "fetch": "fetching",
    "join": "checking and joining",
    "push": "checking and pushing",
}


@contextlib.contextmanager
def progress_bar(*, enabled: bool = True, delay: float = 0.5) -> Iterator[ProgressCallback]:
    """A ``progress(phase, done, total)`` callback that shows a rich bar on stderr
    once the work has taken longer than ``delay`` seconds."""
    state: dict[str, Any] = {"bar": None, "tasks": {}, "started": time.monotonic()}

    def progress(phase: str, done: int, total: int) -> None:
        if not enabled:
            return
        if state["bar"] is None:
            if time.monotonic() - state["started"] < delay:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            bar.start()
            state["bar"] = bar
        bar = state["bar"]
        size = total if total > 0 else None  # 0: the total is not known in advance
        if phase not in state["tasks"]:
            state["tasks"][phase] = bar.add_task(_LABELS.get(phase, phase), total=size)
        bar.update(state["tasks"][phase], completed=done, total=size)

    try:
        yield progress
    finally:
        if state["bar"] is not None:
            state["bar"].stop()
