"""The stdio MCP server: tools and resources over one :class:`MemoryRepo`.

Built on the SDK's low-level ``Server``, so each tool's input schema is exactly
the one in ``tools.py`` and every failure is shaped here: a :class:`MemgitError`
becomes a tool result with ``isError`` whose text is the CLI's
``error[code]: ...`` line (and whose structured content is the CLI's ``--json``
error); anything else becomes ``error[internal]`` with the traceback in
``.git/memgit/last-error.log``, and the server keeps serving either way.

Concurrency: a host may send many calls at once, but a pygit2 repository and
the index's SQLite connection must not be used by two threads at a time. So
every call that touches the repository runs on one worker thread, in arrival
order: calls are serialised, not rejected, and the event loop stays free to
read requests (and answer pings) while one runs. Writers in other processes
(a hook, the CLI) are ordered by memgit's writer lock as usual.

stdout carries only protocol messages: the SDK's stdio transport points file
descriptor 1 at stderr while it serves, and memgit's logging goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from memgit import __version__
from memgit.cli.errors import write_error_log
from memgit.errors import MemgitError, UsageError
from memgit.jsonio import json_data
from memgit.mcp.arguments import check_arguments
from memgit.mcp.tools import TOOLS, TOOLS_BY_NAME
from memgit.repo import MemoryRepo

log = logging.getLogger("memgit.mcp")
T = TypeVar("T")

MAP_URI = "memgit://map"
MEMORY_URI = "memgit://memory/"
RESOURCE_PAGE = 1000
INSTRUCTIONS = (
    "memgit keeps long-term memory in a Git repository. Read memory_map (or the "
    "memgit://map resource) first, then memory_recall; treat an empty recall as a cue "
    "to retry with other words, not as proof that nothing is known. Capture turns "
    "with memory_capture and turn them into memories with memory_process, or answer "
    "the Gate yourself with memory_gate_prompt and memory_propose."
)


class MemoryServer:
    """The handlers of one server; every repository call goes through ``_on_worker``."""

    def __init__(self, repo: MemoryRepo) -> None:
        self.repo = repo
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memgit-repo")

    def build(self) -> Server[Any]:
        return Server(
            "memgit",
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
        )

    def close(self) -> None:
        self._worker.shutdown(wait=True)
        self.repo.close()

    async def _on_worker(self, work: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._worker, work)

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.schema,
                    annotations=types.ToolAnnotations(
                        read_only_hint=tool.read_only,
                        destructive_hint=False,
                        idempotent_hint=tool.read_only,
                        open_world_hint=False,
                    ),
                )
                for tool in TOOLS
            ]
        )

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = TOOLS_BY_NAME.get(params.name)
        try:
            if tool is None:
                raise UsageError(
                    f"no tool {params.name[:80]!r}",
                    code="unknown-tool",
                    hint="tools/list names the tools: " + ", ".join(TOOLS_BY_NAME),
                )
            arguments = check_arguments(tool, params.arguments)
            value = await self._on_worker(lambda: tool.run(self.repo, arguments))
        except MemgitError as err:
            return _error_result(err.render(), {"error": json_data(err)})
        except Exception as err:
            where = self._write_log(f"tools/call {params.name}")
            return _error_result(f"error[internal]: {type(err).__name__}: {err}{where}", None)
        text = json.dumps(value, ensure_ascii=False, indent=1)
        return types.CallToolResult(
            content=[types.TextContent(text=text)],
            structured_content=value,
        )

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        if cursor is not None and not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 12):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="error[invalid-argument]: resources/list: cursor: is not a cursor "
                "this server gave (pass nextCursor as it came)",
            )
        start = int(cursor) if cursor is not None else 0

        def page() -> list[str]:
            # One more than a page, to know whether another follows.
            return list(islice(self.repo.memory_paths(), start, start + RESOURCE_PAGE + 1))

        paths = await self._on_worker(page)
        resources = [] if start else [_map_resource()]
        resources += [_memory_resource(path) for path in paths[:RESOURCE_PAGE]]
        more = len(paths) > RESOURCE_PAGE
        return types.ListResourcesResult(
            resources=resources, next_cursor=str(start + RESOURCE_PAGE) if more else None
        )

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="memory",
                    uri_template=MEMORY_URI + "{id}",
                    description="A memory's file (front matter and body) by its id.",
                    mime_type="text/markdown",
                )
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            if uri == MAP_URI:
                found = await self._on_worker(lambda: json_data(self.repo.map()))
                text, mime = json.dumps(found, ensure_ascii=False, indent=1), "application/json"
            elif uri.startswith(MEMORY_URI):
                memory_id = uri.removeprefix(MEMORY_URI)
                read = await self._on_worker(lambda: self.repo.read(id=memory_id))
                text, mime = read.text, "text/markdown"
            else:
                raise UsageError(
                    f"no resource {uri[:120]!r}",
                    code="unknown-resource",
                    hint=f"resources are {MAP_URI} and {MEMORY_URI}ID",
                )
        except MemgitError as err:
            raise MCPError(code=types.INVALID_PARAMS, message=err.render()) from err
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    def _write_log(self, what: str) -> str:
        """Save the traceback where the CLI saves one; say where, or log it on stderr."""
        path = write_error_log(self.repo.git_dir, f"memgit mcp: {what}")
        if path is None:
            log.error("%s failed:\n%s", what, traceback.format_exc())
            return ""
        return f"; details in {path}"


def _error_result(text: str, structured: dict[str, Any] | None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured, is_error=True
    )


def _map_resource() -> types.Resource:
    return types.Resource(
        uri=MAP_URI,
        name="map",
        title="Memory map",
        description="Read first: scopes, types, the latest memories, distinctive terms.",
        mime_type="application/json",
    )


def _memory_resource(path: str) -> types.Resource:
    memory_id = path.rsplit("/", 1)[-1].removesuffix(".md")
    return types.Resource(
        uri=MEMORY_URI + memory_id, name=memory_id, description=path, mime_type="text/markdown"
    )


def serve(repo: MemoryRepo) -> None:
    """Serve ``repo`` on stdin and stdout until the host closes stdin."""
    handlers = MemoryServer(repo)
    server = handlers.build()

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        handlers.close()
