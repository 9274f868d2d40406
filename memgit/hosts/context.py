"""What a session starts with: the memory's map as text an agent reads, and how to recall."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from memgit.map import RepoMap


def render_context(found: RepoMap, workdir: Path) -> str:
    """The map as ``memgit map`` prints it, headed by where the memory is and followed by
    the recall command, so the agent knows to look before it answers from memory."""
    header, *rest = found.summary_lines()
    lines = [f"Long-term memory (memgit, {workdir}): {header}.", *rest]
    command = shlex.join([*memgit_command(), "-C", str(workdir), "recall"])
    lines.append(
        f"To recall: {command} 'QUERY'. A miss says what it did not find: try other "
        "words before concluding nothing is known."
    )
    return "\n".join(lines)


def memgit_command() -> list[str]:
    """memgit as the agent's shell can run it: the ``memgit`` beside the interpreter
    running this hook (a host's PATH seldom has the virtual environment), else this
    interpreter running memgit's module."""
    beside = Path(sys.executable).with_name("memgit")
    if beside.is_file():
        return [str(beside)]
    return [sys.executable, "-m", "memgit.cli.main"]
