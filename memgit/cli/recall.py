"""``memgit recall``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memgit.cli.output import emit_json, plural
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.pack import EvidencePack, MemoryHit, SourceEvidence, Successor, TurnHit

# How many of the terms the vocabulary added for one query entry the trace lists.
SHOWN_EXPANSIONS = 8


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-k", "k", type=int, default=10, show_default=True, help="How many of each to show.")
@click.option("--scope", help="Only memories in this scope or below it (e.g. project).")
@click.option("--type", "type", metavar="TYPE", help="Only memories of this type (e.g. fact).")
@click.option(
    "--exclude-thread",
    metavar="THREAD",
    help="Leave out captured turns of this thread (or session), and memories whose "
    "only sources are such turns.",
)
@click.option(
    "--from-turn",
    type=int,
    metavar="N",
    help="With --exclude-thread: leave out only turns N and later of that thread.",
)
@click.option(
    "--evidence", is_flag=True, help="Show the captured turns behind each memory's sources."
)
@click.option(
    "--as-of",
    metavar="REV|DATE",
    help="Recall as the repository was at a commit (anything git rev-parse takes) or at "
    "an ISO 8601 date (the last commit on this branch at or before it).",
)
@click.option("--include-retired", is_flag=True, help="Rank superseded and retracted memories too.")
@click.option("--json", "as_json", is_flag=True, help="Print the evidence pack as JSON.")
@click.pass_obj
def recall(
    directory: Path, /, query: tuple[str, ...], as_of: str | None, as_json: bool, **options: Any
) -> None:
    """Find memories and captured turns about QUERY: an evidence pack.

    \b
    Memories are ranked by BM25 over title, tags and body (English is stemmed,
    Chinese and Japanese are split into character pairs); captured turns are
    ranked separately, as raw evidence. Each memory comes with the path and
    commit it was last changed in, and its sources. Words of the recall
    vocabulary bring in related terms at half weight ("test framework" also
    finds pytest); hits say what matched that way (docs/recall.md).

    A miss explains itself: the trace names query words found nowhere,
    matches hidden by --scope/--type, and retired memories that matched,
    with the memory that superseded each. An empty answer means "retry with
    other words", never "there is nothing".

    The index lives in .git/memgit/index.sqlite and follows HEAD and your
    uncommitted edits by itself; see `memgit index --help`.
    """
    from memgit.cli.progress import progress_bar
    from memgit.recall import RecallOptions
    from memgit.repo import MemoryRepo

    repo = MemoryRepo.open(directory)
    with progress_bar() as progress:
        pack = repo.recall(
            " ".join(query), RecallOptions(**options), as_of=as_of, progress=progress
        )
    if as_json:
        emit_json(json_data(pack))
    else:
        render_pack(pack)


def render_pack(pack: EvidencePack) -> None:
    when = f" as of {pack.as_of[:12]}" if pack.as_of else ""
    click.secho(f"Memories{when}", bold=True)
    if not pack.memories:
        click.echo("  (none)")
    for number, hit in enumerate(pack.memories, 1):
        _memory(number, hit, pack.relevance(hit), show_turns=pack.filters.get("evidence", False))
    click.echo()
    click.secho("Captured turns (raw evidence; a memory's own turns are shown under it)", bold=True)
    if not pack.turns:
        click.echo("  (none)")
    for number, turn in enumerate(pack.turns, 1):
        _turn(number, turn, pack.relevance(turn))
    _trace(pack)


def _memory(number: int, hit: MemoryHit, relevance: float, *, show_turns: bool) -> None:
    memory = hit.memory
    status = "" if hit.status == "active" else f" [{hit.status}]"
    click.echo(
        f"{number:>3}. {click.style(memory.title, bold=True)}{status}  "
        f"({memory.type}, {memory.scope}, relevance {relevance:.2f})"
    )
    if hit.snippet:
        click.echo(f"     {hit.snippet}")
    where = "uncommitted" if hit.uncommitted else (hit.commit[:12] if hit.commit else "?")
    click.echo(f"     {memory.id}  {memory.path} @ {where}")
    if hit.matched_terms:
        click.echo(f"     matched: {', '.join(hit.matched_terms)}")
    if hit.expanded_terms:
        click.echo(f"     matched through the vocabulary: {', '.join(hit.expanded_terms)}")
    if hit.status != "active":
        click.echo(f"     {_superseded(hit.chain) if hit.chain else 'retracted'}")
    for evidence in hit.sources:
        render_source(evidence, show_turns=show_turns, indent=5)
    for turn in hit.source_turns:
        where = f"{turn.capture} message {turn.index}"
        if turn.removed_in is not None:
            where += f", archived: removed from the inbox in {turn.removed_in[:12]}"
        click.echo(f"     turn: {where}")
        if turn.snippet:
            click.echo(f"       {turn.snippet}")


def render_source(evidence: SourceEvidence, *, show_turns: bool, indent: int) -> None:
    """A memory's source: its quote, and with ``show_turns`` the captured turn
    (``recall --evidence``, ``review show``)."""
    pad = " " * indent
    source = evidence.source
    click.echo(f'{pad}source: {source.capture}: "{_short(source.quote, 100)}"')
    if show_turns and evidence.turn is not None:
        for message in evidence.turn.messages:
            click.echo(f"{pad}  {message.role}: {_short(message.content, 160)}")
    if evidence.error:
        click.echo(f"{pad}  ({evidence.error})")


def _turn(number: int, hit: TurnHit, relevance: float) -> None:
    turn, message = hit.turn, hit.message
    who = message.role + (f" {message.name}" if message.name else "")
    click.echo(
        f"{number:>3}. {turn.source}/{turn.session}#{turn.seq} {who}, {turn.timestamp}"
        f"{', thread ' + turn.thread if turn.thread else ''} (relevance {relevance:.2f})"
    )
    if hit.snippet:
        click.echo(f"     {hit.snippet}")
    click.echo(f"     {hit.capture} message {hit.index}")
    if hit.removed_in is not None:
        click.echo(f"     archived: removed from the inbox in {hit.removed_in[:12]}")
    if hit.matched_terms:
        click.echo(f"     matched: {', '.join(hit.matched_terms)}")
    if hit.context_terms:
        click.echo(f"     matched in the messages around it: {', '.join(hit.context_terms)}")
    if hit.expanded_terms:
        click.echo(f"     matched through the vocabulary: {', '.join(hit.expanded_terms)}")


def _trace(pack: EvidencePack) -> None:
    trace = pack.trace
    lines = []
    if trace.unknown_terms:
        lines.append(f"found nowhere in the repository: {', '.join(trace.unknown_terms)}")
    if trace.stop_words:
        lines.append(f"ignored common words: {', '.join(trace.stop_words)}")
    for source, terms in trace.expansions.items():
        shown = ", ".join(terms[:SHOWN_EXPANSIONS])
        more = f" and {len(terms) - SHOWN_EXPANSIONS} more" if len(terms) > SHOWN_EXPANSIONS else ""
        lines.append(f"also searched for {source!r} (the vocabulary, half weight): {shown}{more}")
    if trace.dropped_terms:
        lines.append(
            f"only the first {len(trace.terms)} terms were used; {trace.dropped_terms} more ignored"
        )
    if trace.hidden_total:
        ids = ", ".join(f"{m.memory.id} ({'/'.join(m.hidden_by)})" for m in trace.hidden)
        count = trace.hidden_total
        matches = "1 match" if count == 1 else f"{count} matches"
        lines.append(f"{matches} hidden by --scope/--type: {ids}")
    for match in trace.retired:
        retired = f"retired memory {match.memory.id} ({match.memory.title}) matched"
        if match.chain:
            state = "" if match.chain[-1].active else " (the last is itself retired)"
            lines.append(f"{retired}; {_superseded(match.chain)}{state}")
        else:
            lines.append(f"{retired}; it was retracted")
    if trace.excluded_memories:
        lines.append(f"left out by --exclude-thread: {', '.join(trace.excluded_memories)}")
    if trace.excluded_turns:
        lines.append(f"left out by --exclude-thread: {plural(trace.excluded_turns, 'turn')}")
    if trace.archived_turns:
        lines.append(
            f"archived (removed from the inbox, read from history): "
            f"{plural(trace.archived_turns, 'turn')}"
        )
    for problem in trace.problems:
        lines.append(f"skipped {problem.path}: [{problem.code}] {problem.message}")
    if trace.problems_total > len(trace.problems):
        lines.append(f"... and {trace.problems_total - len(trace.problems)} more skipped files")
    if lines:
        click.echo()
        click.secho("Trace", bold=True)
        for line in lines:
            click.echo(f"  {line}")
    if pack.miss:
        click.echo()
        click.secho(
            "No memory matched. This is a miss, not an answer: retry with other words "
            "(synonyms, the names used when it was said), widen --scope/--type, "
            "or look at the captured turns above.",
            fg="yellow",
        )


def _superseded(chain: tuple[Successor, ...]) -> str:
    """ "superseded by B (title), then C (title)": the chain to the current successor."""
    steps = ", then ".join(f"{successor.id} ({successor.title})" for successor in chain)
    return f"superseded by {steps}"


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
