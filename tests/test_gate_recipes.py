"""The local-model recipes of docs/gate.md, run as written.

Each recipe's ``gate:`` block and its ``git``/``memgit`` lines are read out of the doc
(not copied here), so the test breaks when the doc does. The model side is played by
tests/scripted_model.py: behind a real HTTP server on 127.0.0.1 that answers as
Ollama's ``/v1`` or llama.cpp's ``llama-server`` does (their paths, response shapes
and errors), and as a program named ``llm`` on PATH. Only the port of ``base_url`` is
changed, to the test server's; the lines that start the model (``ollama ...``,
``llama-server ...``, ``llm install ...``) are read for what they promise (the model
pulled, the port served) and not run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import yaml
from scripted_model import MODELS_ENV, gate_answer
from scripted_server import RecordedRequest, Reply, ScriptedServer

from memgit import MemoryRepo

from support import git, make_turn

GATE_DOC = Path(__file__).parents[1] / "docs" / "gate.md"
MODEL_PROGRAM = Path(__file__).parent / "scripted_model.py"
STATEMENTS = [
    "We deploy the billing service to Fly.io from the main branch.",
    "Dana owns the on-call rota for payments.",
]
RUN_LINE = re.compile(r"^(git|memgit) ")


def recipe(heading: str) -> tuple[dict[str, object], str, str]:
    """The ``gate:`` block (parsed and as text) and the ``sh`` block of the recipe
    under ``#### <heading>`` in docs/gate.md."""
    text = GATE_DOC.read_text("utf-8")
    found = re.search(
        rf"^#### {re.escape(heading)}\n(.*?)(?=^#{{2,4}} )", text, re.MULTILINE | re.DOTALL
    )
    assert found, f"docs/gate.md has no '#### {heading}' recipe"
    blocks = dict(re.findall(r"^```(yaml|sh)\n(.*?)^```", found.group(1), re.M | re.S))
    assert {"yaml", "sh"} <= set(blocks), f"the {heading} recipe needs a yaml and a sh block"
    config = yaml.safe_load(blocks["yaml"])
    assert set(config) == {"gate"}, "a recipe's yaml block is memgit.yaml's gate: block"
    return config["gate"], blocks["yaml"], blocks["sh"]


def shell_words(sh: str, program: str) -> list[str]:
    """The words of the sh block's line that runs ``program`` (one such line)."""
    (line,) = [line for line in sh.splitlines() if re.match(rf"^(\w+=\S+ )*{program} ", line)]
    return shlex.split(line.rstrip("&"))


def option(words: list[str], name: str) -> str:
    return words[words.index(name) + 1]


def install_gate(repo: Path, block: str, *, port: int | None = None) -> None:
    """Put the recipe's ``gate:`` block in memgit.yaml in place of the one init wrote,
    as a person would (with the test server's port in ``base_url`` when given)."""
    if port is not None:
        block = re.sub(
            r"(base_url: http://127\.0\.0\.1):\d+(/v1)", rf"\g<1>:{port}\g<2>", block, count=1
        )
    config = repo / "memgit.yaml"
    text = config.read_text("utf-8")
    replaced, count = re.subn(r"^gate:\n(?:[ ]+.*\n)*", block, text, count=1, flags=re.M)
    assert count == 1, text
    config.write_text(replaced, "utf-8")


def run_recipe(repo: Path, sh: str, env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """The recipe's git and memgit lines, one by one, in the repository, each to exit 0."""
    lines = [line for line in sh.splitlines() if RUN_LINE.match(line)]
    assert any(line.startswith("memgit process") for line in lines), sh
    done = []
    for line in lines:
        ran = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", line],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0, (line, ran.stdout, ran.stderr)
        done.append(ran)
    return done


@pytest.fixture
def captured(repo_path: Path) -> Path:
    with MemoryRepo.open(repo_path) as repo:
        for seq, text in enumerate(STATEMENTS):
            repo.capture(make_turn(seq, text))
    return repo_path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """memgit on PATH (this interpreter's), and no proxy between memgit and 127.0.0.1."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]])
    proxies = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}
    return {**{k: v for k, v in os.environ.items() if k not in proxies}, "PATH": path}


def chat_request_problem(request: RecordedRequest) -> Reply | None:
    """What a /v1 server answers to a request that is not a chat completion."""
    if request.method != "POST" or request.path != "/v1/chat/completions":
        return Reply(status=404, body=b"404 page not found", headers={"Content-Type": "text/plain"})
    return None


def ollama(pulled: str) -> Callable[[RecordedRequest], Reply]:
    """Ollama's OpenAI-compatible endpoint serving the one model ``pulled``."""

    def reply(request: RecordedRequest) -> Reply:
        wrong = chat_request_problem(request)
        if wrong is not None:
            return wrong
        model = request.json().get("model")
        if model != pulled:
            error = {
                "message": f'model "{model}" not found, try pulling it first',
                "type": "api_error",
                "param": None,
                "code": None,
            }
            return Reply(status=404, body={"error": error}, headers=JSON)
        body = {
            "id": "chatcmpl-318",
            "object": "chat.completion",
            "created": 1764500000,
            "model": pulled,
            "system_fingerprint": "fp_ollama",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": gate_answer(request.user_payload)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 900, "completion_tokens": 200, "total_tokens": 1100},
        }
        return Reply(body=body, headers=JSON)

    return reply


def llama_server(request: RecordedRequest) -> Reply:
    """llama-server: one model, whatever the request's ``model`` says."""
    wrong = chat_request_problem(request)
    if wrong is not None:
        return wrong
    body = {
        "choices": [
            {
                "finish_reason": "stop",
                "index": 0,
                "message": {"role": "assistant", "content": gate_answer(request.user_payload)},
            }
        ],
        "created": 1764500000,
        "model": "gpt-3.5-turbo",
        "system_fingerprint": "b5000-0123abcd",
        "object": "chat.completion",
        "usage": {"completion_tokens": 200, "prompt_tokens": 900, "total_tokens": 1100},
        "id": "chatcmpl-Xr4q",
        "timings": {
            "prompt_n": 900,
            "prompt_ms": 410.5,
            "predicted_n": 200,
            "predicted_ms": 3900.2,
        },
    }
    return Reply(body=body, headers=JSON)


JSON = {"Content-Type": "application/json; charset=utf-8"}


def check_runs(repo: Path, backend_label: str, ran: list[subprocess.CompletedProcess[str]]) -> None:
    """One memory per statement, made by the recipe's backend; the replay was the same."""
    memories = git(repo, "ls-files", "memories").split()
    assert len(memories) == len(STATEMENTS)
    bodies = "".join((repo / path).read_text("utf-8") for path in memories)
    assert all(text in bodies for text in STATEMENTS)
    label = git(repo, "log", "-1", "--format=%(trailers:key=Memgit-Backend,valueonly)").strip()
    assert label == backend_label
    replay = next(done for done in ran if "replay" in done.args[-1])
    assert "  same  " in replay.stdout, replay.stdout
    assert (
        subprocess.run(
            [sys.executable, "-m", "memgit.cli.main", "-C", str(repo), "verify", "--all"],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )


def check_requests(server: ScriptedServer, gate: dict[str, object]) -> None:
    """What memgit sent: chat completions for the recipe's model, in JSON mode, keyless."""
    assert len(server.requests) == 2  # the run, then its replay
    for request in server.requests:
        body = request.json()
        assert (request.path, body["model"]) == ("/v1/chat/completions", gate["model"])
        assert body["response_format"] == {"type": "json_object"} and body["temperature"] == 0
        assert "authorization" not in request.headers


def check_base_url(gate: dict[str, object], port: int) -> None:
    parts = urlsplit(str(gate["base_url"]))
    assert (parts.scheme, parts.hostname, parts.port, parts.path) == (
        "http",
        "127.0.0.1",
        port,
        "/v1",
    )
    assert urlunsplit(parts) == gate["base_url"]


def test_the_ollama_recipe_runs_as_written(captured: Path, env: dict[str, str]) -> None:
    gate, block, sh = recipe("Ollama")
    pulled = shell_words(sh, "ollama pull")[2]
    assert gate["backend"] == "openai" and gate["model"] == pulled
    check_base_url(gate, 11434)  # Ollama's port
    assert "OLLAMA_CONTEXT_LENGTH=" in sh
    with ScriptedServer(default=ollama(pulled)) as server:
        install_gate(captured, block, port=server.port)
        ran = run_recipe(captured, sh, env)
        check_requests(server, gate)
    check_runs(captured, f"openai/{pulled}", ran)


def test_the_llama_server_recipe_runs_as_written(captured: Path, env: dict[str, str]) -> None:
    gate, block, sh = recipe("llama.cpp's llama-server")
    served = shell_words(sh, "llama-server")
    assert gate["backend"] == "openai"
    check_base_url(gate, int(option(served, "--port")))
    assert str(gate["model"]) in option(served, "-m")
    with ScriptedServer(default=llama_server) as server:
        install_gate(captured, block, port=server.port)
        ran = run_recipe(captured, sh, env)
        check_requests(server, gate)
    check_runs(captured, f"openai/{gate['model']}", ran)


def test_the_llm_cli_recipe_runs_as_written(
    captured: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """``llm`` on PATH is tests/scripted_model.py, which knows the models Ollama's recipe
    pulls (as llm-ollama lists them) and llm's options the recipe uses."""
    gate, block, sh = recipe("The `llm` CLI, through the command backend")
    assert gate["backend"] == "command" and "llm install llm-ollama" in sh
    command = gate["command"]
    assert isinstance(command, list) and command[0] == "llm"
    assert option(command, "-m") == gate["model"]
    program = tmp_path / "bin" / "llm"
    program.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(MODEL_PROGRAM))} "$@"\n'
    )
    program.chmod(0o755)
    pulled = shell_words(recipe("Ollama")[2], "ollama pull")[2]
    install_gate(captured, block)
    ran = run_recipe(captured, sh, {**env, MODELS_ENV: pulled})
    check_runs(captured, f"command/{gate['model']}", ran)


def test_the_fakes_refuse_what_the_real_ones_refuse(captured: Path, env: dict[str, str]) -> None:
    """A model Ollama has not pulled is HTTP 404, which memgit reports as backend-failed
    with Ollama's message; an llm model no plugin offers fails the command: so the recipe
    tests above pass only with a configuration the real servers would take."""
    gate, block, _ = recipe("Ollama")
    with ScriptedServer(default=ollama("another-model:1b")) as server:
        install_gate(captured, block, port=server.port)
        done = subprocess.run(
            ["memgit", "process"], cwd=captured, env=env, capture_output=True, text=True
        )
    assert done.returncode == 5
    assert done.stderr.startswith("error[backend-failed]: "), done.stderr
    expected = f'HTTP 404: "model \\"{gate["model"]}\\" not found, try pulling it first"'
    assert expected in done.stderr, done.stderr
    git(captured, "checkout", "--", "memgit.yaml")
    _, block, _ = recipe("The `llm` CLI, through the command backend")
    program = Path(env["PATH"].split(os.pathsep)[0]) / "llm"
    program.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(MODEL_PROGRAM))} "$@"\n'
    )
    program.chmod(0o755)
    install_gate(captured, block)
    done = subprocess.run(
        ["memgit", "process"],
        cwd=captured,
        env={**env, MODELS_ENV: "another-model:1b"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 5 and "Unknown model" in done.stderr, done.stderr
