"""``memgit forget``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.output import emit_json


@click.command("forget")
@click.argument("memory_ids", metavar="ID...", nargs=-1, required=True)
@click.option(
    "--with-sources",
    is_flag=True,
    help="Also remove the captures these memories quote that no other memory quotes.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
@click.pass_obj
def forget(directory: Path, memory_ids: tuple[str, ...], with_sources: bool, as_json: bool) -> None:
    """Remove memories ID... from the branch in one commit.

    \b
    The commit has one Memgit-Forgotten: ID trailer per memory and passes the
    same checks as every memgit commit. Git history still holds the memories
    (and the captures); a forgotten memory gets no refs/memgit/retired/ ref, so
    recall does not name it, not even with --include-retired. An id that is
    malformed or names no memory in HEAD refuses the whole command.
    """
    from memgit.cli.output import plural
    from memgit.repo import MemoryRepo

    result = MemoryRepo.open(directory).forget(memory_ids, with_sources=with_sources)
    if as_json:
        emit_json(result.to_dict())
        return
    count = len(result.memories)
    memories = "1 memory" if count == 1 else f"{count} memories"
    click.echo(f"forgot {memories} in {(result.commit or '')[:12]}")
    for memory_id, path in result.memories:
        click.echo(f"  {memory_id}  {path}")
    if result.captures:
        click.echo(f"removed {plural(len(result.captures), 'capture')}")
        for path in result.captures:
            click.echo(f"  {path}")
