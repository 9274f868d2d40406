"""``memgit verify --format markdown``: a summary fit for a pull-request comment.

Run through the real ``memgit`` command on a repository memgit built; a hostile file
name (pipes, backticks, HTML, a newline, an @mention) must neither break the table
nor reach the page as markup.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from governance_corpus import repos

from secret_fixtures import SECRET_FIXTURES
from support import git, memgit_cli

templates = repos.templates
AWS_KEY = next(value for kind, _, value in SECRET_FIXTURES if kind == "aws-access-key-id")
HOSTILE = "notes|<b>x`code`\n@team [a](b).md"


@pytest.fixture
def processed(templates: repos.Templates, tmp_path: Path) -> Path:
    return templates.copy("processed", tmp_path / "memory")


def cells(row: str) -> list[str]:
    """The cells of a Markdown table row, split on the pipes that are not escaped."""
    assert row.startswith("|") and row.endswith("|"), row
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row[1:-1])]


def test_a_clean_range_is_a_passing_summary_with_counts(processed: Path) -> None:
    done = memgit_cli("verify", "--all", "--format", "markdown", cwd=processed)
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode("utf-8")
    commits = len(git(processed, "rev-list", "HEAD").split())
    assert out.startswith("## memgit verify: passed\n")
    assert f"- Commits checked: {commits}\n" in out
    assert (
        "- Memories created: 4, updated: 0, superseded: 1, retracted: 0\n" in out
    )  # the linter facts too
    assert "- Captures added: 3\n" in out
    assert "No problems found." in out
    assert "| commit |" not in out


def test_problems_are_a_table_that_hostile_names_cannot_break(processed: Path) -> None:
    (processed / HOSTILE).write_text(f"aws_access_key_id = {AWS_KEY}\n", "utf-8")
    git(processed, "add", "--", HOSTILE)
    git(processed, "commit", "-q", "--no-verify", "-m", "notes")
    bad = git(processed, "rev-parse", "HEAD").strip()
    done = memgit_cli("verify", "HEAD~1..HEAD", "--format", "markdown", cwd=processed)
    assert done.returncode == 1, done.stderr.decode()
    out = done.stdout.decode("utf-8")
    assert out.startswith("## memgit verify: failed\n")
    assert "- Range: HEAD\\~1..HEAD\n" in out
    assert "- Commits checked: 1\n" in out
    lines = out.splitlines()
    header = lines.index("| commit | code | path | field | message |")
    assert lines[header + 1] == "| --- | --- | --- | --- | --- |"
    row = lines[header + 2]
    assert cells(row)[:2] == [f"`{bad[:12]}`", "`secret-detected`"]
    assert len(cells(row)) == 5
    path = cells(row)[2]
    assert "&lt;b&gt;x" in path and "\\|" in path and "\\`code\\`" in path
    assert "\\\\n" in path and "&#64;team" in path and "\\[a\\]\\(b\\)" in path
    assert "<b>" not in out and "@team" not in out and "\n@" not in out
    assert AWS_KEY not in out
    assert lines[header + 3 :] == [] or not lines[header + 3].startswith("|")


def test_json_is_an_alias_of_format_json(processed: Path) -> None:
    by_alias = memgit_cli("verify", "--all", "--json", cwd=processed)
    by_format = memgit_cli("verify", "--all", "--format", "json", cwd=processed)
    assert by_alias.returncode == by_format.returncode == 0
    assert json.loads(by_alias.stdout) == json.loads(by_format.stdout)
    both = memgit_cli("verify", "--all", "--json", "--format", "markdown", cwd=processed)
    assert both.returncode == 2
    assert both.stderr.decode().startswith("error[usage]: --json is --format json")
