"""``memgit install``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.output import emit_json


@click.command()
@click.argument("host", type=click.Choice(["claude-code", "codex"]))
@click.option("--dry-run", is_flag=True, help="Print the change as a diff and write nothing.")
@click.option(
    "--config-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The host's configuration folder (default: ~/.claude, or $CODEX_HOME or ~/.codex); "
    "a project's .claude folder installs for that project only.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
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
    from memgit.repo import MemoryRepo

    result = MemoryRepo.open(directory).install_host(host, config_dir=config_dir, dry_run=dry_run)
    if as_json:
        emit_json(result.to_dict())
    elif not result.changed:
        click.echo(f"Already installed in {result.file}: nothing changed")
    elif dry_run:
        click.echo(result.diff, nl=False)
        click.echo(f"(dry run: {result.file} not written)")
    else:
        saved = f" (the old file is {result.backup})" if result.backup else ""
        click.echo(f"Installed the {host} hook in {result.file}{saved}")
