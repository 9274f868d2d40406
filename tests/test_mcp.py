"""``memgit mcp`` as a host runs it: a subprocess spoken to by the SDK's own client.

One server serves the module (starting one costs about a second); each test
captures turns of its own session and looks only for what it wrote, so the tests
need no order. The raw-bytes test starts a second server and talks JSON-RPC to
it directly, to see that nothing but protocol messages reaches stdout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from support import git, git_environment, memgit_cli, snapshot

MCP_DOC = Path(__file__).resolve().parents[1] / "docs" / "mcp.md"
T = TypeVar("T")
TIMEOUT = 60
STATEMENT = "Remember that the staging database is called heron."


class Host:
    """A ClientSession held open on a loop of its own, for synchronous tests."""

    def __init__(self, path: Path, env: dict[str, str]) -> None:
        self.path = path
        self.params = StdioServerParameters(
            command=sys.executable, args=["-m", "memgit.cli.main", "-C", str(path), "mcp"], env=env
        )
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ready: concurrent.futures.Future[ClientSession] = concurrent.futures.Future()
        self.stop = asyncio.Event()
        self.held = asyncio.run_coroutine_threadsafe(self._hold(), self.loop)
        self.session = self.ready.result(timeout=TIMEOUT)

    async def _hold(self) -> None:
        with open(self.path.parent / "server.stderr", "w", encoding="utf-8") as errlog:
            async with (
                stdio_client(self.params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                self.ready.set_result(session)
                await self.stop.wait()

    def run(self, work: Callable[[ClientSession], Awaitable[T]]) -> T:
        return asyncio.run_coroutine_threadsafe(work(self.session), self.loop).result(TIMEOUT)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return self.run(lambda session: session.call_tool(name, arguments))

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.call(name, arguments)
        assert not result.is_error, result.content[0].text
        data: dict[str, Any] = json.loads(result.content[0].text)
        assert result.structured_content == data
        return data

    def error(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        result = self.call(name, arguments)
        assert result.is_error
        text: str = result.content[0].text
        return text

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.held.result(TIMEOUT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    return {
        **os.environ,
        **git_environment(home),
        "GIT_AUTHOR_DATE": "@1764495000 +0000",
        "GIT_COMMITTER_DATE": "@1764495000 +0000",
        "MEMGIT_LOCK_TIMEOUT": "30",
    }


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "memory"
    done = memgit_cli("init", str(path), "--no-hooks", env=env)
    assert done.returncode == 0, done.stderr.decode()
    return path


@pytest.fixture(scope="module")
def host(repo: Path, env: dict[str, str]) -> Iterator[Host]:
    host = Host(repo, env)
    yield host
    host.close()


def turn(session: str, content: str, seq: int = 0, **fields: Any) -> dict[str, Any]:
    return {
        "source": "mcp-test",
        "session": session,
        "seq": seq,
        "timestamp": "2026-11-30T10:00:00Z",
        "messages": [{"role": "user", "content": content}],
        **fields,
    }


def gate_answer(units: list[dict[str, Any]], wanted: str, title: str) -> dict[str, Any]:
    """A Gate answer keeping the unit whose text is ``wanted``; every other unit that
    can support a memory (another test's, pending too) gets NO_CHANGE."""
    coverage, claims = [], []
    for unit in units:
        if not unit["can_support"]:
            continue
        if unit["text"] == wanted:
            coverage.append(
                {"unit_id": unit["unit_id"], "decision": "CANDIDATE", "candidate_ids": ["c1"]}
            )
            claims.append({"unit_id": unit["unit_id"], "quote": wanted, "role": "assertion"})
        else:
            coverage.append(
                {
                    "unit_id": unit["unit_id"],
                    "decision": "NO_CHANGE",
                    "reason": "no-durable-content",
                }
            )
    assert claims, "the unit is not pending"
    candidate = {
        "candidate_id": "c1",
        "action": "CREATE",
        "type": "preference",
        "scope": "user",
        "title": title,
        "body": wanted,
    }
    return {
        "candidates": [candidate],
        "coverage": coverage,
        "evidence_bindings": [{"candidate_id": "c1", "claims": claims}],
    }


def created(result: dict[str, Any], repo: Path, words: str) -> list[dict[str, Any]]:
    """The memories a process or propose result created whose file holds ``words``
    (another test's turns may have been pending too)."""
    return [
        decision
        for run in result["runs"]
        for decision in run["decisions"]
        if decision["action"] == "CREATE" and words in (repo / decision["path"]).read_text("utf-8")
    ]


def test_tools_and_resources_are_listed(host: Host) -> None:
    tools = host.run(lambda session: session.list_tools()).tools
    names = [tool.name for tool in tools]
    assert names == [
        "memory_map",
        "memory_recall",
        "memory_read",
        "memory_capture",
        "memory_gate_prompt",
        "memory_propose",
        "memory_process",
        "memory_remember",
        "memory_forget",
        "memory_history",
    ]
    by_name = {tool.name: tool for tool in tools}
    assert "memory_recall" in by_name["memory_map"].description
    assert "retry with other words" in by_name["memory_recall"].description
    recall = by_name["memory_recall"].input_schema
    assert recall["required"] == ["query"] and recall["additionalProperties"] is False
    assert set(recall["properties"]) >= {
        "query",
        "k",
        "scope",
        "type",
        "evidence",
        "exclude_thread",
    }
    resources = host.run(lambda session: session.list_resources()).resources
    assert str(resources[0].uri) == "memgit://map"
    templates = host.run(lambda session: session.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["memgit://memory/{id}"]


def test_capture_then_process_with_the_rules_backend(host: Host, repo: Path) -> None:
    captured = host.ok("memory_capture", {"turn": turn("rules", STATEMENT)})
    assert captured["path"].startswith("inbox/mcp-test/") and not captured["duplicate"]
    again = host.ok("memory_capture", {"turn": turn("rules", STATEMENT)})
    assert again["duplicate"] and again["commit"] is None
    result = host.ok("memory_process", {"backend": "rules"})
    (memory,) = created(result, repo, "heron")
    assert git(repo, "log", "-1", "--format=%(trailers:key=Memgit-Run,valueonly)").strip()
    found = host.ok("memory_recall", {"query": "what is the staging database called"})
    assert found["memories"][0]["id"] == memory["memory_id"]
    miss = host.ok("memory_recall", {"query": "zebrafish"})
    assert miss["memories"] == [] and miss["trace"]["unknown_terms"] == ["zebrafish"]


def test_gate_prompt_and_propose_commit_a_memory(host: Host, repo: Path) -> None:
    wanted = "I want every commit message written in the imperative mood."
    host.ok("memory_capture", {"turn": turn("host", wanted)})
    prompt = host.ok("memory_gate_prompt")
    assert prompt["pending"] and prompt["digest"].startswith("sha256:")
    answer = gate_answer(prompt["units"], wanted, "Commit messages in the imperative")
    broken = json.loads(json.dumps(answer))
    broken["evidence_bindings"][0]["claims"][0]["quote"] = "words nobody said"
    before = snapshot(repo)
    refused = host.error("memory_propose", {"gate_output": broken})
    assert refused.startswith("error[")
    assert "evidence_bindings[0].claims[0].quote" in refused
    assert snapshot(repo) == before
    # An answer to another prompt (captures arrived since) is refused, nothing changed.
    stale = {**answer, "prompt_digest": "sha256:" + "0" * 64}
    assert host.error("memory_propose", {"gate_output": stale}).startswith(
        "error[prompt-changed]: "
    )
    assert snapshot(repo) == before
    result = host.ok(
        "memory_propose", {"gate_output": {**answer, "prompt_digest": prompt["digest"]}}
    )
    (decision,) = created(result, repo, wanted)
    assert git(repo, "show", f"HEAD:{decision['path']}").count(wanted) == 2  # body and quote
    assert git(repo, "status", "--porcelain") == ""


def test_read_a_memory_and_a_capture_paged(host: Host, repo: Path) -> None:
    content = "Remember that the deploy window is Tuesday morning. " + "x" * 300
    host.ok("memory_capture", {"turn": turn("read", content)})
    capture = host.ok("memory_read", {"id": "mcp-test/read/0", "limit": 100})
    assert capture["path"].endswith("/read/000000.yaml") and len(capture["text"]) == 100
    pages = [capture["text"]]
    while capture["next_offset"] is not None:
        capture = host.ok(
            "memory_read", {"path": capture["path"], "offset": capture["next_offset"], "limit": 100}
        )
        pages.append(capture["text"])
    assert "".join(pages) == git(repo, "show", f"HEAD:{capture['path']}")
    (memory,) = created(host.ok("memory_process", {"backend": "rules"}), repo, "Tuesday")
    read = host.ok("memory_read", {"id": memory["memory_id"]})
    assert read["path"] == memory["path"] and read["next_offset"] is None
    assert read["text"] == git(repo, "show", f"HEAD:{memory['path']}")
    resource = host.run(
        lambda session: session.read_resource(f"memgit://memory/{memory['memory_id']}")
    )
    assert resource.contents[0].text == read["text"]
    overview = host.run(lambda session: session.read_resource("memgit://map"))
    assert json.loads(overview.contents[0].text)["memories"] >= 1


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        pytest.param("memgit://nothing", "error[unknown-resource]: no resource", id="unknown"),
        pytest.param("memgit://memory/../x", "error[invalid-id]: id: ", id="bad-id"),
        pytest.param("memgit://memory/zzzzzzzz", "error[unknown-memory]: ID: ", id="missing"),
    ],
)
def test_a_resource_that_cannot_be_read_is_a_protocol_error(
    host: Host, uri: str, expected: str
) -> None:
    with pytest.raises(MCPError) as caught:
        host.run(lambda session: session.read_resource(uri))
    assert caught.value.error.message.startswith(expected), caught.value.error.message
    assert "memories" in host.ok("memory_map")


def test_history_gives_log_and_blame(host: Host, repo: Path) -> None:
    host.ok("memory_capture", {"turn": turn("history", "Remember that lunch is at noon.")})
    (memory,) = created(host.ok("memory_process", {"backend": "rules"}), repo, "noon")
    history = host.ok("memory_history", {"id": memory["memory_id"]})
    (log,) = history["memories"]
    assert log["id"] == memory["memory_id"] and log["active"]
    assert [version["change"] for version in log["versions"]] == ["created"]
    (line,) = history["blame"]["lines"]
    assert "noon" in line["text"]
    (commit,) = history["blame"]["commits"]
    assert commit["quotes"][0]["quote"] == "Remember that lunch is at noon."


def test_remember_then_forget(host: Host, repo: Path) -> None:
    """What the user asks to keep is kept as said, checked like a run; forget removes it."""
    made = host.ok(
        "memory_remember",
        {"text": "The release train leaves every second Thursday.", "scope": "project"},
    )
    memory = (repo / made["path"]).read_text("utf-8")
    assert "scope: project" in memory and "every second Thursday" in memory
    found = host.ok("memory_recall", {"query": "release train Thursday"})
    assert made["memory_id"] in json.dumps(found)
    gone = host.ok("memory_forget", {"ids": [made["memory_id"]]})
    assert gone["memories"] == [{"id": made["memory_id"], "path": made["path"]}]
    assert not (repo / made["path"]).exists()


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        pytest.param(
            "memory_remember", {"text": "tiny"}, "error[invalid-text]: TEXT: ", id="short-text"
        ),
        pytest.param(
            "memory_forget", {"ids": ["zzzzzzzzzzzz"]}, "error[unknown-memory]: ", id="no-memory"
        ),
        pytest.param(
            "memory_recall",
            {"query": "x", "k": "ten"},
            "error[invalid-argument]: memory_recall: k: expected integer, got a string",
            id="wrong-type",
        ),
        pytest.param(
            "memory_recall",
            {},
            "error[invalid-argument]: memory_recall: query: required field 'query' is missing",
            id="missing-field",
        ),
        pytest.param(
            "memory_recall",
            {"query": "x", "limit": 3},
            "error[invalid-argument]: memory_recall: unexpected field(s): 'limit'",
            id="unknown-field",
        ),
        pytest.param(
            "memory_recall",
            {"query": "a" * 1024 * 1024},
            "error[invalid-argument]: memory_recall: query: is 1048576 characters long; "
            "at most 4096 allowed",
            id="one-megabyte-string",
        ),
        pytest.param(
            "memory_read",
            {"path": "../../etc/passwd"},
            "error[unsafe-path]: path: path '../../etc/passwd' has an empty, '.' or '..' part: "
            "only files the repository tracks can be read",
            id="dot-dot-path",
        ),
        pytest.param(
            "memory_read",
            {"path": "/etc/passwd"},
            "error[unsafe-path]: path: path '/etc/passwd' is not a relative path with / "
            "separators: only files the repository tracks can be read",
            id="absolute-path",
        ),
        pytest.param(
            "memory_read",
            {"path": ".git/config"},
            "error[unsafe-path]: path: path '.git/config' is inside .git: only files the "
            "repository tracks can be read",
            id="git-dir",
        ),
        pytest.param(
            "memory_read",
            {"path": "memories/nothing.md"},
            "error[unknown-file]: path: no file 'memories/nothing.md' in HEAD",
            id="missing-file",
        ),
        pytest.param(
            "memory_read",
            {"id": "mcp-test/../0"},
            "error[invalid-name]: id: ",
            id="dot-dot-turn-id",
        ),
        pytest.param(
            "memory_read",
            {"id": "mcp-test/../../0"},
            "error[invalid-id]: id: 'mcp-test/../../0' is neither a memory id nor a turn id",
            id="dot-dot-id",
        ),
        pytest.param(
            "memory_read",
            {"id": "abcdef", "path": "memgit.yaml"},
            "error[usage]: id: name what to read by id or by path, not both",
            id="id-and-path",
        ),
        pytest.param(
            "memory_capture",
            {"turn": {"source": "mcp-test"}},
            "error[",
            id="bad-turn",
        ),
        pytest.param(
            "memory_history", {"id": "NOT AN ID"}, "error[invalid-argument]: ", id="bad-id"
        ),
        pytest.param(
            "memory_propose", {"gate_output": "{}"}, "error[invalid-argument]: ", id="not-object"
        ),
        pytest.param(
            "memory_delete", {}, "error[unknown-tool]: no tool 'memory_delete'", id="tool"
        ),
    ],
)
def test_bad_arguments_are_tool_errors_and_the_server_goes_on(
    host: Host, repo: Path, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    before = snapshot(repo)
    result = host.call(tool, arguments)
    assert result.is_error
    text = result.content[0].text
    assert text.startswith(expected), text
    assert result.structured_content["error"]["code"] == text[6 : text.index("]")]
    assert snapshot(repo) == before
    assert "memories" in host.ok("memory_map")


def test_fifty_concurrent_calls_complete(host: Host, repo: Path) -> None:
    """Calls run one at a time on the server's worker thread: run on a thread pool
    instead, 3 of these 50 failed with SQLite's "cannot start a transaction within a
    transaction" (and pygit2 is no safer)."""

    async def storm(session: ClientSession) -> list[Any]:
        calls = []
        for number in range(50):
            if number % 3 == 0:
                calls.append(session.call_tool("memory_map", {}))
            elif number % 3 == 1:
                calls.append(session.call_tool("memory_recall", {"query": f"storm {number}"}))
            else:
                calls.append(
                    session.call_tool(
                        "memory_capture", {"turn": turn("storm", f"turn {number}", seq=number)}
                    )
                )
        return list(await asyncio.gather(*calls))

    results = host.run(storm)
    assert len(results) == 50
    assert [r.content[0].text[:80] for r in results if r.is_error] == []
    listed = git(repo, "ls-files", "inbox/mcp-test").split()
    assert len([p for p in listed if "/storm/" in p]) == 16
    assert git(repo, "status", "--porcelain") == ""


def test_stdout_carries_only_protocol_messages(repo: Path, env: dict[str, str]) -> None:
    """Raw bytes: every line the server writes on stdout is one JSON-RPC message,
    also around a capture with a secret redacted, a run, and a line of garbage."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {
                "name": "memory_capture",
                "arguments": {
                    "turn": turn(
                        "raw", "Remember that my key is AKIAIOSFODNN7EXAMPLE for the bucket."
                    )
                },
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "memory_process", "arguments": {"backend": "rules"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "memory_recall", "arguments": {"query": 7}},
        },
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "memgit.cli.main", "-C", str(repo), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert server.stdin is not None and server.stdout is not None
    lines: list[bytes] = []
    try:
        for number, message in enumerate(messages):
            if number == 3:
                server.stdin.write(b"this is not json\n")
            server.stdin.write(json.dumps(message).encode() + b"\n")
            server.stdin.flush()
            while "id" in message:  # a request: read up to its reply (a host may not wait)
                lines.append(server.stdout.readline())
                if json.loads(lines[-1]).get("id") == message["id"]:
                    break
        server.stdin.close()
        lines += server.stdout.read().splitlines(keepends=True)
        assert server.wait(TIMEOUT) == 0
    finally:
        server.kill()
        server.wait(TIMEOUT)
        assert server.stderr is not None
        server.stderr.close()
        server.stdout.close()
    assert all(line.endswith(b"\n") for line in lines)
    replies = [json.loads(line) for line in lines]
    assert all(reply.get("jsonrpc") == "2.0" for reply in replies)
    by_id = {reply["id"]: reply for reply in replies if "id" in reply}
    assert set(by_id) == {1, 2, 3, 4, 5}
    captured = json.loads(by_id[3]["result"]["content"][0]["text"])
    assert captured["redactions"] == {"aws-access-key-id": 1}
    assert by_id[4]["result"]["isError"] is False
    assert by_id[5]["result"]["isError"] is True


def test_without_the_sdk_the_command_names_the_extra(repo: Path, env: dict[str, str]) -> None:
    """The core never imports the SDK; `memgit mcp` without it is a usage error."""
    code = (
        "import sys\n"
        "sys.modules['mcp'] = None\n"
        "from memgit.cli.main import main\n"
        f"sys.exit(main(['-C', {str(repo)!r}, 'mcp']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert done.stderr.decode().splitlines() == [
        "error[mcp-not-installed]: memgit mcp needs the MCP SDK, which is not installed",
        "hint: install memgit's mcp extra from its checkout: pip install -e '.[mcp]'",
    ]


def test_the_doc_lists_every_tool_and_argument() -> None:
    """docs/mcp.md's tool table has a row per tool naming each of its arguments, and
    its configuration example is JSON that starts `memgit ... mcp`."""
    from memgit.mcp.tools import TOOLS

    text = MCP_DOC.read_text("utf-8")
    rows = dict(re.findall(r"^\| `(memory_\w+)` \| (.*?) \|", text, re.MULTILINE))
    assert list(rows) == [tool.name for tool in TOOLS]
    for tool in TOOLS:
        named = set(re.findall(r"`(\w+)`", rows[tool.name]))
        assert set(tool.schema["properties"]) <= named, tool.name
    (config,) = re.findall(r"^```json\n(.*?)^```$", text, re.S | re.M)
    server = json.loads(config)["mcpServers"]["memgit"]
    assert server["command"].endswith("memgit") and server["args"][-1] == "mcp"


def test_process_points_a_host_configured_repository_at_propose(repo_path: Path) -> None:
    """With gate.backend: host, memory_process cannot ask anyone: it names the two tools
    that let the agent answer, and writes nothing."""
    from memgit import MemoryRepo
    from memgit.errors import UsageError
    from memgit.mcp.tools import TOOLS_BY_NAME

    settings = repo_path / "memgit.yaml"
    settings.write_text(
        settings.read_text("utf-8").replace("backend: rules", "backend: host"), "utf-8"
    )
    git(repo_path, "commit", "-qam", "the agent answers the Gate")
    before = snapshot(repo_path)
    with MemoryRepo.open(repo_path) as memory, pytest.raises(UsageError) as caught:
        TOOLS_BY_NAME["memory_process"].run(memory, {})
    assert caught.value.render() == (
        "error[usage]: backend: the configured Gate backend is host: the agent answers the "
        "Gate itself\nhint: call memory_gate_prompt, then memory_propose with your answer"
    )
    assert snapshot(repo_path) == before


def test_resources_are_listed_a_page_at_a_time(repo_path: Path) -> None:
    """1,001 memories: the map and 1,000 on the first page, the last one on the next;
    a cursor the server did not give is refused."""
    import mcp_types as types

    from memgit import MemoryRepo
    from memgit.mcp.server import MemoryServer

    folder = repo_path / "memories" / "user" / "ab"
    folder.mkdir(parents=True)
    for number in range(1001):
        (folder / f"ab{number:04d}.md").write_text("x\n", "utf-8")
    git(repo_path, "add", "memories")
    git(repo_path, "commit", "-q", "--no-verify", "-m", "many memories")
    server = MemoryServer(MemoryRepo.open(repo_path))
    try:
        first = asyncio.run(server.list_resources(None, None))  # type: ignore[arg-type]
        assert len(first.resources) == 1001 and str(first.resources[0].uri) == "memgit://map"
        assert first.next_cursor == "1000"
        params = types.PaginatedRequestParams(cursor=first.next_cursor)
        second = asyncio.run(server.list_resources(None, params))  # type: ignore[arg-type]
        assert [str(r.uri) for r in second.resources] == ["memgit://memory/ab1000"]
        assert second.next_cursor is None
        for bogus in ("-1", "²", "x" * 20):
            with pytest.raises(MCPError) as caught:
                bad = types.PaginatedRequestParams(cursor=bogus)
                asyncio.run(server.list_resources(None, bad))  # type: ignore[arg-type]
            assert caught.value.error.message.startswith("error[invalid-argument]: resources/list")
    finally:
        server.close()
