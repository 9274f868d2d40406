"""Secrets pasted into a conversation never reach Git, through the real CLI.

Every sample of ``SECRET_FIXTURES`` is captured with ``memgit capture`` into one
fresh repository: each as the user message of its own turn (``--file``), several
together in one tool message, and two as a thread id and a tool name (stdin).
Then nothing Git keeps may contain a secret value: not ``git log --all -p``, not
any object (``git cat-file --batch-all-objects --batch``), not any other file
under ``.git``. For PEM keys, no line of the key body longer than 20 characters
may appear either. Each capture file's ``redactions`` must count the kinds
that were in its turn.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memgit.turn import read_capture

from secret_fixtures import SECRET_FIXTURES
from support import everything_git_keeps, git, git_environment, make_turn, memgit_cli, snapshot

ONE_LINE = [fixture for fixture in SECRET_FIXTURES if "\n" not in fixture[1]]
# Several kinds in one tool message, one sample per kind. An unterminated PEM key is left
# out: it is redacted to the end of the text, swallowing (and so hiding) what follows it.
COMPLETE = [f for f in SECRET_FIXTURES if f[0] != "private-key" or "-----END" in f[2]]
TOOL_SAMPLES = list({kind: (kind, sample, value) for kind, sample, value in COMPLETE[::5]}.values())
THREAD_SAMPLE = next(f for f in ONE_LINE if len(f[1]) <= 200)
NAME_SAMPLE = next(f for f in ONE_LINE if len(f[1]) <= 200 and f[0] != THREAD_SAMPLE[0])
FIXTURE_IDS = [f"{index:02d}-{kind}" for index, (kind, _, _) in enumerate(SECRET_FIXTURES)]


def fragments(kind: str, value: str) -> list[str]:
    """What must never be stored: the value and, for a PEM key, each body line over 20 chars."""
    found = [value]
    if kind == "private-key":
        lines = re.split(r"\n|\\n", value)
        found += [line for line in lines if len(line) > 20 and not line.startswith("-----")]
    return found


@dataclass(frozen=True, slots=True)
class Captured:
    """The repository after all captures, and everything memgit printed on the way."""

    repo: Path
    outputs: list[subprocess.CompletedProcess[bytes]]
    results: dict[int, dict[str, Any]]  # seq -> {"path", "redactions", ...}

    def stored(self, seq: int) -> dict[str, Any]:
        path = self.results[seq]["path"]
        return read_capture(git(self.repo, "show", f"HEAD:{path}").encode(), path=path).to_dict()


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Captured]:
    """Capture every sample once, through the CLI, into a fresh repository."""
    base = tmp_path_factory.mktemp("secrets")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in git_environment(base).items():
            patch.setenv(name, value)
        repo = base / "memory"
        outputs = [memgit_cli("init", str(repo))]

        # seq i: sample i as a user message of its own turn, all in one --file.
        turns = base / "secrets.jsonl"
        lines = [
            json.dumps(make_turn(seq, f"Please remember this:\n{sample}"), ensure_ascii=False)
            for seq, (_, sample, _) in enumerate(SECRET_FIXTURES)
        ]
        turns.write_text("\n".join(lines) + "\n", "utf-8")
        outputs.append(memgit_cli("capture", "--file", str(turns), "--json", cwd=repo))
        results = dict(enumerate(json.loads(outputs[-1].stdout)["captures"]))

        # Several secrets in one tool message.
        tool_seq = len(SECRET_FIXTURES)
        tool_output = "\n\n".join(sample for _, sample, _ in TOOL_SAMPLES)
        messages = [
            {"role": "user", "content": "What is in the config folder?"},
            {"role": "tool", "name": "bash", "content": tool_output, "complete": True},
        ]
        turn = make_turn(tool_seq, messages=messages)
        outputs.append(memgit_cli("capture", "--json", cwd=repo, input=json.dumps(turn).encode()))
        results[tool_seq] = json.loads(outputs[-1].stdout)

        # A secret as the thread id and another as a tool name.
        named_seq = tool_seq + 1
        messages = [{"role": "tool", "name": NAME_SAMPLE[1], "content": "ok"}]
        turn = make_turn(named_seq, thread=THREAD_SAMPLE[1], messages=messages)
        outputs.append(memgit_cli("capture", "--json", cwd=repo, input=json.dumps(turn).encode()))
        results[named_seq] = json.loads(outputs[-1].stdout)
        yield Captured(repo, outputs, results)


@pytest.fixture(scope="module")
def kept(captured: Captured) -> dict[str, bytes]:
    return everything_git_keeps(captured.repo)


def test_every_capture_succeeded(captured: Captured) -> None:
    """All captures exit 0, the tree is clean, and git fsck --strict finds nothing."""
    for done in captured.outputs:
        assert done.returncode == 0, done.stderr.decode()
    assert len(captured.results) == len(SECRET_FIXTURES) + 2
    assert git(captured.repo, "status", "--porcelain") == ""
    git(captured.repo, "fsck", "--strict")


def test_the_scan_sees_the_capture_files(kept: dict[str, bytes]) -> None:
    """The searched data does hold the stored turns (placeholders, context), so a secret
    that had been stored would be found."""
    for where in ("git log --all -p", "git cat-file --batch-all-objects --batch"):
        assert b"[REDACTED:private-key]" in kept[where]
        assert b"Please remember this:" in kept[where]


@pytest.mark.parametrize(("kind", "sample", "value"), SECRET_FIXTURES, ids=FIXTURE_IDS)
def test_secret_is_nowhere_in_git(
    kind: str, sample: str, value: str, kept: dict[str, bytes]
) -> None:
    """No secret value, nor a PEM body line, in history, objects or any .git file."""
    for fragment in fragments(kind, value):
        for where, data in kept.items():
            assert fragment.encode() not in data, f"{kind} secret found in {where}"


@pytest.mark.parametrize(("kind", "sample", "value"), SECRET_FIXTURES, ids=FIXTURE_IDS)
def test_each_turn_counts_its_secret(
    kind: str, sample: str, value: str, captured: Captured
) -> None:
    """The capture file of each sample's turn records one redaction of the sample's kind."""
    seq = SECRET_FIXTURES.index((kind, sample, value))
    stored = captured.stored(seq)
    assert stored["redactions"] == {kind: 1}
    assert captured.results[seq]["redactions"] == {kind: 1}
    assert f"[REDACTED:{kind}]" in stored["messages"][0]["content"]


def test_tool_message_counts_every_secret(captured: Captured) -> None:
    """A tool message holding several secrets records each kind it held."""
    seq = len(SECRET_FIXTURES)
    expected = dict(Counter(kind for kind, _, _ in TOOL_SAMPLES))
    assert len(expected) >= 5
    assert captured.stored(seq)["redactions"] == expected
    assert captured.results[seq]["redactions"] == expected


def test_thread_and_tool_name_are_redacted(captured: Captured) -> None:
    """Secrets in the thread id and in a tool name are replaced and counted too."""
    stored = captured.stored(len(SECRET_FIXTURES) + 1)
    assert f"[REDACTED:{THREAD_SAMPLE[0]}]" in stored["thread"]
    assert f"[REDACTED:{NAME_SAMPLE[0]}]" in stored["messages"][0]["name"]
    assert stored["redactions"] == {THREAD_SAMPLE[0]: 1, NAME_SAMPLE[0]: 1}


def test_commit_messages_name_turns_not_secrets(captured: Captured) -> None:
    """Commit messages carry only the Memgit-Captured keys of the turns."""
    log = git(captured.repo, "log", "--format=%B")
    trailers = re.findall(r"^Memgit-Captured: (\S+)$", log, re.MULTILINE)
    assert sorted(trailers) == sorted(f"test-agent/s1/{seq}" for seq in captured.results)


def test_nothing_printed_holds_a_secret(captured: Captured) -> None:
    """memgit's own output (stdout and stderr of every capture) never echoes a secret."""
    printed = b"".join(done.stdout + done.stderr for done in captured.outputs)
    for kind, _, value in SECRET_FIXTURES:
        for fragment in fragments(kind, value):
            assert fragment.encode() not in printed, kind


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("thread", "multi\nline {}", id="thread-with-a-newline"),
        pytest.param("content", ["{}"], id="content-as-a-list"),
        pytest.param("name", "tool\t{}", id="tool-name-with-a-tab"),
        pytest.param("timestamp", "{}", id="secret-as-timestamp"),
        pytest.param("seq", "{}", id="secret-as-seq"),
        pytest.param("role", "{}", id="secret-as-role"),
    ],
)
def test_a_refused_turn_does_not_echo_its_secret(field: str, value: Any, repo_path: Path) -> None:
    """A turn refused for its shape (exit 3) does not print the secret it contained."""
    _, _, secret = next(f for f in SECRET_FIXTURES if f[0] == "github-token")
    filled = json.loads(json.dumps(value).replace("{}", secret))
    message: dict[str, Any] = {"role": "tool", "content": "ok"}
    turn = make_turn(messages=[message])
    if field in ("thread", "timestamp", "seq"):
        turn[field] = filled
    else:
        message[field] = filled
    before = snapshot(repo_path)
    done = memgit_cli("capture", "--json", cwd=repo_path, input=json.dumps(turn).encode())
    assert done.returncode == 3
    assert snapshot(repo_path) == before
    for fragment in (secret, secret[4:16], secret[-12:]):
        assert fragment.encode() not in done.stderr + done.stdout


def test_redaction_never_writes_an_unreadable_capture(repo_path: Path) -> None:
    """A turn near the limits either is refused, or is stored in a file memgit reads back."""
    thread = ("password=abcd " * 18)[:256].strip()
    turn = make_turn(thread=thread)
    before = snapshot(repo_path)
    done = memgit_cli("capture", "--json", cwd=repo_path, input=json.dumps(turn).encode())
    if done.returncode != 0:
        assert done.returncode == 3 and snapshot(repo_path) == before
        return
    path = json.loads(done.stdout)["path"]
    stored = read_capture((repo_path / path).read_bytes(), path=path)
    assert stored.redactions == {"password-assignment": 18}


def _first(kind: str) -> str:
    return next(value for fixture_kind, _, value in SECRET_FIXTURES if fixture_kind == kind)


def test_a_value_found_in_one_message_is_redacted_everywhere_in_the_turn(repo_path: Path) -> None:
    """The user types a password; the assistant repeats it, a tool prints it, and the thread
    id carries it: none of them has ``password=`` before it, all of them lose it."""
    typed = "correct" + "horse" + "42"
    messages = [
        {"role": "user", "content": "my db pass" + f"word={typed}, remember it"},
        {"role": "assistant", "content": f"Noted: {typed}."},
        {"role": "tool", "name": "bash", "content": f"$ echo {typed}\n{typed}", "complete": True},
    ]
    turn = make_turn(messages=messages, thread=f"thread {typed}")
    done = memgit_cli("capture", "--json", cwd=repo_path, input=json.dumps(turn).encode())
    assert done.returncode == 0, done.stderr.decode()
    path = json.loads(done.stdout)["path"]
    stored = read_capture(git(repo_path, "show", f"HEAD:{path}").encode(), path=path).to_dict()
    assert stored["redactions"] == {"password-assignment": 5}
    assert stored["messages"][1]["content"] == "Noted: [REDACTED:password-assignment]."
    assert (
        typed.encode()
        not in everything_git_keeps(repo_path)["git cat-file --batch-all-objects --batch"]
    )


@pytest.mark.parametrize("field", ["source", "session"])
@pytest.mark.parametrize("kind", ["github-token", "anthropic-api-key", "huggingface-token"])
def test_a_secret_as_source_or_session_is_refused_without_echo(
    field: str, kind: str, repo_path: Path
) -> None:
    """A source or session is a folder name, where a secret cannot be redacted: the turn is
    refused (exit 3, nothing written) and the error names the field, never the value."""
    secret = _first(kind)
    turn = make_turn()
    turn[field] = secret
    before = snapshot(repo_path)
    done = memgit_cli("capture", "--json", cwd=repo_path, input=json.dumps(turn).encode())
    assert done.returncode == 3
    assert snapshot(repo_path) == before
    printed = (done.stdout + done.stderr).decode()
    assert printed.startswith("{") and f"error[secret-in-name]: <stdin>: {field}: " in printed
    for fragment in (secret, secret[4:16], secret[-12:]):
        assert fragment not in printed
