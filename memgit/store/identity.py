"""Who a commit is by and when: the same sources, in the same order, as git uses."""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime

import pygit2

from memgit.errors import InvalidInputError

FALLBACK_NAME = "memgit"
FALLBACK_EMAIL = "memgit@localhost"

_RAW_DATE = re.compile(r"@?(?P<epoch>\d+)(?: (?P<sign>[+-])(?P<hh>\d\d)(?P<mm>\d\d))?")


def parse_git_date(value: str, *, field: str) -> tuple[int, int]:
    """(epoch seconds, offset minutes) from git's raw ``@1700000000 +0100`` or ISO 8601."""
    value = value.strip()
    match = _RAW_DATE.fullmatch(value)
    if match:
        offset = 0
        if match["sign"]:
            offset = int(match["hh"]) * 60 + int(match["mm"])
            offset = -offset if match["sign"] == "-" else offset
        return int(match["epoch"]), offset
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as err:
        raise InvalidInputError(
            f"cannot read date {value!r}",
            code="invalid-date",
            field=field,
            hint="use '@<epoch> +HHMM' or an ISO 8601 date with a time zone",
        ) from err
    if moment.tzinfo is None:
        moment = moment.astimezone()
    delta = moment.utcoffset()
    offset = int(delta.total_seconds() // 60) if delta is not None else 0
    return int(moment.timestamp()), offset


def _signature(
    role: str, config: pygit2.Config, fallback: tuple[str, str] | None
) -> pygit2.Signature:
    env_name = os.environ.get(f"GIT_{role}_NAME")
    env_email = os.environ.get(f"GIT_{role}_EMAIL")
    name = env_name or _config_value(config, "user.name")
    email = env_email or _config_value(config, "user.email")
    if not name or not email:
        name, email = fallback or (FALLBACK_NAME, FALLBACK_EMAIL)
    raw_date = os.environ.get(f"GIT_{role}_DATE")
    if raw_date:
        when, offset = parse_git_date(raw_date, field=f"GIT_{role}_DATE")
    else:
        when = int(time.time())
        local = time.localtime(when)
        offset = (local.tm_gmtoff or 0) // 60
    return pygit2.Signature(name, email, when, offset)


def _config_value(config: pygit2.Config, key: str) -> str | None:
    try:
        value = config[key]
    except KeyError:
        return None
    return value if isinstance(value, str) and value else None


def signatures(
    repo: pygit2.Repository, fallback: tuple[str, str] | None = None
) -> tuple[pygit2.Signature, pygit2.Signature]:
    """(author, committer): environment, then git config, then memgit.yaml's author."""
    config = repo.config
    return _signature("AUTHOR", config, fallback), _signature("COMMITTER", config, fallback)


def commit_time() -> datetime:
    """Now, as the next commit will record it (``GIT_COMMITTER_DATE`` wins, as in git)."""
    raw = os.environ.get("GIT_COMMITTER_DATE")
    when = parse_git_date(raw, field="GIT_COMMITTER_DATE")[0] if raw else time.time()
    return datetime.fromtimestamp(int(when), tz=UTC)
