"""``memgit install``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from memgit.cli.output import emit_json
from memgit.jsonio import json_data

if TYPE_CHECKING:
    from memgit.hosts.install import Installed

Command = TypeVar("Command", bound=Callable[..., None])


def host_options(command: Command) -> Command:
    """The argument and options ``install`` and ``uninstall`` share."""
    for option in (
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
        click.option(
            "--config-dir",
            type=click.Path(file_okay=False, path_type=Path),
            help="The host's configuration folder (default: ~/.claude, or $CODEX_HOME or "
            "~/.codex); a project's .claude folder is that project's alone.",
        ),
        click.option(
            "--dry-run", is_flag=True, help="Print the change as a diff and write nothing."
        ),
        click.argument("host", type=click.Choice(["claude-code", "codex"])),
    ):
        command = option(command)
    return command


@click.command()
@host_options
@click.pass_obj
def install(
    directory: Path, host: str, dry_run: bool, config_dir: Path | None, as_json: bool
) -> None:
    """Add memgit's hook to an agent host's configuration, for this memory repository.

    \b
    claude-code: settings.json gets the hook for UserPromptSubmit (capture the
      prompt), Stop (capture the answer, then process) and SessionStart (the map
      as context).
    codex: config.toml gets notify = [...] (capture each turn, then process).

    Every other setting is kept, the old file is saved as FILE.memgit-backup,
    and installing again changes nothing. A file memgit cannot read safely is
    refused (host-config-invalid) and left as it was. See docs/hosts.md.
    """
    from memgit.hosts.install import install as install_hook
    from memgit.repo import MemoryRepo

    with MemoryRepo.open(directory) as repo:
        result = install_hook(host, repo.workdir, config_dir=config_dir, dry_run=dry_run)
    report(
        result,
        host,
        done="Installed the {host} hook in {file}",
        unchanged="Already installed in {file}: nothing changed",
        as_json=as_json,
    )


def report(result: Installed, host: str, *, done: str, unchanged: str, as_json: bool) -> None:
    """What ``install`` or ``uninstall`` did, as JSON or a line (a diff for a dry run)."""
    if as_json:
        emit_json(json_data(result))
    elif not result.changed:
        click.echo(unchanged.format(file=result.file))
    elif result.dry_run:
        click.echo(result.diff, nl=False)
        click.echo(f"(dry run: {result.file} not written)")
    else:
        saved = f" (the old file is {result.backup})" if result.backup else ""
        click.echo(done.format(host=host, file=result.file) + saved)
