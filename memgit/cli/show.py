"""``memgit show``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.output import emit_json
from memgit.jsonio import json_data


@click.command("show")
@click.argument("spec", metavar="ID[@REV]")
@click.option("--json", "as_json", is_flag=True, help="Print the version and its file as JSON.")
@click.pass_obj
def show(directory: Path, spec: str, as_json: bool) -> None:
    """Print memory ID's file as it was at REV (default: its latest version).

    \b
    REV is one of
      vN          the Nth version (v1 created it; `memgit log ID` numbers them)
      2026-11-01  a date (ISO 8601): the last version at or before the end of
                  that day, UTC (2026-11 the end of the month; a time without
                  a zone is UTC)
      COMMIT      anything git rev-parse takes: the file as that commit holds it
    vN always means a version number: write tags/v2 for a tag named v2.
    A retired (superseded or retracted) memory shows its last version, and a
    line on stderr says it is retired: by which memory, in which commit.
    The file is printed byte for byte, so `memgit show ID@v1 > old.md` keeps it.
    Nothing is written.
    """
    from memgit.repo import MemoryRepo

    snap = MemoryRepo.open(directory).show(spec)
    if not as_json:
        if not snap.status.active:
            # On stderr: stdout stays the file byte for byte, though it reads "active".
            click.echo(snap.status.describe(snap.memory_id), err=True)
        click.echo(snap.text, nl=False)
        return
    emit_json(json_data(snap))
