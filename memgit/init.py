"""``memgit init``: create a memory repository, or adopt an existing Git repository."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from memgit.constants import CONFIG_FILE, FORMAT_VERSION, PRE_COMMIT_CONFIG, TRAILER_INIT
from memgit.errors import ConflictError
from memgit.settings import DEFAULT_CONFIG, parse_settings
from memgit.store.engine import Change, commit_change
from memgit.store.repository import init_or_adopt
from memgit.store.tree import blob_at
from memgit.trailers import render_message

DEFAULT_PRE_COMMIT_CONFIG = """\
# Checks for every commit to this memory repository (docs/governance.md).
# Install them with `pre-commit install`.
repos: []
"""

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
            parse_settings(repo[tree[CONFIG_FILE].id].data, path=CONFIG_FILE)
        if not files:
            return None
        summary = "init: memory repository" if not existing else "init: complete memory repository"
        message = render_message(summary, [(TRAILER_INIT, f"format {FORMAT_VERSION}")])
        return Change(files=files, message=message)

    result = commit_change(repo, plan, allow_unborn=True)
    created = tuple(name for name in TEMPLATES if name not in existing)
    return InitResult(
        path=str(path),
        new_repository=new_repository,
        commit=result.commit,
        created=created if result.commit else (),
        existing=tuple(existing),
    )
