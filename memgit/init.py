"""``memgit init``: create a memory repository, or adopt an existing Git repository."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from memgit.constants import CONFIG_FILE, FORMAT_VERSION, PRE_COMMIT_CONFIG, TRAILER_INIT
from memgit.errors import ConflictError
from memgit.governance.checks import Governance
from memgit.settings import DEFAULT_CONFIG, parse_settings
from memgit.sharing.clone import CloneSetup, set_up_clone
from memgit.sharing.hooks import hook_types, plan_hooks, write_hooks
from memgit.sharing.refspecs import configure_remotes
from memgit.sharing.setup import ATTRIBUTES_FILE, attributes_with_memgit, configure_merge_driver
from memgit.state.lookup import TreeWalk
from memgit.store.engine import Change, publish
from memgit.store.repository import compact_index, init_or_adopt
from memgit.store.tree import blob_at, read_blob
from memgit.trailers import render_message

# The checks run from the memgit installed on the machine (language: system), so
# they work offline and always match the memgit that writes the repository.
DEFAULT_PRE_COMMIT_CONFIG = """\
# memgit's checks for every commit to this memory repository (docs/governance.md).
# `memgit init` installs them in each clone (docs/sharing.md).
default_install_hook_types: [pre-commit, commit-msg, post-commit, post-merge]
default_stages: [pre-commit]
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
        always_run: true
      - id: memgit-secrets-message
        name: memgit secrets (commit message)
        entry: memgit-check-secrets --commit-msg
        language: system
        stages: [commit-msg]
      - id: memgit-record-removals
        name: memgit record removals
        entry: memgit-record-removals
        language: system
        stages: [commit-msg]
      - id: memgit-record-retired-refs
        name: memgit record retired refs
        entry: memgit-record-retired-refs
        language: system
        stages: [post-commit]
        always_run: true
        pass_filenames: false
      - id: memgit-record-merged-refs
        name: memgit record merged refs
        entry: memgit-record-retired-refs --merged
        language: system
        stages: [post-merge]
        always_run: true
        pass_filenames: false
"""  # noqa: E501 (the files pattern is one YAML line)

TEMPLATES = {CONFIG_FILE: DEFAULT_CONFIG, PRE_COMMIT_CONFIG: DEFAULT_PRE_COMMIT_CONFIG}


@dataclass(frozen=True, slots=True, kw_only=True)
class InitResult:
    """What init did: the commit (if any), the files it wrote or found, and what it
    configured in this clone (remotes, merge driver, hooks written)."""

    path: str
    new_repository: bool
    commit: str | None
    created: tuple[str, ...]
    existing: tuple[str, ...]
    remotes_configured: tuple[str, ...] = ()
    merge_driver_configured: bool = False
    hooks_installed: bool = False
    hooks_written: tuple[str, ...] = ()
    clone: CloneSetup | None = None  # the remote this clone syncs with, and what came


def init_repository(path: Path, *, install_hooks: bool = False) -> InitResult:
    """Make ``path`` a memory repository ready to share; safe to run again.

    In order, so that a refusal changes nothing: the hooks are checked (a person's
    own is never replaced) before anything is written (in a new folder, right after
    the empty repository is made); in a clone, the remote's memory is taken
    (:mod:`memgit.sharing.clone`: a clone with no commit checks out the remote's
    branch instead of starting a history of its own); then the missing files are
    committed, then the clone's hooks and config are written.
    """
    path = path.resolve()
    if install_hooks and (path / ".git").exists():
        plan_hooks(pygit2.Repository(str(path)), hook_types(path))
    repo, new_repository = init_or_adopt(path)
    if install_hooks and new_repository:  # a core.hooksPath of the person's global config
        plan_hooks(repo, hook_types(path))
    clone = None if new_repository else set_up_clone(repo)

    existing: list[str] = []
    written: list[str] = []

    def plan(tip: pygit2.Commit | None) -> Change | None:
        existing.clear()
        written.clear()
        files: dict[str, bytes | None] = {}
        tree = tip.tree if tip is not None else None
        for name, template in TEMPLATES.items():
            if blob_at(tree, name) is not None:
                existing.append(name)
            else:
                _refuse_uncommitted(path, name)
                files[name] = template.encode("utf-8")
        attributes = blob_at(tree, ATTRIBUTES_FILE)
        if attributes is None:
            _refuse_uncommitted(path, ATTRIBUTES_FILE)
        completed = attributes_with_memgit(
            read_blob(repo, attributes) if attributes is not None else None
        )
        if completed is not None:
            files[ATTRIBUTES_FILE] = completed
        else:
            existing.append(ATTRIBUTES_FILE)
        written.extend(files)
        if CONFIG_FILE in existing and tree is not None:
            parse_settings(read_blob(repo, tree[CONFIG_FILE].id), path=CONFIG_FILE)
        if not files:
            return None
        summary = "init: memory repository" if not existing else "init: complete memory repository"
        message = render_message(summary, [(TRAILER_INIT, f"format {FORMAT_VERSION}")])
        return Change(files=files, message=message)

    result = publish(repo, plan, guard=Governance(TreeWalk(repo)), allow_unborn=True)
    compact_index(repo)
    hooks = write_hooks(plan_hooks(repo, hook_types(path))) if install_hooks else ()
    return InitResult(
        path=str(path),
        new_repository=new_repository,
        commit=result.commit,
        created=tuple(written) if result.commit else (),
        existing=tuple(existing),
        remotes_configured=configure_remotes(repo),
        merge_driver_configured=configure_merge_driver(repo),
        hooks_installed=install_hooks,
        hooks_written=tuple(str(hook.relative_to(path)) for hook in hooks),
        clone=clone,
    )


def _refuse_uncommitted(path: Path, name: str) -> None:
    """A file init would write that the person has, uncommitted, is never overwritten."""
    if (path / name).exists():
        raise ConflictError(
            f"{name} exists but is not committed",
            code="local-edits",
            path=str(path / name),
            hint=f"commit it (`git add {name} && git commit`) or remove it, then rerun",
        )
