"""The memory-aware merge driver, run by a real ``git merge`` in a repository where
``memgit init`` registered it (and committed the ``.gitattributes`` lines).

Each test commits a base, changes one file on two branches with the git CLI, and merges
them both ways: the result must not depend on which clone merges.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memgit import MemoryRepo
from memgit.memory import Memory, Source, Supersedes, read_memory, render_memory
from memgit.merge import merge_file

from support import git

DRIVER = "memgit.sharing.merge_driver"
BLOB = "0123456789abcdef0123456789abcdef01234567"
AT = "memories/user/ab/abcdefghjk01.md"
RUN_AT = "runs/2026/11/20261130T103500Z-k3v9x2.json"
CAPTURE_AT = "inbox/test-agent/3f/s1/000000.yaml"
MEMORY = Memory(
    id="abcdefghjk01",
    type="preference",
    scope="user",
    title="Runs the linter before every commit",
    body="Run ruff before every commit.\n",
    created="2026-11-30T10:00:00Z",
    updated="2026-11-30T10:00:00Z",
    tags=("lint",),
    sources=(
        Source(
            capture="inbox/test-agent/3f/s1/000000.yaml",
            unit="test-agent/s1/0#0",
            quote="run the linter before every commit",
            blob=BLOB,
        ),
    ),
)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "memory"
    MemoryRepo.init(path)
    return path


def commit_file(repo: Path, at: str, content: str | None, message: str) -> None:
    target = repo / at
    if content is None:
        git(repo, "rm", "-q", at)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, "utf-8")
        git(repo, "add", at)
    git(repo, "commit", "-q", "--no-verify", "-m", message)


def two_sides(repo: Path, at: str, base: str | None, ours: str, theirs: str) -> None:
    """main holds ``ours``, branch ``other`` holds ``theirs``, both from ``base``."""
    if base is not None:
        commit_file(repo, at, base, "base")
    git(repo, "switch", "-q", "-c", "other")
    commit_file(repo, at, theirs, "theirs")
    git(repo, "switch", "-q", "main")
    commit_file(repo, at, ours, "ours")


def merge(repo: Path, branch: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), "merge", "--no-edit", "--no-verify", branch],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def merge_both_ways(repo: Path, at: str) -> tuple[str, str, subprocess.CompletedProcess[str]]:
    """Merge other into main, and main into other (from the same two tips)."""
    ours_tip = git(repo, "rev-parse", "main").strip()
    done = merge(repo, "other")
    assert done.returncode == 0, done.stdout + done.stderr
    on_main = (repo / at).read_text("utf-8")
    git(repo, "switch", "-q", "other")
    back = merge(repo, ours_tip)
    assert back.returncode == 0, back.stdout + back.stderr
    return on_main, (repo / at).read_text("utf-8"), done


def text(memory: Memory) -> str:
    return render_memory(memory)


def test_identical_memories_added_on_both_sides_merge_cleanly(work: Path) -> None:
    two_sides(work, AT, None, text(MEMORY), text(MEMORY))
    on_main, on_other, _ = merge_both_ways(work, AT)
    assert on_main == on_other == text(MEMORY)


def test_one_memory_made_twice_at_two_times_keeps_the_earlier_created_and_later_updated(
    work: Path,
) -> None:
    """Two clones made the same memory 2 s apart (issue 13): add/add, no conflict."""
    first = replace(MEMORY, created="2026-11-30T10:00:00Z", updated="2026-11-30T10:00:00Z")
    second = replace(MEMORY, created="2026-11-30T10:00:02Z", updated="2026-11-30T10:00:02Z")
    two_sides(work, AT, None, text(first), text(second))
    on_main, on_other, _ = merge_both_ways(work, AT)
    assert on_main == on_other
    merged = read_memory(on_main, path=AT)
    assert (merged.created, merged.updated) == ("2026-11-30T10:00:00Z", "2026-11-30T10:00:02Z")


def test_tags_edited_on_both_sides_are_unioned(work: Path) -> None:
    ours = replace(MEMORY, tags=("lint", "python"), updated="2026-12-01T09:00:00Z")
    theirs = replace(MEMORY, tags=("ci", "lint"), updated="2026-12-01T08:00:00Z")
    two_sides(work, AT, text(MEMORY), text(ours), text(theirs))
    on_main, on_other, _ = merge_both_ways(work, AT)
    assert on_main == on_other
    merged = read_memory(on_main, path=AT)
    assert merged.tags == ("ci", "lint", "python")
    assert merged.updated == "2026-12-01T09:00:00Z"
    assert merged.body == MEMORY.body
    assert on_main == text(replace(MEMORY, tags=merged.tags, updated=merged.updated))


def test_one_memory_replaced_from_two_tips_keeps_one_supersedes_entry(work: Path) -> None:
    """Two clones decided the same turn from different tips: the same successor names two
    commits for the memory it replaces. The merge keeps one, the same on every clone."""
    old_id = "zzzzzzzzzz01"
    first, second = ("1" * 40, "2" * 40)
    ours = replace(MEMORY, supersedes=(Supersedes(id=old_id, commit=second),))
    theirs = replace(MEMORY, supersedes=(Supersedes(id=old_id, commit=first),))
    two_sides(work, AT, None, text(ours), text(theirs))
    on_main, on_other, _ = merge_both_ways(work, AT)
    assert on_main == on_other
    assert read_memory(on_main, path=AT).supersedes == (Supersedes(id=old_id, commit=first),)


def test_a_change_on_one_side_only_is_taken_as_it_is(work: Path) -> None:
    ours = replace(MEMORY, title="Runs ruff before every commit")
    theirs = replace(MEMORY, tags=("lint", "ruff"))
    two_sides(work, AT, text(MEMORY), text(ours), text(theirs))
    on_main, on_other, _ = merge_both_ways(work, AT)
    assert on_main == on_other == text(replace(ours, tags=("lint", "ruff")))


def test_a_body_edited_on_both_sides_is_a_conflict_with_markers(work: Path) -> None:
    ours = replace(MEMORY, body="Run ruff and mypy before every commit.\n", tags=("lint", "a"))
    theirs = replace(MEMORY, body="Run ruff before every push.\n", tags=("lint", "b"))
    two_sides(work, AT, text(MEMORY), text(ours), text(theirs))
    before = git(work, "rev-parse", "HEAD")
    done = merge(work, "other")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"CONFLICT (content): Merge conflict in {AT}" in done.stdout
    assert git(work, "rev-parse", "HEAD") == before
    result = (work / AT).read_text("utf-8")
    assert (
        "<<<<<<< ours\n"
        "Run ruff and mypy before every commit.\n"
        "=======\n"
        "Run ruff before every push.\n"
        ">>>>>>> theirs\n"
    ) in result
    # What could be merged is: the front matter is one, with the tags unioned.
    front = result.split("<<<<<<<")[0]
    assert "- a\n- b\n- lint\n" in front
    assert git(work, "diff", "--name-only", "--diff-filter=U").split() == [AT]


def test_a_title_changed_differently_on_both_sides_is_a_conflict(work: Path) -> None:
    ours = replace(MEMORY, title="Runs ruff before every commit")
    theirs = replace(MEMORY, title="Lints before committing")
    two_sides(work, AT, text(MEMORY), text(ours), text(theirs))
    done = merge(work, "other")
    assert done.returncode == 1
    result = (work / AT).read_text("utf-8")
    assert (
        "<<<<<<< ours\ntitle: Runs ruff before every commit\n=======\n"
        "title: Lints before committing\n>>>>>>> theirs\n"
    ) in result


def test_an_unreadable_memory_falls_back_to_a_plain_conflict(work: Path) -> None:
    broken = text(MEMORY).replace("title: Runs", "title: [Runs", 1)
    theirs = text(replace(MEMORY, body="Run ruff before every push.\n"))
    two_sides(work, AT, text(MEMORY), broken, theirs)
    done = merge(work, "other")
    assert done.returncode == 1, done.stdout + done.stderr
    result = (work / AT).read_text("utf-8")
    assert "<<<<<<< ours\n" in result and ">>>>>>> theirs\n" in result
    assert "title: [Runs" in result and "Run ruff before every push." in result
    assert "Traceback" not in done.stderr


def test_run_records_added_on_both_sides_never_conflict(work: Path) -> None:
    """Different bytes for one run record: the bytewise smaller wins in both directions,
    with a warning naming the path."""
    record = {"run_id": "20261130T103500Z-k3v9x2", "inputs": [], "decisions": []}
    ours = json.dumps({**record, "backend": "rules"}, indent=2) + "\n"
    theirs = json.dumps({**record, "backend": "host"}, indent=2) + "\n"
    two_sides(work, RUN_AT, None, ours, theirs)
    on_main, on_other, done = merge_both_ways(work, RUN_AT)
    assert on_main == on_other == min(ours, theirs)
    assert f"memgit: {RUN_AT}: both sides changed it differently; kept" in done.stderr


def test_captures_added_on_both_sides_never_conflict(work: Path) -> None:
    ours = "source: test-agent\nseq: 0\nmessages: [a]\n"
    theirs = "source: test-agent\nseq: 0\nmessages: [b]\n"
    two_sides(work, CAPTURE_AT, None, ours, theirs)
    on_main, on_other, _ = merge_both_ways(work, CAPTURE_AT)
    assert on_main == on_other == min(ours, theirs)


def test_the_driver_called_as_git_calls_it(tmp_path: Path) -> None:
    """%O %A %B %P: an empty base (add/add), the result written to %A, exit 0."""
    base, ours, theirs = tmp_path / "O", tmp_path / "A", tmp_path / "B"
    base.write_bytes(b"")
    ours.write_text(text(replace(MEMORY, tags=("x",))), "utf-8")
    theirs.write_text(text(replace(MEMORY, tags=("y",))), "utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memgit.sharing.merge_driver",
            str(base),
            str(ours),
            str(theirs),
            AT,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert read_memory(ours.read_text("utf-8"), path=AT).tags == ("x", "y")


# --- properties: any two clones end with the same bytes --------------------------------

TAGS = st.lists(st.sampled_from(["a", "b", "ci", "lint", "python"]), unique=True, max_size=4)
TIMES = st.sampled_from(
    ["2026-11-30T10:00:00Z", "2026-11-30T10:00:02Z", "2026-11-30T11:00:00+01:00"]
)
BODIES = st.sampled_from(["Run ruff.\n", "Run ruff and mypy.\n", "Run ruff.\n\nAlways.\n"])
TITLES = st.sampled_from([MEMORY.title, "Lints before committing"])


@st.composite
def versions(draw: st.DrawFn) -> bytes:
    memory = replace(
        MEMORY,
        tags=tuple(draw(TAGS)),
        created=draw(TIMES),
        updated=draw(TIMES),
        body=draw(BODIES),
        title=draw(TITLES),
    )
    return text(memory).encode("utf-8")


@given(base=st.one_of(st.just(b""), versions()), ours=versions(), theirs=versions())
@settings(max_examples=300, deadline=None)
def test_a_merge_is_the_same_whichever_side_merges(base: bytes, ours: bytes, theirs: bytes) -> None:
    one, other = merge_file(base, ours, theirs, path=AT), merge_file(base, theirs, ours, path=AT)
    assert one.conflict == other.conflict
    if base in (ours, theirs):  # one side unchanged: the other, as it is
        assert one.data == other.data == (theirs if base == ours else ours)
    elif not one.conflict:
        assert one.data == other.data
        merged = read_memory(one.data, path=AT)
        created = [moment(read_memory(side, path=AT).created) for side in (ours, theirs)]
        updated = [moment(read_memory(side, path=AT).updated) for side in (ours, theirs)]
        assert (moment(merged.created), moment(merged.updated)) == (min(created), max(updated))
    else:
        assert b"<<<<<<< ours\n" in one.data and b">>>>>>> theirs\n" in one.data


@given(base=st.binary(max_size=200), ours=st.binary(max_size=200), theirs=st.binary(max_size=200))
@settings(max_examples=300, deadline=None)
def test_any_bytes_merge_without_crashing_or_losing_a_side(
    base: bytes, ours: bytes, theirs: bytes
) -> None:
    for path in (AT, RUN_AT, CAPTURE_AT, "notes.txt"):
        merged = merge_file(base, ours, theirs, path=path)
        if merged.conflict:
            for side in (ours, theirs):
                for line in side.splitlines():
                    assert line in merged.data
        else:
            assert merged.data in (ours, theirs) or path == AT


def moment(timestamp: str | None) -> datetime:
    assert timestamp is not None
    return datetime.fromisoformat(timestamp)
