"""The hook program hosts run: ``python -m memgit.hosts.hook HOST [-C DIR] [PAYLOAD]``.

``claude-code`` reads one hook event on stdin and acts on its
``hook_event_name``: ``UserPromptSubmit`` captures the prompt, ``Stop`` captures
the final answer and starts ``memgit process`` in the background, ``SessionStart``
prints the map as additional context. ``codex`` takes Codex's ``notify`` JSON as
its last argument and captures the turn, then processes in the background.
``turn`` captures one turn given as JSON on stdin (``seq`` optional) and prints
the outcome as ``memgit capture --json`` does.

A hook must never break its host. Every failure, expected or not, is one
``error[...]`` line on stderr, and the exit status is the one the host treats as
a non-blocking error (Claude Code: any status but 0 and 2; Codex ignores it).
stdout carries only what the host reads: nothing, or the SessionStart JSON.
Processing runs detached, so a slow Gate never holds the host up; the last
background run's output is in ``.git/memgit/host-process.log``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from memgit.capture.read import read_limited
from memgit.constants import CACHE_DIR
from memgit.errors import ExitStatus, MemgitError, UsageError
from memgit.hosts.context import render_context
from memgit.hosts.events import answer_turn, codex_turn, now, prompt_turn
from memgit.jsonio import json_data, parse_json
from memgit.repo import MemoryRepo

REPO_ENV = "MEMGIT_DIR"
PROCESS_LOG = "host-process.log"
NON_BLOCKING = 1
"""Claude Code shows a hook's exit status 1 to the user and goes on (2 would block)."""
STDIN = "<stdin>"
NOTIFY_ARGUMENT = "<notify argument>"


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors raised as memgit's (it would print its own lines
    and exit 2, which Claude Code takes for "block the prompt")."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, code="usage", hint=f"see `{self.prog} --help`")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # Until the arguments are read, a failure is reported as the generic script's when
    # it names that one, else in the way no host takes for blocking.
    generic = "turn" in args
    try:
        parser = _Parser(prog="python -m memgit.hosts.hook")
        parser.add_argument("host", choices=("claude-code", "codex", "turn"))
        parser.add_argument(
            "-C", dest="directory", help=f"the memory repository (else ${REPO_ENV})"
        )
        parser.add_argument("payload", nargs="?", help="codex: the notify JSON Codex appends")
        parsed = parser.parse_intermixed_args(args)
        generic = parsed.host == "turn"
        run: Callable[[MemoryRepo, str | None], int] = HOSTS[parsed.host]
        return run(_open(parsed.directory), parsed.payload)
    except MemgitError as err:
        print(err.render(), file=sys.stderr)
        return int(err.exit_status) if generic else NON_BLOCKING
    except SystemExit as stop:  # --help
        return 0 if not stop.code else NON_BLOCKING
    except Exception as err:  # a hook never breaks the host, whatever went wrong
        print(f"error[internal]: {type(err).__name__}: {err}", file=sys.stderr)
        return int(ExitStatus.INTERNAL) if generic else NON_BLOCKING


def _open(directory: str | None) -> MemoryRepo:
    chosen = directory or os.environ.get(REPO_ENV)
    if not chosen:
        raise UsageError(
            "the hook does not know which memory repository to use",
            code="usage",
            hint=f"pass -C PATH in the hook's command or set {REPO_ENV}",
        )
    return MemoryRepo.open(chosen)


def claude_code(repo: MemoryRepo, payload: str | None) -> int:
    event = _stdin_json()
    name = event.get("hook_event_name")
    if name == "SessionStart":
        context = render_context(repo.map(), repo.workdir)
        output = {
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}
        }
        print(json.dumps(output, ensure_ascii=False))
    elif name == "UserPromptSubmit":
        turn = prompt_turn(event, source=STDIN, at=now())
        if turn is not None:
            repo.capture(turn, source=STDIN)
    elif name == "Stop":
        turn = answer_turn(event, source=STDIN, at=now())
        if turn is not None:
            repo.capture(turn, source=STDIN)
        process_detached(repo)
    return 0


def codex(repo: MemoryRepo, payload: str | None) -> int:
    if payload is None:
        raise UsageError(
            "the codex hook takes the notify JSON as its last argument",
            code="usage",
            hint="Codex appends it to the notify command in config.toml",
        )
    value = parse_json(payload, source=NOTIFY_ARGUMENT)
    turn = codex_turn(value if isinstance(value, dict) else {}, source=NOTIFY_ARGUMENT, at=now())
    if turn is not None:
        repo.capture(turn, source=NOTIFY_ARGUMENT)
        process_detached(repo)
    return 0


def generic(repo: MemoryRepo, payload: str | None) -> int:
    outcome = repo.capture(read_limited(sys.stdin.buffer, source=STDIN), source=STDIN)
    print(json.dumps(json_data(outcome), ensure_ascii=False))
    return 0


HOSTS: dict[str, Callable[[MemoryRepo, str | None], int]] = {
    "claude-code": claude_code,
    "codex": codex,
    "turn": generic,
}


def _stdin_json() -> dict[str, Any]:
    value = parse_json(read_limited(sys.stdin.buffer, source=STDIN), source=STDIN)
    return value if isinstance(value, dict) else {}


def process_detached(repo: MemoryRepo) -> None:
    """Start ``memgit process`` in a session of its own and return at once; the host's
    next event does not wait for the Gate. With the host backend there is nothing to
    start: the agent answers the prompt itself (docs/gate.md#host)."""
    if repo.settings.gate.get("backend", "rules") == "host":
        return
    log = repo.git_dir / CACHE_DIR / PROCESS_LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as output:  # the last run's output: a log that never grows
        subprocess.Popen(
            [sys.executable, "-m", "memgit.cli.main", "-C", str(repo.workdir), "process"],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )


if __name__ == "__main__":
    sys.exit(main())
