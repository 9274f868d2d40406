"""``memgit demo``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgit import git
from memgit.cli.output import describe_redactions, emit_json
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.capture.inbox import CapturedTurn
    from memgit.pack import EvidencePack
    from memgit.process import ProcessResult


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
    from memgit.demo import DEMO_QUERY, bundled_conversation
    from memgit.repo import MemoryRepo

    path = target if target is not None else Path(tempfile.mkdtemp(prefix="memgit-demo-"))
    MemoryRepo.init(path)
    with MemoryRepo.open(path) as repo:
        captures = [
            repo.capture(line, source=f"conversation.jsonl:{number}")
            for number, line in enumerate(bundled_conversation(), start=1)
        ]
        processed = repo.process(backend="rules")
        pack = repo.recall(DEMO_QUERY, k=3)
    if as_json:
        emit_json(
            {
                "path": str(path),
                "captures": json_data(captures),
                "process": json_data(processed),
                "recall": json_data(pack),
            }
        )
    else:
        _tour(path, captures, processed, pack)


def _tour(
    path: Path, captures: list[CapturedTurn], processed: ProcessResult, pack: EvidencePack
) -> None:
    """What each step wrote, as files and git show it, then what recall found."""
    heading = click.style
    click.echo(heading(f"memgit demo repository: {path}", bold=True))
    click.echo()
    click.echo(heading("1. Captured turns (one commit each)", bold=True))
    for outcome in captures:
        note = f"  ({describe_redactions(outcome.redactions)})" if outcome.redactions else ""
        click.echo(f"  {outcome.path}{note}")
    click.echo()
    click.echo(heading("2. A capture file, as stored (secrets already gone)", bold=True))
    redacted = next((o for o in captures if o.redactions), captures[0])
    click.echo((path / redacted.path).read_text("utf-8"))
    click.echo(heading("3. Processed by the offline rules Gate: one commit per run", bold=True))
    for run in processed.runs:
        click.echo(f"  run {run.run_id}")
        for decision in run.decisions:
            click.echo(f"  {decision.action:<7} {decision.path}")
    click.echo()
    first = next((d for run in processed.runs for d in run.decisions), None)
    if first is not None:
        click.echo(heading(f"4. A memory: {first.path}", bold=True))
        click.echo((path / first.path).read_text("utf-8"))
    for run in processed.runs:
        record = next(path.glob(f"runs/*/*/{run.run_id}.json"))
        click.echo(heading(f"5. Its run record: {record.relative_to(path)}", bold=True))
        click.echo(_excerpt(record.read_text("utf-8"), 24))
    click.echo(heading("6. git log, with the trailers programs read", bold=True))
    click.echo(_git(path, "log", "--format=%h %s%n%(trailers:only,unfold)"))
    click.echo(heading(f'7. memgit recall "{pack.query}"', bold=True))
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
    click.echo(f"  cd {path}")
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
