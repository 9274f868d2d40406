"""``memgit install claude-code|codex`` against temporary host configuration folders."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from memgit.layout import capture_path

from support import git, memgit_cli

SESSION = "0b6c3a1e-9f2d-4e57-8a10-3c5d7e9f1a2b"
CLAUDE_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm run lint)"], "deny": []},
    "env": {"FOO": "bar"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
    "unknownFutureSetting": {"nested": [1, 2, {"x": None}]},
}
CODEX_CONFIG = """\
# my Codex settings
model = "o4-mini"   # the fast one
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-server"
args = ["--port", "7000"]

[tui]
notifications = true
"""


def install(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return memgit_cli("-C", str(repo), "install", *args)


def hook_commands(settings: dict[str, Any], event: str) -> list[str]:
    return [hook["command"] for group in settings["hooks"][event] for hook in group["hooks"]]


def clean_env() -> dict[str, str]:
    """The environment a host runs its hooks in: no virtual environment on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "MEMGIT_DIR")}
    env["PATH"] = "/usr/bin:/bin"
    return env


def test_claude_code_dry_run_install_and_reinstall(repo_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "claude"
    folder.mkdir()
    settings_file = folder / "settings.json"
    original = json.dumps(CLAUDE_SETTINGS, indent=4) + "\n"
    settings_file.write_text(original, "utf-8")

    dry = install(repo_path, "claude-code", "--config-dir", str(folder), "--dry-run")
    assert dry.returncode == 0, dry.stderr.decode()
    out = dry.stdout.decode()
    assert out.startswith(f"--- {settings_file}\n+++ {settings_file}\n")
    assert "+" in out and "memgit.hosts.hook claude-code" in out and "(dry run" in out
    assert settings_file.read_text("utf-8") == original
    assert sorted(p.name for p in folder.iterdir()) == ["settings.json"]

    done = install(repo_path, "claude-code", "--config-dir", str(folder), "--json")
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result["changed"] is True and result["dry_run"] is False
    backup = Path(result["backup"])
    assert backup == folder / "settings.json.memgit-backup"
    assert backup.read_text("utf-8") == original
    settings = json.loads(settings_file.read_text("utf-8"))
    expected = shlex.join(
        [sys.executable, "-m", "memgit.hosts.hook", "claude-code", "-C", str(repo_path.resolve())]
    )
    for event in ("UserPromptSubmit", "Stop", "SessionStart"):
        assert hook_commands(settings, event)[-1] == expected
    assert hook_commands(settings, "Stop") == ["notify-send done", expected]
    # Everything memgit does not own is kept as it was.
    for key in ("model", "permissions", "env", "unknownFutureSetting"):
        assert settings[key] == CLAUDE_SETTINGS[key]
    assert settings["hooks"]["PreToolUse"] == CLAUDE_SETTINGS["hooks"]["PreToolUse"]

    installed = settings_file.read_bytes()
    again = install(repo_path, "claude-code", "--config-dir", str(folder))
    assert again.returncode == 0, again.stderr.decode()
    assert again.stdout.decode() == f"Already installed in {settings_file}: nothing changed\n"
    assert settings_file.read_bytes() == installed
    assert backup.read_text("utf-8") == original


def test_the_installed_claude_code_command_runs_without_a_venv(
    repo_path: Path, tmp_path: Path
) -> None:
    """No settings file yet: it is created; the command it holds, run by a shell as the
    host runs it with nothing activated, captures the prompt."""
    done = install(repo_path, "claude-code")  # the isolated HOME's ~/.claude
    assert done.returncode == 0, done.stderr.decode()
    settings_file = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    assert not settings_file.with_name("settings.json.memgit-backup").exists()
    (command,) = hook_commands(json.loads(settings_file.read_text("utf-8")), "UserPromptSubmit")
    event = {
        "session_id": SESSION,
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(tmp_path),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Remember that deploys happen on Tuesdays.",
    }
    ran = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(event).encode(),
        capture_output=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0 and ran.stdout == b"", ran.stderr.decode()
    turn = yaml.safe_load(git(repo_path, "show", f"HEAD:{capture_path('claude-code', SESSION, 0)}"))
    assert turn["messages"] == [{"role": "user", "content": event["prompt"]}]


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ('{"model": "opus",\n  "hooks": {,}}\n', "line 2, column 13"),
        ('["not", "an", "object"]\n', "(top level)"),
        ('{"hooks": "Stop"}\n', "hooks"),
        ('{"hooks": {"Stop": {"hooks": []}}}\n', "hooks.Stop"),
        ('{"hooks": {"SessionStart": [{"hooks": "x"}]}}\n', "hooks.SessionStart[0].hooks"),
    ],
    ids=["invalid-json", "not-an-object", "hooks-a-string", "event-not-a-list", "group-hooks"],
)
def test_a_broken_claude_code_settings_file_is_refused(
    repo_path: Path, tmp_path: Path, content: str, field: str
) -> None:
    folder = tmp_path / "claude"
    folder.mkdir()
    settings_file = folder / "settings.json"
    settings_file.write_text(content, "utf-8")
    done = install(repo_path, "claude-code", "--config-dir", str(folder))
    assert done.returncode == 3
    first = done.stderr.decode().splitlines()[0]
    assert first.startswith(f"error[host-config-invalid]: {settings_file}: {field}: "), first
    assert settings_file.read_text("utf-8") == content
    assert sorted(p.name for p in folder.iterdir()) == ["settings.json"]


def test_codex_dry_run_install_and_reinstall(repo_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "codex"
    folder.mkdir()
    config_file = folder / "config.toml"
    config_file.write_text(CODEX_CONFIG, "utf-8")
    words = [sys.executable, "-m", "memgit.hosts.hook", "codex", "-C", str(repo_path.resolve())]

    dry = install(repo_path, "codex", "--config-dir", str(folder), "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr.decode()
    result = json.loads(dry.stdout)
    assert result["changed"] is True and result["dry_run"] is True and result["backup"]
    added = [line for line in result["diff"].splitlines() if line.startswith("+notify")]
    assert len(added) == 1
    assert config_file.read_text("utf-8") == CODEX_CONFIG
    assert not (folder / "config.toml.memgit-backup").exists()

    done = install(repo_path, "codex", "--config-dir", str(folder))
    assert done.returncode == 0, done.stderr.decode()
    text = config_file.read_text("utf-8")
    assert tomllib.loads(text) == {**tomllib.loads(CODEX_CONFIG), "notify": words}
    # One line added at the top level, before the first table; comments and layout kept.
    assert [line for line in text.splitlines() if line not in CODEX_CONFIG.splitlines()] == [
        added[0][1:]
    ]
    assert text.index("notify =") < text.index("[mcp_servers.docs]")
    assert (folder / "config.toml.memgit-backup").read_text("utf-8") == CODEX_CONFIG

    again = install(repo_path, "codex", "--config-dir", str(folder), "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["changed"] is False
    assert config_file.read_text("utf-8") == text

    # The notify program Codex would run, with the JSON it appends, captures the turn.
    payload = {
        "type": "agent-turn-complete",
        "thread-id": "thread-7",
        "turn-id": "1",
        "input-messages": ["From now on, format with black."],
        "last-assistant-message": "Will do.",
    }
    ran = subprocess.run(
        [*tomllib.loads(text)["notify"], json.dumps(payload)],
        capture_output=True,
        env=clean_env(),
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0 and ran.stdout == b"", ran.stderr.decode()
    assert capture_path("codex", "thread-7", 0) in git(repo_path, "ls-files", "inbox")


def test_codex_install_into_an_empty_folder_then_one_without_tables(
    repo_path: Path, tmp_path: Path
) -> None:
    fresh = tmp_path / "fresh"
    done = install(repo_path, "codex", "--config-dir", str(fresh))
    assert done.returncode == 0, done.stderr.decode()
    assert list(tomllib.loads((fresh / "config.toml").read_text("utf-8"))) == ["notify"]

    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "config.toml").write_text('model = "o3"', "utf-8")  # no final newline
    done = install(repo_path, "codex", "--config-dir", str(flat))
    assert done.returncode == 0, done.stderr.decode()
    config = tomllib.loads((flat / "config.toml").read_text("utf-8"))
    assert config["model"] == "o3" and config["notify"][2:4] == ["memgit.hosts.hook", "codex"]


@pytest.mark.parametrize(
    ("content", "code", "status", "field"),
    [
        ('model = "o3\n', "host-config-invalid", 3, "line 1, column 12"),
        ('notify = "notify-send"\n', "host-config-invalid", 3, "notify"),
        (
            'notify = ["terminal-notifier", "-title", "Codex"]\n',
            "host-config-conflict",
            4,
            "notify",
        ),
    ],
    ids=["invalid-toml", "notify-not-a-list", "another-notify-program"],
)
def test_a_codex_config_memgit_cannot_merge_is_refused(
    repo_path: Path, tmp_path: Path, content: str, code: str, status: int, field: str
) -> None:
    folder = tmp_path / "codex"
    folder.mkdir()
    config_file = folder / "config.toml"
    config_file.write_text(content, "utf-8")
    done = install(repo_path, "codex", "--config-dir", str(folder))
    assert done.returncode == status, done.stderr.decode()
    first = done.stderr.decode().splitlines()[0]
    assert first.startswith(f"error[{code}]: {config_file}: {field}: "), first
    assert config_file.read_text("utf-8") == content
    assert sorted(p.name for p in folder.iterdir()) == ["config.toml"]


def uninstall(*args: str) -> subprocess.CompletedProcess[bytes]:
    return memgit_cli("uninstall", *args)


def test_claude_code_uninstall_leaves_the_settings_as_they_were(
    repo_path: Path, tmp_path: Path
) -> None:
    """Install into settings with hooks of their own, then uninstall: every memgit entry
    is gone (its groups and the events it alone used too), the rest is as it was, a dry
    run writes nothing, and a second uninstall changes nothing."""
    folder = tmp_path / "claude"
    folder.mkdir()
    settings_file = folder / "settings.json"
    settings_file.write_text(json.dumps(CLAUDE_SETTINGS, indent=4), "utf-8")
    assert install(repo_path, "claude-code", "--config-dir", str(folder)).returncode == 0
    installed = settings_file.read_bytes()

    dry = uninstall("claude-code", "--config-dir", str(folder), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert b"memgit.hosts.hook" in dry.stdout and settings_file.read_bytes() == installed

    done = uninstall("claude-code", "--config-dir", str(folder), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["changed"] is True
    assert json.loads(settings_file.read_text("utf-8")) == CLAUDE_SETTINGS
    assert (folder / "settings.json.memgit-backup").read_bytes() == installed

    again = uninstall("claude-code", "--config-dir", str(folder))
    assert again.returncode == 0, again.stderr
    assert again.stdout.decode() == f"No memgit hook in {settings_file}: nothing changed\n"
    assert json.loads(settings_file.read_text("utf-8")) == CLAUDE_SETTINGS


def test_codex_uninstall_takes_out_only_memgits_notify(repo_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "codex"
    folder.mkdir()
    config = folder / "config.toml"
    config.write_text(CODEX_CONFIG, "utf-8")
    assert install(repo_path, "codex", "--config-dir", str(folder)).returncode == 0

    done = uninstall("codex", "--config-dir", str(folder))
    assert done.returncode == 0, done.stderr
    assert config.read_text("utf-8") == CODEX_CONFIG

    # Another program's notify is not memgit's to take out.
    theirs = 'notify = ["notify-send", "done"]\n' + CODEX_CONFIG
    config.write_text(theirs, "utf-8")
    done = uninstall("codex", "--config-dir", str(folder), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["changed"] is False
    assert config.read_text("utf-8") == theirs


def test_uninstall_refuses_a_broken_file_and_leaves_it(tmp_path: Path) -> None:
    folder = tmp_path / "claude"
    folder.mkdir()
    broken = '{"hooks": {"Stop": [}'
    (folder / "settings.json").write_text(broken, "utf-8")
    done = uninstall("claude-code", "--config-dir", str(folder))
    assert done.returncode == 3
    assert done.stderr.decode().startswith(
        f"error[host-config-invalid]: {folder / 'settings.json'}: "
    )
    assert (folder / "settings.json").read_text("utf-8") == broken
    assert not (folder / "settings.json.memgit-backup").exists()
