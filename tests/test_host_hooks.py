"""The host hook scripts in hooks/, run as their hosts run them, on real repositories.

Each test pipes the JSON event the host sends (the documented shapes: docs/hosts.md)
into the script in hooks/, with no virtual environment on PATH (MEMGIT_PYTHON names
the interpreter), and checks the captures committed and what stdout carries.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from test_process import configure

from memgit.layout import capture_path

from support import git, snapshot

HOOKS = Path(__file__).resolve().parents[1] / "hooks"
SESSION = "5f1c2a9e-7d41-4b8e-9a3c-2e6f0b1d8c47"
PROCESS_WAIT = 60.0


def run_hook(
    script: str,
    repo: Path | None,
    *args: str,
    event: dict[str, Any] | bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "MEMGIT_DIR")}
    env["PATH"] = "/usr/bin:/bin"
    env["MEMGIT_PYTHON"] = sys.executable
    if repo is not None:
        env["MEMGIT_DIR"] = str(repo)
    data = event if isinstance(event, bytes) else json.dumps(event or {}).encode()
    return subprocess.run(
        [str(HOOKS / script), *args],
        input=data,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


def claude_event(name: str, transcript: Path, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": "/home/someone/project",
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }


def stored(repo: Path, source: str, session: str, seq: int) -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(
        git(repo, "show", f"HEAD:{capture_path(source, session, seq)}")
    )
    return found


def write_transcript(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries), "utf-8")
    return path


def user_entry(content: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": content}, "uuid": "u"}


def assistant_entry(*blocks: dict[str, Any]) -> dict[str, Any]:
    message = {"role": "assistant", "content": list(blocks), "id": "msg_1"}
    return {"type": "assistant", "message": message, "uuid": "a"}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def wait_for_run(repo: Path) -> None:
    """The Stop hook's background `memgit process` commits a run; wait for it."""
    deadline = time.monotonic() + PROCESS_WAIT
    while "Memgit-Run" not in git(repo, "log", "-1", "--format=%(trailers)"):
        assert time.monotonic() < deadline, (repo / ".git/memgit/host-process.log").read_text()
        time.sleep(0.2)


def test_claude_code_prompt_and_answer_are_captured_and_processed(
    repo_path: Path, tmp_path: Path
) -> None:
    prompt = "Remember that the staging database listens on port 6543."
    transcript = write_transcript(
        tmp_path / "transcript.jsonl",
        user_entry(prompt),
        assistant_entry(text("Let me check."), {"type": "tool_use", "id": "t1", "name": "Bash"}),
        user_entry([{"type": "tool_result", "tool_use_id": "t1", "content": "6543"}]),
        assistant_entry(text("Noted: staging listens on 6543.")),
        assistant_entry(text("I will use it from now on.")),
    )
    done = run_hook(
        "claude-code",
        repo_path,
        event=claude_event("UserPromptSubmit", transcript, prompt=prompt),
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"" and done.stderr == b""
    first = stored(repo_path, "claude-code", SESSION, 0)
    assert first["messages"] == [{"role": "user", "content": prompt}]
    assert first["source"] == "claude-code" and first["session"] == SESSION

    done = run_hook(
        "claude-code",
        repo_path,
        event=claude_event("Stop", transcript, stop_hook_active=False),
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"" and done.stderr == b""
    second = stored(repo_path, "claude-code", SESSION, 1)
    assert second["messages"] == [
        {
            "role": "assistant",
            "content": "Noted: staging listens on 6543.\n\nI will use it from now on.",
        }
    ]
    wait_for_run(repo_path)
    memories = git(repo_path, "ls-tree", "-r", "--name-only", "HEAD", "--", "memories").split()
    assert len(memories) == 1
    assert "6543" in git(repo_path, "show", f"HEAD:{memories[0]}")

    done = run_hook(
        "claude-code", repo_path, event=claude_event("SessionStart", transcript, source="startup")
    )
    assert done.returncode == 0, done.stderr.decode()
    output = json.loads(done.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = output["hookSpecificOutput"]["additionalContext"]
    assert "1 memories" in context and "recall" in context
    assert "6543" in context
    # The agent runs the recall command it was told, in a shell with no venv on PATH.
    told = re.search(r"To recall: (.+) 'QUERY'\.", context)
    assert told is not None, context
    recalled = subprocess.run(
        f"{told[1]} 6543",
        shell=True,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=False,
    )
    assert recalled.returncode == 0, recalled.stderr.decode()
    assert b"6543" in recalled.stdout
    assert git(repo_path, "status", "--porcelain") == ""


def test_the_stop_event_answer_given_in_the_event_wins(repo_path: Path, tmp_path: Path) -> None:
    configure(repo_path, gate={"backend": "host"})  # no background process to wait for
    missing = tmp_path / "not-written.jsonl"
    event = claude_event("Stop", missing, last_assistant_message="Done: the tests pass.")
    done = run_hook("claude-code", repo_path, event=event)
    assert done.returncode == 0, done.stderr.decode()
    assert stored(repo_path, "claude-code", SESSION, 0)["messages"] == [
        {"role": "assistant", "content": "Done: the tests pass."}
    ]
    assert not (repo_path / ".git/memgit/host-process.log").exists()


def test_a_turn_that_ended_without_text_captures_nothing(repo_path: Path, tmp_path: Path) -> None:
    configure(repo_path, gate={"backend": "host"})
    transcript = write_transcript(
        tmp_path / "t.jsonl",
        user_entry("run it"),
        assistant_entry({"type": "tool_use", "id": "t1", "name": "Bash"}),
    )
    before = snapshot(repo_path)
    done = run_hook("claude-code", repo_path, event=claude_event("Stop", transcript))
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert snapshot(repo_path) == before


def test_a_hook_error_never_blocks_the_host(repo_path: Path, tmp_path: Path) -> None:
    """Bad input, a missing field, no repository: one error line on stderr, exit 1 (which
    Claude Code treats as non-blocking, unlike 2), nothing on stdout, nothing changed."""
    before = snapshot(repo_path)
    cases = [
        (repo_path, b"{not json", "error[invalid-json]: <stdin>: "),
        (
            repo_path,
            json.dumps(claude_event("UserPromptSubmit", tmp_path / "t")).encode(),
            "error[host-event-invalid]: <stdin>: prompt: ",
        ),
        (
            repo_path,
            json.dumps(claude_event("Stop", tmp_path / "missing.jsonl")).encode(),
            "error[host-event-invalid]: ",
        ),
        (None, json.dumps(claude_event("SessionStart", tmp_path / "t")).encode(), "error[usage]: "),
    ]
    for repo, data, line in cases:
        done = run_hook("claude-code", repo, event=data)
        assert done.returncode == 1, (line, done.stderr)
        assert done.stdout == b""
        assert done.stderr.decode().startswith(line), done.stderr
        assert b"Traceback" not in done.stderr
    assert snapshot(repo_path) == before

    # A broken hook command too: the usage error is memgit's line, and not status 2.
    done = run_hook("claude-code", repo_path, "--no-such-option", event=b"{}")
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.decode().startswith("error[usage]: "), done.stderr


def test_codex_notify_captures_the_turn_into_its_thread(repo_path: Path) -> None:
    configure(repo_path, gate={"backend": "host"})
    payload = {
        "type": "agent-turn-complete",
        "thread-id": "b5f6c1e2-0000-4000-8000-000000000001",
        "turn-id": "12345",
        "cwd": "/home/someone/project",
        "input-messages": ["Rename `foo` to `bar` and update the callers."],
        "last-assistant-message": "Rename complete; all callers updated.",
    }
    for _ in range(2):
        done = run_hook("codex-notify", repo_path, json.dumps(payload), event=b"")
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout == b"" and done.stderr == b""
    turn = stored(repo_path, "codex", payload["thread-id"], 0)
    assert turn["messages"] == [
        {"role": "user", "content": payload["input-messages"][0]},
        {"role": "assistant", "content": payload["last-assistant-message"]},
    ]
    # The second notification was the same words at another moment: a turn of its own.
    assert stored(repo_path, "codex", payload["thread-id"], 1)["messages"] == turn["messages"]

    before = snapshot(repo_path)
    other = run_hook(
        "codex-notify", repo_path, json.dumps({"type": "approval-requested"}), event=b""
    )
    assert other.returncode == 0 and other.stdout == b""
    assert snapshot(repo_path) == before


def test_the_generic_script_captures_a_turn_without_seq(repo_path: Path) -> None:
    turn = {
        "source": "my-agent",
        "session": "s1",
        "timestamp": "2026-11-30T10:35:00Z",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
    }
    done = run_hook("capture-turn", repo_path, event=turn)
    assert done.returncode == 0, done.stderr.decode()
    outcome = json.loads(done.stdout)
    assert outcome["seq"] == 0 and outcome["duplicate"] is False
    assert stored(repo_path, "my-agent", "s1", 0)["messages"] == turn["messages"]

    before = snapshot(repo_path)
    bad = run_hook("capture-turn", repo_path, event={**turn, "seq": -1})
    assert bad.returncode == 3 and bad.stdout == b""
    assert bad.stderr.decode().startswith("error[schema]: <stdin>: seq: ")
    assert snapshot(repo_path) == before


def test_a_prompt_with_a_pasted_key_is_captured_redacted(repo_path: Path, tmp_path: Path) -> None:
    """The hook sends no seq; a prompt holding a key was refused and lost before."""
    from secret_fixtures import SECRET_FIXTURES

    kind, sample, value = next(f for f in SECRET_FIXTURES if f[0] == "github-token")
    event = claude_event("UserPromptSubmit", tmp_path / "t.jsonl", prompt=f"use this: {sample}")
    done = run_hook("claude-code", repo_path, event=event)
    assert done.returncode == 0, done.stderr.decode()
    captured = stored(repo_path, "claude-code", SESSION, 0)
    assert captured["redactions"] == {kind: 1}
    assert value not in json.dumps(captured)
