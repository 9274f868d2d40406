"""``memgit log``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgit.cli.output import emit_json
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.history.versions import Version


@click.command("log")
@click.argument("memory_id", metavar="ID")
@click.option(
    "--follow",
    is_flag=True,
    help="Also list the memories that superseded it (before it) and that it superseded (after it).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the versions as JSON.")
@click.pass_obj
def log(directory: Path, memory_id: str, follow: bool, as_json: bool) -> None:
    """Every version of memory ID, newest first.

    \b
    Each line is one commit of HEAD's history that changed the memory's file,
    on either side of a merge (a teammate's edit a sync merged is listed as
    the commit that made it; a merge only when it joined both sides' edits):
    its version number (v1 created it), commit, date, what
    happened (created, updated, superseded by X, retracted, edited or removed
    by a person, merged) and who did it (the run, its backend and model, or
    the commit's author). A memory that left the tree is found through
    refs/memgit/retired/ID; the scope may change on an update, and the log
    follows the file to its old path. Nothing is written.
    """
    from memgit.repo import MemoryRepo

    histories = MemoryRepo.open(directory).log(memory_id, follow=follow)
    if as_json:
        emit_json(
            {
                "id": memory_id,
                "follow": follow,
                "memories": json_data(histories),
            }
        )
        return
    for number, history in enumerate(histories):
        if number:
            click.echo()
        state = "active" if history.active else "retired"
        click.secho(f"{history.memory_id} ({state})", bold=True)
        for version in history.versions:
            click.echo(describe(version))


def describe(version: Version) -> str:
    """One line: number, commit, date, change and who made it."""
    number = f"v{version.number}" if version.number is not None else "-"
    return (
        f"{number:>4}  {version.commit[:12]}  {version.date}  {change(version)}  ({who(version)})"
    )


def change(version: Version) -> str:
    if version.change == "superseded":
        return f"superseded by {version.superseded_by}"
    if version.change == "created" and version.supersedes:
        return f"created, superseding {', '.join(version.supersedes)}"
    if version.change in ("edited", "removed"):
        return f"{version.change} by a person"
    if version.moved_from is not None:
        return f"{version.change}, moved from {version.moved_from}"
    return version.change


def who(version: Version) -> str:
    if version.run_id is None:
        return version.author
    backend = ", ".join(part for part in (version.backend, version.model) if part)
    return f"run {version.run_id}" + (f", {backend}" if backend else "")
