"""``memgit diff``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.output import emit_json
from memgit.jsonio import json_data


@click.command("diff")
@click.argument("memory_id", metavar="ID")
@click.argument("old", metavar="[REV1", required=False)
@click.argument("new", metavar="[REV2]]", required=False)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the field changes and body diff as JSON."
)
@click.pass_obj
def diff(directory: Path, memory_id: str, old: str | None, new: str | None, as_json: bool) -> None:
    """Compare two versions of memory ID.

    \b
    Without REV, the version before the latest and the latest (the first
    version is compared with nothing); with REV1, that version and the latest;
    with both, REV1 and REV2. Each REV is vN, a date or a commit, as in
    `memgit show ID@REV`. Front matter changes are listed as fields
    (title: "a" -> "b", tags: +x -y, sources: +1), then the body as a
    unified diff. Nothing is written.
    """
    from memgit.history.diff import label
    from memgit.repo import MemoryRepo

    result = MemoryRepo.open(directory).diff(memory_id, old, new)
    if as_json:
        emit_json(json_data(result))
        return
    click.secho(f"{label(result.old)} -> {label(result.new)}", bold=True)
    for change in result.fields:
        click.echo(change.render())
    if not result.fields:
        click.echo("(front matter unchanged)")
    if result.body:
        click.echo()
        for line in result.body:
            click.echo(line)
    else:
        click.echo("(body unchanged)")
