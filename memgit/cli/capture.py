"""``memgit capture``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgit.cli.output import describe_redactions, emit_json, plural
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.repo import MemoryRepo


@click.command()
@click.option(
    "--file",
    "file",
    type=click.Path(allow_dash=True, path_type=Path),
    help="Capture every turn of a JSON Lines file (one turn per line), one commit per "
    "1,000 turns; '-' reads JSON Lines from stdin.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def capture(directory: Path, file: Path | None, as_json: bool) -> None:
    """Capture a conversation turn: JSON on stdin, or many with --file.

    \b
    A turn looks like:
      {"source": "claude-code", "session": "s1", "seq": 0,
       "timestamp": "2026-11-30T10:35:00Z", "thread": "optional",
       "messages": [{"role": "user", "content": "..."},
                    {"role": "tool", "name": "bash", "content": "...", "complete": true}]}

    Without "seq", the turn gets the next seq of its session. Secrets are
    redacted before anything is written. Capturing the same turn
    again is a no-op; the same (source, session, seq) with other content is an
    error and nothing is overwritten.
    """
    from memgit.repo import MemoryRepo

    repo = MemoryRepo.open(directory)
    if file is None:
        _capture_stdin(repo, as_json=as_json)
    else:
        _capture_file(repo, file, as_json=as_json)


def _capture_stdin(repo: MemoryRepo, *, as_json: bool) -> None:
    """One turn, as JSON on stdin."""
    from memgit.capture.read import parse_turn, read_limited
    from memgit.cli.inputs import STDIN
    from memgit.errors import UsageError

    if sys.stdin.isatty():
        raise UsageError(
            "memgit capture reads a turn as JSON on stdin",
            code="usage",
            hint="pipe a turn in (`... | memgit capture`) or use --file turns.jsonl",
        )
    turn = parse_turn(read_limited(sys.stdin.buffer, source=STDIN), source=STDIN)
    outcome = repo.capture(turn, source=STDIN)
    if as_json:
        emit_json(json_data(outcome))
    elif outcome.duplicate or outcome.commit is None:
        click.echo(f"Already captured: {outcome.path} (nothing changed)")
    else:
        click.echo(f"Captured {outcome.path} in {outcome.commit[:12]}")
        if outcome.redactions:
            click.echo(describe_redactions(outcome.redactions))


def _capture_file(repo: MemoryRepo, file: Path, *, as_json: bool) -> None:
    """Many turns, one JSON object a line, from ``file`` ('-': stdin)."""
    from memgit.capture.read import iter_jsonl_turns
    from memgit.cli.inputs import open_input
    from memgit.cli.progress import progress_bar
    from memgit.errors import InvalidInputError

    name, stream = open_input(file)
    with stream:
        lines = list(iter_jsonl_turns(stream, source=name))
    if not lines:
        raise InvalidInputError("no turns in the input", code="empty-input", path=name)
    with progress_bar() as progress:
        result = repo.capture_many(
            [turn for _, turn in lines],
            source=name,
            origins=[where for where, _ in lines],
            progress=lambda done, total: progress("capture", done, total),
        )
    if as_json:
        emit_json(json_data(result))
        return
    new = [captured for captured in result.turns if not captured.duplicate]
    duplicates = len(result.turns) - len(new)
    if len(result.commits) == 1:
        click.echo(f"Captured {plural(len(new), 'turn')} in {result.commits[0][:12]}")
    elif result.commits:
        first, last = result.commits[0][:12], result.commits[-1][:12]
        click.echo(
            f"Captured {plural(len(new), 'turn')} in {len(result.commits)} commits, "
            f"{first} to {last}"
        )
    if duplicates:
        click.echo(f"Already captured: {plural(duplicates, 'turn')} (nothing changed)")
    totals: dict[str, int] = {}
    for captured in new:
        for kind, count in captured.redactions.items():
            totals[kind] = totals.get(kind, 0) + count
    if totals:
        click.echo(describe_redactions(totals))
