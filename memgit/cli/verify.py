"""``memgit verify``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import click

from memgit.cli.output import emit_json, plural
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.governance.verify import VerifyResult


@click.command()
@click.argument("rev_range", required=False)
@click.option("--all", "all_history", is_flag=True, help="Check every commit reachable from HEAD.")
@click.option(
    "--commits-from",
    type=click.File("rb"),
    help="Check the commits listed in this file, one id per line ('-' for stdin), as "
    "`git rev-list` prints them (used by hooks/pre-receive).",
)
@click.option(
    "--ref-updates",
    type=click.File("rb"),
    help="Check a push: 'old-id new-id refname' lines ('-' for stdin), as git hands them "
    "to a pre-receive hook. The commits the push adds are checked, and so are the ref "
    "changes themselves (a memgit ref deleted, moved or set at a commit that does not "
    "hold what it claims; a memory branch forced back where memgit.yaml's "
    "sharing.allow_rewrite is off; a branch rewound to revive a retired memory). Used by "
    "hooks/pre-receive.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "markdown"]),
    help="text (the default): one line per problem; json; markdown: a summary for a "
    "pull-request comment (docs/ci.md).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (--format json).")
@click.pass_obj
def verify(
    directory: Path,
    rev_range: str | None,
    all_history: bool,
    commits_from: BinaryIO | None,
    ref_updates: BinaryIO | None,
    output_format: str | None,
    as_json: bool,
) -> None:
    """Run every governance check over every commit of REV_RANGE.

    REV_RANGE is `A..B` (the commits of B not in A, as a pull request shows
    them) or one revision (its whole history). Without one, the current
    branch is checked against its upstream. Each problem prints as one line
    naming its commit; the exit status is 1 when there are problems, 0 when
    the range is clean, whatever the format. Works in bare repositories too
    (docs/ci.md).
    """
    from memgit.governance.verify import MAX_COMMIT_LIST_BYTES, MAX_REF_UPDATES_BYTES
    from memgit.repo import MemoryRepo

    shown = _format(output_format, as_json=as_json)
    result = MemoryRepo.verify(
        directory,
        rev_range,
        all_history=all_history,
        commit_ids=(
            _read_list(commits_from, "--commits-from", MAX_COMMIT_LIST_BYTES).splitlines()
            if commits_from is not None
            else None
        ),
        ref_updates=(
            _read_list(ref_updates, "--ref-updates", MAX_REF_UPDATES_BYTES)
            if ref_updates is not None
            else None
        ),
    )
    if shown == "json":
        emit_json(json_data(result))
    elif shown == "markdown":
        from memgit.governance.summary import render_markdown

        label = _range_label(rev_range, all_history, commits_from, ref_updates)
        summary = render_markdown(result, range_label=label)
        click.echo(summary, nl=False)
    else:
        _render_text(result)
    if not result.ok:
        click.get_current_context().exit(1)


def _format(output_format: str | None, *, as_json: bool) -> str:
    """The one format ``--format`` and ``--json`` choose (text by default)."""
    from memgit.errors import UsageError

    if as_json and output_format not in (None, "json"):
        raise UsageError(
            f"--json is --format json; it cannot be combined with --format {output_format}",
            code="usage",
            hint="pass one of them",
        )
    return "json" if as_json else (output_format or "text")


def _render_text(result: VerifyResult) -> None:
    """Each problem and warning on stderr, then one verdict line."""
    for finding in result.findings:
        click.echo(finding.render(), err=True)
    for found in result.contradictions:
        click.echo(f"warning[contradiction]: {found.describe()}", err=True)
        click.echo(f"hint: `memgit review show {found.id}`, then keep one", err=True)
    for apart in result.decided_apart:
        click.echo(f"warning[decided-apart]: {apart.commit[:12]}: {apart.describe()}", err=True)
        click.echo(
            "hint: both runs are kept; if the fact is now held twice, `memgit forget` one",
            err=True,
        )
    verdict = "clean" if result.ok else f"{plural(len(result.findings), 'problem')}"
    click.echo(f"Checked {plural(len(result.commits), 'commit')}: {verdict}.")


def _range_label(
    rev_range: str | None,
    all_history: bool,
    commits_from: BinaryIO | None,
    ref_updates: BinaryIO | None,
) -> str:
    """What was checked, as the summary names it."""
    if ref_updates is not None:
        return "the pushed ref updates"
    if commits_from is not None:
        return "the listed commits"
    if all_history:
        return "all history from HEAD"
    return rev_range if rev_range is not None else "the branch against its upstream"


def _read_list(stream: BinaryIO, option: str, limit: int) -> str:
    """The text of a list an option names, read up to ``limit`` bytes (/dev/zero has no end)."""
    from memgit.capture.read import read_limited
    from memgit.jsonio import decode_utf8

    data = read_limited(
        stream, source=option, limit=limit, hint="pass what git rev-list or git hands a hook"
    )
    return decode_utf8(data, source=option)
