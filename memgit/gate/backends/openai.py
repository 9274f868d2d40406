"""The openai backend: any OpenAI-compatible chat-completions endpoint.

Hosted APIs and local servers (llama.cpp, vLLM, Ollama's OpenAI mode) speak the
same protocol. The API key is read from the environment variable named in
``gate.api_key_env``; it is never written anywhere.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from memgit.errors import BackendError, InvalidInputError, quote_foreign
from memgit.gate.prompt import GateRequest
from memgit.jsonio import parse_json
from memgit.settings import config_seconds

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 3
MAX_ANSWER_BYTES = 4 * 1024 * 1024
MAX_BACKOFF = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAIBackend:
    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_RETRIES
    json_mode: bool = True
    backoff: float = 0.5
    name: str = "openai"
    can_correct: bool = True

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OpenAIBackend:
        base_url = config.get("base_url")
        model = config.get("model")
        if not isinstance(base_url, str) or not base_url:
            raise _needs("base_url")
        if not isinstance(model, str) or not model:
            raise _needs("model")
        if not base_url.startswith(("http://", "https://")):
            raise InvalidInputError(
                f"gate.base_url must start with http:// or https://, not {base_url[:40]!r}",
                code="backend-config",
                path="memgit.yaml",
                field="gate.base_url",
            )
        return cls(
            base_url=base_url.rstrip("/"),
            model=model,
            api_key_env=_optional_str(config, "api_key_env"),
            timeout=config_seconds(config, "timeout", DEFAULT_TIMEOUT),
            max_retries=int(config_seconds(config, "max_retries", DEFAULT_RETRIES)),
            json_mode=config.get("json_mode", True) is not False,
            backoff=config_seconds(config, "backoff", 0.5),
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise BackendError(
                    f"environment variable {self.api_key_env} is not set",
                    code="backend-auth",
                    field="gate.api_key_env",
                    hint=f"export {self.api_key_env}=... (the key is never stored by memgit)",
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def answer(self, request: GateRequest) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
        }
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        headers = self._headers()
        url = f"{self.base_url}/chat/completions"
        timeout = httpx.Timeout(self.timeout, connect=min(10.0, self.timeout))
        with httpx.Client(timeout=timeout) as client:
            attempt = 0
            while True:
                status, data, retry_after = self._post(client, url, headers, body)
                if status == 200:
                    return _content(data)
                if status == 400 and "response_format" in body and b"response_format" in data:
                    body.pop("response_format")
                    continue
                if status in (401, 403):
                    raise BackendError(
                        f"the endpoint refused the credentials (HTTP {status})",
                        code="backend-auth",
                        field="gate.api_key_env",
                        hint="check the API key in the environment variable named there",
                    )
                if (status == 429 or status >= 500) and attempt < self.max_retries:
                    attempt += 1
                    time.sleep(self._delay(attempt, retry_after))
                    continue
                raise BackendError(
                    f"the endpoint answered HTTP {status}{_error_detail(data)}"
                    + (f" after {attempt + 1} attempts" if attempt else ""),
                    code="backend-unavailable"
                    if status == 429 or status >= 500
                    else "backend-failed",
                    field="gate.base_url",
                    hint="retry later; the captures stay pending",
                )

    def _post(
        self, client: httpx.Client, url: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, bytes, str | None]:
        # gate.timeout bounds the whole exchange, not each read: httpx's timeouts apply
        # per socket operation, so a server sending a byte a second was never cut off.
        deadline = time.monotonic() + self.timeout
        try:
            with client.stream("POST", url, headers=headers, json=body) as response:
                data = bytearray()
                for chunk in response.iter_bytes():
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("the answer took longer than gate.timeout")
                    data += chunk
                    if len(data) > MAX_ANSWER_BYTES:
                        raise BackendError(
                            f"the endpoint's answer is larger than {MAX_ANSWER_BYTES:,} bytes",
                            code="backend-answer-too-large",
                            field="gate.base_url",
                        )
                return response.status_code, bytes(data), response.headers.get("retry-after")
        except httpx.TimeoutException as err:
            raise BackendError(
                f"no complete answer from {self.base_url} within {self.timeout:g}s",
                code="backend-timeout",
                field="gate.timeout",
                hint="raise gate.timeout in memgit.yaml, or retry later",
            ) from err
        except httpx.HTTPError as err:
            raise BackendError(
                f"cannot reach {self.base_url}: {type(err).__name__}",
                code="backend-unreachable",
                field="gate.base_url",
                hint="is the server running? check gate.base_url in memgit.yaml",
            ) from err

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return float(min(MAX_BACKOFF, max(0.0, float(retry_after))))
            except ValueError:
                pass
        return min(MAX_BACKOFF, self.backoff * 2.0 ** (attempt - 1) * (0.5 + random.random()))


def _parsed(data: bytes) -> Any:
    """The answer's JSON, read as strictly as any input: a body nested a million deep is
    refused (json.loads would raise RecursionError), and so are NaN and duplicate keys."""
    return parse_json(data, source="the endpoint's answer")


def _content(data: bytes) -> str:
    try:
        content = _parsed(data)["choices"][0]["message"]["content"]
    except (InvalidInputError, KeyError, IndexError, TypeError) as err:
        raise BackendError(
            "the endpoint's answer is not a chat completion",
            code="backend-bad-response",
            field="gate.base_url",
            hint="is gate.base_url an OpenAI-compatible /v1 endpoint?",
        ) from err
    if not isinstance(content, str):
        raise BackendError(
            "the chat completion has no text content",
            code="backend-bad-response",
            field="gate.base_url",
        )
    return content


def _error_detail(data: bytes) -> str:
    try:
        message = _parsed(data)["error"]["message"]
    except (InvalidInputError, KeyError, TypeError):
        return ""
    return f": {quote_foreign(str(message))}" if message else ""


def _optional_str(config: Mapping[str, Any], key: str) -> str | None:
    value = config.get(key)
    return value if isinstance(value, str) and value else None


def _needs(key: str) -> InvalidInputError:
    return InvalidInputError(
        f"the openai backend needs gate.{key}",
        code="backend-config",
        path="memgit.yaml",
        field=f"gate.{key}",
        hint="see docs/gate.md#openai",
    )
