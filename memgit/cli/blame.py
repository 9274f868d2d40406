"""``memgit blame``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.output import emit_json
from memgit.jsonio import json_data


@click.command("blame")
@click.argument("spec", metavar="ID[@REV]")
@click.option("--json", "as_json", is_flag=True, help="Print lines, commits and quotes as JSON.")
@click.pass_obj
def blame(directory: Path, spec: str, as_json: bool) -> None:
    """For each line of memory ID's body, the version and run that last changed it,
    and the exact source quotes behind that run's decision.

    \b
    Each quote names its capture file and the lines there that hold it, who
    said it (role, and name for a tool), when, and the words. A line last
    changed by a person's commit has no quotes. REV (vN, a date or a commit,
    as in `memgit show`) blames an older version. git's own blame does the
    line work (`git blame`, every side of a merge). Nothing is written.
    """
    from memgit.cli.log import change, who
    from memgit.repo import MemoryRepo

    result = MemoryRepo.open(directory).blame(spec)
    if as_json:
        emit_json(json_data(result))
        return
    labels = {}
    for item in result.commits:
        number = f"v{item.version.number}" if item.version and item.version.number else "-"
        labels[item.commit] = f"{number:>4} {item.commit[:12]}"
    for line in result.lines:
        click.echo(f"{labels[line.commit]}  {line.line:>3}| {line.text}")
    for item in result.commits:
        click.echo()
        if item.version is None:
            click.secho(
                f"{labels[item.commit].strip()}: not a version `memgit log` lists", bold=True
            )
            continue
        version = item.version
        click.secho(
            f"{labels[item.commit].strip()} {version.date}: {change(version)} ({who(version)})",
            bold=True,
        )
        for quote in item.quotes:
            where = quote.capture or "?"
            if quote.lines is not None:
                first, last = quote.lines
                where += f":{first}" if first == last else f":{first}-{last}"
            speaker = quote.role or "?"
            if quote.name:
                speaker += f" {quote.name}"
            click.echo(f'  {where} {speaker}, {quote.timestamp or "?"}: "{quote.quote}"')
