"""The recall index follows Git by itself: tree-stamped refresh, the working-tree
overlay, and an index file that is rebuilt whenever it cannot be trusted.

Repositories are changed with the git CLI, as a person changes them; the
question after each change is always the same: does recall now answer exactly
as a freshly built index would?
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memgit.derived.lexical import LexicalIndex
from memgit.governance.checks import Governance
from memgit.recall import RecallOptions, recall
from memgit.repo import MemoryRepo
from memgit.state.lookup import TreeWalk
from memgit.store.engine import Change, publish

from recall_fixtures import (
    commit_all,
    comparable,
    head,
    ids,
    memory,
    turn,
    turn_keys,
    write_memory,
)
from support import git, memgit_cli

QUERIES = ("postgres database", "pytest testing", "deploy friday", "咖啡", "coffee tea")


@pytest.fixture(autouse=True)
def overlay_every_query(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests edit files and query at once; look at the working tree every time."""
    monkeypatch.setenv("MEMGIT_OVERLAY_TTL", "0")


@pytest.fixture
def seeded(repo_path: Path) -> Path:
    write_memory(
        repo_path,
        memory(
            "pgversion01",
            "Staging uses Postgres 16",
            "Staging runs Postgres 16; use its syntax for migrations.",
            scope="project/billing",
            tags=("database",),
        ),
    )
    write_memory(
        repo_path,
        memory(
            "pytestpref1",
            "Prefers pytest",
            "The user prefers pytest over unittest for every Python test.",
            type="preference",
        ),
    )
    write_memory(
        repo_path,
        memory(
            "deployrule1",
            "No deploys on Friday",
            "Never deploy to production on a Friday afternoon.",
            scope="project/billing",
            type="decision",
        ),
    )
    write_memory(
        repo_path,
        memory("coffeepref1", "喜欢喝咖啡", "用户每天早上喝咖啡，不喜欢喝茶。", type="preference"),
    )
    commit_all(repo_path, "seed memories")
    MemoryRepo.open(repo_path).capture_many(
        [
            turn(0, "Which database does staging use? Postgres, I think."),
            turn(1, "We never deploy on a Friday.", role="assistant"),
        ]
    )
    return repo_path


def fresh_answers(path: Path, tmp_path: Path) -> list[str]:
    """The answers of an index built from nothing, in a file of its own."""
    fresh = tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*')))}.sqlite"
    index = LexicalIndex(MemoryRepo.open(path).git, path=fresh)
    try:
        return [comparable(recall(index, q, RecallOptions(k=5))) for q in QUERIES]
    finally:
        index.close()


def answers(repo: MemoryRepo) -> list[str]:
    return [comparable(repo.recall(q, k=5)) for q in QUERIES]


def assert_matches_fresh(path: Path, tmp_path: Path, repo: MemoryRepo | None = None) -> None:
    repo = repo or MemoryRepo.open(path)
    assert answers(repo) == fresh_answers(path, tmp_path)


# --- building and refreshing -------------------------------------------------------


def test_first_recall_builds_the_index_in_the_git_directory(seeded: Path) -> None:
    repo = MemoryRepo.open(seeded)
    pack = repo.recall("postgres")
    assert ids(pack) == ["pgversion01"]
    # The reply after the turn that names Postgres ranks too, through its context.
    assert turn_keys(pack) == [("s1", 0, 0), ("s1", 1, 0)]
    assert [(t.matched_terms, t.context_terms) for t in pack.turns] == [
        (("postgres",), ()),
        ((), ("postgres",)),
    ]
    index = seeded / ".git" / "memgit" / "index.sqlite"
    assert index.exists()
    assert git(seeded, "status", "--porcelain", "--ignored") == ""
    status = repo.index_status()
    assert not status.stale
    assert status.indexed_tree == git(seeded, "rev-parse", "HEAD^{tree}").strip()
    assert status.counts == {
        "memories": 4,
        "captures": 2,
        "messages": 2,
        "archived": 0,
        "retired": 0,
        "problems": 0,
    }


def test_memgit_writes_are_seen_and_refreshed_by_tree_diff(seeded: Path, tmp_path: Path) -> None:
    repo = MemoryRepo.open(seeded)
    repo.recall("postgres")
    repo.capture(turn(2, "Remember: the billing cache is Redis 7."))
    value = memory("rediscache1", "Billing cache is Redis 7", scope="project/billing")
    publish(
        repo.git,
        lambda tip: Change(
            files={value.path: write_memory(tmp_path, value).read_bytes()}, message="memory"
        ),
        guard=Governance(TreeWalk(repo.git)),
    )
    index = repo._recall_index()
    stats = index.refresh()
    assert stats is not None and not stats.full
    # The new memory, the new capture, and the turn before it (whose context changed).
    assert stats.paths == 3
    pack = repo.recall("redis")
    # pgversion01 (tagged database) follows through the recall vocabulary (redis is a kind
    # of database); only the new memory holds the word itself.
    assert ids(pack) == ["rediscache1", "pgversion01"]
    assert pack.memories[1].matched_terms == () and pack.memories[1].expanded_terms
    own = [t.turn.seq for t in pack.turns if t.matched_terms or t.context_terms]
    assert own == [2, 1]  # 1 through its context
    assert_matches_fresh(seeded, tmp_path, repo)


def test_refresh_cost_follows_the_change_not_the_repository(repo_path: Path) -> None:
    for number in range(60):
        write_memory(repo_path, memory(f"bulk{number:04d}", f"Bulk memory {number}"))
    commit_all(repo_path)
    repo = MemoryRepo.open(repo_path)
    index = repo._recall_index()
    assert index.refresh().full  # type: ignore[union-attr]
    write_memory(repo_path, memory("bulk0007", "Bulk memory seven, edited"))
    (repo_path / memory("bulk0008", "x").path).unlink()
    commit_all(repo_path)
    stats = index.refresh()
    assert stats is not None and not stats.full and stats.paths == 2
    assert index.refresh() is None


# --- external git operations ------------------------------------------------------


def _branch_setup(path: Path) -> None:
    git(path, "switch", "-q", "-c", "side")
    write_memory(path, memory("sidememory1", "Side branch uses coffee beans from Kenya"))
    commit_all(path, "side memory")
    git(path, "switch", "-q", "main")


def _op_checkout(path: Path) -> None:
    git(path, "checkout", "-q", "HEAD~1")


def _op_reset_hard(path: Path) -> None:
    git(path, "reset", "-q", "--hard", "HEAD~1")


def _op_amend(path: Path) -> None:
    write_memory(path, memory("pytestpref1", "Prefers pytest and hypothesis", type="preference"))
    git(path, "add", "-A")
    git(path, "commit", "-q", "--amend", "-m", "amended")


def _op_rebase(path: Path) -> None:
    _branch_setup(path)
    git(path, "switch", "-q", "side")
    git(path, "rebase", "-q", "main")
    git(path, "switch", "-q", "main")
    git(path, "merge", "-q", "--ff-only", "side")


def _op_pull(path: Path) -> None:
    clone = path.parent / "clone"
    git(path.parent, "clone", "-q", str(path), str(clone))
    write_memory(clone, memory("fromclone01", "Tea is preferred in the afternoon"))
    (clone / memory("deployrule1", "x", scope="project/billing").path).unlink()
    commit_all(clone, "from the clone")
    git(path, "pull", "-q", "--no-rebase", str(clone), "main")


def _op_cherry_pick(path: Path) -> None:
    _branch_setup(path)
    git(path, "cherry-pick", "side")


def _op_revert(path: Path) -> None:
    git(path, "revert", "--no-edit", "HEAD")


def _op_stash(path: Path) -> None:
    write_memory(path, memory("stashed0001", "Stashed memory about coffee grinders"))
    write_memory(path, memory("pytestpref1", "Prefers nose over pytest", type="preference"))
    git(path, "stash", "-u", "-q")
    git(path, "stash", "pop", "-q")


def _op_rm_commit(path: Path) -> None:
    git(path, "rm", "-q", memory("coffeepref1", "x").path)
    git(path, "commit", "-q", "-m", "forget coffee")


def _op_branch_switch(path: Path) -> None:
    _branch_setup(path)
    git(path, "switch", "-q", "side")


OPERATIONS = {
    "checkout": _op_checkout,
    "reset-hard": _op_reset_hard,
    "commit-amend": _op_amend,
    "rebase": _op_rebase,
    "pull-merge": _op_pull,
    "cherry-pick": _op_cherry_pick,
    "revert": _op_revert,
    "stash-pop": _op_stash,
    "rm-commit": _op_rm_commit,
    "branch-switch": _op_branch_switch,
}


@pytest.mark.parametrize("operation", OPERATIONS, ids=list(OPERATIONS))
def test_recall_after_external_git_operation_equals_a_fresh_index(
    seeded: Path, tmp_path: Path, operation: str
) -> None:
    repo = MemoryRepo.open(seeded)
    before = answers(repo)  # the index now reflects the seeded HEAD
    OPERATIONS[operation](seeded)
    after = answers(repo)  # the same process, the same index file
    assert after == fresh_answers(seeded, tmp_path)
    if operation not in ("stash-pop",):
        assert repo.index_status().indexed_tree == git(seeded, "rev-parse", "HEAD^{tree}").strip()
    assert after != before or operation == "stash-pop"


def test_checkout_of_an_older_commit_shows_that_commits_memories(seeded: Path) -> None:
    repo = MemoryRepo.open(seeded)
    write_memory(seeded, memory("newer000001", "Kubernetes runs the workers"))
    commit_all(seeded)
    assert ids(repo.recall("kubernetes")) == ["newer000001"]
    git(seeded, "checkout", "-q", "HEAD~1")
    pack = repo.recall("kubernetes")
    assert ids(pack) == []
    assert pack.trace.unknown_terms == ("kubernetes",)


def test_reset_hard_forgets_what_it_removed(seeded: Path) -> None:
    repo = MemoryRepo.open(seeded)
    write_memory(seeded, memory("newer000001", "Kubernetes runs the workers"))
    commit_all(seeded)
    assert ids(repo.recall("kubernetes")) == ["newer000001"]
    git(seeded, "reset", "-q", "--hard", "HEAD~1")
    assert ids(repo.recall("kubernetes")) == []


# --- the working-tree overlay ------------------------------------------------------


def test_uncommitted_edit_in_place_is_recalled(seeded: Path, tmp_path: Path) -> None:
    repo = MemoryRepo.open(seeded)
    assert ids(repo.recall("postgres")) == ["pgversion01"]
    path = seeded / memory("pgversion01", "x", scope="project/billing").path
    path.write_text(path.read_text("utf-8").replace("Postgres 16", "MariaDB 11"), "utf-8")
    pack = repo.recall("mariadb")
    assert ids(pack) == ["pgversion01"]
    assert pack.memories[0].uncommitted and pack.memories[0].commit is None
    # The old words are gone; the memory now comes only through the recall vocabulary
    # (postgres is a kind of database, and its tag says database).
    gone = repo.recall("postgres 16")
    assert [(hit.memory.id, hit.matched_terms) for hit in gone.memories] == [("pgversion01", ())]
    assert_matches_fresh(seeded, tmp_path, repo)
    # The committed layer did not change: the stamp is still HEAD's tree.
    assert not repo.index_status().stale


def test_hand_added_and_hand_deleted_files_are_recalled(seeded: Path, tmp_path: Path) -> None:
    repo = MemoryRepo.open(seeded)
    repo.recall("anything")
    write_memory(seeded, memory("handadded01", "Standups are at nine thirty"))
    (seeded / memory("deployrule1", "x", scope="project/billing").path).unlink()
    assert ids(repo.recall("standups")) == ["handadded01"]
    assert ids(repo.recall("deploy friday")) == []
    # The deleted memory's captured turn is still there, as raw evidence.
    assert turn_keys(repo.recall("deploy friday"))[0] == ("s1", 1, 0)
    assert_matches_fresh(seeded, tmp_path, repo)
    git(seeded, "checkout", "--", ".")
    assert ids(repo.recall("deploy friday")) == ["deployrule1"]


def test_uncommitted_capture_edit_is_recalled(seeded: Path) -> None:
    repo = MemoryRepo.open(seeded)
    capture = next((seeded / "inbox").rglob("000000.yaml"))
    capture.write_text(
        capture.read_text("utf-8").replace("Postgres, I think", "CockroachDB"), "utf-8"
    )
    pack = repo.recall("cockroachdb")
    assert turn_keys(pack)[0] == ("s1", 0, 0) and pack.turns[0].uncommitted


def test_broken_front_matter_in_the_working_tree_is_skipped_and_reported(seeded: Path) -> None:
    repo = MemoryRepo.open(seeded)
    broken = seeded / memory("pgversion01", "x", scope="project/billing").path
    broken.write_text("---\nid: pgversion01\ntitle: [unclosed\n---\nPostgres\n", "utf-8")
    write_memory(seeded, memory("postgresok1", "Postgres backups run nightly"))
    pack = repo.recall("postgres")
    assert ids(pack) == ["postgresok1"]
    [problem] = pack.trace.problems
    assert problem.path == str(broken.relative_to(seeded))
    assert problem.code == "invalid-yaml"
    done = memgit_cli("recall", "postgres", cwd=seeded)
    assert done.returncode == 0
    assert f"skipped {problem.path}: [invalid-yaml]" in done.stdout.decode()


def test_overlay_is_checked_at_most_once_per_ttl(
    seeded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMGIT_OVERLAY_TTL", "3600")
    repo = MemoryRepo.open(seeded)
    assert ids(repo.recall("standups")) == []
    write_memory(seeded, memory("handadded01", "Standups are at nine thirty"))
    assert ids(repo.recall("standups")) == []  # within the TTL: not looked at yet
    assert ids(MemoryRepo.open(seeded).recall("standups")) == ["handadded01"]  # a new process


def test_overlay_rescans_in_the_background_once_older_than_the_ttl(
    seeded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMGIT_OVERLAY_TTL", "0.2")
    repo = MemoryRepo.open(seeded)
    assert ids(repo.recall("standups")) == []  # the first query scans, and waits for it
    write_memory(seeded, memory("handadded01", "Standups are at nine thirty"))
    time.sleep(0.3)
    repo.recall("standups")  # answers from the last scan and starts a new one
    repo._recall_index().wait_for_overlay(30)
    assert ids(repo.recall("standups")) == ["handadded01"]


def test_committed_broken_memory_is_reported_not_fatal(repo_path: Path) -> None:
    (repo_path / "memories/user/br").mkdir(parents=True)
    (repo_path / "memories/user/br/broken00001.md").write_text("no front matter\n", "utf-8")
    write_memory(repo_path, memory("fine0000001", "A fine memory"))
    commit_all(repo_path)
    pack = MemoryRepo.open(repo_path).recall("fine memory")
    assert ids(pack) == ["fine0000001"]
    assert [p.code for p in pack.trace.problems] == ["front-matter-missing"]


# --- an index that cannot be trusted -------------------------------------------------


def _index_file(path: Path) -> Path:
    return path / ".git" / "memgit" / "index.sqlite"


def test_deleted_index_is_rebuilt(seeded: Path) -> None:
    MemoryRepo.open(seeded).recall("postgres")
    for suffix in ("", "-wal", "-shm"):
        Path(str(_index_file(seeded)) + suffix).unlink(missing_ok=True)
    assert ids(MemoryRepo.open(seeded).recall("postgres")) == ["pgversion01"]


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated", "empty-file", "future-version", "foreign-database", "no-stamp"],
)
def test_untrustworthy_index_is_rebuilt(seeded: Path, tmp_path: Path, damage: str) -> None:
    repo = MemoryRepo.open(seeded)
    repo.recall("postgres")
    repo._recall_index().close()
    index = _index_file(seeded)
    conn = sqlite3.connect(index)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    if damage == "garbage":
        index.write_bytes(b"this is not a database at all " * 200)
    elif damage == "truncated":
        data = index.read_bytes()
        index.write_bytes(data[: len(data) // 3])
    elif damage == "empty-file":
        index.write_bytes(b"")
    elif damage == "future-version":
        conn = sqlite3.connect(index)
        conn.execute("PRAGMA user_version = 999")
        conn.execute("DELETE FROM memory")  # a newer layout we must not read
        conn.commit()
        conn.close()
    elif damage == "foreign-database":
        index.unlink()
        conn = sqlite3.connect(index)
        conn.execute("CREATE TABLE other(x)")
        conn.commit()
        conn.close()
    elif damage == "no-stamp":
        conn = sqlite3.connect(index)
        conn.execute("DELETE FROM meta WHERE key = 'tree'")
        conn.execute("DELETE FROM memory")
        conn.commit()
        conn.close()
    status = MemoryRepo.open(seeded).index_status()
    assert status.stale
    fresh = MemoryRepo.open(seeded)
    pack = fresh.recall("postgres")
    assert ids(pack) == ["pgversion01"]
    assert turn_keys(pack)[0] == ("s1", 0, 0)
    assert not fresh.index_status().stale
    check = sqlite3.connect(index)
    assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    check.close()
    assert_matches_fresh(seeded, tmp_path)


def test_corrupt_index_through_the_cli_is_rebuilt_without_a_traceback(seeded: Path) -> None:
    assert memgit_cli("recall", "postgres", cwd=seeded).returncode == 0
    _index_file(seeded).write_bytes(b"\0garbage" * 1000)
    Path(str(_index_file(seeded)) + "-wal").unlink(missing_ok=True)
    done = memgit_cli("recall", "postgres", "--json", cwd=seeded)
    assert done.returncode == 0, done.stderr
    assert b"pgversion01" in done.stdout and b"Traceback" not in done.stderr


def test_index_that_cannot_be_opened_still_answers_from_memory(seeded: Path) -> None:
    """A read-only or odd .git/memgit: recall builds a private index in memory."""
    index = _index_file(seeded)
    index.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):  # the captures made it
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.mkdir()  # a folder where the file should be
    pack = MemoryRepo.open(seeded).recall("postgres")
    assert ids(pack) == ["pgversion01"]
    assert pack.trace.index["in_memory"]


def test_repository_with_no_commits(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(path))
    (path / "memgit.yaml").write_text(
        (Path(__file__).parents[1] / "memgit" / "settings.py").exists() and _default_config(),
        "utf-8",
    )
    repo = MemoryRepo.open(path)
    pack = repo.recall("anything at all")
    assert pack.memories == () and pack.miss
    write_memory(path, memory("untracked01", "An untracked memory about kites"))
    assert ids(repo.recall("kites")) == ["untracked01"]
    assert repo.index_status().head_commit is None
    done = memgit_cli("recall", "kites", "--as-of", "HEAD", cwd=path)
    assert done.returncode == 2
    assert b"error[invalid-revision]" in done.stderr


def _default_config() -> str:
    from memgit.settings import DEFAULT_CONFIG

    return DEFAULT_CONFIG


# --- concurrency ------------------------------------------------------------------

_REFRESH = """
import sys
from memgit.repo import MemoryRepo
repo = MemoryRepo.open(sys.argv[1])
stats = repo._recall_index().refresh()
print("full" if stats and stats.full else ("partial" if stats else "none"))
"""


def test_two_processes_refreshing_at_once_neither_corrupt_nor_double_insert(
    repo_path: Path,
) -> None:
    for number in range(400):
        write_memory(repo_path, memory(f"many{number:04d}", f"Memory number {number} of many"))
    commit_all(repo_path)
    for _round in range(2):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _REFRESH, str(repo_path)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(3)
        ]
        outcomes = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err.decode()
            outcomes.append(out.decode().strip())
        # Exactly one process did the work; the others found it done.
        assert sum(outcome != "none" for outcome in outcomes) == 1
        write_memory(repo_path, memory("many0001", f"Memory number one, edited {_round}"))
        commit_all(repo_path)
    conn = sqlite3.connect(_index_file(repo_path))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM memory").fetchone()[0] == 400
    assert conn.execute("SELECT count(*) FROM memory_fts").fetchone()[0] == 400
    conn.close()
    assert head(repo_path)


# --- the commands ------------------------------------------------------------------


def test_index_status_and_rebuild_commands(seeded: Path) -> None:
    done = memgit_cli("index", "status", "--json", cwd=seeded)
    assert done.returncode == 0, done.stderr
    import json

    status = json.loads(done.stdout)
    assert status["stale"]  # the fixture committed memories since the captures made it
    done = memgit_cli("index", "rebuild", "--json", cwd=seeded)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert not status["stale"]
    assert status["counts"]["memories"] == 4
    text = memgit_cli("index", "status", cwd=seeded).stdout.decode()
    assert "state:   current" in text
    write_memory(seeded, memory("another0001", "Another memory"))
    commit_all(seeded)
    assert "stale" in memgit_cli("index", "status", cwd=seeded).stdout.decode()
    assert memgit_cli("index", "--help", cwd=seeded).returncode == 0


def test_an_index_held_by_another_writer_is_index_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that waited out the busy timeout is told so by code (index-busy, a
    conflict), classified by SQLite's result code rather than the message's words."""
    from memgit.derived import database
    from memgit.errors import ConflictError

    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 50)
    path = tmp_path / "index.sqlite"
    holder, waiter = database.connect(path), database.connect(path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(ConflictError) as caught, database.write_transaction(waiter):
            pass
        assert caught.value.code == "index-busy"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        waiter.close()


def test_a_closed_repository_lets_go_of_the_store(seeded: Path) -> None:
    """``close()`` (or leaving ``with``) closes the store's connection: the file can be
    replaced at once, as a program that opens many repositories needs."""
    with MemoryRepo.open(seeded) as repo:
        assert ids(repo.recall("postgres")) == ["pgversion01"]
        index = repo._recall_index()
        assert index._conn is not None
    assert index._conn is None
    repo.close()  # a second close is harmless
