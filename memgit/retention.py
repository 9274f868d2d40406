"""Inbox retention: processed captures past their time leave the tree, not history.

The time counts from processing, not from the conversation: a capture leaves the tree
``inbox.retention_days`` after the run that decided its last unit (its run commit's
time: :func:`~memgit.state.processing.run_time`), and never in the process call that
processed it. So last month's conversation,
imported today, stays in the inbox (and in recall) for the whole period.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta

import pygit2

from memgit.constants import TRAILER_EXPIRED
from memgit.governance.checks import Governance
from memgit.layout import parse_capture_path
from memgit.settings import Settings, gate_setting
from memgit.state.lookup import Lookup
from memgit.state.processing import DEFAULT_MAX_DEFERRALS, processing_state
from memgit.store.engine import Change, publish
from memgit.store.identity import commit_time
from memgit.trailers import render_message


def expire_inbox(
    git: pygit2.Repository, settings: Settings, lookup: Lookup, *, keep: Collection[str] = ()
) -> tuple[str | None, tuple[str, ...]]:
    """Remove captures processed longer ago than the retention, but for those in ``keep``
    (the ones this process call just processed); Git history keeps them."""
    cutoff = commit_time() - timedelta(days=settings.retention_days)
    expired: list[str] = []

    def plan(tip: pygit2.Commit | None) -> Change | None:
        expired.clear()
        tree = tip.tree if tip is not None else None
        max_deferrals = gate_setting(settings, "max_deferrals", DEFAULT_MAX_DEFERRALS)
        state = processing_state(lookup, tree, max_deferrals=max_deferrals)
        expired.extend(path for path in state.done_before(cutoff) if path not in keep)
        if not expired:
            return None
        keys = []
        for path in expired:
            parsed = parse_capture_path(path)
            if parsed is not None:
                keys.append((TRAILER_EXPIRED, "/".join(str(part) for part in parsed)))
        message = render_message(
            f"inbox: remove {len(expired)} captures processed over "
            f"{settings.retention_days} days ago",
            keys,
        )
        return Change(files=dict.fromkeys(expired), message=message)

    result = publish(git, plan, guard=Governance(lookup), author_fallback=settings.author)
    return result.commit, tuple(expired) if result.commit else ()
