"""``memgit replay``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.output import emit_json
from memgit.jsonio import json_data


@click.command("replay")
@click.argument("run_ids", metavar="[RUN_ID...]", nargs=-1)
@click.option(
    "--last", type=click.IntRange(min=1), metavar="N", help="Also the branch's last N runs."
)
@click.option(
    "--backend",
    help="The Gate backend to ask (rules, openai, command; default: gate.backend).",
)
@click.option("--json", "as_json", is_flag=True, help="Print each replay as JSON.")
@click.pass_obj
def replay(
    directory: Path,
    run_ids: tuple[str, ...],
    last: int | None,
    backend: str | None,
    as_json: bool,
) -> None:
    """Ask a backend again what runs RUN_ID... (or the last N) were asked, and diff.

    \b
    Each run's question is put again as it was: the units of the captures it
    read, and the related memories as its parent commit holds them. The answer
    is checked as a run's is and applied in memory on the parent; each memory
    file it would write is compared with the run's commit. "same prompt" says
    whether the question was the very one the run was asked (the related
    memories come from today's index). Nothing is committed. Exit 0 when every
    replay matches its run, 1 when one differs or is refused.
    """
    from memgit.repo import MemoryRepo

    replays = MemoryRepo.open(directory).replay(run_ids, last=last, backend=backend)
    if as_json:
        emit_json(json_data(replays))
    else:
        for item in replays:
            verdict = "same" if item.same else "refused" if item.refused else "differs"
            prompt = "same prompt" if item.same_prompt else "other prompt"
            click.echo(f"{item.run_id}  {verdict}  ({item.backend}, {prompt})")
            for problem in item.refused:
                click.echo(f"  {problem.render()}")
            for change in item.files:
                click.echo(change.diff, nl=False)
    if not all(item.same for item in replays):
        raise click.exceptions.Exit(1)
