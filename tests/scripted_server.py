"""A real HTTP server on 127.0.0.1 that plays a scripted list of responses.

Tests of the ``openai`` Gate backend talk to it over a real socket, so retries,
timeouts, oversized bodies and refused credentials go through httpx exactly as
they would against a hosted API. Every request is recorded (method, path,
headers, body) so a test can assert what memgit sent.

    with ScriptedServer([Reply(status=429), chat(answer)]) as server:
        ...  # point gate.base_url at server.base_url
        assert len(server.requests) == 2

A script entry is a :class:`Reply` or a callable taking the
:class:`RecordedRequest` and returning one (e.g. an answer built from the
prompt's units). When the script runs out, ``default`` answers (a 500 unless
given), so a test that expected fewer requests fails loudly.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One scripted response; ``delay`` seconds pass before anything is sent, and with
    ``dribble`` the body goes out one byte at a time, that many seconds apart."""

    status: int = 200
    body: bytes | str | dict[str, Any] | list[Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    dribble: float = 0.0

    def encoded(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode("utf-8")
        return json.dumps(self.body).encode("utf-8")


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """What the server received: method, path, headers (lower-case names) and body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of an OpenAI chat-completions request."""
        return list(self.json()["messages"])

    @property
    def user_payload(self) -> dict[str, Any]:
        """The user message of a Gate request, parsed (it is the prompt's JSON)."""
        user = next(m for m in self.messages if m["role"] == "user")
        return dict(json.loads(user["content"]))


Script = Reply | Callable[[RecordedRequest], Reply]


def chat(content: str, *, status: int = 200, delay: float = 0.0) -> Reply:
    """A chat-completions response whose assistant message is ``content``."""
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
    }
    return Reply(
        status=status, body=body, headers={"Content-Type": "application/json"}, delay=delay
    )


def error(status: int, message: str = "scripted error", **headers: str) -> Reply:
    """An OpenAI-style error body with ``status``."""
    return Reply(
        status=status,
        body={"error": {"message": message, "type": "test"}},
        headers={"Content-Type": "application/json", **headers},
    )


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ScriptedServer:
    """A ``ThreadingHTTPServer`` on port 0 in a daemon thread; use as a context manager."""

    def __init__(
        self,
        script: Iterable[Script] = (),
        *,
        default: Script | None = None,
    ) -> None:
        self.script: list[Script] = list(script)
        self.default: Script = default or error(500, "the scripted server ran out of replies")
        self.requests: list[RecordedRequest] = []
        self.handler_seconds = 0.0  # time spent building and sending replies
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """What ``gate.base_url`` should be: the server's ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def push(self, *replies: Script) -> None:
        """Append replies to the script."""
        with self._lock:
            self.script.extend(replies)

    def _next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            entry = self.script.pop(0) if self.script else self.default
        return entry(request) if callable(entry) else entry

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _serve(self) -> None:
                started = time.perf_counter()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                recorded = RecordedRequest(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = server._next(recorded)
                data = reply.encoded()
                built = time.perf_counter()
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if reply.dribble:
                        for byte in data:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(reply.dribble)
                    else:
                        self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout, size limit): that is the point
                finally:
                    with server._lock:
                        server.handler_seconds += (built - started) + (
                            time.perf_counter() - built - reply.delay
                        )

            do_POST = _serve
            do_GET = _serve

        return Handler
