"""The CLI's one error boundary: expected errors get a line, the unexpected a log."""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import click

from memgit.errors import ExitStatus, MemgitError, UsageError
from memgit.jsonio import json_data


def run_with_error_handler(command: click.Command, args: list[str]) -> int:
    want_json = "--json" in args
    try:
        # Outside standalone mode click returns ctx.exit()'s status instead of exiting.
        status = command.main(args=args, prog_name="memgit", standalone_mode=False)
    except MemgitError as err:
        click.echo(err.render(), err=True)
        if want_json:
            click.echo(json.dumps({"error": json_data(err)}, ensure_ascii=False))
        return int(err.exit_status)
    except click.exceptions.Exit as err:
        return err.exit_code
    except click.UsageError as err:
        shown = err.ctx.command_path if err.ctx is not None else "memgit"
        usage = UsageError(err.format_message(), hint=f"see `{shown} --help`")
        click.echo(usage.render(), err=True)
        if want_json:
            click.echo(json.dumps({"error": json_data(usage)}, ensure_ascii=False))
        return int(usage.exit_status)
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("error[interrupted]: stopped by the user", err=True)
        return int(ExitStatus.INTERRUPTED)
    except BrokenPipeError:
        return 0
    except Exception as err:
        log = _write_log(args)
        where = f"; details in {log}" if log else ""
        click.echo(f"error[internal]: {type(err).__name__}: {err}{where}", err=True)
        return int(ExitStatus.INTERNAL)
    return status if isinstance(status, int) else 0


def _write_log(args: list[str]) -> Path | None:
    """Save the traceback under .git/memgit/ (or nowhere if there is no repository)."""
    start = Path(args[args.index("-C") + 1]) if "-C" in args[:-1] else Path(".")
    try:
        import pygit2

        found = pygit2.discover_repository(str(start))
    except Exception:
        return None
    return None if found is None else write_error_log(Path(found), f"memgit {' '.join(args)}")


def write_error_log(git_dir: Path, heading: str) -> Path | None:
    """Save the traceback being handled as .git/memgit/last-error.log (the CLI's and the
    MCP server's), under ``heading``; None when it cannot be written."""
    from memgit.constants import CACHE_DIR, LAST_ERROR_LOG

    log = git_dir / CACHE_DIR / LAST_ERROR_LOG
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"{heading}\n\n{traceback.format_exc()}", "utf-8")
    except OSError:
        return None
    return log
