"""Which of memgit.yaml's scopes a statement belongs to, judged by its words.

Two kinds of memory need telling apart without a model: what the *user* is like
("I prefer pytest", "call me Sam", 我喜欢..., "prefiero ...") and what the *project* is
like ("CI must run on Python 3.11", "The API lives at api.example.com", "we moved to
pnpm"). A statement in the first person singular is the user's; otherwise one in the
first person plural ("we", 我们, "usamos", "wir"), or one that names a part of a
software project (CI, the repository, a branch, an API, a host, a port, a path or
domain, a library or version, build, deploy, release, merge, push, 项目, 部署, ...) or a
thing of a project family of :mod:`memgit.gate.subjects` (pnpm, Postgres, Jenkins, but
not an editor or a shell) is the project's, and so is a fact or a decision that
names no person at all ("The invoice is generated on the 1st");
anything else goes to the default scope, the first one memgit.yaml lists. A scope
memgit.yaml does not declare is never chosen: the default stands in for it. The words
are data (``scopes.yaml`` beside this module, loaded once).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from memgit.gate.subjects import (
    READ_LIMIT,
    compile_words,
    invalid_rules,
    load_subjects,
    word_list,
)
from memgit.yamlio import parse_yaml

__all__ = ["choose_scope"]

USER = "user"
PROJECT = "project"
SOURCE = "memgit/gate/scopes.yaml"

# A domain or a file name, found by its ending alone, so that no run of letters, dots
# or hyphens is scanned again from each of its characters; and a path.
_SHAPES = re.compile(
    r"(?<=[A-Za-z0-9_-])\.(?:com|org|net|io|dev|app|internal|local|cloud|tech|(?-i:[a-z]{2}))\b"
    r"|(?<=\w)\.(?:py|js|ts|toml|ya?ml|json|md|sh|cfg|ini)\b"
    r"|(?:^|\s)\.{0,2}/?[\w.-]+/[\w./-]+",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Words:
    user: re.Pattern[str]
    team: re.Pattern[str]
    project: re.Pattern[str]


def parse_scopes(text: str) -> _Words:
    """The compiled word lists of a ``scopes.yaml`` text."""
    data = parse_yaml(text, source=SOURCE)
    if not isinstance(data, dict) or data.get("format") != 1:
        raise invalid_rules("the file must be a mapping with format: 1", SOURCE, "format")
    return _Words(
        **{
            name: compile_words(word_list(data.get(name), SOURCE, name), SOURCE, name)
            for name in ("user", "team", "project")
        }
    )


@functools.cache
def _words() -> _Words:
    return parse_scopes(resources.files(__package__).joinpath("scopes.yaml").read_text("utf-8"))


def _is_project(text: str) -> bool:
    words = _words()
    if words.team.search(text) or words.project.search(text) or _SHAPES.search(text):
        return True
    return any(pattern.search(text) for pattern in load_subjects().project_things)


# What a statement that names no one is, when its words do not say whose it is: a fact
# or a decision said of no person ("The invoice is generated on the 1st") is the
# project's; a rule of no one ("always the diff") is as often the user's wish.
_OF_NO_ONE = frozenset({"fact", "decision"})


def choose_scope(text: str, scopes: Sequence[str], kind: str | None = None) -> str:
    """The scope for a statement ``text`` of type ``kind`` among ``scopes`` (memgit.yaml's,
    default first), read in its first ``READ_LIMIT`` characters, as a change is."""
    text = text[:READ_LIMIT]
    if _words().user.search(text):
        wanted = USER
    elif _is_project(text) or kind in _OF_NO_ONE:
        wanted = PROJECT
    else:
        return scopes[0]
    return wanted if wanted in scopes else scopes[0]
