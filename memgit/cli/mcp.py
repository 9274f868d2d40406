"""``memgit mcp``."""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path

import click

from memgit.errors import UsageError


@click.command("mcp")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a startup error as JSON on stdout too (a running server speaks only MCP).",
)
@click.pass_obj
def mcp(directory: Path, as_json: bool) -> None:
    """Serve the memory repository to an agent host over MCP on stdin and stdout.

    \b
    Tools: memory_map, memory_recall, memory_read, memory_capture,
    memory_gate_prompt, memory_propose, memory_process, memory_history.
    Resources: memgit://map and memgit://memory/ID for each memory.

    Register `memgit -C PATH mcp` as a stdio server in the host's configuration
    (docs/mcp.md). While serving, stdout carries only protocol messages; logs go
    to stderr. A failed call is a tool error with memgit's error line, and the
    server keeps serving. Needs the mcp extra: pip install -e '.[mcp]' in memgit's checkout.
    """
    if importlib.util.find_spec("mcp") is None:
        raise UsageError(
            "memgit mcp needs the MCP SDK, which is not installed",
            code="mcp-not-installed",
            hint="install memgit's mcp extra from its checkout: pip install -e '.[mcp]'",
        )
    from memgit.mcp.server import serve
    from memgit.repo import MemoryRepo

    repo = MemoryRepo.open(directory)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="memgit mcp: %(message)s")
    serve(repo)
