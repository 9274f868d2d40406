"""``memgit uninstall``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.install import CONFIG_DIR_HELP, HOST_CHOICE, report


@click.command()
@click.argument("host", type=HOST_CHOICE)
@click.option("--dry-run", is_flag=True, help="Print the change as a diff and write nothing.")
@click.option(
    "--config-dir", type=click.Path(file_okay=False, path_type=Path), help=CONFIG_DIR_HELP
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def uninstall(host: str, dry_run: bool, config_dir: Path | None, as_json: bool) -> None:
    """Take memgit's hook out of an agent host's configuration.

    \b
    claude-code: every memgit hook entry leaves settings.json (a group, event
      or hooks object left empty goes with it).
    codex: the notify line leaves config.toml, if it runs memgit's hook.

    Every other setting is kept, the old file is saved as FILE.memgit-backup,
    and a file without memgit's hook is left as it is. No memory repository is
    needed: a hook for any of them is taken out. See docs/hosts.md.
    """
    from memgit.repo import MemoryRepo

    result = MemoryRepo.uninstall_host(host, config_dir=config_dir, dry_run=dry_run)
    report(
        result,
        host,
        done="Took the {host} hook out of {file}",
        unchanged="No memgit hook in {file}: nothing changed",
        as_json=as_json,
    )
