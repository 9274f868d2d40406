"""Printing results: JSON for programs, short text for people."""

from __future__ import annotations

import json
from typing import Any

import click


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def describe_redactions(redactions: dict[str, int]) -> str:
    total = sum(redactions.values())
    kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(redactions.items()))
    return f"redacted {plural(total, 'secret')} ({kinds})"
