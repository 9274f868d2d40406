"""``memgit init`` makes a clone ready to share: refspecs, merge driver, attributes, hooks.

Everything is checked with the git CLI as a person runs it: a plain ``git push`` and
``git fetch`` against a bare repository (on disk, and served by a real ``git daemon``),
a ``git commit`` refused by the installed hook with no virtual environment on ``PATH``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from governance_corpus import repos
from remotes import bare_remote, git_daemon

from secret_fixtures import SECRET_FIXTURES
from support import git, memgit_cli, snapshot

VENV_BIN = Path(sys.executable).parent
MEMGIT = VENV_BIN / "memgit"
CORPUS = Path(__file__).parent / "governance_corpus"
AWS_KEY = next(value for kind, _, value in SECRET_FIXTURES if kind == "aws-access-key-id")
DEFAULT_FETCH = "+refs/heads/*:refs/remotes/origin/*"
ATTRIBUTES = (
    "memories/**/*.md merge=memgit\nruns/**/*.json merge=memgit\ninbox/**/*.yaml merge=memgit\n"
)


def ok(done: subprocess.CompletedProcess[bytes]) -> str:
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode("utf-8")


def config_values(path: Path, name: str) -> list[str]:
    return git(path, "config", "--get-all", name, check=False).splitlines()


def memgit_refs(path: Path) -> dict[str, str]:
    listed = git(path, "for-each-ref", "--format=%(refname) %(objectname)", "refs/memgit/")
    return dict(line.split(" ") for line in listed.splitlines())


def processed_repo(path: Path) -> Path:
    """A memory repository with memories, run refs and a retired memory's ref."""
    repos.build(path, "processed")
    refs = memgit_refs(path)
    assert any(name.startswith("refs/memgit/retired/") for name in refs), refs
    assert any(name.startswith("refs/memgit/runs/") for name in refs), refs
    return path


def path_without_memgit() -> str:
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(f for f in folders if f and not (Path(f) / "memgit").exists())


def without_venv(tmp_path: Path) -> dict[str, str]:
    """The environment of a shell where no virtual environment was activated."""
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    env["PATH"] = path_without_memgit()
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    env["PRE_COMMIT_COLOR"] = "never"
    return env


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300
    )


# --- refspecs --------------------------------------------------------------------------


def test_init_adds_memgit_refspecs_to_every_remote_once(tmp_path: Path) -> None:
    """Each remote fetches and pushes refs/memgit/*, and pushes the current branch (a push
    refspec replaces git's default push); init run again adds nothing."""
    work = tmp_path / "work"
    ok(memgit_cli("init", str(work)))
    git(work, "remote", "add", "origin", str(tmp_path / "a.git"))
    git(work, "remote", "add", "backup", str(tmp_path / "b.git"))
    out = ok(memgit_cli("init", cwd=work))
    assert "configured remote origin" in out and "configured remote backup" in out
    assert config_values(work, "remote.origin.fetch") == [
        DEFAULT_FETCH,
        "+refs/memgit/*:refs/memgit/*",
    ]
    assert config_values(work, "remote.origin.push") == ["HEAD", "refs/memgit/*:refs/memgit/*"]
    assert config_values(work, "remote.backup.push") == ["HEAD", "refs/memgit/*:refs/memgit/*"]
    config = (work / ".git" / "config").read_bytes()
    out = ok(memgit_cli("init", cwd=work))
    assert "configured remote" not in out
    assert (work / ".git" / "config").read_bytes() == config


def test_init_keeps_the_push_refspecs_a_person_set(tmp_path: Path) -> None:
    """A remote that already has push refspecs keeps them; memgit's is added after them,
    and no branch refspec is added (the person already said which branches go)."""
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "work")
    git(work, "remote", "add", "origin", str(tmp_path / "a.git"))
    git(work, "config", "remote.origin.push", "refs/heads/main:refs/heads/published")
    ok(memgit_cli("init", cwd=work))
    assert config_values(work, "remote.origin.push") == [
        "refs/heads/main:refs/heads/published",
        "refs/memgit/*:refs/memgit/*",
    ]


@pytest.mark.parametrize("served", ["path", "git-daemon"])
def test_plain_push_and_fetch_carry_memgit_refs(tmp_path: Path, served: str) -> None:
    """After `memgit init`, a plain `git push` sends the branch and refs/memgit/*, and a
    plain `git fetch` in another clone brings them; a retired ref only a clone has
    survives its fetch and reaches the remote with its next push."""
    base = tmp_path / "srv"
    base.mkdir()
    remote = bare_remote(base / "memory.git")
    work = processed_repo(tmp_path / "work")
    with git_daemon(base) as daemon:
        url = f"{daemon}/memory.git" if served == "git-daemon" else str(remote)
        git(work, "remote", "add", "origin", url)
        ok(memgit_cli("init", cwd=work))
        git(work, "push", "-q")
        assert memgit_refs(remote) == memgit_refs(work)
        assert git(remote, "rev-parse", "main") == git(work, "rev-parse", "main")

        git(tmp_path, "clone", "-q", url, "clone")
        clone = tmp_path / "clone"
        assert memgit_refs(clone) == {}
        head = git(clone, "rev-parse", "HEAD")
        out = ok(memgit_cli("init", cwd=clone))
        assert "Already a memory repository" in out
        assert git(clone, "rev-parse", "HEAD") == head
        git(clone, "fetch", "-q")
        assert memgit_refs(clone) == memgit_refs(remote)

        local_only = "refs/memgit/retired/localonly001"
        git(clone, "update-ref", local_only, head.strip())
        git(clone, "fetch", "-q")
        assert memgit_refs(clone)[local_only] == head.strip()
        git(clone, "push", "-q")
        assert memgit_refs(remote)[local_only] == head.strip()
        git(work, "fetch", "-q")
        assert memgit_refs(work) == memgit_refs(remote)


# --- the merge driver and .gitattributes -------------------------------------------------


def test_init_registers_the_merge_driver_and_commits_gitattributes(tmp_path: Path) -> None:
    """The driver runs memgit's interpreter by absolute path; .gitattributes routes
    memgit's files to it and is part of the first commit."""
    work = tmp_path / "work"
    ok(memgit_cli("init", str(work)))
    assert git(work, "show", "HEAD:.gitattributes") == ATTRIBUTES
    assert git(work, "config", "merge.memgit.driver").strip() == (
        f"{shlex.quote(sys.executable)} -m memgit.sharing.merge_driver %O %A %B %P"
    )
    assert git(work, "config", "merge.memgit.name").strip()
    attrs = git(work, "check-attr", "merge", "--", "memories/user/ab/abcdefghijkl.md")
    assert attrs.strip().endswith("merge: memgit")


def test_init_turns_rename_detection_off_for_git_merge_unless_set(tmp_path: Path) -> None:
    """A memory's file name is its id: the person's ``git merge`` must not pair two
    memories by similar bytes (docs/sharing.md#merging-clones). git 2.39's ``ort``
    ignores ``merge.renames``, so the strategy is ``recursive``; a value the person
    set is kept."""
    work = tmp_path / "work"
    ok(memgit_cli("init", str(work)))
    assert git(work, "config", "merge.renames").strip() == "false"
    assert git(work, "config", "pull.twohead").strip() == "recursive"
    git(work, "config", "pull.twohead", "ort")
    ok(memgit_cli("init", str(work)))
    assert git(work, "config", "pull.twohead").strip() == "ort"


def test_init_adds_the_attribute_lines_to_an_existing_gitattributes(tmp_path: Path) -> None:
    """An adopted repository whose .gitattributes lacks memgit's lines gets them appended
    in a commit of their own; its own lines stay, and a second init commits nothing."""
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "work")
    (work / ".gitattributes").write_text("*.png binary\n", "utf-8")
    git(work, "add", ".gitattributes")
    git(work, "commit", "-q", "-m", "attributes")
    ok(memgit_cli("init", cwd=work))
    assert git(work, "show", "HEAD:.gitattributes") == "*.png binary\n" + ATTRIBUTES
    head = git(work, "rev-parse", "HEAD")
    ok(memgit_cli("init", cwd=work))
    assert git(work, "rev-parse", "HEAD") == head


# --- hooks -------------------------------------------------------------------------------


def test_a_clone_refuses_a_forged_quote_without_an_activated_venv(tmp_path: Path) -> None:
    """Issue 13's acceptance: `git clone` + `memgit init` (by absolute path) + `git commit`
    in a shell whose PATH has no memgit and no VIRTUAL_ENV: the installed hook refuses a
    memory whose quote was edited, naming the check's code; a good memory passes."""
    origin = processed_repo(tmp_path / "origin")
    git(tmp_path, "clone", "-q", str(origin), "clone")
    clone = tmp_path / "clone"
    env = without_venv(tmp_path)
    done = run([str(MEMGIT), "init"], clone, env)
    assert done.returncode == 0, done.stderr
    assert "pre-commit installed at .git/hooks/pre-commit" in done.stdout

    memory = next(
        path
        for path in sorted((clone / "memories").rglob("*.md"))
        if "before every commit." in path.read_text("utf-8")
    )
    memory.write_text(
        memory.read_text("utf-8").replace("before every commit.", "before every push."), "utf-8"
    )
    git(clone, "add", "-A")
    before = git(clone, "rev-parse", "HEAD")
    refused = run(["git", "commit", "-m", "push, not commit"], clone, env)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "not found" not in refused.stdout + refused.stderr
    assert "error[quote-not-found]" in refused.stdout + refused.stderr
    assert git(clone, "rev-parse", "HEAD") == before

    git(clone, "checkout", "-q", "HEAD", "--", ".")
    text = (CORPUS / "valid" / "human-memory.md").read_text("utf-8").partition("\n")[2]
    good = clone / "memories" / "user" / "ta" / "tabs4ever001.md"
    good.parent.mkdir(parents=True)
    good.write_text(text, "utf-8")
    git(clone, "add", "-A")
    passed = run(["git", "commit", "-m", "a memory of my own"], clone, env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "memgit evidence" in passed.stdout + passed.stderr
    assert git(clone, "rev-parse", "HEAD~1") == before


def test_init_refuses_to_replace_a_foreign_hook(tmp_path: Path) -> None:
    """A pre-commit hook of the person's own is never overwritten: hooks-exist (exit 4),
    and the repository, its config and the hook are as they were."""
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "work")
    git(work, "remote", "add", "origin", str(tmp_path / "a.git"))
    hook = work / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho mine\n", "utf-8")
    before = snapshot(work)
    config = (work / ".git" / "config").read_bytes()
    done = memgit_cli("init", cwd=work)
    assert done.returncode == 4, done.stderr.decode()
    assert done.stderr.decode().startswith(f"error[hooks-exist]: {hook}: ")
    assert b"hint: " in done.stderr
    assert snapshot(work) == before
    assert (work / ".git" / "config").read_bytes() == config
    assert hook.read_text("utf-8") == "#!/bin/sh\necho mine\n"

    ok(memgit_cli("init", "--no-hooks", cwd=work))
    assert hook.read_text("utf-8") == "#!/bin/sh\necho mine\n"
    assert config_values(work, "remote.origin.push") == ["HEAD", "refs/memgit/*:refs/memgit/*"]


def test_init_replaces_its_own_hook_and_pre_commits(tmp_path: Path) -> None:
    """A hook pre-commit or an earlier memgit init wrote is brought up to date, not refused;
    --no-hooks leaves hooks alone."""
    work = tmp_path / "work"
    ok(memgit_cli("init", "--no-hooks", str(work)))
    hook = work / ".git" / "hooks" / "pre-commit"
    assert not hook.exists()
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=work, check=True)
    ok(memgit_cli("init", cwd=work))
    script = hook.read_text("utf-8")
    assert shlex.quote(str(VENV_BIN)) in script
    ok(memgit_cli("init", "--install-hooks", cwd=work))
    assert hook.read_text("utf-8") == script


def test_init_installs_the_commit_msg_and_post_commit_hooks_of_the_default_config(
    tmp_path: Path,
) -> None:
    """The default config names commit-msg, post-commit and post-merge in
    default_install_hook_types, and init installs them (as `pre-commit install` reads
    the config), so a secret in a person's commit message is refused on their machine,
    with no virtual environment on PATH (a memory removed by hand, and the refs of
    merged commits, are recorded: tests/test_removals.py)."""
    work = tmp_path / "work"
    env = without_venv(tmp_path)
    done = run([str(MEMGIT), "init", str(work)], tmp_path, env)
    assert done.returncode == 0, done.stderr
    for kind in ("pre-commit", "commit-msg", "post-commit", "post-merge"):
        assert f"pre-commit installed at .git/hooks/{kind}" in done.stdout, done.stdout

    (work / "notes.md").write_text("# Notes\n", "utf-8")
    git(work, "add", "notes.md")
    before = git(work, "rev-parse", "HEAD")
    refused = run(["git", "commit", "-m", f"key {AWS_KEY}"], work, env)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "error[secret-detected]: commit message: line 1: " in refused.stdout + refused.stderr
    assert AWS_KEY not in refused.stdout + refused.stderr
    assert git(work, "rev-parse", "HEAD") == before
    passed = run(["git", "commit", "-m", "notes"], work, env)
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_init_installs_no_hooks_where_core_hooks_path_points(tmp_path: Path) -> None:
    """core.hooksPath hands the hooks to another tool: hooks-path-set (exit 4) before
    anything changes; --no-hooks configures the rest."""
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "work")
    git(work, "config", "core.hooksPath", str(tmp_path / "managed"))
    before = snapshot(work)
    config = (work / ".git" / "config").read_bytes()
    done = memgit_cli("init", cwd=work)
    assert done.returncode == 4, done.stderr.decode()
    assert done.stderr.decode().startswith(f"error[hooks-path-set]: {work / '.git' / 'config'}: ")
    assert snapshot(work) == before
    assert (work / ".git" / "config").read_bytes() == config
    assert not (tmp_path / "managed").exists()
    ok(memgit_cli("init", "--no-hooks", cwd=work))
    assert git(work, "config", "merge.memgit.driver").strip()


def test_init_in_a_clone_builds_the_recall_index(tmp_path: Path) -> None:
    """A clone's first command no longer pays for the derived store: init builds it."""
    origin = processed_repo(tmp_path / "origin")
    git(tmp_path, "clone", "-q", str(origin), "clone")
    clone = tmp_path / "clone"
    ok(memgit_cli("init", cwd=clone))
    status = json.loads(ok(memgit_cli("index", "status", "--json", cwd=clone)))
    assert status["exists"] and not status["stale"], status
    assert status["counts"]["memories"] >= 1
