"""The README's "Using it" section, run as written.

The shell block and the Python block are read out of README.md (not copied
here), so the test breaks when the README's example does. HOME is a temporary
folder, so ``~/agent-memory`` lands there, and ``.venv/bin/memgit`` is a
script that runs the memgit of the interpreter running the test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"
MEMGIT = (sys.executable, "-m", "memgit.cli.main")


def using_it_blocks() -> dict[str, str]:
    """The first ``sh`` and ``python`` code blocks of the README's "Using it" section."""
    text = README.read_text("utf-8")
    section = re.search(r"^## Using it\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert section, "README.md has no '## Using it' section"
    blocks: dict[str, str] = {}
    for language, body in re.findall(r"^```(\w+)\n(.*?)^```", section.group(1), re.M | re.S):
        blocks.setdefault(language, body)
    assert {"sh", "python"} <= set(blocks), f"found only {sorted(blocks)} blocks"
    return blocks


def fake_venv(home: Path) -> None:
    """``.venv/bin/memgit`` in ``home``: this interpreter's memgit."""
    script = home / ".venv" / "bin" / "memgit"
    script.parent.mkdir(parents=True)
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m memgit.cli.main "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def recall_query(shell: str) -> str:
    """The query of the block's ``memgit ... recall QUERY`` command."""
    words = shlex.split(shell, comments=True)
    assert "recall" in words, "the README's shell block has no recall command"
    return words[words.index("recall") + 1]


def test_using_it_runs_as_written(tmp_path: Path) -> None:
    """Run the shell block, then the Python block, in a fresh HOME: the README's
    recall finds the memory made from the turn its capture line gives."""
    blocks = using_it_blocks()
    home = tmp_path / "home"
    home.mkdir()
    fake_venv(home)
    env = {**os.environ, "HOME": str(home)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    shell = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", blocks["sh"]],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shell.returncode == 0, shell.stderr
    assert "No memory matched" not in shell.stdout, shell.stdout

    query = recall_query(blocks["sh"])
    done = subprocess.run(
        [*MEMGIT, "-C", str(home / "agent-memory"), "recall", query, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    pack = json.loads(done.stdout)
    quotes = [source["quote"] for hit in pack["memories"] for source in hit["sources"]]
    assert "Remember that I prefer pytest." in quotes, (query, pack["trace"])

    # The Python block, in the shell block's HOME (its repository), then on its own in
    # a fresh folder: either way it shows memgit working.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for folder in (home, fresh):
        python = subprocess.run(
            [sys.executable, "-c", blocks["python"]],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert python.returncode == 0, python.stderr
        check_python_output(python.stdout)


def check_python_output(stdout: str) -> None:
    """The Python block captured a statement, made it a memory and recalled it: its
    lines are the capture, the run's CREATE, then the recalled memory as the best hit."""
    lines = stdout.splitlines()
    assert len(lines) == 3, stdout
    capture, created, recalled = lines
    assert capture.startswith("inbox/my-agent/") and capture.endswith(" False"), stdout
    action, memory_id, path = created.split()
    assert action == "CREATE" and path.endswith(f"/{memory_id}.md"), stdout
    assert recalled.startswith("1.00 The staging database listens on port 5433 "), stdout
    assert recalled.endswith("Remember that the staging database listens on port 5433."), stdout
