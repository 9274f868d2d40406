"""Two clones that change one memory apart still converge, and no sync wedges for good.

1. The same pushed turn decided in two clones from different tips.

A clone that syncs a turn before processing it (a sync on a timer, or the Stop hook's
background ``process``) lets two clones decide it: each supersedes the same memory by the
same successor id, naming a different commit as the one the old memory was last active
in. The merge must join them into one entry, and the supersession check must take a
diamond for what it is (two roads to one memory), not for a cycle: before, every later
sync failed ``supersedes-cycle`` for good.

2. An update in one clone while a teammate retracts the memory with ``git rm``: once the
updater accepts the retraction, its own earlier update must not be taken for a
resurrection (the retired ref names the last commit the memory was active in, which the
update built on): before, every later sync was refused ``retired-id-active``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from remotes import remote_and_clones

from memgit import MemoryRepo
from memgit.memory import read_memory

from support import git, make_turn, memgit_in_process

OLD = "Remember that deploys happen on Tuesdays."
NEW = "Deploys now happen on Thursdays instead of Tuesdays."


def _remote_and_clones(tmp_path: Path) -> tuple[Path, Path, Path]:
    remote, (a, b) = remote_and_clones(tmp_path, "a", "b", init=True)
    return remote, a, b


def _capture(path: Path, session: str, seq: int, text: str) -> None:
    with MemoryRepo.open(path) as repo:
        repo.capture(make_turn(seq, text, session=session))


def _process(path: Path) -> None:
    with MemoryRepo.open(path) as repo:
        repo.process(backend="rules")


def _sync(path: Path) -> None:
    done = memgit_in_process("sync", cwd=path)
    assert done.returncode == 0, done.stderr.decode()


def _memories(path: Path) -> dict[str, str]:
    found = {}
    for name in git(path, "ls-files", "memories").split():
        found[Path(name).stem] = (path / name).read_text("utf-8")
    return found


def test_a_turn_decided_in_two_clones_from_different_tips_converges(tmp_path: Path) -> None:
    remote, a, b = _remote_and_clones(tmp_path)
    _capture(a, "sa", 0, OLD)
    _process(a)
    _sync(a)
    _sync(b)
    _capture(b, "sb", 0, NEW)
    _sync(b)  # pushed before it is processed
    _sync(a)
    _capture(a, "sa", 1, "Just chatting about the weather today.")
    _process(a)  # decides b's turn on a's tip
    _process(b)  # and b decides it on its own
    _sync(a)
    _sync(b)  # failed here, and every time after: error[supersedes-cycle]
    _sync(a)
    _sync(b)
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(a, "rev-parse", "HEAD") == git(remote, "rev-parse", "HEAD")
    (successor,) = _memories(a).values()
    memory = read_memory(successor, path="successor")
    assert "Thursdays" in memory.title
    # One entry for the one memory it replaces, the same in every clone.
    assert len(memory.supersedes) == 1
    assert _memories(a) == _memories(b)
    for clone in (a, b):
        done = memgit_in_process("verify", "--all", cwd=clone)
        assert done.returncode == 0, done.stdout + done.stderr


def test_an_update_beside_a_teammates_retraction_does_not_wedge_the_updater(
    tmp_path: Path,
) -> None:
    remote, a, b = _remote_and_clones(tmp_path)
    _capture(a, "sa", 0, "Remember that the staging database is reset every Monday.")
    _process(a)
    _sync(a)
    _sync(b)
    (memory,) = git(a, "ls-files", "memories").split()
    _capture(b, "sb", 0, "Actually, the staging database is reset every Monday at six.")
    _process(b)
    assert "six" in (b / memory).read_text("utf-8")  # b's run updated it
    # What the hooks memgit init installs make of a person's `git rm` (test_removals.py).
    memory_id = Path(memory).stem
    last_active = git(a, "rev-parse", "HEAD").strip()
    git(a, "rm", "-q", memory)
    git(a, "commit", "-q", "-m", f"retract the staging memory\n\nMemgit-Retracted: {memory_id}")
    git(a, "update-ref", f"refs/memgit/retired/{memory_id}", last_active)
    _sync(a)
    refused = memgit_in_process("sync", cwd=b)
    assert refused.returncode == 4, refused.stderr.decode()  # modify/delete: for a person
    # b accepts the retraction by hand, as the hint says.
    merging = subprocess.run(
        ["git", "-C", str(b), "merge", "refs/memgit-sync/origin/branch"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert merging.returncode != 0
    git(b, "rm", "-q", memory)
    git(b, "commit", "-q", "--no-edit")
    _sync(b)  # refused before, and every time after: retired-id-active on b's own update
    _sync(a)
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(b, "ls-files", "memories") == ""
    for clone in (a, b):
        done = memgit_in_process("verify", "--all", cwd=clone)
        assert done.returncode == 0, done.stdout + done.stderr


def test_two_clones_replacing_one_memory_differently_is_an_open_review_item(
    tmp_path: Path,
) -> None:
    """Memcached here, Postgres there, for "Redis holds the sessions": sync used to say
    "merged" and leave both current, silently."""
    remote, a, b = _remote_and_clones(tmp_path)
    _capture(a, "sa", 0, "Remember that Redis holds the sessions.")
    _process(a)
    _sync(a)
    _sync(b)
    (old,) = _memories(a)
    _capture(a, "sa", 1, "Sessions now live in Memcached instead of Redis.")
    _process(a)
    _capture(b, "sb", 0, "Sessions now live in Postgres instead of Redis.")
    _process(b)
    _sync(a)
    merged = memgit_in_process("sync", cwd=b)
    assert merged.returncode == 0, merged.stderr.decode()
    assert f"Open contradiction: 2 active memories replace {old}" in merged.stdout.decode()

    # verify warns, and passes: no commit is wrong, a person must choose.
    checked = memgit_in_process("verify", "--all", cwd=b)
    assert checked.returncode == 0, checked.stderr.decode()
    assert f"warning[contradiction]: 2 active memories replace {old}" in checked.stderr.decode()
    listed = json.loads(memgit_in_process("review", "list", "--json", cwd=b).stdout)
    (item,) = [entry for entry in listed if entry["kind"] == "contradiction"]
    assert item["id"] == old
    rivals = {rival["title"]: rival["id"] for rival in item["rivals"]}
    keep = next(memory_id for title, memory_id in rivals.items() if "Postgres" in title)
    drop = next(memory_id for title, memory_id in rivals.items() if "Memcached" in title)
    shown = memgit_in_process("review", "show", old, cwd=b)
    assert shown.returncode == 0 and b"Memcached" in shown.stdout and b"Postgres" in shown.stdout

    wrong = memgit_in_process("review", "approve", old, "--keep", old, cwd=b)
    assert wrong.returncode == 2 and b"error[usage]" in wrong.stderr
    done = memgit_in_process("review", "approve", old, "--keep", keep, "--json", cwd=b)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["retired"] == [drop]
    assert list(_memories(b)) == [keep]
    message = git(b, "log", "-1", "--format=%B")
    assert f"Memgit-Superseded: {drop} -> {keep}" in message
    assert f"Memgit-Contradiction: {old}" in message
    assert (
        git(b, "rev-parse", f"refs/memgit/retired/{drop}").strip()
        == git(b, "rev-parse", "HEAD~1").strip()
    )
    listed = json.loads(memgit_in_process("review", "list", "--json", cwd=b).stdout)
    assert [entry for entry in listed if entry["kind"] == "contradiction"] == []
    # The decision travels: a's sync brings it, and both clones pass every check.
    _sync(b)
    _sync(a)
    assert list(_memories(a)) == [keep]
    for clone in (a, b):
        done = memgit_in_process("verify", "--all", cwd=clone)
        assert done.returncode == 0, done.stdout + done.stderr
        assert b"contradiction" not in done.stderr
    assert git(remote, "rev-parse", "HEAD") == git(a, "rev-parse", "HEAD")


def test_a_file_of_the_persons_own_both_clones_changed_is_merged_by_lines(
    tmp_path: Path,
) -> None:
    """sync merges path by path itself (no rename detection): a file that is not
    memgit's, changed on both sides, is merged line by line as git would, and lines
    both sides changed differently are a ``sync-conflict`` naming it, nothing changed."""
    _, a, b = _remote_and_clones(tmp_path)
    lines = [f"line {n}\n" for n in range(1, 9)]
    (a / "NOTES.txt").write_text("".join(lines), "utf-8")
    git(a, "add", "NOTES.txt")
    git(a, "commit", "-q", "-m", "notes")
    _sync(a)
    _sync(b)
    (a / "NOTES.txt").write_text("".join(["first, from a\n", *lines[1:]]), "utf-8")
    git(a, "commit", "-q", "-am", "a's note")
    (b / "NOTES.txt").write_text("".join([*lines[:-1], "last, from b\n"]), "utf-8")
    git(b, "commit", "-q", "-am", "b's note")
    _sync(a)
    _sync(b)
    assert (b / "NOTES.txt").read_text("utf-8") == "".join(
        ["first, from a\n", *lines[1:-1], "last, from b\n"]
    )
    _sync(a)
    (a / "NOTES.txt").write_text("a wins\n", "utf-8")
    git(a, "commit", "-q", "-am", "a rewrites the notes")
    (b / "NOTES.txt").write_text("b wins\n", "utf-8")
    git(b, "commit", "-q", "-am", "b rewrites the notes")
    _sync(a)
    before = git(b, "rev-parse", "HEAD")
    done = memgit_in_process("sync", cwd=b)
    assert done.returncode == 4, done.stderr.decode()
    assert b"error[sync-conflict]: NOTES.txt: 1 file(s) changed on both sides" in done.stderr
    assert git(b, "rev-parse", "HEAD") == before
    assert (b / "NOTES.txt").read_text("utf-8") == "b wins\n"
