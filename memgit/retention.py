"""Inbox retention: processed captures past their time leave the tree, not history."""

from __future__ import annotations

from datetime import timedelta

import pygit2

from memgit.constants import TRAILER_EXPIRED
from memgit.governance.checks import GOVERNANCE
from memgit.layout import parse_capture_path
from memgit.pending import DEFAULT_MAX_DEFERRALS, processing_state
from memgit.settings import Settings, gate_setting
from memgit.store.engine import Change, commit_change
from memgit.store.identity import commit_time
from memgit.trailers import render_message


def expire_inbox(git: pygit2.Repository, settings: Settings) -> tuple[str | None, tuple[str, ...]]:
    """Remove processed captures older than the retention; Git history keeps them."""
    cutoff = commit_time() - timedelta(days=settings.retention_days)
    expired: list[str] = []

    def plan(tip: pygit2.Commit | None) -> Change | None:
        expired.clear()
        tree = tip.tree if tip is not None else None
        state = processing_state(
            git, tree, max_deferrals=gate_setting(settings, "max_deferrals", DEFAULT_MAX_DEFERRALS)
        )
        expired.extend(state.done_before(cutoff))
        if not expired:
            return None
        keys = []
        for path in expired:
            parsed = parse_capture_path(path)
            if parsed is not None:
                keys.append((TRAILER_EXPIRED, "/".join(str(part) for part in parsed)))
        message = render_message(
            f"inbox: remove {len(expired)} processed captures older than "
            f"{settings.retention_days} days",
            keys,
        )
        return Change(files=dict.fromkeys(expired), message=message)

    result = commit_change(git, plan, guard=GOVERNANCE, author_fallback=settings.author)
    return result.commit, tuple(expired) if result.commit else ()
