"""``memgit remember``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memgit.cli.output import emit_json
from memgit.jsonio import json_data


@click.command("remember")
@click.argument("text", metavar="TEXT")
@click.option("--title", help="The memory's title (default: its first line, cut at a word).")
@click.option("--scope", help="The memory's scope (default: memgit.yaml's first scope).")
@click.option(
    "--type", "kind", help="The memory's type, one of memgit.yaml's memory_types (default: fact)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the memory, capture and run as JSON.")
@click.pass_obj
def remember(
    directory: Path,
    text: str,
    title: str | None,
    scope: str | None,
    kind: str | None,
    as_json: bool,
) -> None:
    """Store TEXT as a memory (TEXT - reads it from stdin).

    \b
    TEXT is captured as a user turn (source memgit-remember; secrets are
    redacted before anything is written), then one run over that turn alone
    makes it a memory quoting the captured text whole. The run is checked and
    committed like every run, so `memgit log`, `blame` and `verify` treat it as
    any other; a review policy that covers it puts it on a proposal branch.
    Two commits: the capture, then the run. A text an active memory of the
    same scope already holds (the same words, case and punctuation aside) makes
    no second memory: nothing is written, and the memory that holds it is named.
    """
    from memgit.repo import MemoryRepo

    if text == "-":
        text = sys.stdin.read()
    made = MemoryRepo.open(directory).remember(text, title=title, scope=scope, kind=kind)
    if as_json:
        emit_json(json_data(made))
        return
    if made.already_held:
        click.echo(f"already remembered: {made.memory_id}  {made.path}  holds the same text")
        return
    where = f" on {made.proposal}" if made.proposal else ""
    click.echo(f"remembered {made.memory_id}  {made.path}  (run {made.run_id}{where})")
