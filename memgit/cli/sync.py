"""``memgit sync``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgit.cli.output import emit_json, plural
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.sharing.sync import SyncResult

JOINED = {
    "up-to-date": "already up to date with",
    "ahead": "ahead of",
    "fast-forward": "fast-forwarded to",
    "merge": "merged with",
}


@click.command()
@click.argument("remote", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def sync(directory: Path, remote: str | None, as_json: bool) -> None:
    """Share memory with REMOTE: fetch, merge, check, push.

    REMOTE defaults to the branch's upstream, else `origin`. The remote's
    branch and refs/memgit/* (run and retired-memory refs) are fetched; the
    branch is fast-forwarded or merged (memory files through memgit's merge
    driver, registered by `memgit init`), the result runs every governance
    check before the branch moves, and the branch and the refs the remote
    lacks are pushed together. If the remote moved meanwhile, it starts again.
    Two memories created apart that say nearly the same are both kept and
    listed as possible duplicates (those of every round); memories that replace
    the same one in two ways are an open contradiction, reported until
    `memgit review approve ID --keep MEMORY` keeps one. A turn two clones
    decided two ways (kept here, already known there) is reported from the
    run records of every merge the sync makes, brings or pushes.

    \b
    Exit statuses (each failure leaves the branch and memgit's refs as they were):
      0  joined and pushed, or nothing to do
      1  a check refused what came (incoming-refused) or what would go
         (push-refused), or the remote's hook refused the push
         (remote-refused; its remote: lines are shown)
      2  no such remote, or the clone has none (no-remote)
      3  memgit.yaml is invalid, or the joined tree fails a check
      4  files changed on both sides that do not merge (sync-conflict), the
         remote kept moving (remote-moved), it holds purged history
         (purged-history), local edits or a lock in the way
      5  git could not reach the remote, or the push failed otherwise
         (remote-failed)
    """
    from memgit.cli.progress import progress_bar
    from memgit.repo import MemoryRepo

    with MemoryRepo.open(directory) as repo, progress_bar(enabled=not as_json) as progress:
        result = repo.sync(remote, progress=progress)
    if as_json:
        emit_json(json_data(result))
    else:
        _report(result)


def _report(result: SyncResult) -> None:
    """What was joined and pushed, then what needs a person: duplicates, contradictions."""
    short = result.branch.removeprefix("refs/heads/")
    line = f"{short} {JOINED[result.joined]} {result.remote}"
    if result.pushed:
        line += f"; pushed {result.commit[:12] if result.commit else 'refs'}"
        if result.refs_pushed:
            line += f" and {plural(result.refs_pushed, 'memgit ref')}"
    click.echo(line + ".")
    if result.refs_adopted:
        click.echo(f"Took {plural(len(result.refs_adopted), 'memgit ref')} from {result.remote}.")
    for ours, theirs in result.possible_duplicates:
        click.echo(f"Possible duplicate: {ours} and {theirs} (both kept)")
    for found in result.contradictions:
        click.echo(f"Open contradiction: {found.describe()}")
        click.echo(f"  keep one: memgit review show {found.id}")
    for apart in result.decided_apart:
        click.echo(f"Decided apart: {apart.describe()} (merge {apart.commit[:12]})")
        click.echo("  both runs are kept; if the fact is now held twice, `memgit forget` one")
