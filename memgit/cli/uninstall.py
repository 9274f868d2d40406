"""``memgit uninstall``."""

from __future__ import annotations

from pathlib import Path

import click

from memgit.cli.install import host_options, report


@click.command()
@host_options
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
    from memgit.hosts.install import uninstall as uninstall_hook

    result = uninstall_hook(host, config_dir=config_dir, dry_run=dry_run)
    report(
        result,
        host,
        done="Took the {host} hook out of {file}",
        unchanged="No memgit hook in {file}: nothing changed",
        as_json=as_json,
    )
