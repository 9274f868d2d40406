"""The processing state from the derived store gives what reading every capture and
run record gives, whatever happened to the branch or the store's file.

Each case compares ``processing_state`` through the store (as a new ``memgit
process`` computes it: :class:`IndexLookup`), through the tree walk the hooks
use (:class:`TreeWalk`), and a reference computed here from scratch: every
capture and every run record in the tree parsed strictly, every row counted.
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Collection
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest
from test_process import answer, capture, configure, cpath, open_repo, unit, user_turn

from memgit.constants import INDEX_FILE
from memgit.derived import lookup as index_lookup
from memgit.derived.database import SCHEMA_VERSION
from memgit.derived.lexical import LexicalIndex
from memgit.derived.lookup import IndexLookup
from memgit.errors import InvalidInputError
from memgit.evidence import units_of
from memgit.runrecord import parse_run_record
from memgit.state import lookup as state_lookup
from memgit.state.lookup import TreeWalk
from memgit.state.processing import (
    DEFAULT_MAX_DEFERRALS,
    PendingCapture,
    ProcessingState,
    processing_state,
)
from memgit.store.tree import iter_blobs
from memgit.turn import moment, read_capture

from support import git

STORE = Path(".git") / "memgit" / INDEX_FILE


def reference(repo: pygit2.Repository, tree: pygit2.Tree) -> ProcessingState:
    """The processing state from scratch: every capture and every run record parsed."""
    captures = [
        (path, blob, turn, units_of(turn, capture=path, blob=blob))
        for path, blob in iter_blobs(repo, tree, "inbox")
        for turn in [read_capture(repo[blob].data, path=path)]
    ]
    supporting = {u.id for *_, units in captures for u in units if u.can_support}
    processed: set[str] = set()
    deferred: Counter[str] = Counter()
    decided_at: dict[str, float] = {}  # unit -> when the first run deciding it was made
    for path, blob in iter_blobs(repo, tree, "runs"):
        record = parse_run_record(repo[blob].data, path=path)
        # When the run was made: its run ref's commit, else the time its id starts with.
        ref = repo.references.get(f"refs/memgit/runs/{record.run_id}")
        made = (
            datetime.fromtimestamp(repo[ref.target].commit_time, tz=UTC)
            if ref is not None
            else datetime.strptime(record.run_id[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        )
        for row in record.gate_output["coverage"]:
            if row["unit_id"] not in supporting:
                continue
            if row["decision"] == "DEFERRED":
                deferred[row["unit_id"]] += 1
            else:
                processed.add(row["unit_id"])
                earlier = decided_at.get(row["unit_id"], made.timestamp())
                decided_at[row["unit_id"]] = min(earlier, made.timestamp())
    pending: list[PendingCapture] = []
    stuck: list[str] = []
    done: dict[str, float] = {}
    for path, blob, turn, units in captures:
        shown = []
        for u in units:
            closed = u.id in processed or deferred[u.id] >= DEFAULT_MAX_DEFERRALS
            if u.can_support and u.id not in processed and closed:
                stuck.append(u.id)
            shown.append(replace(u, can_support=False) if u.can_support and closed else u)
        if any(u.can_support for u in shown):
            pending.append(
                PendingCapture(path=path, blob=blob, timestamp=turn.timestamp, units=tuple(shown))
            )
        elif not any(u.id in stuck for u in units):
            deciding = [decided_at[u.id] for u in units if u.can_support]
            done[path] = max(deciding) if deciding else moment(turn.timestamp).timestamp()
    pending.sort(key=lambda c: (c.timestamp, c.path))
    return ProcessingState(
        pending=tuple(pending),
        processed=frozenset(processed),
        stuck=tuple(sorted(stuck)),
        done=done,
    )


def state_of(path: Path, rev: str = "HEAD") -> tuple[ProcessingState, pygit2.Tree]:
    """The state as a new process computes it, through the derived store."""
    repo = open_repo(path).git
    tree = repo.revparse_single(rev).peel(pygit2.Tree)
    index = LexicalIndex(repo)
    try:
        state = processing_state(IndexLookup(index), tree, max_deferrals=DEFAULT_MAX_DEFERRALS)
    finally:
        index.close()  # as the process would on exit: the damage tests replace the file
    return state, tree


def assert_matches_reference(path: Path, rev: str = "HEAD") -> ProcessingState:
    state, tree = state_of(path, rev)
    repo = open_repo(path).git
    assert state == reference(repo, tree)
    walked = processing_state(TreeWalk(repo), tree, max_deferrals=DEFAULT_MAX_DEFERRALS)
    assert walked == state
    return state


def refresh(path: Path) -> None:
    index = LexicalIndex(open_repo(path).git)
    index.refresh()
    index.close()


def waiting(state: ProcessingState) -> set[str]:
    return {u.id for c in state.pending for u in c.units if u.can_support}


@pytest.fixture
def history(repo_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Four runs: two with the rules backend, a deferral, and turns left pending."""
    configure(repo_path, gate={"batch_size": 2})
    capture(
        repo_path,
        user_turn(0, "Remember that the build uses make."),
        user_turn(1, "I prefer tabs."),
        user_turn(2, "Nice weather."),
        user_turn(3, "Maybe the other one."),
    )
    assert len(open_repo(repo_path).process(backend="rules").runs) == 2
    capture(repo_path, user_turn(4, "Perhaps later."), user_turn(5, "Remember the port is 8080."))
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1764495060 +0000")
    open_repo(repo_path).process(gate_output=answer(repo_path, deferred=[unit(4)]))
    capture(repo_path, user_turn(6, "Remember the code is 42."))
    return repo_path


class Reads:
    """The captures and run records the lookups read from blobs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.captures: list[str] = []
        self.records: list[str] = []
        for module in (index_lookup, state_lookup):
            real_row, real_coverage = module.capture_row, module.read_coverage
            monkeypatch.setattr(module, "capture_row", self._counting(real_row, self.captures))
            monkeypatch.setattr(
                module, "read_coverage", self._counting(real_coverage, self.records)
            )

    @staticmethod
    def _counting(real, seen):  # type: ignore[no-untyped-def]
        def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(kwargs.get("path", args[0]))
            return real(*args, **kwargs)

        return counting


def test_the_store_gives_the_state_every_record_gives(history: Path) -> None:
    state = assert_matches_reference(history)
    assert (history / STORE).is_file()
    assert {unit(n) for n in (0, 1, 2, 3)} <= state.processed
    assert sorted(waiting(state)) == [unit(4), unit(6)]


def test_a_new_process_on_a_current_store_reads_no_file(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refresh(history)
    reads = Reads(monkeypatch)
    state, _ = state_of(history)
    assert reads.captures == [] and reads.records == []
    assert len(open_repo(history).process(backend="rules").runs) == 1
    # The run's own checks and its state read only what the run added (its record).
    assert reads.captures == []
    assert {path.split("/")[0] for path in reads.records} <= {"runs"}
    assert len(reads.records) <= 2
    reads.records.clear()
    after, _ = state_of(history)  # the process left the store at its commit
    assert reads.records == [] and reads.captures == []
    assert unit(6) in after.processed and unit(6) not in state.processed


def test_a_tree_other_than_the_stamp_reads_only_what_differs(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refresh(history)
    capture(history, user_turn(7, "Remember the door code is 1234."))
    reads = Reads(monkeypatch)
    assert_matches_reference(history)
    # The store's answer read the one new capture; the tree walk (asked second) all.
    assert reads.captures[0] == "inbox/test-agent/64/s1/000007.yaml"
    assert reads.captures.count("inbox/test-agent/64/s1/000007.yaml") == 2
    assert all(path.startswith("runs/") for path in reads.records)


def test_a_removed_run_record_no_longer_counts(history: Path) -> None:
    refresh(history)
    first = next(
        name
        for name in git(history, "ls-files", "runs").split()
        if unit(0) in (history / name).read_text("utf-8")
    )
    git(history, "rm", "-q", first)
    git(history, "commit", "-q", "-m", "forget the first run")
    state = assert_matches_reference(history)
    assert unit(0) not in state.processed and unit(0) in waiting(state)
    refresh(history)
    assert assert_matches_reference(history) == state


def test_a_hand_edited_run_record_counts_as_it_is_now(history: Path) -> None:
    refresh(history)
    record = next(
        name
        for name in git(history, "ls-files", "runs").split()
        if '"DEFERRED"' in (history / name).read_text("utf-8")
    )
    text = (history / record).read_text("utf-8")
    (history / record).write_text(text.replace('"DEFERRED"', '"NO_CHANGE"'), "utf-8")
    git(history, "commit", "-q", "-am", "the deferral was a no-change")
    assert unit(4) in assert_matches_reference(history).processed
    refresh(history)
    assert unit(4) in assert_matches_reference(history).processed


def test_each_branch_counts_its_own_records(history: Path) -> None:
    refresh(history)
    first_run = git(history, "log", "--format=%H", "--grep=Memgit-Run", "--reverse").split()[0]
    git(history, "branch", "older", first_run)
    older = assert_matches_reference(history, "older")
    assert unit(0) in older.processed and unit(2) not in older.processed
    assert unit(2) in assert_matches_reference(history).processed


@pytest.mark.parametrize("damage", ["garbage", "empty", "other-version", "directory"])
def test_a_damaged_store_is_done_without_or_replaced(history: Path, damage: str) -> None:
    expected = assert_matches_reference(history)
    # The fixture's MemoryRepos are gone, but their store connections close only when
    # collected (sqlite3's statement cache makes each a reference cycle): a process
    # still holding the file would see the damage differently than a new one.
    gc.collect()
    store = history / STORE
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    if damage == "garbage":
        store.write_bytes(b"SQLite format 3\0" + os.urandom(4096))
    elif damage == "empty":
        store.write_bytes(b"")
    elif damage == "other-version":
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"import sqlite3; sqlite3.connect({str(store)!r})"
                ".execute('PRAGMA user_version = 99')",
            ],
            check=True,
        )
    else:
        store.unlink()
        store.mkdir()
    for _ in range(2):
        assert assert_matches_reference(history) == expected
    if damage != "directory":  # replaced by a store of this version
        conn = sqlite3.connect(store)
        try:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        finally:
            conn.close()


@pytest.mark.parametrize("current", [True, False], ids=["stamped", "after-the-stamp"])
def test_a_broken_run_record_fails_every_time(history: Path, current: bool) -> None:
    """What cannot be read is an error each time, through the store and the tree walk,
    whether the store took the commit in or corrects its answer by it."""
    refresh(history)
    (history / "runs" / "2026" / "11").mkdir(parents=True, exist_ok=True)
    broken = "runs/2026/11/20261130T100000Z-broken.json"
    (history / broken).write_text('{"format_version": 1}\n', "utf-8")
    git(history, "add", broken)
    git(history, "commit", "-q", "-m", "a broken run record")
    if current:
        refresh(history)
    for _ in range(2):
        with pytest.raises(InvalidInputError) as caught:
            state_of(history)
        assert (caught.value.code, caught.value.path) == ("schema", broken)
    repo = open_repo(history).git
    with pytest.raises(InvalidInputError) as caught:
        processing_state(TreeWalk(repo), repo.head.peel(pygit2.Tree), max_deferrals=3)
    assert (caught.value.code, caught.value.path) == ("schema", broken)


def test_processes_filling_the_store_at_once_agree(history: Path) -> None:
    """Four processes start on a missing store; each gets the reference state."""
    expected = assert_matches_reference(history)
    (history / STORE).unlink()
    script = (
        "import sys, json\n"
        "from memgit import MemoryRepo\n"
        "from memgit.derived.lexical import LexicalIndex\n"
        "from memgit.derived.lookup import IndexLookup\n"
        "from memgit.state.processing import processing_state\n"
        "repo = MemoryRepo.open(sys.argv[1]).git\n"
        "lookup = IndexLookup(LexicalIndex(repo))\n"
        "state = processing_state(lookup, repo.head.peel().tree, max_deferrals=3)\n"
        "print(json.dumps(sorted(state.processed)))\n"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(history)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(4)
    ]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err.decode()
        assert json.loads(out) == sorted(expected.processed)


def test_a_hand_edited_capture_counts_as_it_is_now(history: Path) -> None:
    refresh(history)
    path = next(p for p in git(history, "ls-files", "inbox").split() if p.endswith("000006.yaml"))
    text = (history / path).read_text("utf-8")
    (history / path).write_text(text.replace("the code is 42", "the code is 43"), "utf-8")
    git(history, "commit", "-q", "-am", "a corrected capture")
    assert_matches_reference(history)
    refresh(history)
    assert_matches_reference(history)


def test_units_deferred_too_often_are_stuck(history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for second in (1, 2):
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{1764495060 + 60 * second} +0000")
        open_repo(history).process(gate_output=answer(history, deferred=[unit(4), unit(6)]))
    state = assert_matches_reference(history)
    assert state.stuck == (unit(4),)
    assert unit(6) in waiting(state)


def test_removed_captures_leave_the_state(history: Path) -> None:
    refresh(history)
    gone = [
        p for p in git(history, "ls-files", "inbox").split() if p.endswith(("0.yaml", "6.yaml"))
    ]
    assert len(gone) == 2
    git(history, "rm", "-q", *gone)
    git(history, "commit", "-q", "-m", "two captures removed by hand")
    for _ in range(2):
        state = assert_matches_reference(history)
        assert not {c.path for c in state.pending} & set(gone)
        assert not set(state.done) & set(gone)
        refresh(history)


def test_each_run_leaves_the_state_a_new_process_computes(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns = [
        (None, "rules"),
        ([unit(4), unit(6)], None),  # both deferred: unit 4 for the third time, stuck
        ([], None),  # unit 6 no longer deferred
    ]
    for second, (deferred, backend) in enumerate(turns, start=1):
        capture(history, user_turn(10 + second, f"Remember the number {second}."))
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{1764495060 + 60 * second} +0000")
        memrepo = open_repo(history)
        if backend is not None:
            result = memrepo.process(backend=backend)
        else:
            result = memrepo.process(gate_output=answer(history, deferred=deferred or []))
        state = assert_matches_reference(history)
        assert result.stuck == state.stuck


@pytest.mark.parametrize(
    "cutoff",
    [
        datetime(2025, 11, 30, tzinfo=UTC),
        datetime(2025, 12, 1, tzinfo=UTC),
        datetime(2026, 12, 1, tzinfo=UTC),
    ],
    ids=["before", "between", "after"],
)
def test_done_before_counts_from_when_each_capture_was_processed(
    history: Path, cutoff: datetime
) -> None:
    state = assert_matches_reference(history)
    expected = sorted(path for path, when in state.done.items() if when < cutoff.timestamp())
    assert state.done_before(cutoff) == expected
    assert cpath(0) in state.done


def test_a_processed_capture_is_one_row_of_the_store(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the stamp, the state asks for the coverage rows of open units only: a capture
    whose units are all decided is settled in the store, and the state is the same."""
    refresh(history)
    asked: list[str] = []
    real = index_lookup.table.coverage_of

    def recording(conn: sqlite3.Connection, unit_ids: Collection[str]) -> object:
        asked.extend(unit_ids)
        return real(conn, unit_ids)

    monkeypatch.setattr(index_lookup.table, "coverage_of", recording)
    state = assert_matches_reference(history)
    assert unit(0) in state.processed and cpath(0) in state.done
    assert sorted(asked) == sorted(waiting(state))  # units 4 and 6, nothing processed


def test_the_tree_walk_reads_what_differs_from_the_last_tree(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``memgit verify`` asks one walk of each commit in turn: after the first tree,
    each next one costs the files that differ, and the answers stay the reference's."""
    repo = open_repo(history).git
    commits = [c for c in repo.walk(repo.head.target, pygit2.enums.SortMode.REVERSE)]
    walk = TreeWalk(repo)
    reads = Reads(monkeypatch)
    for number, commit in enumerate(commits):
        before = len(reads.captures) + len(reads.records)
        state = processing_state(walk, commit.tree, max_deferrals=DEFAULT_MAX_DEFERRALS)
        assert state == reference(repo, commit.tree)
        read = len(reads.captures) + len(reads.records) - before
        if number:
            parent = commits[number - 1].tree
            changed = [
                path
                for path in git(
                    history, "diff", "--name-only", str(parent.id), str(commit.tree.id)
                ).split()
                if path.startswith(("inbox/", "runs/"))
            ]
            assert read == len(changed), commit.message


def test_a_committed_capture_with_no_real_time_is_an_error_not_a_crash(history: Path) -> None:
    """A capture committed past the hooks with a timestamp that names no time (and no
    unit to decide, so only its own time says when it was done) is named by both lookups."""
    path = "inbox/test-agent/64/s1/000009.yaml"
    (history / path).write_text(
        "source: test-agent\nsession: s1\nseq: 9\ntimestamp: yesterday\n"
        "messages:\n- role: assistant\n  content: hello\n",
        "utf-8",
    )
    git(history, "add", path)
    git(history, "commit", "-q", "--no-verify", "-m", "a capture with no real time")
    with pytest.raises(InvalidInputError) as caught:
        state_of(history)
    assert (caught.value.code, caught.value.path) == ("schema", path)
    repo = open_repo(history).git
    with pytest.raises(InvalidInputError) as walked:
        processing_state(TreeWalk(repo), repo.head.peel(pygit2.Tree), max_deferrals=3)
    assert (walked.value.code, walked.value.field) == ("schema", "timestamp")
