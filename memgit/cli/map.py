"""``memgit map``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.output import emit_json


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
        emit_json(result.to_dict())
        return
    click.secho(
        f"{result.memories} memories, {result.captures} captured turns, {result.retired} retired",
        bold=True,
    )
    if result.scopes:
        more = f" (+{result.more_scopes} more)" if result.more_scopes else ""
        click.echo("scopes: " + ", ".join(f"{s} {n}" for s, n in result.scopes) + more)
    if result.types:
        more = f" (+{result.more_types} more)" if result.more_types else ""
        click.echo("types:  " + ", ".join(f"{t} {n}" for t, n in result.types) + more)
    if result.recent:
        click.secho("recent:", bold=True)
        for memory in result.recent:
            click.echo(f"  {memory.id}  {memory.title}  ({memory.type}, {memory.scope})")
    if result.terms:
        click.echo("terms:  " + ", ".join(term for term, _ in result.terms))
    if result.problems:
        click.echo(f"{result.problems} files could not be read; `memgit recall` lists them")
