"""``memgit verify`` and ``hooks/pre-receive``: the doors nobody can skip from a client.

Every test runs ``memgit verify``'s command line (or a real ``git push``) on a memory
repository memgit built (governance_corpus/repos.py), after people made commits
by hand, some of them with ``git commit --no-verify`` as a person skipping the
pre-commit hooks would. Most run it in this process, with the program's own parser
and error boundary (``verify_cli``); the real program runs where what is checked is
the process: stdin, ``--json`` on stdout, a bare repository, endless input, the hook.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
import yaml
from governance_corpus import repos

from memgit import MemoryRepo

from support import bounded_cli, git, make_turn, memgit_cli, memgit_in_process

templates = repos.templates  # the session fixture: memory repositories memgit built

ROOT = Path(__file__).parents[1]
CORPUS = Path(__file__).parent / "governance_corpus"
PRE_RECEIVE = ROOT / "hooks" / "pre-receive"
VENV_BIN = Path(sys.executable).parent


# --- people's commits -------------------------------------------------------------


def write_case(path: Path, folder: str, name: str, values: dict[str, str]) -> str:
    """Write a governance corpus file where its header says, as a person would; stage it."""
    header, _, body = (CORPUS / folder / name).read_text("utf-8").partition("\n")
    at = repos.fill(re.search(r"\bat=(\S+)", header).group(1), values)  # type: ignore[union-attr]
    (path / at).parent.mkdir(parents=True, exist_ok=True)
    (path / at).write_text(repos.fill(body, values), "utf-8")
    removed = re.search(r"\brm=(\S+)", header)
    if removed:
        git(path, "rm", "-q", repos.fill(removed.group(1), values))
    git(path, "add", "--", at)
    return at


def commit(path: Path, message: str, *, no_verify: bool = True) -> str:
    git(path, "commit", "-q", *(["--no-verify"] if no_verify else []), "-m", message)
    return head(path)


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD").strip()


def human_memory(path: Path, memory_id: str, title: str) -> str:
    """A valid memory a person wrote (origin: human), staged."""
    text = (CORPUS / "valid" / "human-memory.md").read_text("utf-8").partition("\n")[2]
    text = text.replace("tabs4ever001", memory_id).replace("Indents Makefiles with tabs", title)
    at = f"memories/user/{memory_id[:2]}/{memory_id}.md"
    (path / at).parent.mkdir(parents=True, exist_ok=True)
    (path / at).write_text(text, "utf-8")
    git(path, "add", "--", at)
    return at


@pytest.fixture
def history(templates: repos.Templates, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A memory repository memgit built (captures, a rules run, a supersession)."""
    return templates.copy("processed", tmp_path / "memory"), templates.values["processed"]


def verify_cli(path: Path, *args: str) -> tuple[int, str, str]:
    done = memgit_in_process("verify", *args, cwd=path)
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert "Traceback" not in stderr, stderr
    return done.returncode, stdout, stderr


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error[")]


# --- ranges -------------------------------------------------------------------------


def test_one_bad_commit_in_a_range_is_named_and_fails(
    history: tuple[Path, dict[str, str]],
) -> None:
    """Three commits by hand, the middle one made with --no-verify and a forged quote:
    verify names that commit (its first 12 hex digits) in every line and exits 1."""
    path, values = history
    base = head(path)
    human_memory(path, "ruffrules001", "Ruff's rules are in pyproject.toml")
    first = commit(path, "a memory by hand", no_verify=False)
    at = write_case(path, "invalid", "quote-edited.md", values)
    bad = commit(path, "reword the lint memory")
    human_memory(path, "releasethu01", "Releases are cut on Thursdays")
    last = commit(path, "another memory by hand", no_verify=False)

    status, stdout, stderr = verify_cli(path, f"{base}..HEAD")
    assert status == 1
    lines = error_lines(stderr)
    assert lines
    assert all(line.split(": ")[1] == bad[:12] for line in lines), lines
    assert f"error[quote-not-found]: {bad[:12]}: {at}: sources[0].quote: " in stderr
    assert f"error[unexplained-memory]: {bad[:12]}: {at}: origin: " in stderr
    assert first[:12] not in stderr and last[:12] not in stderr
    assert stdout == "Checked 3 commits: 2 problems.\n"


def test_a_clean_range_passes(history: tuple[Path, dict[str, str]]) -> None:
    path, values = history
    base = head(path)
    write_case(path, "valid", "human-supersedes-memory.md", values)
    commit(path, "replace the lint memory by hand")
    write_case(path, "valid", "human-memory-quoting-a-capture.md", values)
    commit(path, "a memory quoting a capture")
    status, stdout, stderr = verify_cli(path, f"{base}..HEAD")
    assert (status, stdout, stderr) == (0, "Checked 2 commits: clean.\n", "")
    status, stdout, _ = verify_cli(path, f"{base}..")  # an empty end means HEAD, as in git
    assert (status, stdout) == (0, "Checked 2 commits: clean.\n")


def test_memgits_own_history_is_clean(history: tuple[Path, dict[str, str]]) -> None:
    """Everything memgit writes passes its own checks: init, captures, a rules run, host
    runs that SUPERSEDE, UPDATE and RETRACT, and the inbox cleanup of old captures; with
    --all and with a single revision (its whole history)."""
    path, values = history
    memrepo = MemoryRepo.open(path)
    for seq, text, candidate in (
        (
            3,
            "The linter is ruff with --select ALL.",
            {
                "action": "UPDATE",
                "target": values["id:lint"],
                "type": "procedure",
                "scope": "user",
                "title": "Run ruff before every commit",
                "body": "Run ruff --select ALL before every commit.",
            },
        ),
        (
            4,
            "Forget the Postgres 17 note, staging is being rebuilt.",
            {"action": "RETRACT", "target": values["id:pg17"]},
        ),
    ):
        memrepo.capture(make_turn(seq, text, source=repos.SOURCE, session=repos.SESSION))
        unit = f"{repos.SOURCE}/{repos.SESSION}/{seq}#0"
        answer = {
            "candidates": [{"candidate_id": "c1", **candidate}],
            "coverage": [{"unit_id": unit, "decision": "CANDIDATE", "candidate_ids": ["c1"]}],
            "evidence_bindings": [
                {
                    "candidate_id": "c1",
                    "claims": [{"unit_id": unit, "quote": text, "role": "assertion"}],
                }
            ],
        }
        memrepo.process(gate_output=json.dumps(answer))
    with pytest.MonkeyPatch.context() as later:  # past inbox.retention_days: cleanup
        later.setenv("GIT_COMMITTER_DATE", "@1800000000 +0000")
        memrepo.capture(make_turn(5, "Remember that the VPN is required for staging."))
        assert memrepo.process(backend="rules").cleanup_commit is not None
    subjects = git(path, "log", "--format=%s").splitlines()
    assert {"process: 1 updated [host]", "process: 1 retracted [host]"} <= set(subjects)
    assert any(subject.startswith("inbox: remove") for subject in subjects)

    count = int(git(path, "rev-list", "--count", "HEAD"))
    for args in (["--all"], ["HEAD"], ["main"]):
        status, stdout, stderr = verify_cli(path, *args)
        assert (status, stderr) == (0, ""), args
        assert stdout == f"Checked {count} commits: clean.\n"


def test_sources_are_checked_after_their_captures_left_the_inbox(
    history: tuple[Path, dict[str, str]],
) -> None:
    """Sources pin captures by blob id: after the inbox cleanup removed the capture files,
    a person's correct edit still passes and a forged quote is still caught."""
    path, values = history
    memrepo = MemoryRepo.open(path)
    with pytest.MonkeyPatch.context() as later:
        later.setenv("GIT_COMMITTER_DATE", "@1800000000 +0000")
        memrepo.capture(make_turn(5, "Remember that the VPN is required for staging."))
        memrepo.process(backend="rules")
    assert not (path / values["capture:1"]).exists()
    base = head(path)
    write_case(path, "valid", "human-edit-of-memgit-memory.md", values)
    good = commit(path, "reword the lint memory as a person")
    write_case(path, "invalid", "quote-ambiguous.md", values)
    bad = commit(path, "an ambiguous quote")
    status, _, stderr = verify_cli(path, f"{base}..HEAD")
    assert status == 1
    assert [line.split(": ")[1] for line in error_lines(stderr)] == [bad[:12]]
    assert good[:12] not in stderr
    assert "error[quote-ambiguous]" in stderr


def test_all_finds_a_bad_commit_anywhere_in_history(history: tuple[Path, dict[str, str]]) -> None:
    path, values = history
    write_case(path, "invalid", "secret-in-notes.txt", values)
    bad = commit(path, "deploy notes")
    human_memory(path, "releasethu01", "Releases are cut on Thursdays")
    commit(path, "a memory by hand")
    status, stdout, stderr = verify_cli(path, "--all")
    assert status == 1
    assert error_lines(stderr) == [
        f"error[secret-detected]: {bad[:12]}: notes/deploy.txt: line 3: "
        "a secret (github-token) is in the file"
    ]
    assert values["secret:github-token"] not in stderr + stdout
    count = int(git(path, "rev-list", "--count", "HEAD"))
    assert stdout == f"Checked {count} commits: 1 problem.\n"


def test_json_output(history: tuple[Path, dict[str, str]]) -> None:
    """--json prints {"ok", "commits", "problems", "contradictions", "decided_apart"}:
    commits oldest first, each problem with its full commit id, hook, code, message,
    path, field and hint."""
    path, values = history
    base = head(path)
    human_memory(path, "ruffrules001", "Ruff's rules are in pyproject.toml")
    first = commit(path, "a memory by hand")
    at = write_case(path, "invalid", "supersedes-unknown-commit.md", values)
    bad = commit(path, "supersede by hand")

    done = memgit_cli("verify", "--json", f"{base}..HEAD", cwd=path)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert set(result) == {"ok", "commits", "problems", "contradictions", "decided_apart"}
    assert result["ok"] is False
    assert result["contradictions"] == [] and result["decided_apart"] == []
    assert result["commits"] == [first, bad]
    assert result["problems"] == [
        {
            "commit": bad,
            "hook": "memgit-supersession",
            "code": "supersedes-unknown-commit",
            "message": "commit 89abcdef0123 is not in the repository",
            "path": at,
            "field": "supersedes[0].commit",
            "hint": None,
        }
    ]

    clean = memgit_cli("verify", "--json", f"{base}..{first}", cwd=path)
    assert clean.returncode == 0
    assert json.loads(clean.stdout) == {
        "ok": True,
        "commits": [first],
        "problems": [],
        "contradictions": [],
        "decided_apart": [],
    }


def test_commits_from_a_file_or_stdin(history: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """--commits-from takes `git rev-list` output: a file, or - for stdin."""
    path, values = history
    base = head(path)
    write_case(path, "invalid", "duplicate-id.md", values)
    bad = commit(path, "copy a memory to another scope")
    listed = git(path, "rev-list", "--reverse", f"{base}..HEAD")
    ids = tmp_path / "commits.txt"
    ids.write_text(listed, "utf-8")
    done = memgit_cli("verify", "--commits-from", str(ids), cwd=path)
    assert done.returncode == 1
    assert f"error[duplicate-id]: {bad[:12]}: " in done.stderr.decode()
    done = memgit_cli("verify", "--commits-from", "-", cwd=path, input=listed.encode())
    assert done.returncode == 1
    assert f"error[duplicate-id]: {bad[:12]}: " in done.stderr.decode()
    done = memgit_cli("verify", "--commits-from", "-", cwd=path, input=b"")
    assert (done.returncode, done.stdout) == (0, b"Checked 0 commits: clean.\n")


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        pytest.param(["no-such-branch..HEAD"], "no-such-branch", id="range-start"),
        pytest.param(["HEAD..no-such-branch"], "no-such-branch", id="range-end"),
        pytest.param(["0123456789abcdef"], "0123456789abcdef", id="unknown-commit-id"),
        pytest.param(["HEAD:memgit.yaml"], "HEAD:memgit.yaml", id="a-blob-not-a-commit"),
    ],
)
def test_invalid_revision(
    args: list[str], shown: str, history: tuple[Path, dict[str, str]]
) -> None:
    path, _ = history
    status, stdout, stderr = verify_cli(path, *args)
    assert status == 2
    assert stdout == ""
    assert stderr.startswith(f'error[invalid-revision]: REV_RANGE: unknown revision "{shown}"')
    assert "hint: " in stderr


def test_three_dot_range_is_understood_as_git_does(history: tuple[Path, dict[str, str]]) -> None:
    path, _ = history
    base = head(path)
    human_memory(path, "ruffrules001", "Ruff's rules are in pyproject.toml")
    commit(path, "a memory by hand")
    status, stdout, stderr = verify_cli(path, f"{base}...HEAD")
    assert (status, stdout, stderr) == (0, "Checked 1 commit: clean.\n", "")


def test_invalid_revision_in_commits_from(history: tuple[Path, dict[str, str]]) -> None:
    path, _ = history
    done = memgit_cli("verify", "--commits-from", "-", cwd=path, input=b"not-a-commit\n")
    assert done.returncode == 2
    assert done.stderr.decode().startswith("error[invalid-revision]: ")


@pytest.mark.parametrize("option", ["--commits-from", "--ref-updates"])
def test_an_endless_list_is_refused_at_the_limit(
    history: tuple[Path, dict[str, str]], option: str
) -> None:
    path, _ = history
    done = bounded_cli(path, "verify", option, "/dev/zero")
    assert done.returncode == 3, done.stderr.decode()
    assert done.stderr.decode().startswith(f"error[too-large]: {option}: ")


@pytest.mark.parametrize("option", ["--commits-from", "--ref-updates"])
def test_a_list_that_is_not_utf8_is_refused(
    history: tuple[Path, dict[str, str]], option: str, tmp_path: Path
) -> None:
    path, _ = history
    listed = tmp_path / "list"
    listed.write_bytes(b"caf\xe9\n")
    done = memgit_cli("verify", option, str(listed), cwd=path)
    assert done.returncode == 3, done.stderr.decode()
    assert done.stderr.decode().startswith(f"error[invalid-utf8]: {option}: ")


def test_a_long_unknown_revision_is_named_briefly(history: tuple[Path, dict[str, str]]) -> None:
    """The error quotes the first 200 characters of a line that names no commit."""
    path, _ = history
    done = memgit_cli("verify", "--commits-from", "-", cwd=path, input=b"\x1b[2J" * 100_000)
    assert done.returncode == 2
    (line, *_) = done.stderr.decode().splitlines()
    assert line.startswith('error[invalid-revision]: REV_RANGE: unknown revision "\\x1b[2J')
    assert len(line) < 1000 and "\x1b" not in line


# --- the default range: the branch against its upstream -------------------------------


def test_default_range_is_the_branch_against_its_upstream(
    history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """In a clone, `memgit verify` alone checks what the branch has that origin/main has
    not, as a pull request would show it."""
    path, values = history
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(path), str(clone))
    status, stdout, stderr = verify_cli(clone)
    assert (status, stdout, stderr) == (0, "Checked 0 commits: clean.\n", "")

    human_memory(clone, "ruffrules001", "Ruff's rules are in pyproject.toml")
    commit(clone, "a memory by hand")
    status, stdout, _ = verify_cli(clone)
    assert (status, stdout) == (0, "Checked 1 commit: clean.\n")

    at = write_case(clone, "invalid", "source-is-assistant-text.md", values)
    bad = commit(clone, "a memory quoting the assistant")
    status, stdout, stderr = verify_cli(clone)
    assert status == 1
    assert error_lines(stderr) == [
        f"error[source-not-evidence]: {bad[:12]}: {at}: sources[0].unit: "
        "unit test-agent/s1/0#1 is assistant text, which cannot support a memory"
    ]
    assert stdout == "Checked 2 commits: 1 problem.\n"


def test_default_range_without_an_upstream_is_a_usage_error(
    history: tuple[Path, dict[str, str]],
) -> None:
    path, _ = history
    status, stdout, stderr = verify_cli(path)
    assert status == 2
    assert stdout == ""
    lines = stderr.splitlines()
    assert lines[0] == "error[usage]: the current branch has no upstream to verify against"
    assert lines[1].startswith("hint: ")
    assert "origin/main..HEAD" in lines[1] and "--all" in lines[1]


def test_detached_head_has_no_upstream_either(history: tuple[Path, dict[str, str]]) -> None:
    path, _ = history
    git(path, "checkout", "-q", "--detach", "HEAD")
    status, _, stderr = verify_cli(path)
    assert status == 2 and stderr.startswith("error[usage]: ")
    status, _, _ = verify_cli(path, "--all")
    assert status == 0


def test_the_first_commit_of_a_repository_is_checked_whole(tmp_path: Path) -> None:
    """A repository whose root commit was made by hand: every file of it is new."""
    git(tmp_path, "init", "-q", "adopted")
    path = tmp_path / "adopted"
    config = (CORPUS / "valid" / "memgit-yaml-new-scope.yaml").read_text("utf-8")
    (path / "memgit.yaml").write_text(config.partition("\n")[2], "utf-8")
    at = write_case(path, "invalid", "source-capture-missing.md", {})
    git(path, "add", "-A")
    root = commit(path, "start a memory repository by hand")
    status, stdout, stderr = verify_cli(path, "--all")
    assert status == 1
    assert error_lines(stderr) == [
        f"error[source-capture-missing]: {root[:12]}: {at}: sources[0].blob: "
        "no capture with blob id 0123456789ab in the repository"
    ]
    assert stdout == "Checked 1 commit: 1 problem.\n"


# --- merges ----------------------------------------------------------------------------


def branch_with_a_run(path: Path, branch: str, seq: int, text: str) -> None:
    """On a new branch: capture a turn and let memgit process it (rules backend)."""
    git(path, "switch", "-q", "-c", branch, "main")
    memrepo = MemoryRepo.open(path)
    memrepo.capture(make_turn(seq, text, source=repos.SOURCE, session=repos.SESSION))
    result = memrepo.process(backend="rules")
    assert [d.action for run in result.runs for d in run.decisions] == ["CREATE"]


def test_a_merge_of_two_clean_branches_is_clean(
    history: tuple[Path, dict[str, str]],
) -> None:
    """Two agents' branches, each with a memgit run, merged with --no-ff: the memories and
    run records the merge brings in from the second branch are not unexplained."""
    path, _ = history
    base = head(path)
    branch_with_a_run(path, "alice", 3, "Remember that the release branch is cut on Thursdays.")
    branch_with_a_run(path, "bob", 4, "Remember that the staging database is called billing.")
    git(path, "switch", "-q", "alice")
    git(path, "merge", "-q", "--no-ff", "--no-verify", "-m", "merge bob", "bob")
    merge = head(path)
    assert len(pygit2.Repository(str(path))[merge].parents) == 2

    status, stdout, stderr = verify_cli(path, f"{base}..HEAD")
    assert (status, stderr) == (0, "")
    assert stdout == "Checked 5 commits: clean.\n"  # 2 per branch (capture, run) + the merge
    status, _, stderr = verify_cli(path, "--all")
    assert (status, stderr) == (0, "")
    status, stdout, _ = verify_cli(path, f"{merge}~1..{merge}")  # the merge and bob's commits
    assert (status, stdout) == (0, "Checked 3 commits: clean.\n")


def test_a_change_made_inside_a_merge_commit_is_caught(
    history: tuple[Path, dict[str, str]],
) -> None:
    """An "evil merge": a forged memory added while committing the merge is reported
    against the merge commit."""
    path, values = history
    base = head(path)
    branch_with_a_run(path, "alice", 3, "Remember that the release branch is cut on Thursdays.")
    branch_with_a_run(path, "bob", 4, "Remember that the staging database is called billing.")
    git(path, "switch", "-q", "alice")
    git(path, "merge", "-q", "--no-ff", "--no-commit", "bob")
    at = write_case(path, "invalid", "unexplained-memory.md", values)
    merge = commit(path, "merge bob")
    status, _, stderr = verify_cli(path, f"{base}..HEAD")
    assert status == 1
    assert error_lines(stderr) == [
        f"error[unexplained-memory]: {merge[:12]}: {at}: origin: written by memgit "
        "(origin: memgit) but no run record in this commit made this change"
    ]


# --- bare repositories and hooks/pre-receive -----------------------------------------


def test_verify_works_in_a_bare_repository(
    history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, values = history
    write_case(path, "invalid", "supersedes-active.md", values)
    bad = commit(path, "supersede without removing")
    bare = tmp_path / "shared.git"
    git(tmp_path, "clone", "-q", "--bare", str(path), str(bare))
    done = memgit_cli("-C", str(bare), "verify", "HEAD~1..HEAD")
    assert done.returncode == 1
    assert f"error[supersedes-active]: {bad[:12]}: " in done.stderr.decode()
    done = memgit_cli("-C", str(bare), "verify", "HEAD~1")
    assert done.returncode == 0


def install_pre_receive(bare: Path) -> None:
    """What docs/ci.md says: copy the hook and make it executable."""
    target = bare / "hooks" / "pre-receive"
    shutil.copyfile(PRE_RECEIVE, target)
    target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def path_without_memgit() -> str:
    """PATH with no folder that holds a `memgit` command."""
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(f for f in folders if f and not (Path(f) / "memgit").exists())


@pytest.fixture(params=["memgit-on-path", "MEMGIT-variable"])
def server(
    request: pytest.FixtureRequest,
    history: tuple[Path, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Path, Path, dict[str, str]]:
    """A shared bare repository with hooks/pre-receive, and a person's clone of it."""
    path, values = history
    bare = tmp_path / "shared.git"
    git(tmp_path, "clone", "-q", "--bare", str(path), str(bare))
    for ref in git(path, "for-each-ref", "--format=%(refname)", "refs/memgit/").split():
        git(path, "push", "-q", str(bare), f"{ref}:{ref}")
    install_pre_receive(bare)
    if request.param == "memgit-on-path":
        monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{path_without_memgit()}")
        monkeypatch.delenv("MEMGIT", raising=False)
    else:
        monkeypatch.setenv("PATH", path_without_memgit())
        monkeypatch.setenv("MEMGIT", str(VENV_BIN / "memgit"))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    return bare, clone, values


def push(clone: Path, *refspecs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(clone), "push", "origin", *(refspecs or ("main",))],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def refs(bare: Path) -> str:
    return git(bare, "for-each-ref", "--format=%(refname) %(objectname)")


def test_pre_receive_refuses_a_forged_memory_and_says_why(
    server: tuple[Path, Path, dict[str, str]],
) -> None:
    bare, clone, values = server
    before = refs(bare)
    at = write_case(clone, "invalid", "quote-edited.md", values)
    bad = commit(clone, "reword the lint memory")
    done = push(clone)
    assert done.returncode != 0
    output = done.stderr
    assert f"remote: error[quote-not-found]: {bad[:12]}: {at}: sources[0].quote: " in output
    assert f"remote: error[unexplained-memory]: {bad[:12]}: {at}: origin: " in output
    assert "remote: memgit: refusing the push" in output
    assert "pre-receive hook declined" in output
    assert refs(bare) == before
    assert not git(bare, "cat-file", "-t", bad, check=False).strip()  # quarantined, dropped


def test_pre_receive_accepts_a_clean_push(server: tuple[Path, Path, dict[str, str]]) -> None:
    bare, clone, values = server
    write_case(clone, "valid", "human-supersedes-memory.md", values)
    commit(clone, "replace the lint memory by hand")
    human_memory(clone, "releasethu01", "Releases are cut on Thursdays")
    good = commit(clone, "a memory by hand")
    done = push(clone)
    assert done.returncode == 0, done.stderr
    assert "remote: Checked 2 commits: clean." in done.stderr
    assert git(bare, "rev-parse", "refs/heads/main").strip() == good


def test_pre_receive_checks_every_pushed_commit_not_just_the_tip(
    server: tuple[Path, Path, dict[str, str]],
) -> None:
    """A secret committed and removed again in the next commit is still in history."""
    bare, clone, values = server
    before = refs(bare)
    at = write_case(clone, "invalid", "secret-in-notes.txt", values)
    bad = commit(clone, "deploy notes")
    git(clone, "rm", "-q", at)
    commit(clone, "oops, remove the notes")
    done = push(clone, "main", "main:refs/heads/feature")
    assert done.returncode != 0
    assert f"remote: error[secret-detected]: {bad[:12]}: {at}: line 3: " in done.stderr
    assert values["secret:github-token"] not in done.stderr
    assert refs(bare) == before


def test_pre_receive_allows_deleting_a_branch(server: tuple[Path, Path, dict[str, str]]) -> None:
    bare, clone, _ = server
    git(clone, "push", "-q", "origin", "main:refs/heads/old")
    done = push(clone, ":refs/heads/old")
    assert done.returncode == 0, done.stderr
    assert "refs/heads/old" not in refs(bare)


def test_a_merge_cannot_bring_back_a_retired_memory(
    history: tuple[Path, dict[str, str]],
) -> None:
    """A branch made before pg16 was superseded edits it; merging that branch and keeping
    the edit makes pg16 active again. Each side was fine where it was made, so the merge
    is where verify must see it."""
    path, values = history
    base = head(path)
    git(path, "switch", "-q", "-c", "old", values["commit:retired"])
    text = (path / values["path:pg16"]).read_text("utf-8")
    edited = text.replace("origin: memgit", "origin: human\nauthor: Test Person")
    (path / values["path:pg16"]).write_text(edited, "utf-8")
    git(path, "add", values["path:pg16"])
    commit(path, "reword the Postgres memory by hand")
    git(path, "switch", "-q", "main")
    git(path, "merge", "-q", "--no-ff", "--no-commit", "old", check=False)
    git(path, "checkout", "old", "--", values["path:pg16"])  # keep the edit: undo the retirement
    git(path, "add", values["path:pg16"])
    merge = commit(path, "merge the old branch")
    status, _, stderr = verify_cli(path, f"{base}..HEAD")
    assert status == 1
    assert f"error[retired-id-active]: {merge[:12]}: {values['path:pg16']}: id: " in stderr


def test_pre_receive_refuses_deleting_or_moving_a_retired_ref(
    server: tuple[Path, Path, dict[str, str]],
) -> None:
    bare, clone, values = server
    before = refs(bare)
    name = f"refs/memgit/retired/{values['id:pg16']}"
    for refspec in (f":{name}", f"+HEAD:{name}"):
        done = push(clone, refspec)
        assert done.returncode != 0, refspec
        assert "remote: error[retired-ref-rewritten]: " in done.stderr
        assert f": {name}: a retired memory's ref is deleted or moved" in done.stderr
        assert refs(bare) == before


def test_pre_receive_refuses_rewinding_a_branch_to_revive_a_retired_memory(
    server: tuple[Path, Path, dict[str, str]],
) -> None:
    bare, clone, values = server
    before = refs(bare)
    done = push(clone, f"+{values['commit:retired']}:refs/heads/main")
    assert done.returncode != 0
    assert (
        f"remote: error[retired-id-active]: {values['commit:retired'][:12]}: "
        f"{values['path:pg16']}: id: refs/heads/main is pushed back" in done.stderr
    )
    assert refs(bare) == before
    git(clone, "push", "-q", "origin", f"{values['commit:retired']}:refs/heads/before-upgrade")


def test_retirement_travels_in_commits_when_its_ref_did_not(
    history: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain bare clone has no refs/memgit/*: the superseding commit's trailer still says
    pg16 was retired, so a push bringing it back is refused."""
    path, values = history
    bare = tmp_path / "plain.git"
    git(tmp_path, "clone", "-q", "--bare", str(path), str(bare))
    assert git(bare, "for-each-ref", "refs/memgit/") == ""
    install_pre_receive(bare)
    monkeypatch.setenv("MEMGIT", str(VENV_BIN / "memgit"))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    at = write_case(clone, "invalid", "retired-id-restored.md", values)
    bad = commit(clone, "bring back the Postgres 16 memory")
    done = push(clone)
    assert done.returncode != 0
    assert f"remote: error[retired-id-active]: {bad[:12]}: {at}: id: " in done.stderr


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("not a ref update\n", "error[invalid-ref-update]: --ref-updates: line 1: "),
        ("0" * 40 + " " + "1" * 39 + " refs/heads/main\n", "error[invalid-ref-update]: "),
        ("\n" + "0" * 40 + " " + "0" * 40 + " main\n", "line 2: "),
        ("x" * (17 * 1024 * 1024), "error[too-large]: --ref-updates: "),
    ],
    ids=["prose", "short-id", "not-a-ref", "oversized"],
)
def test_malformed_ref_updates_are_refused_and_change_nothing(
    history: tuple[Path, dict[str, str]], given: str, expected: str
) -> None:
    path, _ = history
    before = git(path, "for-each-ref")
    done = memgit_cli("-C", str(path), "verify", "--ref-updates", "-", input=given.encode())
    assert done.returncode == 3
    assert expected in done.stderr.decode() and b"Traceback" not in done.stderr
    assert git(path, "for-each-ref") == before


# --- docs/ci.md runs as written ---------------------------------------------------------


def ci_blocks() -> list[dict[str, object]]:
    text = (ROOT / "docs" / "ci.md").read_text("utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def test_ci_jobs_are_valid_and_run_memgit_verify_on_the_base_range() -> None:
    github, commented, gitlab = ci_blocks()
    steps = github["jobs"]["verify"]["steps"]  # type: ignore[index]
    assert steps[0]["with"]["fetch-depth"] == 0
    assert any("pip install" in step.get("run", "") for step in steps)
    last = steps[-1]
    assert last["run"] == 'memgit verify "origin/${BASE}..HEAD"'
    assert last["env"]["BASE"] == "${{ github.base_ref }}"
    job = gitlab["memgit-verify"]  # type: ignore[index]
    assert job["variables"]["GIT_DEPTH"] == 0
    assert job["variables"]["BASE"] == "$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"
    assert any("pip install" in line for line in job["script"])
    assert job["script"][-1] == 'memgit verify "origin/${BASE}..HEAD"'
    steps = commented["jobs"]["verify"]["steps"]  # type: ignore[index]
    assert commented["permissions"]["pull-requests"] == "write"  # type: ignore[index]
    assert steps[0]["with"]["fetch-depth"] == 0
    run = next(step for step in steps if step.get("id") == "verify")
    assert "--format markdown > summary.md" in run["run"]
    posted = next(step for step in steps if "gh pr comment" in step.get("run", ""))
    assert posted["if"] == "always()" and "--body-file summary.md" in posted["run"]
    assert steps[-1]["if"] == "steps.verify.outputs.status != '0'"


def test_the_ci_script_finds_a_skipped_hook_in_a_merge_request(
    history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The GitLab job's git and memgit lines, run in a fresh clone as a runner would, on a
    merge request whose second commit skipped the hooks."""
    path, values = history
    git(path, "switch", "-q", "-c", "feature")
    human_memory(path, "ruffrules001", "Ruff's rules are in pyproject.toml")
    commit(path, "a memory by hand")
    write_case(path, "invalid", "retired-id-restored.md", values)
    bad = commit(path, "bring back the Postgres 16 memory")
    git(path, "switch", "-q", "main")

    runner = tmp_path / "runner"
    git(tmp_path, "clone", "-q", "--no-checkout", str(path), str(runner))
    git(runner, "checkout", "-q", "--detach", "refs/remotes/origin/feature")
    env = {"BASE": "main"}
    script = [
        line
        for line in ci_blocks()[2]["memgit-verify"]["script"]  # type: ignore[index]
        if line.startswith("git fetch") or line.startswith("memgit verify")
    ]
    for line in script:
        command = line.replace("memgit verify", f"{sys.executable} -m memgit.cli.main verify")
        done = subprocess.run(
            ["sh", "-c", command],
            cwd=runner,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    assert done.returncode == 1
    assert f"error[retired-id-active]: {bad[:12]}: " in done.stderr
    assert done.stdout == "Checked 2 commits: 1 problem.\n"


def test_the_comment_job_writes_the_summary_and_keeps_the_status(
    history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The GitHub job's verify step, run by sh in a fresh clone as a runner would: it
    writes the Markdown summary naming the bad commit and hands on exit status 1."""
    path, values = history
    git(path, "switch", "-q", "-c", "feature")
    write_case(path, "invalid", "retired-id-restored.md", values)
    bad = commit(path, "bring back the Postgres 16 memory")
    git(path, "switch", "-q", "main")
    runner = tmp_path / "runner"
    git(tmp_path, "clone", "-q", "--no-checkout", str(path), str(runner))
    git(runner, "checkout", "-q", "--detach", "refs/remotes/origin/feature")
    steps = ci_blocks()[1]["jobs"]["verify"]["steps"]  # type: ignore[index]
    step = next(step for step in steps if step.get("id") == "verify")
    outputs = tmp_path / "github-output"
    done = subprocess.run(
        [
            "sh",
            "-e",
            "-c",
            step["run"].replace("memgit verify", f"{sys.executable} -m memgit.cli.main verify"),
        ],
        cwd=runner,
        env={**os.environ, "BASE": "main", "GITHUB_OUTPUT": str(outputs)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert outputs.read_text("utf-8") == "status=1\n"
    summary = (runner / "summary.md").read_text("utf-8")
    assert summary.startswith("## memgit verify: failed\n")
    assert f"| `{bad[:12]}` | `retired-id-active` |" in summary


def test_verify_finds_a_secret_in_a_commit_message(history: tuple[Path, dict[str, str]]) -> None:
    """pre-commit runs before git has the message; verify (CI, pre-receive) reads it."""
    path, values = history
    base = head(path)
    secret = values["secret:github-token"]
    human_memory(path, "releasethu01", "Releases are cut on Thursdays")
    bad = commit(path, f"a memory by hand\n\nthe bot token is {secret}\n")
    status, stdout, stderr = verify_cli(path, f"{base}..HEAD")
    assert status == 1
    assert error_lines(stderr) == [
        f"error[secret-detected]: {bad[:12]}: commit message: line 3: "
        "a secret (github-token) is in the commit message"
    ]
    assert secret not in stderr + stdout
