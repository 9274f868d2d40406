"""``memgit demo``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit import git
from memgit.cli.output import describe_redactions, emit_json
from memgit.jsonio import json_data


@click.command()
@click.option(
    "--path",
    "target",
    type=click.Path(file_okay=False, path_type=Path),
    help="Build the demo repository here instead of a new temporary folder.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def demo(target: Path | None, as_json: bool) -> None:
    """Show memgit at work on a small bundled conversation (offline, no model).

    Creates a memory repository, captures each turn of the conversation (one
    commit per turn, secrets redacted before anything is written), processes
    the turns with the offline `rules` Gate (one validated commit for the run)
    and shows the memories, the run record and the history with its trailers,
    then recalls what was stored.
    The repository is kept so you can explore it with ordinary git commands.
    """
    from memgit.repo import MemoryRepo

    result = MemoryRepo.demo(target)
    if as_json:
        emit_json(
            {
                "path": str(result.path),
                "captures": json_data(result.captures),
                "process": json_data(result.processed),
                "recall": json_data(result.recalled),
            }
        )
        return
    heading = click.style
    click.echo(heading(f"memgit demo repository: {result.path}", bold=True))
    click.echo()
    click.echo(heading("1. Captured turns (one commit each)", bold=True))
    for outcome in result.captures:
        note = f"  ({describe_redactions(outcome.redactions)})" if outcome.redactions else ""
        click.echo(f"  {outcome.path}{note}")
    click.echo()
    click.echo(heading("2. A capture file, as stored (secrets already gone)", bold=True))
    redacted = next((o for o in result.captures if o.redactions), result.captures[0])
    click.echo((result.path / redacted.path).read_text("utf-8"))
    click.echo(heading("3. Processed by the offline rules Gate: one commit per run", bold=True))
    for run in result.processed.runs:
        click.echo(f"  run {run.run_id}")
        for decision in run.decisions:
            click.echo(f"  {decision.action:<7} {decision.path}")
    click.echo()
    first = next((d for run in result.processed.runs for d in run.decisions), None)
    if first is not None:
        click.echo(heading(f"4. A memory: {first.path}", bold=True))
        click.echo((result.path / first.path).read_text("utf-8"))
    for run in result.processed.runs:
        record = next(result.path.glob(f"runs/*/*/{run.run_id}.json"))
        click.echo(heading(f"5. Its run record: {record.relative_to(result.path)}", bold=True))
        click.echo(_excerpt(record.read_text("utf-8"), 24))
    click.echo(heading("6. git log, with the trailers programs read", bold=True))
    click.echo(_git(result.path, "log", "--format=%h %s%n%(trailers:only,unfold)"))
    click.echo(heading(f'7. memgit recall "{result.recalled.query}"', bold=True))
    pack = result.recalled
    click.echo("  relevance: a hit's score as a share of the best of its kind (docs/recall.md)")
    for hit in pack.memories:
        commit = hit.commit[:12] if hit.commit else "uncommitted"
        memory = hit.memory
        click.echo(
            f"  {pack.relevance(hit):4.2f}  {memory.id}  {memory.title}  ({memory.path} @ {commit})"
        )
    for turn in pack.turns[:2]:
        role = turn.message.role
        click.echo(f"  {pack.relevance(turn):4.2f}  {role} message {turn.index} of {turn.capture}")
    click.echo()
    click.echo(heading("Explore it yourself:", bold=True))
    click.echo(f"  cd {result.path}")
    click.echo("  git log --stat    git show HEAD    git log --format='%(trailers)'")
    click.echo("  git for-each-ref refs/memgit    git blame memories/")


def _excerpt(text: str, lines: int) -> str:
    kept = text.splitlines()
    more = f"\n  ... ({len(kept) - lines} more lines)" if len(kept) > lines else ""
    return "\n".join(kept[:lines]) + more + "\n"


def _git(path: Path, *args: str) -> str:
    """Run git for display only (the demo shows what a user would see)."""
    done = git.run(path, *args)
    return done.out if done.ok else done.err
