"""``memgit init``: create a memory repository, or adopt an existing Git repository."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from memgit.constants import CONFIG_FILE, FORMAT_VERSION, PRE_COMMIT_CONFIG, TRAILER_INIT
from memgit.errors import ConflictError, UsageError, quote_foreign
from memgit.governance.checks import Governance
from memgit.settings import DEFAULT_CONFIG, parse_settings
from memgit.state.lookup import TreeWalk
from memgit.store.engine import Change, publish
from memgit.store.repository import compact_index, init_or_adopt
from memgit.store.tree import blob_at, read_blob
from memgit.trailers import render_message

# The checks run from the memgit installed on the machine (language: system), so
# they work offline and always match the memgit that writes the repository.
DEFAULT_PRE_COMMIT_CONFIG = """\
# memgit's checks for every commit to this memory repository (docs/governance.md).
# Install them with `pre-commit install` (or `memgit init --install-hooks`).
repos:
  - repo: local
    hooks:
      - id: memgit-schemas
        name: memgit schemas
        entry: memgit-check-schemas
        language: system
        files: ^(memgit\\.yaml|inbox/.*\\.yaml|memories/.*\\.md|runs/.*\\.json|(.*/)?\\.gitattributes)$
      - id: memgit-evidence
        name: memgit evidence
        entry: memgit-check-evidence
        language: system
        files: ^(inbox/.*\\.yaml|memories/.*\\.md|runs/.*\\.json)$
      - id: memgit-secrets
        name: memgit secrets
        entry: memgit-check-secrets
        language: system
      - id: memgit-supersession
        name: memgit supersession
        entry: memgit-check-supersession
        language: system
        files: ^memories/.*\\.md$
"""  # noqa: E501 (the files pattern is one YAML line)

TEMPLATES = {CONFIG_FILE: DEFAULT_CONFIG, PRE_COMMIT_CONFIG: DEFAULT_PRE_COMMIT_CONFIG}


@dataclass(frozen=True, slots=True, kw_only=True)
class InitResult:
    path: str
    new_repository: bool
    commit: str | None
    created: tuple[str, ...]
    existing: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "new_repository": self.new_repository,
            "commit": self.commit,
            "created": list(self.created),
            "existing": list(self.existing),
        }


def init_repository(path: Path) -> InitResult:
    """Make ``path`` a memory repository; safe to run again."""
    path = path.resolve()
    repo, new_repository = init_or_adopt(path)

    existing: list[str] = []

    def plan(tip: pygit2.Commit | None) -> Change | None:
        existing.clear()
        files: dict[str, bytes | None] = {}
        tree = tip.tree if tip is not None else None
        for name, template in TEMPLATES.items():
            if blob_at(tree, name) is not None:
                existing.append(name)
            elif (path / name).exists():
                raise ConflictError(
                    f"{name} exists but is not committed",
                    code="local-edits",
                    path=str(path / name),
                    hint=f"commit it (`git add {name} && git commit`) or remove it, then rerun",
                )
            else:
                files[name] = template.encode("utf-8")
        if CONFIG_FILE in existing and tree is not None:
            parse_settings(read_blob(repo, tree[CONFIG_FILE].id), path=CONFIG_FILE)
        if not files:
            return None
        summary = "init: memory repository" if not existing else "init: complete memory repository"
        message = render_message(summary, [(TRAILER_INIT, f"format {FORMAT_VERSION}")])
        return Change(files=files, message=message)

    result = publish(repo, plan, guard=Governance(TreeWalk(repo)), allow_unborn=True)
    compact_index(repo)
    created = tuple(name for name in TEMPLATES if name not in existing)
    return InitResult(
        path=str(path),
        new_repository=new_repository,
        commit=result.commit,
        created=created if result.commit else (),
        existing=tuple(existing),
    )


def install_hooks(path: Path) -> str:
    """Run ``pre-commit install`` in the repository, so people's commits are checked too."""
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise UsageError(
            "pre-commit install failed: "
            + (quote_foreign(detail[-1]) if detail else f"exit status {done.returncode}"),
            code="hooks-install-failed",
            path=str(path / ".git" / "hooks"),
            hint="run `pre-commit install` yourself to see the full error",
        )
    return done.stdout.strip()
