"""Revisions and dates to commits, and the commit that last changed a file.

``memgit recall --as-of`` takes either; the evidence pack names, for each
memory, the commit that gave its file its current content.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

import pygit2

from memgit.errors import UsageError

# How far back the walk for "the commit that last changed this file" goes.
MAX_HISTORY_DEPTH = 2000
_DATE_ONLY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MONTH_ONLY = re.compile(r"([0-9]{4})-([0-9]{2})")


def resolve_as_of(repo: pygit2.Repository, value: str) -> pygit2.Commit:
    """A revision (anything ``git rev-parse`` takes) or an ISO 8601 date.

    A date means the last commit on the current branch (first parents from
    HEAD) whose committer date is at or before it; a date without a time means
    the end of that day (``2026-11`` the end of that month), and a time
    without a zone is UTC.
    """
    shown = value if len(value) <= 60 else value[:57] + "..."
    if not value.strip() or "\0" in value:
        raise _bad_revision(shown, "is empty")
    try:
        obj = repo.revparse_single(value)
    except (KeyError, ValueError, pygit2.GitError):
        obj = None
    if obj is not None:
        try:
            commit = obj.peel(pygit2.Commit)
        except (ValueError, pygit2.GitError) as err:
            raise _bad_revision(shown, "names no commit") from err
        return commit
    when = parse_date(value.strip())
    if when is None:
        raise _bad_revision(shown, "is neither a revision nor an ISO 8601 date")
    if repo.head_is_unborn:
        raise _bad_revision(shown, "cannot be resolved: the repository has no commits yet")
    commit = repo.head.peel(pygit2.Commit)
    limit = when.timestamp()
    while commit.commit_time > limit:
        if not commit.parents:
            raise _bad_revision(shown, "is before the first commit on this branch")
        commit = commit.parents[0]
    return commit


def parse_date(value: str) -> datetime | None:
    """An ISO 8601 date or time as the moment it ends (a day: its last microsecond, UTC;
    a month: its last); None when ``value`` is none of these."""
    try:
        month = _MONTH_ONLY.fullmatch(value)
        if month:
            year, number = int(month.group(1)), int(month.group(2))
            if not 1 <= number <= 12:
                return None
            following = date(year + number // 12, number % 12 + 1, 1)
            return datetime.combine(following, time.min, tzinfo=UTC) - timedelta(microseconds=1)
        if _DATE_ONLY.fullmatch(value):
            day = datetime.fromisoformat(value).date()
            return datetime.combine(day, time.max, tzinfo=UTC)
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _bad_revision(value: str, problem: str) -> UsageError:
    return UsageError(
        f"--as-of {value!r} {problem}",
        code="invalid-revision",
        field="--as-of",
        hint="give a commit, branch, tag or rev-parse expression (HEAD~3, main@{yesterday}), "
        "or an ISO 8601 date such as 2026-11-30 or 2026-11-30T10:00:00Z",
    )


def last_change(repo: pygit2.Repository, start: pygit2.Commit, path: str, blob: str) -> str | None:
    """The commit that gave ``path`` its content ``blob``, walking back from ``start``.

    Like ``git log -1 -- path``: follow a parent that has the same blob at the
    path until none has; that commit introduced it. None beyond
    MAX_HISTORY_DEPTH commits.
    """
    target = pygit2.Oid(hex=blob)
    current = start
    for _ in range(MAX_HISTORY_DEPTH):
        following = None
        for parent in current.parents:
            if _blob_at(parent.tree, path) == target:
                following = parent
                break
        if following is None:
            return str(current.id)
        current = following
    return None


def _blob_at(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        return tree[path].id
    except KeyError:
        return None
