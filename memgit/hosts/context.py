"""What a session starts with: the memory's map as text an agent reads, and how to recall."""

from __future__ import annotations

import shlex
from pathlib import Path

from memgit.map import RepoMap


def render_context(found: RepoMap, workdir: Path) -> str:
    """The map as ``memgit map`` prints it, headed by where the memory is and followed by
    the recall command, so the agent knows to look before it answers from memory."""
    lines = [
        f"Long-term memory (memgit, {workdir}): {found.memories} memories, "
        f"{found.captures} captured turns, {found.retired} retired."
    ]
    if found.scopes:
        more = f" (+{found.more_scopes} more)" if found.more_scopes else ""
        lines.append("scopes: " + ", ".join(f"{s} {n}" for s, n in found.scopes) + more)
    if found.types:
        more = f" (+{found.more_types} more)" if found.more_types else ""
        lines.append("types: " + ", ".join(f"{t} {n}" for t, n in found.types) + more)
    if found.recent:
        lines.append("recent:")
        lines += [f"  {m.id}  {m.title}  ({m.type}, {m.scope})" for m in found.recent]
    if found.terms:
        lines.append("terms: " + ", ".join(term for term, _ in found.terms))
    lines.append(
        f"To recall: memgit -C {shlex.quote(str(workdir))} recall 'QUERY'. A miss says "
        "what it did not find: try other words before concluding nothing is known."
    )
    return "\n".join(lines)
