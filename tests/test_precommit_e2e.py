"""People's commits, checked by the real pre-commit framework.

A consumer repository is a memory repository made with ``memgit init`` (memories
written by memgit itself), with one of two pre-commit configurations:

- ``system``: the ``repo: local`` / ``language: system`` config ``memgit init`` writes,
  installed with ``memgit init --install-hooks``; the ``memgit-check-*`` commands come
  from ``PATH`` (this virtualenv's bin folder);
- ``python``: ``repo: <memgit's repository>`` at a ``rev``, ``language: python`` as
  published in ``.pre-commit-hooks.yaml``; pre-commit pip-installs memgit into an
  environment of its own, and ``PATH`` holds no memgit at all.

For the second, memgit's repository is a snapshot of this checkout's package files
(committed work and uncommitted edits alike) in a temporary Git repository, so the
hooks tested are the code under test. pre-commit builds its environment once per
session in a shared ``PRE_COMMIT_HOME``, and each configuration's consumer repository is
built once per session too: every test commits in a fresh copy of it.

Then a person commits with ``git commit``: a valid hand-written memory passes; a
memory whose quote was edited, a file holding an AWS key and broken front matter are
refused by the hook that owns the problem, naming the file, and the refused change
stays staged and in the work tree with HEAD where it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from governance_corpus import repos

from memgit import MemoryRepo

from secret_fixtures import SECRET_FIXTURES
from support import git, memgit_cli

ROOT = Path(__file__).parents[1]
CORPUS = Path(__file__).parent / "governance_corpus"
VENV_BIN = Path(sys.executable).parent
HOOKS = ("memgit-schemas", "memgit-evidence", "memgit-secrets", "memgit-supersession")
NAMES = {
    "memgit-schemas": "memgit schemas",
    "memgit-evidence": "memgit evidence",
    "memgit-secrets": "memgit secrets",
    "memgit-supersession": "memgit supersession",
}
# What pip needs to install memgit, and pre-commit to find its hooks.
PACKAGE_FILES = (
    "memgit",
    "schemas",
    "hooks",
    "pyproject.toml",
    "README.md",
    ".pre-commit-hooks.yaml",
)
AWS_KEY = next(value for kind, _, value in SECRET_FIXTURES if kind == "aws-access-key-id")


def path_without_memgit() -> str:
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(f for f in folders if f and not (Path(f) / "memgit").exists())


# --- memgit's repository, as pre-commit sees it ------------------------------------


@dataclass(frozen=True)
class HookRepo:
    url: str
    rev: str


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> HookRepo:
    """A Git repository holding this checkout's package files, committed."""
    root = tmp_path_factory.mktemp("memgit-hook-repo")
    listed = subprocess.run(
        [
            "git",
            "-C",
            str(ROOT),
            "ls-files",
            "-z",
            "-co",
            "--exclude-standard",
            "--",
            *PACKAGE_FILES,
        ],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    snapshot = root / "memgit"
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, snapshot / name)
    with repos.fixed_identity(root / "home"):
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "memgit snapshot"]):
            subprocess.run(["git", "-C", str(snapshot), *args], check=True, capture_output=True)
        rev = git(snapshot, "rev-parse", "HEAD").strip()
    return HookRepo(url=str(snapshot), rev=rev)


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pre-commit's cache, shared by the session: it builds the hook environment once."""
    return tmp_path_factory.mktemp("pre-commit-home")


def python_config(hook_repo: HookRepo) -> str:
    hooks = "".join(f"      - id: {hook}\n" for hook in HOOKS)
    return f"repos:\n  - repo: {hook_repo.url}\n    rev: {hook_repo.rev}\n    hooks:\n{hooks}"


# --- the consumer repository -----------------------------------------------------------


@dataclass(frozen=True)
class Consumer:
    path: Path
    config: str
    lint_path: str  # a memory memgit wrote

    def commit(self, message: str, *extra: str, env: dict[str, str] | None = None) -> Commit:
        before = head(self.path)
        done = subprocess.run(
            ["git", "-C", str(self.path), "commit", "-m", message, *extra],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
            env={**os.environ, **(env or {})},
        )
        return Commit(done.returncode, done.stdout + done.stderr, before, head(self.path))


@dataclass(frozen=True)
class Commit:
    status: int
    output: str
    before: str
    after: str

    def hook_result(self, hook: str) -> str:
        """ "Passed", "Failed" or "Skipped", from pre-commit's line for the hook."""
        for line in self.output.splitlines():
            if line.startswith(NAMES[hook] + "."):
                return line.rsplit(".", 1)[1].split(")")[-1].strip()
        raise AssertionError(f"no line for {hook} in:\n{self.output}")


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="session")
def consumer_templates() -> dict[str, Consumer]:
    """One consumer repository per configuration, built on first use: each test works on
    a copy of it, which saves building the same repository (about 2 s) per test."""
    return {}


@pytest.fixture(params=["system", "python"])
def consumer(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    pre_commit_home: Path,
    consumer_templates: dict[str, Consumer],
) -> Consumer:
    monkeypatch.setenv("PRE_COMMIT_HOME", str(pre_commit_home))
    monkeypatch.setenv("PRE_COMMIT_COLOR", "never")
    if request.param == "system":
        monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{path_without_memgit()}")
    else:
        monkeypatch.setenv("PATH", path_without_memgit())
    template = consumer_templates.get(request.param)
    if template is None:
        built = tmp_path_factory.mktemp(f"consumer-{request.param}") / "memory"
        template = make_consumer(built, request.param, request)
        consumer_templates[request.param] = template
    path = shutil.copytree(template.path, tmp_path / "memory", symlinks=True)
    assert git(path, "status", "--porcelain") == ""
    return Consumer(path=path, config=template.config, lint_path=template.lint_path)


def make_consumer(path: Path, config: str, request: pytest.FixtureRequest) -> Consumer:
    if config == "system":
        done = memgit_cli("init", "--install-hooks", str(path))
        assert done.returncode == 0, done.stderr.decode()
        assert b"pre-commit installed" in done.stdout
    else:
        hook_repo = request.getfixturevalue("hook_repo")
        MemoryRepo.init(path)
        (path / ".pre-commit-config.yaml").write_text(python_config(hook_repo), "utf-8")
        git(path, "commit", "-q", "-am", "use memgit's published hooks")
        done = subprocess.run(
            [sys.executable, "-m", "pre_commit", "install"], cwd=path, capture_output=True
        )
        assert done.returncode == 0, done.stderr.decode()
    assert (path / ".git" / "hooks" / "pre-commit").exists()
    # Memories written by memgit itself (pygit2 runs no Git hooks).
    memrepo = MemoryRepo.open(path)
    memrepo.capture_many(repos.TURNS)
    result = memrepo.process(backend="rules")
    lint = next(d.path for d in result.runs[0].decisions if d.candidate_id == "c2")
    pg16 = next(d.memory_id for d in result.runs[0].decisions if d.candidate_id == "c1")
    memrepo.capture(repos.UPGRADE_TURN)
    memrepo.process(gate_output=json.dumps(repos.supersede_answer(pg16)))
    assert git(path, "status", "--porcelain") == ""
    return Consumer(path=path, config=config, lint_path=lint)


def assert_refused(consumer: Consumer, done: Commit, hook: str, line: str, staged: str) -> None:
    """The hook failed naming the problem; nothing was committed; the change is kept."""
    assert done.status != 0, done.output
    assert done.after == done.before
    assert done.hook_result(hook) == "Failed", done.output
    assert f"- hook id: {hook}" in done.output
    assert line in done.output, done.output
    assert staged in git(consumer.path, "diff", "--cached", "--name-only").split()
    assert (consumer.path / staged).exists()


# --- a person's commits -------------------------------------------------------------------


def test_a_valid_hand_written_memory_is_committed(consumer: Consumer) -> None:
    text = (CORPUS / "valid" / "human-memory.md").read_text("utf-8").partition("\n")[2]
    at = "memories/user/ta/tabs4ever001.md"
    (consumer.path / at).parent.mkdir(parents=True)
    (consumer.path / at).write_text(text, "utf-8")
    git(consumer.path, "add", at)
    done = consumer.commit("a memory of my own")
    assert done.status == 0, done.output
    assert done.after != done.before
    for hook in HOOKS:
        assert done.hook_result(hook) == "Passed", done.output
    assert git(consumer.path, "status", "--porcelain") == ""
    assert git(consumer.path, "show", "--name-only", "--format=", "HEAD").split() == [at]


def test_an_edited_quote_is_refused_by_memgit_evidence(consumer: Consumer) -> None:
    memory = consumer.path / consumer.lint_path
    edited = memory.read_text("utf-8").replace("before every commit.\n", "before every push.\n")
    assert edited != memory.read_text("utf-8")
    memory.write_text(edited, "utf-8")
    git(consumer.path, "add", consumer.lint_path)
    done = consumer.commit("push, not commit")
    assert_refused(
        consumer,
        done,
        "memgit-evidence",
        f"error[quote-not-found]: {consumer.lint_path}: sources[0].quote: ",
        consumer.lint_path,
    )
    assert memory.read_text("utf-8") == edited
    assert done.hook_result("memgit-schemas") == "Passed"


def test_an_aws_key_is_refused_by_memgit_secrets(consumer: Consumer) -> None:
    notes = consumer.path / "notes.md"
    notes.write_text(f"# Deploy\n\naws_access_key_id = {AWS_KEY}\n", "utf-8")
    git(consumer.path, "add", "notes.md")
    done = consumer.commit("deploy notes")
    assert_refused(
        consumer,
        done,
        "memgit-secrets",
        "error[secret-detected]: notes.md: line 3: a secret (aws-access-key-id) is in the file",
        "notes.md",
    )
    assert AWS_KEY not in done.output


def test_broken_front_matter_is_refused_by_memgit_schemas(consumer: Consumer) -> None:
    memory = consumer.path / consumer.lint_path
    broken = memory.read_text("utf-8").replace("title: Run", "title: [Run", 1)
    memory.write_text(broken, "utf-8")
    git(consumer.path, "add", consumer.lint_path)
    done = consumer.commit("retitle")
    assert_refused(
        consumer,
        done,
        "memgit-schemas",
        f"error[invalid-yaml]: {consumer.lint_path}: ",
        consumer.lint_path,
    )
    assert memory.read_text("utf-8") == broken


def test_memgits_own_files_pass_pre_commit_run_all_files(consumer: Consumer) -> None:
    """No false alarm on what memgit wrote: every hook passes over every file."""
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files"],
        cwd=consumer.path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for hook in HOOKS:
        assert f"{NAMES[hook]}." in done.stdout


def test_a_skipped_hook_is_caught_by_verify(consumer: Consumer) -> None:
    """SKIP= (or --no-verify) lets the commit through; memgit verify names it."""
    if consumer.config == "python":
        pytest.skip("skipping works the same whatever the hooks' language")
    notes = consumer.path / "notes.md"
    notes.write_text(f"aws_access_key_id = {AWS_KEY}\n", "utf-8")
    git(consumer.path, "add", "notes.md")
    done = consumer.commit("in a hurry", env={"SKIP": "memgit-secrets"})
    assert done.status == 0, done.output
    assert done.hook_result("memgit-secrets") == "Skipped"
    verified = memgit_cli("verify", "HEAD~1..HEAD", cwd=consumer.path)
    assert verified.returncode == 1
    assert verified.stderr.decode().startswith(
        f"error[secret-detected]: {done.after[:12]}: notes.md: line 1: "
    )


def test_commit_all_is_checked_as_committed(consumer: Consumer) -> None:
    """``git commit -a`` stages into a temporary index (GIT_INDEX_FILE): the hooks check that."""
    memory = consumer.path / consumer.lint_path
    edited = memory.read_text("utf-8").replace("before every commit.\n", "before every push.\n")
    memory.write_text(edited, "utf-8")
    done = consumer.commit("push, not commit", "-a")
    assert done.status != 0, done.output
    assert done.after == done.before
    assert done.hook_result("memgit-evidence") == "Failed", done.output
    assert f"error[quote-not-found]: {consumer.lint_path}: sources[0].quote: " in done.output
    assert memory.read_text("utf-8") == edited


# A capture that SIGKILLs itself once it has moved the branch, before the index is synced.
KILLED_AFTER_PUBLISHING = r"""
import json, os, signal, sys
import memgit.store.worktree as worktree
from memgit import MemoryRepo

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

worktree.IndexLock.checkout = die
MemoryRepo.open(sys.argv[1]).capture(json.loads(sys.argv[2]))
"""


def test_a_commit_after_a_killed_memgit_write_is_refused_until_it_is_finished(
    consumer: Consumer,
) -> None:
    """A memgit write killed after moving the branch leaves its capture out of the index:
    a person's next commit would delete it, with every check passing. It also leaves
    git's index.lock, which it held, so git refuses to stage; a person who removes the
    lock by hand, as git says to, is refused by the hooks until a memgit command has
    finished the write."""
    turn = {**repos.TURNS[0], "seq": 900}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_PUBLISHING, str(consumer.path), json.dumps(turn)],
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert killed.returncode < 0, killed.stderr.decode()
    captured = git(consumer.path, "show", "--name-only", "--format=", "HEAD").split()
    assert git(consumer.path, "status", "--porcelain").split() == ["D", *captured]
    (consumer.path / "notes.md").write_text("# Notes\n", "utf-8")
    lock = consumer.path / ".git" / "index.lock"
    adding = ["git", "-C", str(consumer.path), "add", "notes.md"]
    refused = subprocess.run(adding, capture_output=True, check=False)
    assert refused.returncode != 0 and lock.exists()
    lock.unlink()
    git(consumer.path, "add", "notes.md")

    done = consumer.commit("my notes")
    assert done.status != 0, done.output
    assert done.after == done.before
    assert "error[unfinished-publish]: index: memgit was stopped while publishing" in done.output

    mapped = memgit_cli("-C", str(consumer.path), "map")
    assert mapped.returncode == 0, mapped.stderr.decode()
    assert git(consumer.path, "status", "--porcelain") == "A  notes.md\n"
    done = consumer.commit("my notes")
    assert done.status == 0, done.output
    assert git(consumer.path, "show", "--name-only", "--format=", "HEAD").split() == ["notes.md"]


# --- the hooks write nothing under .git/memgit -----------------------------------------

# Every hook `memgit init` installs (the same ids .pre-commit-hooks.yaml publishes), by
# the name pre-commit prints for it, and the stage that runs it.
ALL_HOOKS = {
    "memgit schemas": "pre-commit",
    "memgit evidence": "pre-commit",
    "memgit secrets": "pre-commit",
    "memgit supersession": "pre-commit",
    "memgit secrets (commit message)": "commit-msg",
    "memgit record removals": "commit-msg",
    "memgit record retired refs": "post-commit",
    "memgit record merged refs": "post-merge",
}


def tree_of(folder: Path) -> dict[str, str | None]:
    """Every file and folder under ``folder``, with its bytes' digest (None for a folder)."""
    return {
        str(item.relative_to(folder)): None
        if item.is_dir()
        else hashlib.sha256(item.read_bytes()).hexdigest()
        for item in sorted(folder.rglob("*"))
    }


def set_writable(folder: Path, writable: bool) -> None:
    for item in [folder, *folder.rglob("*")]:
        if item.is_dir():
            item.chmod(0o755 if writable else 0o555)
        else:
            item.chmod(0o644 if writable else 0o444)


def passed(output: str, name: str) -> bool:
    return any(
        line.startswith(name + ".") and line.rstrip().endswith("Passed")
        for line in output.splitlines()
    )


@pytest.mark.parametrize("consumer", ["system"], indirect=True)
def test_no_hook_writes_under_git_memgit(consumer: Consumer, tmp_path: Path) -> None:
    """Checks read; they never write (not even a cache: memgit.yaml's settings were once
    kept in .git/memgit/settings.json by every hook that read a changed memgit.yaml). With
    .git/memgit read-only, each published hook runs on a person's commits, a removal, a
    merge and a push to a remote whose pre-receive hook runs `memgit verify`, and passes;
    the folder holds the same bytes after (a check as root, whom chmod does not stop)."""
    path = consumer.path
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    shutil.copy2(ROOT / "hooks" / "pre-receive", remote / "hooks" / "pre-receive")
    git(path, "remote", "add", "origin", str(remote))
    git(path, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(path, "branch", "side")
    folders = [path / ".git" / "memgit", remote / "memgit"]
    folders[1].mkdir(exist_ok=True)
    before = [tree_of(folder) for folder in folders]
    assert before[0], "memgit's own writes made .git/memgit"
    ran = ""
    for folder in folders:
        set_writable(folder, False)
    try:
        config = path / "memgit.yaml"
        config.write_text(
            config.read_text("utf-8").replace("retention_days: 30", "retention_days: 31")
        )
        text = (CORPUS / "valid" / "human-memory.md").read_text("utf-8").partition("\n")[2]
        at = "memories/user/ta/tabs4ever001.md"
        (path / at).parent.mkdir(parents=True)
        (path / at).write_text(text, "utf-8")
        git(path, "add", "memgit.yaml", at)
        done = consumer.commit("a memory of my own, a longer inbox")
        assert done.status == 0, done.output
        ran += done.output
        git(path, "rm", "-q", consumer.lint_path)
        done = consumer.commit("no longer true")
        assert done.status == 0, done.output
        ran += done.output
        assert "Memgit-Retracted:" in git(path, "log", "-1", "--format=%B")
        git(path, "checkout", "-q", "side")
        merged = subprocess.run(
            ["git", "-C", str(path), "merge", "--ff-only", "main"],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert merged.returncode == 0, merged.stdout + merged.stderr
        ran += merged.stdout + merged.stderr
        pushed = subprocess.run(
            ["git", "-C", str(path), "push", "origin", "side:refs/heads/main"],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    finally:
        for folder in folders:
            set_writable(folder, True)
    for name in ALL_HOOKS:
        assert passed(ran, name), f"{name} did not pass:\n{ran}"
    assert git(remote, "rev-parse", "main") == git(path, "rev-parse", "HEAD")
    assert [tree_of(folder) for folder in folders] == before
