"""A memory with a history, made through the API: created (in scope ``project``),
updated (and moved to the sub-scope ``project/staging``), edited by a person, superseded
twice (A -> B -> C); and one retracted memory.

Each step is committed on its own day (GIT_COMMITTER_DATE), so dates can be asked for.
The Gate answers are written by hand for the host backend, as tests/test_process.py does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memgit import MemoryRepo

from support import git, make_turn

SOURCE = "test-agent"
SESSION = "s1"
STAGING = "Remember that the staging database listens on port 5433."
MOVED = "Actually staging moved to port 6543 last week, and it belongs to the project."
PREVIEW = "We replaced staging with a preview environment per branch."
CLUSTER = "Previews now run on the shared cluster called zephyr."
WRONG = "Remember that the office coffee machine is on floor 3."
RETRACT = "Forget what I said about the coffee machine, it was wrong."


def unit(seq: int, index: int = 0) -> str:
    return f"{SOURCE}/{SESSION}/{seq}#{index}"


def user_turn(seq: int, *texts: str) -> dict[str, Any]:
    messages = [
        {"role": "assistant", "content": "Noted."},
        *[{"role": "user", "content": t} for t in texts],
    ]
    return make_turn(seq, messages=messages, timestamp=f"2026-11-{10 + seq:02d}T09:00:00Z")


def answer(repo: MemoryRepo, *candidates: Mapping[str, Any]) -> str:
    """A Gate answer: ``candidates`` (each with ``claims``: [(unit, quote)]) and coverage
    for every pending unit (CANDIDATE where claimed, else NO_CHANGE)."""
    request = repo.gate_prompt()
    units = [u.id for u in request.units if u.can_support] if request else []
    by_unit: dict[str, list[str]] = {}
    items, bindings = [], []
    for number, spec in enumerate(candidates, start=1):
        data = dict(spec)
        cid = f"c{number}"
        claims: Iterable[tuple[str, str]] = data.pop("claims")
        items.append({"candidate_id": cid, **data})
        rows = [{"unit_id": u, "quote": q, "role": "assertion"} for u, q in claims]
        bindings.append({"candidate_id": cid, "claims": rows})
        for row in rows:
            by_unit.setdefault(row["unit_id"], []).append(cid)
    coverage = [
        {"unit_id": u, "decision": "CANDIDATE", "candidate_ids": by_unit[u]}
        if u in by_unit
        else {"unit_id": u, "decision": "NO_CHANGE", "reason": "no-durable-content"}
        for u in units
    ]
    return json.dumps({"candidates": items, "coverage": coverage, "evidence_bindings": bindings})


@dataclass(frozen=True, slots=True, kw_only=True)
class Story:
    path: Path
    a: str
    b: str
    c: str
    retracted: str
    commits: dict[str, str]  # step name -> commit


def on_day(day: int) -> None:
    """Commits from now on are made at 12:00 UTC on 2026-11-<day>."""
    stamp = f"2026-11-{day:02d}T12:00:00Z"
    os.environ["GIT_COMMITTER_DATE"] = stamp
    os.environ["GIT_AUTHOR_DATE"] = stamp


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD").strip()


def build_story(path: Path) -> Story:
    """The repository of the module docstring; the caller restores the dates."""
    MemoryRepo.init(path)
    commits: dict[str, str] = {}
    on_day(10)
    repo = MemoryRepo.open(path)
    repo.capture(user_turn(0, STAGING))
    repo.process()  # the rules backend creates A
    commits["created"] = head(path)
    a = _only_memory(path)
    on_day(11)
    repo = MemoryRepo.open(path)
    repo.capture(user_turn(1, MOVED))
    update = {
        "action": "UPDATE",
        "target": a,
        "type": "fact",
        "scope": "project/staging",
        "title": "The staging database listens on port 6543",
        "body": "The staging database listens on port 5433.\n"
        "Since last week: port 6543, for the project.",
        "tags": ["staging"],
        "claims": [(unit(1, 1), "staging moved to port 6543 last week")],
    }
    MemoryRepo.open(path).process(gate_output=answer(MemoryRepo.open(path), update))
    commits["updated"] = head(path)
    on_day(12)
    file = _memory_file(path, a)
    text = (path / file).read_text("utf-8")
    (path / file).write_text(text + "Ask the platform team before changing it.\n", "utf-8")
    git(path, "commit", "-q", "-am", "note who owns the staging port")
    commits["edited"] = head(path)
    on_day(14)
    MemoryRepo.open(path).capture(user_turn(2, PREVIEW))
    supersede = {
        "action": "SUPERSEDE",
        "target": a,
        "type": "fact",
        "scope": "project",
        "title": "Every branch gets a preview environment",
        "body": "Staging was replaced by per-branch previews.",
        "claims": [(unit(2, 1), "replaced staging with a preview environment per branch")],
    }
    (run,) = (
        MemoryRepo.open(path).process(gate_output=answer(MemoryRepo.open(path), supersede)).runs
    )
    b = run.decisions[0].memory_id
    commits["superseded"] = head(path)
    on_day(16)
    MemoryRepo.open(path).capture(user_turn(3, CLUSTER))
    again = {
        "action": "SUPERSEDE",
        "target": b,
        "type": "fact",
        "scope": "project",
        "title": "Previews run on the zephyr cluster",
        "body": "Per-branch previews run on the shared zephyr cluster.",
        "claims": [(unit(3, 1), "Previews now run on the shared cluster called zephyr")],
    }
    (run,) = MemoryRepo.open(path).process(gate_output=answer(MemoryRepo.open(path), again)).runs
    c = run.decisions[0].memory_id
    commits["superseded-again"] = head(path)
    on_day(18)
    MemoryRepo.open(path).capture(user_turn(4, WRONG))
    MemoryRepo.open(path).process()
    wrong = _memory_with_title(path, "office coffee machine")
    on_day(19)
    MemoryRepo.open(path).capture(user_turn(5, RETRACT))
    retract = {
        "action": "RETRACT",
        "target": wrong,
        "claims": [(unit(5, 1), "what I said about the coffee machine")],
    }
    MemoryRepo.open(path).process(gate_output=answer(MemoryRepo.open(path), retract))
    commits["retracted"] = head(path)
    return Story(path=path, a=a, b=b, c=c, retracted=wrong, commits=commits)


def _memory_file(path: Path, memory_id: str) -> str:
    names = git(path, "ls-files", "memories").splitlines()
    (found,) = [name for name in names if name.endswith(f"/{memory_id}.md")]
    return found


def _only_memory(path: Path) -> str:
    (name,) = git(path, "ls-files", "memories").splitlines()
    return name.rsplit("/", 1)[1].removesuffix(".md")


def _memory_with_title(path: Path, words: str) -> str:
    for name in git(path, "ls-files", "memories").splitlines():
        if words in (path / name).read_text("utf-8"):
            return name.rsplit("/", 1)[1].removesuffix(".md")
    raise AssertionError(f"no memory about {words}")
