"""What a session starts with: the memory's map as text an agent reads, and how to recall."""

from __future__ import annotations

import shlex
from pathlib import Path

from memgit.map import RepoMap


def render_context(found: RepoMap, workdir: Path) -> str:
    """The map as ``memgit map`` prints it, headed by where the memory is and followed by
    the recall command, so the agent knows to look before it answers from memory."""
    header, *rest = found.summary_lines()
    lines = [f"Long-term memory (memgit, {workdir}): {header}.", *rest]
    lines.append(
        f"To recall: memgit -C {shlex.quote(str(workdir))} recall 'QUERY'. A miss says "
        "what it did not find: try other words before concluding nothing is known."
    )
    return "\n".join(lines)
