"""``memgit forget``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgit.cli.output import emit_json, plural
from memgit.errors import UsageError
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.forget import Forgotten
    from memgit.purge import Purged


@click.command("forget")
@click.argument("memory_ids", metavar="ID...", nargs=-1)
@click.option(
    "--with-sources",
    is_flag=True,
    help="Also remove the captures these memories quote that no other memory quotes.",
)
@click.option(
    "--purge",
    is_flag=True,
    help="Rewrite the history of every local ref so the memories are gone from it.",
)
@click.option(
    "--purge-text",
    "texts",
    multiple=True,
    metavar="TEXT",
    help="With --purge: also replace TEXT (a leaked string) everywhere. Repeatable.",
)
@click.option(
    "--push",
    is_flag=True,
    help="With --purge: then force-push the rewrite, with leases, to every remote holding "
    "the old history.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
@click.pass_obj
def forget(
    directory: Path,
    memory_ids: tuple[str, ...],
    with_sources: bool,
    purge: bool,
    texts: tuple[str, ...],
    push: bool,
    as_json: bool,
) -> None:
    """Remove memories ID... from the branch in one commit, or purge them from history.

    \b
    The commit has one Memgit-Forgotten: ID trailer per memory and passes the
    same checks as every memgit commit. Git history still holds the memories
    (and the captures); a forgotten memory gets no refs/memgit/retired/ ref, so
    recall does not name it, not even with --include-retired. An id that is
    malformed or names no memory in HEAD refuses the whole command.

    \b
    --purge rewrites every local branch, tag, remote-tracking and memgit ref
    instead, expires the reflogs and prunes the old objects; it prints each
    ref it moved and the remotes that still hold the old history. It never
    pushes, unless --push: then each configured remote's branches, tags and
    refs/memgit/ refs on the old history are replaced in one atomic push, each
    with a lease on what the remote held, and a remote that holds commits this
    clone has not fetched is refused whole. Rotate a leaked credential first:
    other clones keep it (docs/history.md#purge).
    """
    from memgit.repo import MemoryRepo

    for flag, given in (("--purge-text", texts), ("--push", push)):
        if given and not purge:
            raise UsageError(f"{flag} needs --purge", code="usage", field=flag)
    repo = MemoryRepo.open(directory)
    if purge:
        _purge(repo.purge(memory_ids, texts=texts, with_sources=with_sources, push=push), as_json)
        return
    if not memory_ids:
        raise UsageError("name at least one memory id", code="usage", field="ID")
    result = repo.forget(memory_ids, with_sources=with_sources)
    if as_json:
        emit_json(json_data(result))
    else:
        _print_forgotten(result)


def _purge(purged: Purged, as_json: bool) -> None:
    """What ``--purge`` rewrote; a remote that refused the push sets the exit status."""
    if as_json:
        emit_json(json_data(purged))
    else:
        _print_purged(purged)
    failed = [remote.error for remote in purged.pushed if remote.error is not None]
    for error in failed:
        click.echo(error.render(), err=True)
    if failed:
        raise click.exceptions.Exit(int(failed[0].exit_status))


def _print_forgotten(result: Forgotten) -> None:
    count = len(result.memories)
    memories = "1 memory" if count == 1 else f"{count} memories"
    click.echo(f"forgot {memories} in {(result.commit or '')[:12]}")
    for memory_id, path in result.memories:
        click.echo(f"  {memory_id}  {path}")
    if result.captures:
        click.echo(f"removed {plural(len(result.captures), 'capture')}")
        for path in result.captures:
            click.echo(f"  {path}")


def _print_purged(purged: Purged) -> None:
    click.echo(f"rewrote {plural(len(purged.refs), 'ref')}")
    for move in purged.refs:
        new = move.new[:12] if move.new is not None else "(deleted)"
        click.echo(f"  {move.name}  {move.old[:12]} -> {new}")
    for remote in purged.pushed:
        if remote.error is None:
            click.echo(f"pushed to {remote.remote}: {plural(len(remote.refs), 'ref')}")
            for move in remote.refs:
                new = move.new[:12] if move.new is not None else "(deleted)"
                click.echo(f"  {move.name}  {move.old[:12]} -> {new}")
    if purged.remotes:
        click.echo(f"still holding the old history: {', '.join(purged.remotes)}")
        if not purged.pushed:
            click.echo("  memgit did not push; see docs/history.md#purge (or use --push)")
