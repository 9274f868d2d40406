"""docs/sharing.md and docs/review.md, run exactly as written.

Every ``sh`` block of each page is read out of the page (not copied here) and run,
in order, as one bash script (``-e -u -o pipefail``: any command that fails fails
the test). HOME is a temporary folder whose git config names the default branch
``master`` (a stock git) or ``main``, so ``~/agent-memory`` and ``~/shared`` land
there. ``memgit`` is this interpreter's, first on PATH: the pages write plain
``memgit``. sharing.md's ``cp hooks/pre-receive`` is run, as it says, from a copy
of memgit's repository's ``hooks/``; review.md's session starts in an empty folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"


def shell_blocks(page: str) -> list[str]:
    """The page's ``sh`` code blocks, in order."""
    text = (DOCS / page).read_text("utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)
    assert blocks, f"docs/{page} has no sh block"
    return blocks


def environment(tmp_path: Path, default_branch: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    config = home / ".gitconfig"
    config.write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.com\n"
        f"[init]\n\tdefaultBranch = {default_branch}\n",
        "utf-8",
    )
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(config)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    for name in ("VIRTUAL_ENV", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        env.pop(name, None)  # commits dated as a person's are: two roots never coincide
    return env


def run_page(page: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = "\n".join(shell_blocks(page))
    done = subprocess.run(
        ["bash", "-e", "-u", "-o", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"docs/{page} failed:\n{done.stdout}\n{done.stderr}"
    return done


def git(path: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(path), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.mark.parametrize("default_branch", ["master", "main"])
def test_sharing_md_runs_as_written(tmp_path: Path, default_branch: str) -> None:
    env = environment(tmp_path, default_branch)
    checkout = tmp_path / "memgit"
    (checkout / "hooks").mkdir(parents=True)
    shutil.copy2(ROOT / "hooks" / "pre-receive", checkout / "hooks" / "pre-receive")
    done = run_page("sharing.md", checkout, env)

    home = Path(env["HOME"])
    remote, first, second = (
        home / "shared/memory.git",
        home / "agent-memory",
        home / "agent-memory-2",
    )
    # One branch, one history: both clones and the remote at the same commit and refs.
    heads = git(remote, env, "for-each-ref", "--format=%(refname)", "refs/heads/")
    assert heads == "refs/heads/main"
    tips = {git(path, env, "rev-parse", "main") for path in (remote, first, second)}
    assert len(tips) == 1
    assert git(first, env, "rev-list", "--max-parents=0", "main").count("\n") == 0
    refs = {
        git(path, env, "for-each-ref", "--format=%(refname) %(objectname)", "refs/memgit/")
        for path in (remote, first, second)
    }
    assert len(refs) == 1 and "refs/memgit/runs/" in refs.pop()
    assert "staging database" in git(first, env, "grep", "-h", "5433", "main", "--", "memories")
    assert "passed" in (first / "summary.md").read_text("utf-8").lower()
    # What the page says init prints.
    assert "origin has no branch main yet" in done.stdout
    if default_branch == "master":  # git clone checked out nothing; init took main
        assert "remote HEAD refers to nonexistent ref" in done.stderr
        assert "Checked out main from origin" in done.stdout


@pytest.mark.parametrize("default_branch", ["master", "main"])
def test_review_md_runs_as_written(tmp_path: Path, default_branch: str) -> None:
    env = environment(tmp_path, default_branch)
    folder = tmp_path / "empty"
    folder.mkdir()
    done = run_page("review.md", folder, env)
    assert "[applied]" in done.stdout and "reason: I was joking." in done.stdout
    notes = folder / "notes"
    assert git(notes, env, "rev-parse", "main") == git(
        folder / "shared.git", env, "rev-parse", "main"
    )
