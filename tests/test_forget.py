"""``memgit forget``: memories leave the tree in one checked commit; with ``--with-sources``
the captures that only they quote leave with them; bad input changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memgit import MemoryRepo
from memgit.errors import MemgitError
from memgit.jsonio import json_data

from support import assert_fsck_clean, git, make_turn, memgit_cli, snapshot

STAGING = "Remember that the staging database listens on port 5433."
CACHE = "Remember that the build cache lives on the volume named kestrel."
DEPLOY = "Remember that deploys happen on Tuesdays."


def user_turn(seq: int, *texts: str) -> dict[str, object]:
    return make_turn(seq, messages=[{"role": "user", "content": t} for t in texts])


def memory_ids(path: Path) -> dict[str, str]:
    """Memory id by a word of its file, for the memories in HEAD."""
    found = {}
    for name in git(path, "ls-files", "memories").splitlines():
        text = (path / name).read_text("utf-8")
        word = next(w for w in ("staging", "kestrel", "Tuesdays") if w in text)
        found[word] = name.rsplit("/", 1)[1].removesuffix(".md")
    return found


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    """Three memories: one from capture 0, two from the two messages of capture 1."""
    path = tmp_path / "memory"
    MemoryRepo.init(path)
    repo = MemoryRepo.open(path)
    repo.capture(user_turn(0, STAGING))
    repo.capture(user_turn(1, CACHE, DEPLOY))
    repo.process()
    assert sorted(memory_ids(path)) == ["Tuesdays", "kestrel", "staging"]
    return path


def captures(path: Path) -> list[str]:
    return git(path, "ls-files", "inbox").splitlines()


def blobs(path: Path, rev: str = "HEAD") -> dict[str, str]:
    rows = git(path, "ls-tree", "-r", rev).splitlines()
    return {row.split("\t", 1)[1]: row.split()[2] for row in rows}


def test_forget_removes_the_memory_in_one_checked_commit(memory: Path) -> None:
    ids = memory_ids(memory)
    before = git(memory, "rev-parse", "HEAD").strip()
    kept = blobs(memory)
    result = MemoryRepo.open(memory).forget([ids["staging"]])
    assert git(memory, "rev-parse", "HEAD~1").strip() == before
    assert result.commit == git(memory, "rev-parse", "HEAD").strip()
    trailers = git(memory, "log", "-1", "--format=%(trailers:key=Memgit-Forgotten,valueonly)")
    assert trailers.split() == [ids["staging"]]
    assert git(memory, "log", "-1", "--format=%s").strip() == "forget: remove 1 memory"
    after = blobs(memory)
    (gone,) = set(kept) - set(after)
    assert gone.endswith(f"/{ids['staging']}.md") and not (memory / gone).exists()
    assert result.memories == ((ids["staging"], gone),) and result.captures == ()
    assert {p: b for p, b in kept.items() if p != gone} == after
    # No retired ref: a forgotten memory is not named by recall, not even as a miss.
    assert git(memory, "for-each-ref", "refs/memgit/retired/") == ""
    pack = MemoryRepo.open(memory).recall("staging database", include_retired=True)
    assert ids["staging"] not in json.dumps(json_data(pack))
    assert git(memory, "status", "--porcelain") == ""
    assert_fsck_clean(memory)
    done = memgit_cli("verify", f"{before}..HEAD", cwd=memory)
    assert done.returncode == 0, done.stderr.decode()


def test_with_sources_removes_captures_only_the_forgotten_memories_quote(memory: Path) -> None:
    ids = memory_ids(memory)
    first, second = captures(memory)
    result = MemoryRepo.open(memory).forget([ids["staging"]], with_sources=True)
    assert result.captures == (first,)
    assert captures(memory) == [second] and not (memory / first).exists()
    # The deploy memory still quotes the second capture: it stays.
    result = MemoryRepo.open(memory).forget([ids["kestrel"]], with_sources=True)
    assert result.captures == () and captures(memory) == [second]
    result = MemoryRepo.open(memory).forget([ids["Tuesdays"]], with_sources=True)
    assert result.captures == (second,) and captures(memory) == []
    message = git(memory, "log", "-1", "--format=%B")
    assert message.startswith("forget: remove 1 memory and 1 capture\n")
    assert git(memory, "status", "--porcelain") == ""
    assert_fsck_clean(memory)
    done = memgit_cli("verify", "HEAD~3..HEAD", cwd=memory)
    assert done.returncode == 0, done.stderr.decode()


def test_several_ids_are_one_commit_and_a_repeated_id_counts_once(memory: Path) -> None:
    ids = memory_ids(memory)
    first, second = captures(memory)
    done = memgit_cli(
        "forget",
        ids["kestrel"],
        ids["Tuesdays"],
        ids["kestrel"],
        "--with-sources",
        "--json",
        cwd=memory,
    )
    assert done.returncode == 0, done.stderr.decode()
    data = json.loads(done.stdout)
    assert data["commit"] == git(memory, "rev-parse", "HEAD").strip()
    assert [m["id"] for m in data["memories"]] == [ids["kestrel"], ids["Tuesdays"]]
    assert data["captures"] == [second] and captures(memory) == [first]
    trailers = git(memory, "log", "-1", "--format=%(trailers:key=Memgit-Forgotten,valueonly)")
    assert trailers.split() == [ids["kestrel"], ids["Tuesdays"]]
    assert list(memory_ids(memory)) == ["staging"]


def test_forget_prints_what_it_removed(memory: Path) -> None:
    ids = memory_ids(memory)
    done = memgit_cli("forget", ids["staging"], "--with-sources", cwd=memory)
    assert done.returncode == 0, done.stderr.decode()
    head = git(memory, "rev-parse", "--short=12", "HEAD").strip()
    lines = done.stdout.decode().splitlines()
    assert lines[0] == f"forgot 1 memory in {head}"
    assert any(ids["staging"] in line for line in lines[1:])
    assert any(line.strip().startswith("inbox/") for line in lines[1:])


@pytest.mark.parametrize(
    ("args", "code", "status"),
    [
        (("zzzzzzzzzzzz",), "unknown-memory", 2),
        (("../memgit",), "invalid-id", 3),
        (("memories/user/x.md",), "invalid-id", 3),
        (("ab\x1b[31mc",), "invalid-id", 3),
        (("a" * 5000,), "invalid-id", 3),
        (("nul",), "invalid-id", 3),
        ((), "usage", 2),
    ],
)
def test_bad_ids_are_refused_and_change_nothing(
    memory: Path, args: tuple[str, ...], code: str, status: int
) -> None:
    before = snapshot(memory)
    done = memgit_cli("forget", *args, "--with-sources", cwd=memory)
    assert done.returncode == status, done.stderr.decode()
    assert done.stderr.decode().startswith(f"error[{code}]: ") or (
        code == "usage" and b"Missing argument" in done.stderr
    )
    assert b"Traceback" not in done.stderr
    assert snapshot(memory) == before


def test_one_unknown_id_among_good_ones_changes_nothing(memory: Path) -> None:
    ids = memory_ids(memory)
    before = snapshot(memory)
    with pytest.raises(MemgitError) as caught:
        MemoryRepo.open(memory).forget([ids["staging"], "zzzzzzzzzzzz"], with_sources=True)
    assert caught.value.code == "unknown-memory"
    assert "zzzzzzzzzzzz" in caught.value.message
    assert snapshot(memory) == before


def test_a_retired_memory_is_not_forgotten_again(memory: Path) -> None:
    """A memory that already left the tree (here: forgotten) is unknown to forget."""
    ids = memory_ids(memory)
    MemoryRepo.open(memory).forget([ids["staging"]])
    before = snapshot(memory)
    done = memgit_cli("forget", ids["staging"], cwd=memory)
    assert done.returncode == 2
    first_line = done.stderr.decode().splitlines()[0]
    assert first_line == f"error[unknown-memory]: ID: no active memory '{ids['staging']}' in HEAD"
    assert snapshot(memory) == before


def test_a_local_edit_of_the_memory_is_not_clobbered(memory: Path) -> None:
    ids = memory_ids(memory)
    (file,) = [n for n in git(memory, "ls-files", "memories").splitlines() if ids["staging"] in n]
    (memory / file).write_text((memory / file).read_text("utf-8") + "my note\n", "utf-8")
    before = snapshot(memory)
    done = memgit_cli("forget", ids["staging"], cwd=memory)
    assert done.returncode == 4, done.stderr.decode()
    assert snapshot(memory) == before


def test_no_ids_is_a_usage_error(memory: Path) -> None:
    before = snapshot(memory)
    with pytest.raises(MemgitError) as caught:
        MemoryRepo.open(memory).forget([])
    assert (caught.value.code, caught.value.exit_status) == ("usage", 2)
    assert snapshot(memory) == before
