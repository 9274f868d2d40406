"""``memgit process``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memgit.cli.output import emit_json, plural
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.process import ProcessResult
    from memgit.repo import MemoryRepo


@click.command()
@click.option("--backend", help="Gate backend to use instead of gate.backend in memgit.yaml.")
@click.option(
    "--gate-output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    help="The Gate's answer as a JSON file ('-' for stdin): the host backend, for agents "
    "that extract memories themselves.",
)
@click.option(
    "--print-prompt",
    is_flag=True,
    help="Print what the Gate is asked for the next batch (units included) and its "
    "digest, which a --gate-output answer names as prompt_digest, and exit.",
)
@click.option("--max-batches", type=click.IntRange(min=1), help="Stop after this many runs.")
@click.option(
    "--include-rejected",
    is_flag=True,
    help="Ask the Gate again about units of rejected proposals (docs/review.md).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def process(
    directory: Path,
    backend: str | None,
    gate_output: Path | None,
    print_prompt: bool,
    max_batches: int | None,
    include_rejected: bool,
    as_json: bool,
) -> None:
    """Turn pending captured turns into memories, one validated commit per run.

    Each batch of pending captures goes to the Gate backend (default: the
    offline `rules` backend, which keeps explicit statements such as "remember
    that ..."). Its answer is validated against the evidence; a refused answer
    gets one correction round, then the run fails and nothing is written.
    Each run commits the memory files and runs/<yyyy>/<mm>/<run-id>.json with
    Memgit-* trailers. Captures processed more than inbox.retention_days ago
    (counted from the run that processed them, not from the conversation) are
    then removed from the tree in a separate commit (Git keeps them).

    With review on (review: in memgit.yaml), a run the policy covers is committed
    on the branch memgit/proposals/<run-id> instead, for `memgit review`; units in
    open or rejected proposals are not asked about again.
    """
    from memgit.repo import MemoryRepo

    repo = MemoryRepo.open(directory)
    if print_prompt:
        _print_prompt(repo, include_rejected=include_rejected, as_json=as_json)
        return
    result = _run(
        repo,
        quiet=as_json,
        backend=backend,
        gate_output=None if gate_output is None else _read_answer(gate_output),
        max_batches=max_batches,
        include_rejected=include_rejected,
    )
    if as_json:
        emit_json(json_data(result))
    else:
        _report(result)


def _print_prompt(repo: MemoryRepo, *, include_rejected: bool, as_json: bool) -> None:
    """``--print-prompt``: the Gate's question for the next batch, and its digest."""
    request = repo.gate_prompt(include_rejected=include_rejected)
    if as_json:
        emit_json(None if request is None else request.to_dict())
    elif request is None:
        click.echo("Nothing is pending.", err=True)
    else:
        click.echo(request.text, nl=False)
        click.echo(
            "\nAnswering with --gate-output (the host backend)? Name this prompt in "
            f'the JSON object: "prompt_digest": "{request.digest}"'
        )


def _report(result: ProcessResult) -> None:
    """Each run's decisions, then what was removed, proposed, left pending or skipped."""
    from memgit.apply import describe_decisions

    if not result.runs and not result.cleanup_commit:
        click.echo("Nothing to process.")
    for run in result.runs:
        where = f"proposed on {run.proposal} ({run.commit[:12]})" if run.proposal else ""
        click.echo(
            f"Run {run.run_id}: {describe_decisions(run.decisions)} from "
            f"{plural(len(run.captures), 'capture')} " + (where or f"in {run.commit[:12]}")
        )
        for decision in run.decisions:
            click.echo(f"  {decision.action:<9} {decision.memory_id}  {decision.path}")
        made = {d.candidate_id: d for d in run.decisions}
        for item in run.held:
            holder = made.get(item.same_as) if item.same_as else None
            memory_id, path = (
                (holder.memory_id, holder.path) if holder else (item.memory_id, item.path)
            )
            click.echo(f"  {'HELD':<9} {memory_id}  {path}  already holds {', '.join(item.units)}")
    if result.cleanup_commit:
        click.echo(
            f"Removed {plural(len(result.expired), 'processed capture')} past retention "
            f"in {result.cleanup_commit[:12]}"
        )
    proposed = sum(run.proposal is not None for run in result.runs)
    if proposed:
        click.echo(
            f"{plural(proposed, 'run')} proposed for review: `memgit review list` shows them."
        )
    if result.remaining:
        click.echo(f"{plural(result.remaining, 'capture')} still pending.")
    if result.stuck:
        click.echo(
            f"{plural(len(result.stuck), 'unit')} deferred too often and skipped: "
            + ", ".join(result.stuck[:5])
            + (" ..." if len(result.stuck) > 5 else "")
        )


def _run(repo: MemoryRepo, *, quiet: bool, **options: Any) -> ProcessResult:
    """Process, with a progress bar on a terminal (it appears once several batches run)."""
    from rich.progress import Progress

    if quiet or not sys.stderr.isatty():
        return repo.process(**options)
    with Progress(transient=True) as bar:
        task = bar.add_task("Processing", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return repo.process(progress=progress, **options)


def _read_answer(gate_output: Path) -> bytes:
    """The host's Gate answer, read no further than the limit of any Gate's answer; a
    warning when it names no prompt digest."""
    from memgit.capture.read import read_limited
    from memgit.cli.inputs import open_input
    from memgit.gate.backends.command import MAX_ANSWER_BYTES
    from memgit.gate.backends.host import named_digest

    name, stream = open_input(gate_output)
    with stream:
        answer = read_limited(
            stream, source=name, limit=MAX_ANSWER_BYTES, hint="a Gate answer is one JSON object"
        )
    if named_digest(answer.decode("utf-8", "replace")) is None:
        click.echo(
            "warning: the Gate answer names no prompt_digest, so memgit cannot tell "
            "whether captures arrived since its prompt was printed; --print-prompt "
            "shows the digest to name",
            err=True,
        )
    return answer
