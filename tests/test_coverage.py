"""The tables in ``.git/memgit/coverage.sqlite`` give the processing state that
reading every capture and run record gives, whatever happened to the branch or
the file.

Each case compares ``processing_state`` (through the tables, as a new process
computes it) with a reference computed here from scratch: every capture and
every run record in the tree parsed, every coverage row counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest
from test_process import (
    answer,
    capture,
    configure,
    cpath,
    open_repo,
    pending_units,
    unit,
    user_turn,
)

from memgit import pending
from memgit.capture.turn import moment
from memgit.evidence import units_of
from memgit.index import coverage
from memgit.parsecache import capture_turn
from memgit.pending import (
    DEFAULT_MAX_DEFERRALS,
    PendingCapture,
    ProcessingState,
    processing_state,
)
from memgit.runrecord import parse_run_record
from memgit.store.tree import iter_blobs

from support import git

TABLE = Path(".git") / "memgit" / coverage.COVERAGE_FILE


def reference(repo: pygit2.Repository, tree: pygit2.Tree) -> ProcessingState:
    """The processing state from scratch: every capture and every run record parsed."""
    captures = [
        (path, blob, turn, units_of(turn, capture=path, blob=blob))
        for path, blob in iter_blobs(repo, tree, "inbox")
        for turn in [capture_turn(repo, blob, path=path)]
    ]
    supporting = {u.id for *_, units in captures for u in units if u.can_support}
    processed: set[str] = set()
    deferred: Counter[str] = Counter()
    decided_at: dict[str, float] = {}  # unit -> when the first run deciding it was made
    for path, blob in iter_blobs(repo, tree, "runs"):
        record = parse_run_record(repo[blob].data, path=path)
        made = datetime.strptime(record.run_id[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        for row in record.gate_output["coverage"]:
            if row["unit_id"] not in supporting:
                continue
            if row["decision"] == "DEFERRED":
                deferred[row["unit_id"]] += 1
            else:
                processed.add(row["unit_id"])
                earlier = decided_at.get(row["unit_id"], made.timestamp())
                decided_at[row["unit_id"]] = min(earlier, made.timestamp())
    pending_: list[PendingCapture] = []
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
            pending_.append(
                PendingCapture(path=path, blob=blob, timestamp=turn.timestamp, units=tuple(shown))
            )
        elif not any(u.id in stuck for u in units):
            deciding = [decided_at[u.id] for u in units if u.can_support]
            done[path] = max(deciding) if deciding else moment(turn.timestamp).timestamp()
    pending_.sort(key=lambda c: (c.timestamp, c.path))
    return ProcessingState(
        pending=tuple(pending_),
        processed=frozenset(processed),
        stuck=tuple(sorted(stuck)),
        fully_processed=done,
    )


def state_of(path: Path, rev: str = "HEAD") -> tuple[ProcessingState, pygit2.Tree]:
    """The state as a new process computes it (nothing remembered in memory)."""
    pending._states.clear()
    repo = open_repo(path).git
    tree = repo.revparse_single(rev).peel(pygit2.Tree)
    return processing_state(repo, tree, max_deferrals=DEFAULT_MAX_DEFERRALS), tree


def assert_matches_reference(path: Path, rev: str = "HEAD") -> ProcessingState:
    state, tree = state_of(path, rev)
    assert state == reference(open_repo(path).git, tree)
    return state


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


def test_the_table_gives_the_state_every_record_gives(history: Path) -> None:
    state = assert_matches_reference(history)
    assert (history / TABLE).is_file()
    assert {unit(n) for n in (0, 1, 2, 3)} <= state.processed_units()
    waiting = sorted(u.id for c in state.pending for u in c.units if u.can_support)
    assert waiting == [unit(4), unit(6)]


def test_a_new_run_reads_no_record(history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_matches_reference(history)
    read: list[str] = []
    real = pending._coverage_rows

    def counting(repo: pygit2.Repository, path: str, blob: str) -> tuple[tuple[str, str], ...]:
        read.append(path)
        return real(repo, path, blob)

    monkeypatch.setattr(pending, "_coverage_rows", counting)
    walked: list[int] = []
    real_diff = coverage.diff_trees

    def diffing(*args: object) -> dict[str, object]:
        changes = real_diff(*args)  # type: ignore[arg-type]
        walked.append(len(changes))
        return changes  # type: ignore[return-value]

    monkeypatch.setattr(coverage, "diff_trees", diffing)
    assert_matches_reference(history)
    assert read == [] and walked == []  # this tree is ingested
    assert len(open_repo(history).process(backend="rules").runs) == 1
    assert read == []  # the run took its own record in, its rows known
    assert walked == [1]  # the new tree against the last one: one new file
    walked.clear()
    state = assert_matches_reference(history)
    assert walked == []  # a new process finds the run's tree taken in
    assert unit(6) in state.processed_units()


def test_a_removed_run_record_no_longer_counts(history: Path) -> None:
    assert_matches_reference(history)
    first = next(
        name
        for name in git(history, "ls-files", "runs").split()
        if unit(0) in (history / name).read_text("utf-8")
    )
    git(history, "rm", "-q", first)
    git(history, "commit", "-q", "-m", "forget the first run")
    state = assert_matches_reference(history)
    assert unit(0) not in state.processed_units()
    assert unit(0) in {u.id for c in state.pending for u in c.units if u.can_support}


def test_a_hand_edited_run_record_counts_as_it_is_now(history: Path) -> None:
    assert_matches_reference(history)
    record = next(
        name
        for name in git(history, "ls-files", "runs").split()
        if '"DEFERRED"' in (history / name).read_text("utf-8")
    )
    text = (history / record).read_text("utf-8")
    (history / record).write_text(text.replace('"DEFERRED"', '"NO_CHANGE"'), "utf-8")
    git(history, "commit", "-q", "-am", "the deferral was a no-change")
    state = assert_matches_reference(history)
    assert unit(4) in state.processed_units()


def test_each_branch_counts_its_own_records(history: Path) -> None:
    assert_matches_reference(history)
    first_run = git(history, "log", "--format=%H", "--grep=Memgit-Run", "--reverse").split()[0]
    git(history, "branch", "older", first_run)
    older = assert_matches_reference(history, "older")
    assert unit(0) in older.processed_units() and unit(2) not in older.processed_units()
    assert unit(2) in assert_matches_reference(history).processed_units()


@pytest.mark.parametrize(
    "damage",
    ["garbage", "empty", "other-version", "directory"],
)
def test_a_damaged_table_is_done_without_or_replaced(history: Path, damage: str) -> None:
    expected = assert_matches_reference(history)
    table = history / TABLE
    for suffix in ("-wal", "-shm"):
        Path(f"{table}{suffix}").unlink(missing_ok=True)
    if damage == "garbage":
        table.write_bytes(b"SQLite format 3\0" + os.urandom(4096))
    elif damage == "empty":
        table.write_bytes(b"")
    elif damage == "other-version":
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"import sqlite3; sqlite3.connect({str(table)!r})"
                ".execute('PRAGMA user_version = 99')",
            ],
            check=True,
        )
    else:
        table.unlink()
        table.mkdir()
    for _ in range(2):
        state = assert_matches_reference(history)
        assert state == expected
    if damage != "directory":
        assert table.is_file() and table.read_bytes().startswith(b"SQLite format 3\0")


def test_a_broken_run_record_fails_every_time(history: Path) -> None:
    """What cannot be read is never marked ingested: the error comes back each time."""
    assert_matches_reference(history)
    (history / "runs" / "2026" / "11").mkdir(parents=True, exist_ok=True)
    broken = "runs/2026/11/20261130T100000Z-broken.json"
    (history / broken).write_text('{"format_version": 1}\n', "utf-8")
    git(history, "add", broken)
    git(history, "commit", "-q", "-m", "a broken run record")
    for _ in range(2):
        with pytest.raises(Exception) as caught:
            state_of(history)
        assert getattr(caught.value, "code", None) == "schema"


def test_processes_filling_the_table_at_once_agree(history: Path) -> None:
    """Four processes start on a missing table; each gets the reference state."""
    expected = assert_matches_reference(history)
    (history / TABLE).unlink()
    script = (
        "import sys, json\n"
        "from memgit import MemoryRepo\n"
        "from memgit.pending import processing_state\n"
        "repo = MemoryRepo.open(sys.argv[1]).git\n"
        "state = processing_state(repo, repo.head.peel().tree, max_deferrals=3)\n"
        "print(json.dumps(sorted(state.processed_units())))\n"
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
        assert out.decode().strip() == str(sorted(expected.processed_units())).replace("'", '"')


def test_only_new_captures_are_read_again(history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_matches_reference(history)
    summarized: list[str] = []
    real = pending._summary

    def counting(repo: pygit2.Repository, path: str, blob: str) -> object:
        summarized.append(path)
        return real(repo, path, blob)

    monkeypatch.setattr(pending, "_summary", counting)
    assert_matches_reference(history)
    assert summarized == []
    capture(history, user_turn(7, "Remember the door code is 1234."))
    assert_matches_reference(history)
    assert summarized == ["inbox/test-agent/64/s1/000007.yaml"]


def test_a_hand_edited_capture_counts_as_it_is_now(history: Path) -> None:
    assert_matches_reference(history)
    path = next(p for p in git(history, "ls-files", "inbox").split() if p.endswith("000006.yaml"))
    text = (history / path).read_text("utf-8")
    (history / path).write_text(text.replace("the code is 42", "the code is 43"), "utf-8")
    git(history, "commit", "-q", "-am", "a corrected capture")
    assert_matches_reference(history)


def test_units_deferred_too_often_are_stuck(history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for second in (1, 2):
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{1764495060 + 60 * second} +0000")
        open_repo(history).process(gate_output=answer(history, deferred=[unit(4), unit(6)]))
    state = assert_matches_reference(history)
    assert state.stuck == (unit(4),)
    assert unit(6) in {u.id for c in state.pending for u in c.units if u.can_support}


def test_removed_captures_leave_the_state(history: Path) -> None:
    assert_matches_reference(history)
    gone = [
        p for p in git(history, "ls-files", "inbox").split() if p.endswith(("0.yaml", "6.yaml"))
    ]
    assert len(gone) == 2
    git(history, "rm", "-q", *gone)
    git(history, "commit", "-q", "-m", "two captures removed by hand")
    state = assert_matches_reference(history)
    assert not {c.path for c in state.pending} & set(gone)
    assert not set(state.done_captures()) & set(gone)


def test_a_runs_own_commit_gets_the_state_computing_it_afresh_gives(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state of a run's commit is derived from the state it was planned on plus the
    run's coverage rows (no reading); it must be the state a new process computes."""
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
            memrepo.process(backend=backend)
        else:
            memrepo.process(gate_output=answer(history, deferred=deferred or []))
        repo = memrepo.git
        tree = repo.head.peel(pygit2.Tree)
        derived = pending._states[(repo.path, str(tree.id), DEFAULT_MAX_DEFERRALS)]
        assert derived.tally is not None  # made by advance_state, or computed after
        assert derived == reference(repo, tree)


# ---------------------------------------------------------------- settled folders

DONE = "done"  # a session whose turns are all processed


@pytest.fixture
def settled(history: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``history``, plus a session folder of three turns, all processed by one run made
    at SETTLED_AT (the rest of ``history`` was processed a year before)."""
    configure(history, gate={"batch_size": 10}, inbox={"retention_days": 36500})
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{int(SETTLED_AT.timestamp())} +0000")
    capture(
        history,
        *(
            user_turn(n, text, session=DONE, timestamp=f"2026-11-{n:02d}T10:00:00Z")
            for n, text in [(1, "Remember the cat is Tom."), (2, "Nice."), (3, "I prefer tea.")]
        ),
    )
    done = [unit(n, session=DONE) for n in (1, 2, 3)]
    open_repo(history).process(
        gate_output=answer(history, deferred=[u for u in pending_units(history) if u not in done])
    )
    state = assert_matches_reference(history)  # the first state marks the folder settled
    assert not state.settled
    return history


SETTLED_AT = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)


def settled_folders(path: Path) -> list[str]:
    state = assert_matches_reference(path)
    return [folder.path for folder in state.settled]


def done_folder(path: Path) -> str:
    return cpath(1, session=DONE).rpartition("/")[0]


def test_a_settled_folder_is_taken_whole(settled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its captures are not listed and its units not asked about; the state is the same."""
    asked: list[str] = []
    real = coverage.StateTables.unit_coverage

    def recording(self: coverage.StateTables, tree: pygit2.Tree, unit_ids, rows_of):  # type: ignore[no-untyped-def]
        asked.extend(unit_ids)
        return real(self, tree, unit_ids, rows_of)

    monkeypatch.setattr(coverage.StateTables, "unit_coverage", recording)
    assert settled_folders(settled) == [done_folder(settled)]
    assert asked and not {u for u in asked if f"/{DONE}/" in u}
    state, _ = state_of(settled)
    assert unit(1, session=DONE) in state.processed_units()
    assert unit(1, session=DONE) not in state.processed  # never read
    assert cpath(2, session=DONE) in state.done_captures()


def _records_covering(path: Path, unit_id: str) -> list[str]:
    return [
        name
        for name in git(path, "ls-files", "runs").split()
        if f'"{unit_id}"' in (path / name).read_text("utf-8")
    ]


def test_a_settled_folder_without_its_record_is_read_again(settled: Path) -> None:
    assert settled_folders(settled) == [done_folder(settled)]
    (record,) = _records_covering(settled, unit(1, session=DONE))
    git(settled, "rm", "-q", record)
    git(settled, "commit", "-q", "-m", "forget the run")
    assert settled_folders(settled) == []
    state, _ = state_of(settled)
    waiting = {u.id for c in state.pending for u in c.units if u.can_support}
    assert {unit(n, session=DONE) for n in (1, 2, 3)} <= waiting


def test_a_settled_folder_whose_record_changed_is_read_again(settled: Path) -> None:
    assert settled_folders(settled) == [done_folder(settled)]
    (record,) = _records_covering(settled, unit(2, session=DONE))
    data = json.loads((settled / record).read_text("utf-8"))
    for row in data["gate_output"]["coverage"]:
        if row["unit_id"] == unit(2, session=DONE):
            row.update(decision="DEFERRED", reason="needs-context")
    (settled / record).write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    git(settled, "commit", "-q", "-am", "the run deferred turn 2 after all")
    assert settled_folders(settled) == []
    state, _ = state_of(settled)
    assert [c.path for c in state.pending if c.path.startswith(done_folder(settled))] == [
        cpath(2, session=DONE)
    ]


def test_a_settled_folder_counts_only_on_a_branch_with_its_record(settled: Path) -> None:
    assert settled_folders(settled) == [done_folder(settled)]
    before_run = git(settled, "rev-parse", "HEAD~1").strip()
    git(settled, "branch", "before-run", before_run)
    state = assert_matches_reference(settled, "before-run")
    assert not state.settled
    assert unit(3, session=DONE) not in state.processed_units()


def test_a_changed_settled_folder_is_read_again(settled: Path) -> None:
    assert settled_folders(settled) == [done_folder(settled)]
    capture(settled, user_turn(4, "Remember the dog is Rex.", session=DONE))
    assert settled_folders(settled) == []
    state, _ = state_of(settled)
    assert cpath(4, session=DONE) in {c.path for c in state.pending}


@pytest.mark.parametrize(
    "cutoff",
    [
        datetime(2026, 11, 2, 9, 0, tzinfo=UTC),
        SETTLED_AT,
        datetime(2026, 11, 2, 12, 1, tzinfo=UTC),
        datetime(2026, 12, 1, tzinfo=UTC),
    ],
    ids=["before", "at", "after", "month-after"],
)
def test_retention_reads_a_settled_folder_only_when_processed_long_enough_ago(
    settled: Path, monkeypatch: pytest.MonkeyPatch, cutoff: datetime
) -> None:
    """``done_before`` gives what the full list gives, counting from when each capture was
    processed (its turns are from early November, but were processed at SETTLED_AT), and
    reads the settled folder only if its captures were processed before the cutoff."""
    assert settled_folders(settled) == [done_folder(settled)]
    state, tree = state_of(settled)
    done = reference(open_repo(settled).git, tree).done_captures()
    expected = sorted(path for path, when in done.items() if when < cutoff.timestamp())
    read: list[str] = []
    real = coverage.SettledFolder.processed_at

    def recording(self: coverage.SettledFolder) -> dict[str, float]:
        read.append(self.path)
        return real(self)

    monkeypatch.setattr(coverage.SettledFolder, "processed_at", recording)
    assert state.done_before(cutoff) == expected
    old_enough = cutoff > SETTLED_AT
    assert read == ([done_folder(settled)] if old_enough else [])
    assert (cpath(1, session=DONE) in expected) == old_enough
    assert cpath(0) in expected  # processed a year earlier, in a folder not settled
