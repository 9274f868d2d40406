"""The memory repositories the governance corpus is applied to, built with memgit itself.

Two states, each made only through memgit's public API, exactly as an agent would:

- ``pending``: ``memgit init`` and two captured turns (seq 0 and 1), not processed yet.
- ``processed``: the same, processed by the offline ``rules`` backend (memories ``pg16`` and
  ``lint``), then a third turn (seq 2) processed with a host Gate answer that SUPERSEDEs
  ``pg16`` by ``pg17`` (so ``refs/memgit/retired/<pg16>`` exists).
- ``stuck``: ``pending`` plus a turn (seq 3) the host Gate DEFERRED as often as
  ``gate.max_deferrals`` allows (3), so its unit is stuck; the first of those runs
  also made memory ``lint``. Then a turn (seq 4) is captured and left pending.

Corpus files name things of these repositories through ``{{placeholders}}``
(see README.md), filled in by :func:`placeholder_values` and :func:`fill`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pygit2
import pytest

SOURCE = "test-agent"
SESSION = "s1"
FIXED_DATE = "@1764495000 +0000"  # the same as tests/conftest.py

PG16_TEXT = "Remember that staging uses Postgres 16."
LINT_TEXT = (
    "From now on, run the linter before every commit. The linter is ruff, and the linter "
    "config lives in pyproject.toml."
)
TURNS = [
    {
        "source": SOURCE,
        "session": SESSION,
        "seq": 0,
        "timestamp": "2026-11-30T10:00:00Z",
        "thread": "db",
        "messages": [
            {"role": "user", "content": PG16_TEXT},
            {
                "role": "assistant",
                "content": "Noted: staging uses Postgres 16, and the CI runner uses Postgres 15.",
            },
        ],
    },
    {
        "source": SOURCE,
        "session": SESSION,
        "seq": 1,
        "timestamp": "2026-11-30T10:05:00Z",
        "messages": [
            {"role": "user", "content": LINT_TEXT},
            {
                "role": "tool",
                "name": "bash",
                "content": "$ ruff --version\nruff 0.6.9",
                "complete": True,
            },
            {
                "role": "tool",
                "name": "bash",
                "content": "$ pytest\n... 41 passed, output cut",
                "complete": False,
            },
        ],
    },
]
UPGRADE_TURN = {
    "source": SOURCE,
    "session": SESSION,
    "seq": 2,
    "timestamp": "2026-11-30T10:10:00Z",
    "thread": "db",
    "messages": [{"role": "user", "content": "Staging moved to Postgres 17 last night."}],
}


def supersede_answer(target: str) -> dict[str, object]:
    """The host Gate answer for seq 2: SUPERSEDE ``target`` by a memory in project/staging."""
    unit = f"{SOURCE}/{SESSION}/2#0"
    return {
        "candidates": [
            {
                "candidate_id": "c1",
                "action": "SUPERSEDE",
                "target": target,
                "type": "fact",
                "scope": "project/staging",
                "title": "Staging uses Postgres 17",
                "body": "Staging runs Postgres 17 since the upgrade.",
            }
        ],
        "coverage": [{"unit_id": unit, "decision": "CANDIDATE", "candidate_ids": ["c1"]}],
        "evidence_bindings": [
            {
                "candidate_id": "c1",
                "claims": [
                    {"unit_id": unit, "quote": "Staging moved to Postgres 17", "role": "assertion"}
                ],
            }
        ],
    }


IDENTITY = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test Person",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test Person",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_AUTHOR_DATE": FIXED_DATE,
    "GIT_COMMITTER_DATE": FIXED_DATE,
}


@contextmanager
def fixed_identity(home: Path) -> Iterator[None]:
    """The environment tests/conftest.py gives each test, for session-scoped builders."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n",
        "utf-8",
    )
    values = {
        **IDENTITY,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
    }
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


OPEN_TURN = {
    "source": SOURCE,
    "session": SESSION,
    "seq": 4,
    "timestamp": "2026-11-30T10:20:00Z",
    "messages": [{"role": "user", "content": "I like green tea, by the way."}],
}

STUCK_TURN = {
    "source": SOURCE,
    "session": SESSION,
    "seq": 3,
    "timestamp": "2026-11-30T10:15:00Z",
    "messages": [{"role": "user", "content": "Maybe we should use the other one."}],
}


def defer_answer(first: bool) -> dict[str, object]:
    """Seq 3's unit DEFERRED; the first time, also memory ``lint`` from seq 1."""
    deferred = {"unit_id": f"{SOURCE}/{SESSION}/3#0", "decision": "DEFERRED", "reason": "ambiguous"}
    if not first:
        return {"candidates": [], "coverage": [deferred], "evidence_bindings": []}
    lint, quote = f"{SOURCE}/{SESSION}/1#0", "run the linter before every commit"
    rows = [
        {"unit_id": f"{SOURCE}/{SESSION}/{u}", "decision": "NO_CHANGE", "reason": "transient"}
        for u in ("0#0", "1#1")
    ]
    return {
        "candidates": [
            {
                "candidate_id": "c2",
                "action": "CREATE",
                "type": "procedure",
                "scope": "user",
                "title": "Run the linter before every commit",
                "body": "Run the linter before every commit.",
            }
        ],
        "coverage": [
            *rows,
            {"unit_id": lint, "decision": "CANDIDATE", "candidate_ids": ["c2"]},
            deferred,
        ],
        "evidence_bindings": [
            {
                "candidate_id": "c2",
                "claims": [{"unit_id": lint, "quote": quote, "role": "assertion"}],
            }
        ],
    }


def build(path: Path, state: str) -> None:
    """Make the ``pending``, ``processed`` or ``stuck`` repository at ``path`` with memgit."""
    from memgit import MemoryRepo

    MemoryRepo.init(path)
    repo = MemoryRepo.open(path)
    repo.capture_many(TURNS)
    if state == "pending":
        return
    if state == "stuck":
        repo.capture(STUCK_TURN)
        for minute in range(3):  # a retry is another run, made at another time
            os.environ["GIT_COMMITTER_DATE"] = f"@{1764495060 + 60 * minute} +0000"
            repo.process(gate_output=json.dumps(defer_answer(first=minute == 0)))
        os.environ["GIT_COMMITTER_DATE"] = FIXED_DATE
        repo.capture(OPEN_TURN)
        return
    assert state == "processed", state
    first = repo.process(backend="rules")
    created = {d.candidate_id: d.memory_id for d in first.runs[0].decisions}
    repo.capture(UPGRADE_TURN)
    repo.process(gate_output=json.dumps(supersede_answer(created["c1"])))


def copy_repo(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest, symlinks=True)
    return dest


@dataclass(frozen=True)
class Templates:
    """The repositories, built once per test session; each test works on a copy."""

    paths: dict[str, Path]
    values: dict[str, dict[str, str]]

    def copy(self, state: str, dest: Path) -> Path:
        return copy_repo(self.paths[state], dest)


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    root = tmp_path_factory.mktemp("memory-templates")
    paths: dict[str, Path] = {}
    values: dict[str, dict[str, str]] = {}
    with fixed_identity(root / "home"):
        for state in ("pending", "processed", "stuck"):
            paths[state] = root / state
            build(paths[state], state)
            values[state] = placeholder_values(paths[state])
    return Templates(paths, values)


# --- placeholders ---------------------------------------------------------------

# The rules Gate keeps the two facts of the linter sentence too (c3, c4).
MEMORY_NAMES = {"c1": "pg16", "c2": "lint", "c3": "linter", "c4": "lintconfig"}


def placeholder_values(path: Path) -> dict[str, str]:
    """Every ``{{name}}`` a corpus file may use, read from the repository at ``path``."""
    from memgit.layout import capture_path, memory_path
    from memgit.runrecord import parse_run_record

    from secret_fixtures import SECRET_FIXTURES

    git = pygit2.Repository(str(path))
    head = git.head.peel(pygit2.Commit)
    values: dict[str, str] = {"commit:head": str(head.id)}
    commit = head
    while commit.parents:
        commit = commit.parents[0]
    values["commit:init"] = str(commit.id)
    for seq in range(10):
        values[f"capture:{seq}"] = capture_path(SOURCE, SESSION, seq)
    for turn in (*TURNS, UPGRADE_TURN, STUCK_TURN, OPEN_TURN):
        capture = capture_path(SOURCE, SESSION, int(turn["seq"]))  # type: ignore[call-overload]
        blob = _blob_at(git, head.tree, capture)
        if blob is not None:
            values[f"blob:{turn['seq']}"] = blob
    memories: dict[str, tuple[str, str]] = {}
    for ref in git.references:
        if ref.startswith("refs/memgit/runs/"):
            run_commit = git.references[ref].peel(pygit2.Commit)
            for entry_path, blob in _run_records(git, run_commit.tree):
                values.setdefault("run:first", entry_path)
                record = parse_run_record(git[blob].data, path=entry_path)
                for decision in record.decisions:
                    name = "pg17" if decision["action"] == "SUPERSEDE" else None
                    name = name or MEMORY_NAMES[decision["candidate_id"]]
                    memories[name] = (decision["memory_id"], decision["path"])
        if ref.startswith("refs/memgit/retired/"):
            values["commit:retired"] = str(git.references[ref].target)
    for name, (memory_id, memory_file) in memories.items():
        values[f"id:{name}"] = memory_id
        values[f"path:{name}"] = memory_file
        for scope in ("user", "project", "project/staging", "team"):
            values[f"path:{name}@{scope}"] = memory_path(scope, memory_id)
    for kind, _sample, value in SECRET_FIXTURES:
        values.setdefault(f"secret:{kind}", value)
    return values


def _blob_at(git: pygit2.Repository, tree: pygit2.Tree, path: str) -> str | None:
    try:
        return str(tree[path].id)
    except KeyError:
        return None


def _run_records(git: pygit2.Repository, tree: pygit2.Tree) -> Iterator[tuple[str, str]]:
    try:
        runs = tree["runs"]
    except KeyError:
        return
    stack = [("runs", git[runs.id])]
    while stack:
        prefix, subtree = stack.pop()
        for entry in subtree:
            name = f"{prefix}/{entry.name}"
            if entry.type_str == "tree":
                stack.append((name, git[entry.id]))
            elif name.endswith(".json"):
                yield name, str(entry.id)


_PLACEHOLDER = re.compile(r"\{\{([A-Za-z0-9:@/_-]+)\}\}")


def fill(text: str, values: dict[str, str]) -> str:
    """Replace each ``{{name}}``; an unknown name is an error in the corpus file."""

    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"unknown placeholder {{{{{key}}}}}; known: {sorted(values)}")
        return values[key]

    return _PLACEHOLDER.sub(one, text)
