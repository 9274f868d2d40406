"""The ``memgit`` command end to end, as a user runs it in a terminal or a script.

Every command runs in a subprocess (``support.memgit_cli``) and every result is
checked with the git CLI, not with memgit's own code: after each successful
write ``git status --porcelain`` is empty and ``git fsck --strict`` is clean.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memgit import __version__
from memgit.cli.main import COMMANDS
from memgit.demo import bundled_conversation

from support import git, make_turn, memgit_cli, memgit_in_process, snapshot

COMMANDS_DOC = Path(__file__).parents[1] / "docs" / "commands.md"
DEMO_SECRETS = ("AKIAIOSFODNN7EXAMPLE", "hunter2-staging")


def ok(done: subprocess.CompletedProcess[bytes]) -> str:
    """stdout of a command that must succeed quietly on stderr."""
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    return done.stdout.decode("utf-8")


def assert_clean(path: Path) -> None:
    """What every successful write leaves behind: nothing to commit, a sound repository."""
    assert git(path, "status", "--porcelain") == ""
    git(path, "fsck", "--strict")


def commit_count(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD"))


def turn_bytes(seq: int = 0, content: str = "hello", **fields: object) -> bytes:
    return json.dumps(make_turn(seq, content, **fields)).encode("utf-8")


def jsonl(*turns: bytes) -> bytes:
    return b"".join(turn + b"\n" for turn in turns)


# --- version, help and docs -------------------------------------------------------


def test_version() -> None:
    """`memgit --version` prints the package version."""
    assert ok(memgit_cli("--version")).strip() == f"memgit, version {__version__}"


def test_version_imports_neither_pygit2_nor_jsonschema() -> None:
    """`--version` stays fast: -X importtime shows no pygit2 (nor jsonschema) import."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memgit.cli.main", "--version"],
        capture_output=True,
        check=True,
    )
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "memgit.cli.main" in imported or "memgit" in imported
    roots = {name.split(".")[0] for name in imported}
    assert not roots & {"pygit2", "jsonschema"}, sorted(roots)


def test_group_help_lists_every_command() -> None:
    """`memgit --help` lists each command and the exit statuses."""
    out = ok(memgit_cli("--help"))
    assert out.startswith("Usage: memgit ")
    listed = re.findall(r"^  (\S+)", out.split("Commands:", 1)[1], re.MULTILINE)
    assert sorted(listed) == sorted(COMMANDS)
    assert "70 internal error" in out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_help(name: str) -> None:
    """`memgit COMMAND --help` (and -h, the same text) works for every command, without a
    repository; -h runs the command line in process, --help the real program."""
    out = ok(memgit_cli(name, "--help"))
    assert out.startswith(f"Usage: memgit {name} ")
    assert "--json" in out
    assert ok(memgit_in_process(name, "-h")) == out


def test_every_command_is_documented() -> None:
    """docs/commands.md has a `## memgit NAME` section for each command, and no others."""
    documented = re.findall(r"^## memgit (\S+)$", COMMANDS_DOC.read_text("utf-8"), re.MULTILINE)
    assert sorted(documented) == sorted(COMMANDS)


# --- usage errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("capture", "--bogus", "--json"), id="unknown-option"),
        pytest.param(("bogus", "--json"), id="unknown-command"),
        pytest.param(("capture", "--json", "--file"), id="option-without-value"),
    ],
)
def test_usage_errors_use_the_error_line(args: tuple[str, ...], tmp_path: Path) -> None:
    """Wrong arguments exit 2 with an `error[usage]:` line like every other failure."""
    done = memgit_cli(*args, cwd=tmp_path, input=b"")
    assert done.returncode == 2
    assert done.stderr.decode().startswith("error[usage]: ")
    assert json.loads(done.stdout)["error"]["code"] == "usage"


def test_init_on_a_file_is_not_a_folder(tmp_path: Path) -> None:
    """`memgit init PATH` naming a file: not-a-folder (exit 2), and the file is untouched."""
    target = tmp_path / "notes.txt"
    target.write_text("mine\n", "utf-8")
    done = memgit_cli("init", str(target), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.decode().startswith(f"error[not-a-folder]: {target}")
    assert target.read_text("utf-8") == "mine\n"


def test_capture_file_that_is_a_folder_is_unreadable(repo_path: Path, tmp_path: Path) -> None:
    """`--file` naming a folder: unreadable (exit 2)."""
    done = memgit_cli("capture", "--file", str(tmp_path), cwd=repo_path)
    assert done.returncode == 2
    assert done.stderr.decode().startswith(f"error[unreadable]: {tmp_path}")


def test_capture_file_that_does_not_exist_is_unreadable(repo_path: Path, tmp_path: Path) -> None:
    """`--file` naming a missing file: unreadable (exit 2), JSON error on stdout."""
    missing = tmp_path / "nope.jsonl"
    done = memgit_cli("capture", "--file", str(missing), "--json", cwd=repo_path)
    assert done.returncode == 2
    assert done.stderr.decode().startswith(f"error[unreadable]: {missing}: ")
    assert json.loads(done.stdout)["error"]["code"] == "unreadable"


def test_capture_from_a_terminal_explains_itself(repo_path: Path) -> None:
    """Run with a terminal on stdin (nothing piped), capture says how to use it (exit 2)."""
    controller, terminal = os.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memgit.cli.main", "capture"],
            cwd=repo_path,
            stdin=terminal,
            capture_output=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(controller)
        os.close(terminal)
    assert done.returncode == 2
    assert done.stderr.decode().startswith("error[usage]: memgit capture reads a turn")


# --- init -------------------------------------------------------------------------


def test_init_creates_a_memory_repository(tmp_path: Path) -> None:
    """`memgit init PATH` makes a repository on main with one trailer-tagged commit."""
    target = tmp_path / "memory"
    out = ok(memgit_cli("init", str(target)))
    assert f"Created Git repository {target}" in out
    assert "wrote memgit.yaml" in out and "wrote .pre-commit-config.yaml" in out
    assert "wrote .gitattributes" in out
    head = git(target, "rev-parse", "HEAD").strip()
    assert f"Committed {head[:12]}" in out
    assert git(target, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert (
        git(target, "log", "--format=%(trailers:key=Memgit-Init,valueonly)").strip() == "format 1"
    )
    assert git(target, "ls-files").split() == [
        ".gitattributes",
        ".pre-commit-config.yaml",
        "memgit.yaml",
    ]
    assert git(target, "config", "core.logAllRefUpdates").strip() == "always"
    assert_clean(target)


def test_init_again_changes_nothing(repo_path: Path) -> None:
    """A second `memgit init` says the files already exist and makes no commit; once this
    clone's hooks are installed, it changes nothing at all."""
    before = snapshot(repo_path)
    out = ok(memgit_cli("init", cwd=repo_path))
    assert "memgit.yaml already exists" in out
    assert "pre-commit installed at .git/hooks/pre-commit" in out
    assert "Already a memory repository; nothing to commit." in out
    assert snapshot(repo_path) == before
    config = (repo_path / ".git" / "config").read_bytes()
    hook = (repo_path / ".git" / "hooks" / "pre-commit").read_bytes()
    out = ok(memgit_cli("init", cwd=repo_path))
    assert "Already a memory repository; nothing to do." in out
    result = json.loads(ok(memgit_cli("init", "--json", cwd=repo_path)))
    assert result == {
        "path": str(repo_path.resolve()),
        "new_repository": False,
        "commit": None,
        "created": [],
        "existing": ["memgit.yaml", ".pre-commit-config.yaml", ".gitattributes"],
        "remotes_configured": [],
        "merge_driver_configured": False,
        "hooks_installed": True,
        "hooks_written": [],
        "clone": None,  # no remote: nothing to join
    }
    assert snapshot(repo_path) == before
    assert (repo_path / ".git" / "config").read_bytes() == config
    assert (repo_path / ".git" / "hooks" / "pre-commit").read_bytes() == hook


def test_init_adopts_a_repository_with_history(tmp_path: Path) -> None:
    """Adopting an existing repository adds one commit on top and keeps its files."""
    repo = tmp_path / "project"
    git(tmp_path, "init", "-q", "project")
    (repo / "README.md").write_text("# project\n", "utf-8")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "first")
    first = git(repo, "rev-parse", "HEAD").strip()
    result = json.loads(ok(memgit_cli("init", "--json", cwd=repo)))
    assert result["new_repository"] is False
    assert result["created"] == ["memgit.yaml", ".pre-commit-config.yaml", ".gitattributes"]
    assert git(repo, "rev-parse", "HEAD~1").strip() == first
    assert result["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert (repo / "README.md").read_text("utf-8") == "# project\n"
    assert_clean(repo)


def test_init_refuses_an_uncommitted_memgit_yaml(tmp_path: Path) -> None:
    """An uncommitted memgit.yaml of the person's own is never overwritten: local-edits."""
    repo = tmp_path / "project"
    git(tmp_path, "init", "-q", "project")
    (repo / "memgit.yaml").write_text("# mine\n", "utf-8")
    done = memgit_cli("init", cwd=repo)
    assert done.returncode == 4
    assert done.stderr.decode().startswith(f"error[local-edits]: {repo / 'memgit.yaml'}: ")
    assert (repo / "memgit.yaml").read_text("utf-8") == "# mine\n"
    assert git(repo, "rev-parse", "-q", "--verify", "HEAD", check=False) == ""


def test_dash_c_runs_elsewhere(tmp_path: Path) -> None:
    """`-C PATH` works like git's: init and capture run there, not in the current folder."""
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    ok(memgit_cli("-C", str(tmp_path), "init", "memory", cwd=elsewhere))
    repo = tmp_path / "memory"
    ok(memgit_cli("-C", str(repo), "capture", cwd=elsewhere, input=turn_bytes()))
    assert commit_count(repo) == 2
    assert list(elsewhere.iterdir()) == []
    assert_clean(repo)


def test_repository_is_found_from_a_subfolder(repo_path: Path) -> None:
    """Run from deep inside the working tree, capture writes at the repository's top."""
    sub = repo_path / "notes" / "deep"
    sub.mkdir(parents=True)
    result = json.loads(ok(memgit_cli("capture", "--json", cwd=sub, input=turn_bytes())))
    assert (repo_path / result["path"]).is_file()
    assert not (sub / "inbox").exists()
    sub.rmdir()
    (repo_path / "notes").rmdir()
    assert_clean(repo_path)


# --- capture ----------------------------------------------------------------------


def test_capture_one_turn(repo_path: Path) -> None:
    """One turn on stdin: a commit whose trailer names source/session/seq, a clean tree."""
    out = ok(memgit_cli("capture", cwd=repo_path, input=turn_bytes(seq=7)))
    head = git(repo_path, "rev-parse", "HEAD").strip()
    path = git(repo_path, "show", "--name-only", "--format=", "HEAD").strip()
    assert out == f"Captured {path} in {head[:12]}\n"
    assert re.fullmatch(r"inbox/test-agent/[0-9a-f]{2}/s1/000007\.yaml", path)
    assert git(repo_path, "log", "-1", "--format=%(trailers)").strip() == (
        "Memgit-Captured: test-agent/s1/7"
    )
    assert git(repo_path, "log", "-1", "--format=%s").strip() == "capture: test-agent/s1 turn 7"
    assert_clean(repo_path)


def test_capture_json_output(repo_path: Path) -> None:
    """--json prints path, seq, commit, redactions and duplicate, matching what git shows."""
    secret = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
    result = json.loads(
        ok(memgit_cli("capture", "--json", cwd=repo_path, input=turn_bytes(content=f"t {secret}")))
    )
    assert set(result) == {"path", "seq", "commit", "redactions", "duplicate"}
    assert result["seq"] == json.loads(turn_bytes())["seq"]
    assert result["commit"] == git(repo_path, "rev-parse", "HEAD").strip()
    assert result["redactions"] == {"github-token": 1}
    assert result["duplicate"] is False
    assert git(repo_path, "show", "--name-only", "--format=", "HEAD").strip() == result["path"]
    assert secret not in git(repo_path, "show", f"HEAD:{result['path']}")
    assert_clean(repo_path)


def test_capture_human_output_reports_redactions(repo_path: Path) -> None:
    """Without --json the user is told how many secrets were removed, never which."""
    secret = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
    out = ok(memgit_cli("capture", cwd=repo_path, input=turn_bytes(content=f"t {secret}")))
    assert "redacted 1 secret (github-token: 1)" in out
    assert secret not in out


def test_capture_duplicate_is_a_no_op(repo_path: Path) -> None:
    """The same turn again: exit 0, duplicate true, commit null, no new commit."""
    ok(memgit_cli("capture", cwd=repo_path, input=turn_bytes()))
    before = snapshot(repo_path)
    out = ok(memgit_cli("capture", cwd=repo_path, input=turn_bytes()))
    assert out.startswith("Already captured: inbox/test-agent/")
    assert "(nothing changed)" in out
    result = json.loads(ok(memgit_cli("capture", "--json", cwd=repo_path, input=turn_bytes())))
    assert result["duplicate"] is True and result["commit"] is None
    assert snapshot(repo_path) == before


def test_capture_conflict_is_refused(repo_path: Path) -> None:
    """Same source/session/seq, other content: capture-conflict (exit 4), nothing written."""
    first = json.loads(ok(memgit_cli("capture", "--json", cwd=repo_path, input=turn_bytes())))
    before = snapshot(repo_path)
    done = memgit_cli("capture", cwd=repo_path, input=turn_bytes(content="something else"))
    assert done.returncode == 4
    lines = done.stderr.decode().splitlines()
    assert lines[0].startswith(f"error[capture-conflict]: <stdin>: {first['path']}: ")
    assert lines[1].startswith("hint: ")
    assert done.stdout == b""
    assert snapshot(repo_path) == before


def test_capture_file_is_one_commit(repo_path: Path, tmp_path: Path) -> None:
    """--file with several turns: one commit, one Memgit-Captured trailer per turn."""
    turns = tmp_path / "turns.jsonl"
    turns.write_bytes(jsonl(turn_bytes(0), turn_bytes(1), turn_bytes(0, session="s2")))
    out = ok(memgit_cli("capture", "--file", str(turns), cwd=repo_path))
    head = git(repo_path, "rev-parse", "HEAD").strip()
    assert out == f"Captured 3 turns in {head[:12]}\n"
    assert commit_count(repo_path) == 2
    trailers = git(repo_path, "log", "-1", "--format=%(trailers:key=Memgit-Captured,valueonly)")
    assert trailers.split() == ["test-agent/s1/0", "test-agent/s1/1", "test-agent/s2/0"]
    assert len(git(repo_path, "show", "--name-only", "--format=", "HEAD").split()) == 3
    assert_clean(repo_path)


def test_capture_file_json_output_and_duplicates(repo_path: Path, tmp_path: Path) -> None:
    """--file --json lists each turn with the commit that wrote it; turns captured
    before are duplicates (no commit), not re-written."""
    ok(memgit_cli("capture", cwd=repo_path, input=turn_bytes(0)))
    turns = tmp_path / "turns.jsonl"
    turns.write_bytes(jsonl(turn_bytes(0), turn_bytes(1)))
    result = json.loads(ok(memgit_cli("capture", "--file", str(turns), "--json", cwd=repo_path)))
    assert result["commit"] == git(repo_path, "rev-parse", "HEAD").strip()
    assert [c["duplicate"] for c in result["captures"]] == [True, False]
    assert list(result["captures"][0]) == ["path", "seq", "commit", "redactions", "duplicate"]
    assert [c["commit"] for c in result["captures"]] == [None, result["commit"]]
    trailers = git(repo_path, "log", "-1", "--format=%(trailers:key=Memgit-Captured,valueonly)")
    assert trailers.split() == ["test-agent/s1/1"]
    before = snapshot(repo_path)
    out = ok(memgit_cli("capture", "--file", str(turns), cwd=repo_path))
    assert out == "Already captured: 2 turns (nothing changed)\n"
    assert snapshot(repo_path) == before
    assert_clean(repo_path)


def test_capture_file_from_stdin(repo_path: Path) -> None:
    """`--file -` reads JSON Lines from stdin."""
    data = jsonl(turn_bytes(0), turn_bytes(1))
    result = json.loads(
        ok(memgit_cli("capture", "--file", "-", "--json", cwd=repo_path, input=data))
    )
    assert len(result["captures"]) == 2
    assert commit_count(repo_path) == 2
    assert_clean(repo_path)


def test_capture_file_conflict_names_the_line(repo_path: Path, tmp_path: Path) -> None:
    """A --file line that conflicts with the repository is named as FILE:LINE."""
    ok(memgit_cli("capture", cwd=repo_path, input=turn_bytes(0)))
    turns = tmp_path / "turns.jsonl"
    turns.write_bytes(jsonl(turn_bytes(1), turn_bytes(2), turn_bytes(0, "changed")))
    before = snapshot(repo_path)
    done = memgit_cli("capture", "--file", str(turns), cwd=repo_path)
    assert done.returncode == 4
    assert snapshot(repo_path) == before
    assert done.stderr.decode().startswith(f"error[capture-conflict]: {turns}:3: ")


# --- demo -------------------------------------------------------------------------


def all_git_data(path: Path) -> bytes:
    """Every byte Git keeps: full history with patches, and every object's content."""
    log = subprocess.run(
        ["git", "-C", str(path), "log", "--all", "-p", "--format=raw"],
        capture_output=True,
        check=True,
    ).stdout
    objects = subprocess.run(
        ["git", "-C", str(path), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    return log + objects


def demo_history(path: Path) -> list[list[str]]:
    """The Memgit-* trailers of each commit, oldest first."""
    log = git(path, "log", "--reverse", "--format=%x00%(trailers:only,unfold)")
    return [
        [line for line in entry.splitlines() if line.startswith("Memgit-")]
        for entry in log.split("\x00")[1:]
    ]


def assert_demo_history(path: Path) -> None:
    """An init commit, then one commit per bundled turn, in order; any later commit (the
    offline processing run) is memgit's own too."""
    history = demo_history(path)
    turns = len(bundled_conversation())
    assert history[0] == ["Memgit-Init: format 1"]
    assert history[1 : 1 + turns] == [
        [f"Memgit-Captured: demo-agent/onboarding/{seq}"] for seq in range(turns)
    ]
    assert all(trailers for trailers in history), "a demo commit without Memgit-* trailers"
    assert_clean(path)


def test_demo(tmp_path: Path) -> None:
    """`memgit demo --path DIR`: one commit per bundled turn, redaction shown, no secret kept."""
    target = tmp_path / "demo"
    out = ok(memgit_cli("demo", "--path", str(target)))
    assert f"memgit demo repository: {target}" in out
    assert "redacted 2 secrets (aws-access-key-id: 1, url-password: 1)" in out
    assert "[REDACTED:aws-access-key-id]" in out
    assert_demo_history(target)
    stored = all_git_data(target)
    assert b"[REDACTED:url-password]" in stored
    for secret in DEMO_SECRETS:
        assert secret.encode() not in stored
        assert secret not in out


def test_demo_in_a_temporary_folder_as_json(tmp_path: Path) -> None:
    """Without --path the demo makes its own temporary folder; --json names it."""
    result = json.loads(ok(memgit_cli("demo", "--json", env={"TMPDIR": str(tmp_path)})))
    path = Path(result["path"])
    assert path.parent == tmp_path and path.name.startswith("memgit-demo-")
    turns = len(bundled_conversation())
    assert len(result["captures"]) == turns
    captures = git(path, "rev-list", "--reverse", f"HEAD~{len(demo_history(path)) - 1}..HEAD")
    assert [c["commit"] for c in result["captures"]] == captures.split()[:turns]
    assert_demo_history(path)
    stored = all_git_data(path)
    assert not any(secret.encode() in stored for secret in DEMO_SECRETS)


def test_an_unexpected_error_exits_70_and_leaves_its_traceback_in_the_log(
    repo_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Anything but a MemgitError is one line on stderr and exit status 70; the
    traceback goes to .git/memgit/last-error.log of the repository -C names."""
    import click

    from memgit.cli.errors import run_with_error_handler

    @click.command()
    @click.option("-C", "directory")
    def broken(directory: str) -> None:
        raise RuntimeError("a bug")

    assert run_with_error_handler(broken, ["-C", str(repo_path)]) == 70
    log = repo_path / ".git" / "memgit" / "last-error.log"
    assert capsys.readouterr().err == (f"error[internal]: RuntimeError: a bug; details in {log}\n")
    text = log.read_text("utf-8")
    assert text.startswith(f"memgit -C {repo_path}\n\nTraceback")
    assert text.rstrip().endswith("RuntimeError: a bug")
