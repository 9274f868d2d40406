"""``memgit index status`` and ``memgit index rebuild``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgit.cli.output import emit_json
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.derived.lexical import IndexStatus


@click.group()
def index() -> None:
    """The recall index: a cache in .git/memgit/index.sqlite.

    You never need these commands for correct results: recall brings the
    index in line with HEAD, the retired refs and your uncommitted edits
    before every query, and rebuilds it if it is missing, corrupt or from
    another memgit version. Deleting the file loses nothing.

    Both subcommands take --json.
    """


@index.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_obj
def status(directory: Path, as_json: bool) -> None:
    """Which tree the index reflects, whether that is HEAD's, and what it holds.

    Changes nothing. "stale" only means the next recall will first refresh
    the index (re-indexing just the files that changed).
    """
    from memgit.repo import MemoryRepo

    result = MemoryRepo.open(directory).index_status()
    if as_json:
        emit_json(json_data(result))
        return
    _render(result)


@index.command()
@click.option("--json", "as_json", is_flag=True, help="Print the new status as JSON.")
@click.pass_obj
def rebuild(directory: Path, as_json: bool) -> None:
    """Rebuild the index from scratch from HEAD and refs/memgit/retired/*."""
    from memgit.cli.progress import progress_bar
    from memgit.repo import MemoryRepo

    repo = MemoryRepo.open(directory)
    with progress_bar(enabled=not as_json, delay=0) as progress:
        result = repo.rebuild_index(progress)
    if as_json:
        emit_json(json_data(result))
        return
    click.echo("Rebuilt the recall index.")
    _render(result)


def _render(result: IndexStatus) -> None:
    click.echo(f"index:   {result.path}")
    if result.problem:
        click.echo(f"state:   {result.problem}")
    else:
        click.echo(
            f"state:   {'stale (refreshed on the next recall)' if result.stale else 'current'}"
        )
    click.echo(f"version: {result.schema_version} (this memgit: {result.expected_version})")
    indexed = result.indexed_tree[:12] if result.indexed_tree else "-"
    click.echo(f"tree:    {indexed} indexed, {result.head_tree[:12]} at HEAD")
    click.echo(f"size:    {result.size:,} bytes")
    for name, count in result.counts.items():
        click.echo(f"  {name}: {count:,}")
