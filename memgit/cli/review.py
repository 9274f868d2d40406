"""``memgit review list|show|approve|reject|push``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgit.cli.output import emit_json
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.pack import SourceEvidence
    from memgit.repo import MemoryRepo


@click.group()
def review() -> None:
    """Proposed runs: list, show, approve, reject, push.

    With a review: section in memgit.yaml, `memgit process` commits each run
    the policy covers on its own branch, memgit/proposals/<run-id>, based on
    the tip it was made on; the checked-out branch does not move. Approving
    merges it with a compare-and-swap (and sets the run and retired refs);
    rejecting keeps it under refs/memgit/rejected/<run-id> with the reason.
    Nothing a review command does loses a commit. A proposal merged by other
    means (git merge, a host's merge button) counts as applied. Every
    subcommand takes --json; an unknown ID is a usage error (exit 2). See
    docs/review.md.
    """


@review.command("list")
@click.option("--all", "everything", is_flag=True, help="Also applied and rejected proposals.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the proposals and contradictions as JSON."
)
@click.pass_obj
def list_command(directory: Path, everything: bool, as_json: bool) -> None:
    """Open proposals (run id, what they change, age, backend), then open
    contradictions (memories that replace the same one).

    A proposal whose run record is already in the branch's tree is applied,
    not open, however it got there. --all shows applied and rejected ones too,
    with their state (and a rejection's reason). A contradiction is open while
    the branch holds it: `memgit review approve ID --keep MEMORY` closes it.
    With --json, each item has "kind": "proposal" or "contradiction".
    """
    from memgit.repo import MemoryRepo

    repo = MemoryRepo.open(directory)
    found = repo.review_list(everything=everything)
    contradictions = repo.review_contradictions()
    if as_json:
        emit_json(
            [{"kind": "proposal", **item} for item in found]
            + [{"kind": "contradiction", **json_data(item)} for item in contradictions]
        )
        return
    for contradiction in contradictions:
        click.echo(f"{contradiction.id} [contradiction]  {contradiction.describe()}")
    if not found and not contradictions:
        click.echo("No open proposals." if not everything else "No proposals.")
    for item in found:
        state = "" if item["state"] == "open" else f" [{item['state']}]"
        if item.get("error"):
            click.echo(f"{item['run_id']}{state}  unreadable: {item['error']}")
            continue
        backend = f"{item['backend']}/{item['model']}" if item["model"] else item["backend"]
        click.echo(
            f"{item['run_id']}{state}  {_counts(item['counts'])}  "
            f"{_age(item['age_seconds'])} ago  {backend}"
        )
        if item["reason"]:
            click.echo(f"  reason: {item['reason']}")


@review.command()
@click.argument("run_id", metavar="ID")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the proposal, its evidence and its diff as JSON."
)
@click.pass_obj
def show(directory: Path, run_id: str, as_json: bool) -> None:
    """Each memory proposal ID writes or removes, with its quotes and the captured
    turns they come from, then the diff from the proposal's base (git diff style)."""
    from memgit.layout import is_run_id
    from memgit.repo import MemoryRepo

    repo = MemoryRepo.open(directory)
    if not is_run_id(run_id) and any(item.id == run_id for item in repo.review_contradictions()):
        _show_contradiction(repo, run_id, as_json)
        return
    view = repo.review_show(run_id)
    if as_json:
        emit_json(json_data(view))
        return
    summary = view.summary
    click.secho(f"Proposal {run_id} [{summary['state']}]", bold=True)
    click.echo(f"  {_counts(summary['counts'])}, from {summary['backend']}, on {view.base[:12]}")
    if summary["reason"]:
        click.echo(f"  rejected: {summary['reason']}")
    for item in view.decisions:
        decision, memory = item.decision, item.memory
        title = memory.title if memory is not None else decision["memory_id"]
        target = f" (replaces {decision['target']})" if decision.get("target") else ""
        click.echo()
        click.echo(f"{decision['action']:<9} {decision.get('candidate_id', '')}  {title}{target}")
        click.echo(f"          {decision['memory_id']}  {decision['path']}")
        if memory is not None and decision["action"] != "RETRACT":
            for line in memory.body.splitlines():
                click.echo(f"          | {line}")
        _sources(item.sources)
    click.echo()
    click.echo(view.diff, nl=False)


def _show_contradiction(repo: MemoryRepo, item: str, as_json: bool) -> None:
    """Each memory of contradiction ITEM, whole, so a person can choose one."""
    contradiction = repo.review_contradiction(item)
    if as_json:
        emit_json(json_data(contradiction))
        return
    click.secho(f"Contradiction {contradiction.id}", bold=True)
    click.echo(f"  {len(contradiction.rivals)} active memories replace {contradiction.replaced}:")
    for rival in contradiction.rivals:
        memory = repo.read(id=rival.id)
        click.echo()
        click.echo(f"{rival.id}  {rival.path}")
        for line in memory.text.splitlines():
            click.echo(f"  | {line}")
    click.echo()
    click.echo(f"Keep one: memgit review approve {contradiction.id} --keep MEMORY_ID")


def _sources(sources: tuple[SourceEvidence, ...]) -> None:
    from memgit.cli.recall import render_source

    for evidence in sources:
        render_source(evidence, show_turns=True, indent=10)


@review.command()
@click.argument("run_id", metavar="ID")
@click.option(
    "--only",
    multiple=True,
    metavar="CANDIDATE",
    help="Approve only this candidate (repeatable); the others' units are recorded as "
    "DEFERRED, so the next memgit process asks about them again.",
)
@click.option(
    "--rebase",
    is_flag=True,
    help="Check and apply the run's stored Gate answer again on the branch as it is now "
    "(the backend is not asked), when what it writes changed since.",
)
@click.option(
    "--keep",
    metavar="MEMORY",
    help="For a contradiction (ID is the memory its memories replace): the memory to keep; "
    "the others leave the tree as replaced by it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the approval as JSON.")
@click.pass_obj
def approve(
    directory: Path,
    run_id: str,
    only: tuple[str, ...],
    rebase: bool,
    keep: str | None,
    as_json: bool,
) -> None:
    """Merge proposal ID into the current branch, compare-and-swap.

    If the branch is still the proposal's base it fast-forwards; if it moved
    but nothing the proposal writes changed, a merge commit; otherwise it stops
    with proposal-stale (exit 4) and changes nothing: --rebase then replays the
    run on the new tip. The run ref and retired refs are set with the branch;
    the proposal branch is deleted and kept as refs/memgit/applied/ID.

    For a contradiction (ID is the memory that several active memories
    replace), --keep MEMORY keeps that one: the others leave the tree in one
    checked commit, each recorded as replaced by it.
    """
    from memgit.apply import describe_decisions
    from memgit.errors import UsageError
    from memgit.layout import is_run_id
    from memgit.repo import MemoryRepo

    repo = MemoryRepo.open(directory)
    if keep is not None:
        if only or rebase or is_run_id(run_id):
            raise UsageError(
                "--keep closes a contradiction (ID: the memory its memories replace); "
                "it takes no --only or --rebase, and ID is no run id",
                code="usage",
                field="--keep",
                hint="`memgit review list` shows contradictions and proposals",
            )
        _resolve(repo, run_id, keep, as_json)
        return
    result = repo.review_approve(run_id, only=only, rebase=rebase)
    if as_json:
        emit_json(json_data(result))
        return
    click.echo(
        f"Approved {run_id} ({result.how}): {describe_decisions(result.decisions)} "
        f"in {result.commit[:12]}"
    )


def _resolve(repo: MemoryRepo, item: str, keep: str, as_json: bool) -> None:
    """``approve ID --keep MEMORY``: close contradiction ``item`` keeping one memory."""
    resolution = repo.review_resolve(item, keep=keep)
    if as_json:
        emit_json(json_data(resolution))
        return
    click.echo(
        f"Kept {resolution.kept}; {', '.join(resolution.retired)} replaced by it "
        f"in {resolution.commit[:12]}"
    )


@review.command()
@click.argument("run_id", metavar="ID")
@click.option("--reason", required=True, help="Why the proposal is wrong (recorded).")
@click.option("--json", "as_json", is_flag=True, help="Print the rejection as JSON.")
@click.pass_obj
def reject(directory: Path, run_id: str, reason: str, as_json: bool) -> None:
    """Reject proposal ID: its branch moves to refs/memgit/rejected/ID, as a commit
    on top of the proposal holding the reason. Its units are not proposed again
    unless `memgit process --include-rejected`."""
    from memgit.repo import MemoryRepo

    result = MemoryRepo.open(directory).review_reject(run_id, reason=reason)
    if as_json:
        emit_json(json_data(result))
        return
    click.echo(f"Rejected {run_id}: kept as {result.ref} ({result.commit[:12]})")


@review.command()
@click.argument("run_id", metavar="ID")
@click.argument("remote", default="origin")
@click.option("--json", "as_json", is_flag=True, help="Print what was pushed as JSON.")
@click.pass_obj
def push(directory: Path, run_id: str, remote: str, as_json: bool) -> None:
    """Push proposal ID's branch to REMOTE (default origin), where a hosted Git
    service offers it as a pull request; merging it there counts as approving."""
    from memgit.repo import MemoryRepo

    result = MemoryRepo.open(directory).review_push(run_id, remote)
    if as_json:
        emit_json(json_data(result))
        return
    click.echo(f"Pushed {result.branch} ({result.commit[:12]}) to {remote}")


def _counts(counts: dict[str, int]) -> str:
    from memgit.apply import PAST_TENSE

    parts = [f"{counts[a]} {word}" for a, word in PAST_TENSE.items() if counts.get(a)]
    return ", ".join(parts) or "no memory changes"


def _age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
