"""``memgit init``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from memgit.cli.output import emit_json, plural
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.init import InitResult


@click.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option(
    "--install-hooks/--no-hooks",
    default=True,
    show_default=True,
    help="Install the Git hooks that run memgit's checks on people's own commits "
    "(pre-commit's, run by this memgit's Python, so no virtual environment needs to be "
    "active). --no-hooks leaves .git/hooks alone.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def init(directory: Path, path: Path | None, install_hooks: bool, as_json: bool) -> None:
    """Create a memory repository in PATH (default: here), adopt a Git repository,
    or set up a clone of a memory repository for sharing.

    Commits what is missing of memgit.yaml, .pre-commit-config.yaml (memgit's
    checks as pre-commit hooks) and the .gitattributes lines that send memgit's
    files to its merge driver. Then configures this clone: every remote fetches
    and pushes refs/memgit/* (retired memories, runs), the merge driver is
    registered, and the hooks are installed. A clone with no commit yet checks
    out the remote's branch (its HEAD's, else main, else its only one); a clone
    of an empty remote publishes main; every clone takes the refs/memgit/* it
    lacks. A remote added later is configured by running `memgit init` again.
    Running it again is safe: it adds only what is missing and never changes
    what you set yourself (docs/sharing.md). In a clone it also builds the
    recall index (.git/memgit/), with a progress bar.
    """
    from memgit.cli.progress import progress_bar
    from memgit.repo import MemoryRepo

    where = directory / path if path else directory
    result = MemoryRepo.init(where, install_hooks=install_hooks)
    with MemoryRepo.open(where) as repo:
        if not repo.index_status().exists:
            # A clone's first command would build the derived store (tens of seconds at
            # 100,000 files): it is built here instead, where setting up is expected.
            with progress_bar(enabled=not as_json) as progress:
                repo.rebuild_index(progress)
    if as_json:
        emit_json(json_data(result))
    else:
        _report(result)


def _report(result: InitResult) -> None:
    """What init found, wrote, committed and configured, a line each."""
    verb = "Created" if result.new_repository else "Using"
    click.echo(f"{verb} Git repository {result.path}")
    clone = result.clone
    if clone is not None and clone.adopted is not None:
        click.echo(f"Checked out {clone.branch} from {clone.remote} ({clone.adopted[:12]})")
    for name in result.existing:
        click.echo(f"  {name} already exists")
    for name in result.created:
        click.echo(f"  wrote {name}")
    if result.commit:
        click.echo(f"Committed {result.commit[:12]}")
    for remote in result.remotes_configured:
        click.echo(f"configured remote {remote}: refs/memgit/* are fetched and pushed")
    if result.merge_driver_configured:
        click.echo("registered the memgit merge driver")
    for hook in result.hooks_written:
        click.echo(f"pre-commit installed at {hook}")
    if clone is not None:
        if clone.refs_fetched:
            took = plural(len(clone.refs_fetched), "memgit ref")
            click.echo(f"Took {took} from {clone.remote} (retired memories, runs)")
        if clone.publishes:
            click.echo(
                f"{clone.remote} has no branch {clone.branch} yet: this clone publishes "
                f"{clone.branch} there (memgit sync, or git push)"
            )
        if clone.fetch_failed is not None:
            click.echo(
                f"Could not reach {clone.remote} ({clone.fetch_failed}); memgit sync "
                "fetches from it later"
            )
    if result.commit is None:
        configured = result.remotes_configured or result.merge_driver_configured
        nothing = "nothing to commit" if configured or result.hooks_written else "nothing to do"
        click.echo(f"Already a memory repository; {nothing}.")
