"""The Python API covers every command, and docs/api.md says so truthfully."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memgit import MemoryRepo
from memgit.cli.main import COMMANDS
from memgit.errors import UsageError

from support import git, make_turn, memgit_cli, snapshot

API_DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"

# Each command (and subcommand) and the MemoryRepo methods that do its work.
COMMAND_METHODS = {
    "init": ("init",),
    "capture": ("capture", "capture_many"),
    "process": ("process", "gate_prompt"),
    "verify": ("verify",),
    # A tour of the CLI that creates its own repository (docs/decisions/0014).
    "demo": (),
    "recall": ("recall",),
    "map": ("map",),
    "index status": ("index_status",),
    "index rebuild": ("rebuild_index",),
    "sync": ("sync",),
    "review list": ("review_list",),
    "review show": ("review_show",),
    "review approve": ("review_approve",),
    "review reject": ("review_reject",),
    "review push": ("review_push",),
    "log": ("log",),
    "show": ("show",),
    "blame": ("blame",),
    "diff": ("diff",),
    "forget": ("forget", "purge"),
    "remember": ("remember",),
    "replay": ("replay",),
    # An agent host's configuration, not the memory repository: memgit.hosts.install's
    # install() and uninstall() (docs/api.md#agent-hosts, docs/decisions/0014).
    "install": (),
    "uninstall": (),
    # The MCP server is a door in front of the API (memgit/mcp/), not a method of it.
    "mcp": (),
}


def _commands() -> set[str]:
    """Every leaf command of `memgit`, groups expanded (`index status`)."""
    import click

    from memgit.cli.main import cli

    found = set()
    context = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(context, name)
        if isinstance(command, click.Group):
            found.update(f"{name} {sub}" for sub in command.commands)
        else:
            found.add(name)
    return found


def _public_methods() -> set[str]:
    return {
        name
        for name, member in vars(MemoryRepo).items()
        if not name.startswith("_")
        and (inspect.isfunction(member) or isinstance(member, classmethod))
    }


def test_every_command_has_its_api_method() -> None:
    """`verify` was a command with no MemoryRepo method: a program had to reach into
    memgit.governance for it. A command with no method says why in COMMAND_METHODS."""
    assert _commands() <= set(COMMAND_METHODS), sorted(_commands() - set(COMMAND_METHODS))
    missing = {
        command: method
        for command, methods in COMMAND_METHODS.items()
        for method in methods
        if not callable(getattr(MemoryRepo, method, None))
    }
    assert not missing


def test_every_public_method_is_documented() -> None:
    """docs/api.md has a `### ` heading naming each public method."""
    headings = re.findall(r"^### (.+)$", API_DOC.read_text("utf-8"), re.MULTILINE)
    named = {name for heading in headings for name in re.findall(r"\.(\w+)\(", heading)}
    assert _public_methods() - named == set()


def test_the_documented_example_runs(tmp_path: Path) -> None:
    """The one ```python block of docs/api.md runs in an empty folder and exits 0."""
    blocks = re.findall(r"^```python\n(.*?)^```$", API_DOC.read_text("utf-8"), re.S | re.M)
    assert len(blocks) == 1
    script = tmp_path / "example.py"
    script.write_text(blocks[0], "utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "error[unknown-memory]: ID: no memory 'not-a-memory'" in done.stdout
    assert re.search(r"verified \d+ commits", done.stdout)
    assert git(tmp_path / "agent-memory", "status", "--porcelain") == ""


def test_verify_through_the_api(repo_path: Path) -> None:
    """MemoryRepo.verify checks what `memgit verify` checks, from a path (bare
    repositories have no memory repository to open)."""
    with MemoryRepo.open(repo_path) as repo:
        repo.capture(make_turn(content="Remember that I prefer pytest."))
        repo.process(backend="rules")
    result = MemoryRepo.verify(repo_path, all_history=True)
    listed = git(repo_path, "rev-list", "--reverse", "HEAD").split()
    assert result.ok and list(result.commits) == listed
    assert (result.counts.created, result.counts.captured) == (1, 1)
    by_ids = MemoryRepo.verify(repo_path, commit_ids=listed[-1:])
    assert by_ids.commits == (listed[-1],)
    bare = repo_path.parent / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo_path), str(bare)], check=True)
    assert MemoryRepo.verify(bare, "HEAD").commits == tuple(listed)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        pytest.param(("HEAD",), {"commit_ids": ["HEAD"]}, id="range-and-ids"),
        pytest.param((), {"all_history": True, "ref_updates": ""}, id="all-and-updates"),
    ],
)
def test_verify_refuses_two_selections(
    repo_path: Path, args: tuple[str, ...], kwargs: dict[str, object]
) -> None:
    """The CLI once checked --commits-from and silently ignored a range given with it."""
    with pytest.raises(UsageError) as caught:
        MemoryRepo.verify(repo_path, *args, **kwargs)  # type: ignore[arg-type]
    assert caught.value.render().startswith("error[usage]: verify checks one selection")


def test_cli_verify_refuses_a_range_with_a_commit_list(repo_path: Path) -> None:
    before = snapshot(repo_path)
    head = git(repo_path, "rev-parse", "HEAD")
    done = memgit_cli("verify", "HEAD", "--commits-from", "-", cwd=repo_path, input=head.encode())
    assert done.returncode == 2
    assert done.stderr.decode().splitlines()[0] == (
        "error[usage]: verify checks one selection of commits, not a range and commit ids"
    )
    assert snapshot(repo_path) == before
