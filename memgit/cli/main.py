"""The ``memgit`` command: a thin click layer over :class:`memgit.MemoryRepo`.

Commands load lazily so that ``memgit --version`` imports neither pygit2 nor
jsonschema.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from memgit import __version__
from memgit.cli.errors import run_with_error_handler

COMMANDS = {
    "init": "memgit.cli.init:init",
    "capture": "memgit.cli.capture:capture",
    "process": "memgit.cli.process:process",
    "verify": "memgit.cli.verify:verify",
    "demo": "memgit.cli.demo:demo",
    "recall": "memgit.cli.recall:recall",
    "map": "memgit.cli.map:map_command",
    "index": "memgit.cli.index:index",
    "sync": "memgit.cli.sync:sync",
    "review": "memgit.cli.review:review",
    "log": "memgit.cli.log:log",
    "show": "memgit.cli.show:show",
    "blame": "memgit.cli.blame:blame",
    "diff": "memgit.cli.diff:diff",
    "forget": "memgit.cli.forget:forget",
    "replay": "memgit.cli.replay:replay",
    "remember": "memgit.cli.remember:remember",
    "mcp": "memgit.cli.mcp:mcp",
    "install": "memgit.cli.install:install",
    "uninstall": "memgit.cli.uninstall:uninstall",
}


class LazyGroup(click.Group):
    """A group whose commands are imported only when they run (or help lists them)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="memgit")
@click.option(
    "-C",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    metavar="PATH",
    help="Run as if memgit was started in PATH (like git -C).",
)
@click.pass_context
def cli(ctx: click.Context, directory: Path) -> None:
    """Keep an AI agent's long-term memory in a Git repository.

    Captured turns, memories and every processing decision are plain files;
    every change is a commit. Exit statuses: 0 ok, 1 problems found, 2 usage,
    3 invalid input, 4 conflict, 5 backend unavailable, 70 internal error,
    130 interrupted (docs/errors.md).
    """
    ctx.obj = directory


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    return run_with_error_handler(cli, args)


if __name__ == "__main__":
    sys.exit(main())
