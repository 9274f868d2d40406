"""``memgit init``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.output import emit_json


@click.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option(
    "--install-hooks",
    is_flag=True,
    help="Also run `pre-commit install`, so people's own commits are checked too.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def init(directory: Path, path: Path | None, install_hooks: bool, as_json: bool) -> None:
    """Create a memory repository in PATH (default: here), or adopt a Git repository.

    Writes memgit.yaml and .pre-commit-config.yaml (memgit's checks as
    pre-commit hooks) and commits them. Running it again is safe: it says what
    already exists and changes nothing.
    """
    from memgit.init import install_hooks as install
    from memgit.repo import MemoryRepo

    result = MemoryRepo.init(directory / path if path else directory)
    hooks = install(Path(result.path)) if install_hooks else None
    if as_json:
        emit_json({**result.to_dict(), "hooks_installed": hooks is not None})
        return
    verb = "Created" if result.new_repository else "Using"
    click.echo(f"{verb} Git repository {result.path}")
    for name in result.existing:
        click.echo(f"  {name} already exists")
    for name in result.created:
        click.echo(f"  wrote {name}")
    if result.commit:
        click.echo(f"Committed {result.commit[:12]}")
    else:
        click.echo("Already a memory repository; nothing to do.")
    if hooks is not None:
        click.echo(hooks)
