"""``memgit demo``'s bundled conversation: data for the tour `memgit/cli/demo.py` gives."""

from __future__ import annotations

from importlib import resources

# What the demo asks at the end: one of the bundled statements, in other words.
DEMO_QUERY = "which test framework do I prefer"


def bundled_conversation() -> list[str]:
    """The demo's turns, one JSON object per line."""
    text = resources.files(__name__).joinpath("conversation.jsonl").read_text("utf-8")
    return [line for line in text.splitlines() if line.strip()]
