"""``memgit map``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.output import emit_json
from memgit.jsonio import json_data


@click.command("map")
@click.option(
    "--recent",
    type=click.IntRange(0, 100),
    default=10,
    show_default=True,
    help="How many of the latest memories to list.",
)
@click.option(
    "--terms",
    type=click.IntRange(0, 100),
    default=20,
    show_default=True,
    help="How many distinctive terms to list.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the map as JSON.")
@click.pass_obj
def map_command(directory: Path, recent: int, terms: int, as_json: bool) -> None:
    """A short overview of the memory, for the start of an agent's session.

    Counts of memories by scope and by type, the most recently updated
    memories, and the terms that say most about the repository. The output
    is bounded (at most 50 scopes and types, 100 memories and terms) however
    large the repository grows.
    """
    from memgit.cli.progress import progress_bar
    from memgit.repo import MemoryRepo

    with progress_bar() as progress:
        result = MemoryRepo.open(directory).map(recent=recent, terms=terms, progress=progress)
    if as_json:
        emit_json(json_data(result))
        return
    header, *rest = result.summary_lines()
    click.secho(header, bold=True)
    for line in rest:
        click.secho(line, bold=line == "recent:")
