"""What the convergence soak (tests/soak.py) found, each shrunk to a few steps.

Each test names the soak seed that found it. Two clones of one bare remote, set up as
docs/sharing.md says; a person's ``git rm`` and hand edits are written as the hooks
``memgit init`` installs make them (test_removals.py): the ``Memgit-Retracted`` trailer,
and ``refs/memgit/retired/ID`` at the commit before.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memgit import MemoryRepo

from support import git, make_turn, memgit_in_process

AUTHOR = "Test Person <test@example.com>"


def _remote_and_clones(tmp_path: Path) -> tuple[Path, Path, Path]:
    seed = tmp_path / "seed"
    MemoryRepo.init(seed)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    for name in ("a", "b"):
        git(tmp_path, "clone", "-q", str(remote), str(tmp_path / name))
        MemoryRepo.init(tmp_path / name)
    return remote, tmp_path / "a", tmp_path / "b"


def _capture(path: Path, session: str, seq: int, text: str) -> None:
    with MemoryRepo.open(path) as repo:
        repo.capture(make_turn(seq, text, session=session))


def _process(path: Path) -> None:
    with MemoryRepo.open(path) as repo:
        repo.process(backend="rules")


def _sync(path: Path) -> None:
    done = memgit_in_process("sync", cwd=path)
    assert done.returncode == 0, done.stderr.decode()


def _retract(path: Path, memory: str) -> None:
    """``git rm`` and commit, as the hooks record it."""
    memory_id = Path(memory).stem
    last_active = git(path, "rev-parse", "HEAD").strip()
    git(path, "rm", "-q", memory)
    git(path, "commit", "-q", "-m", f"retract {memory_id}\n\nMemgit-Retracted: {memory_id}")
    git(path, "update-ref", f"refs/memgit/retired/{memory_id}", last_active)


def _edit(path: Path, memory: str, line: str) -> None:
    """A person's edit of a memory's body: ``origin: human`` and ``author``."""
    file = path / memory
    text = file.read_text("utf-8").replace(
        "\norigin: memgit\n", f"\norigin: human\nauthor: {AUTHOR}\n", 1
    )
    file.write_text(text + line + "\n", "utf-8")
    git(path, "commit", "-q", "-am", f"edit {Path(memory).stem}")


def test_a_retraction_beside_a_teammates_edit_is_a_conflict_not_a_wedge(
    tmp_path: Path,
) -> None:
    """Soak seed 2: a retracts M with ``git rm`` while b edits M by hand and syncs."""
    remote, a, b = _remote_and_clones(tmp_path)
    _capture(a, "sa", 0, "Remember that the staging database is reset every Monday.")
    _process(a)
    _sync(a)
    _sync(b)
    (memory,) = git(a, "ls-files", "memories").split()
    _retract(a, memory)
    _edit(b, memory, "Ask in the ops channel first.")
    _sync(b)
    done = memgit_in_process("sync", cwd=a)
    assert done.returncode == 4, done.stderr.decode()
    assert b"error[sync-conflict]" in done.stderr
    merging = subprocess.run(
        ["git", "-C", str(a), "merge", "refs/memgit-sync/origin/branch"],
        capture_output=True,
        check=False,
    )
    assert merging.returncode != 0
    git(a, "rm", "-q", memory)
    git(a, "commit", "-q", "--no-edit")
    _sync(a)
    _sync(b)
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(b, "ls-files", "memories") == ""
    for clone in (a, b):
        verified = memgit_in_process("verify", "--all", cwd=clone)
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_retraction_of_a_memory_both_clones_made_is_not_undone_by_the_merge(
    tmp_path: Path,
) -> None:
    """Soak seed 2: a turn pushed before it was processed is decided in both clones (the
    same memory id), then one clone retracts the memory. The merge base lacks it, so
    git sees one side add it and the other change nothing: the merge brought it back,
    and every later sync failed ``retired-id-active`` (exit 3, a wedge)."""
    remote, a, b = _remote_and_clones(tmp_path)
    _capture(a, "sa", 0, "Remember that the staging database is reset every Monday.")
    _sync(a)  # pushed before it is processed
    _sync(b)
    _capture(b, "sb", 0, "Just chatting about the weather today.")  # b's tip differs
    _process(a)
    _process(b)
    (memory,) = git(b, "ls-files", "memories").split()
    assert git(a, "ls-files", "memories").split() == [memory]  # the same id in both
    _retract(b, memory)
    _sync(a)
    _sync(b)  # failed here, and every time after: error[retired-id-active], exit 3
    _sync(a)
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(a, "ls-files", "memories") == ""  # the retraction holds everywhere
    for clone in (a, b):
        verified = memgit_in_process("verify", "--all", cwd=clone)
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_teammates_retraction_of_a_memory_both_clones_made_holds_after_the_merge(
    tmp_path: Path,
) -> None:
    """The same as above with the other clone merging: the retraction arrives from the
    remote while this clone still holds the memory its own run made. git sees this side
    add it and the other change nothing, so the merge kept it: the retraction was
    undone, silently."""
    remote, a, b = _remote_and_clones(tmp_path)
    _capture(a, "sa", 0, "Remember that the staging database is reset every Monday.")
    _sync(a)
    _sync(b)
    _capture(b, "sb", 0, "Just chatting about the weather today.")
    _process(a)
    _process(b)
    (memory,) = git(b, "ls-files", "memories").split()
    _retract(b, memory)
    _sync(b)
    _sync(a)  # kept a's memory: the retraction undone
    _sync(b)
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(a, "ls-files", "memories") == ""
    for clone in (a, b):
        verified = memgit_in_process("verify", "--all", cwd=clone)
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_turn_one_clone_keeps_and_another_finds_known_is_reported(tmp_path: Path) -> None:
    """Soak seeds 5 and 11: a's turn is pushed before it is processed; b decides it
    ``NO_CHANGE`` (already known: b holds the same fact, which b has since edited by
    hand), a decides it ``CREATE``. After the merge the fact is held twice, and the
    only report, the possible-duplicate notice, compared words: the edit put the pair
    under its threshold, so nobody was told that the clones decided one turn two ways.
    Now sync reports it from the two run records, to the clone that merges and to the
    one that takes the merge, and ``verify`` warns about the merge commit."""
    _, a, b = _remote_and_clones(tmp_path)
    fact = "Remember that deploys happen on Fridays."
    _capture(a, "sa", 0, fact)
    _sync(a)  # pushed before it is processed
    _capture(b, "sb", 0, fact)
    _process(b)  # b's own statement: b holds the fact
    (held,) = git(b, "ls-files", "memories").split()
    _edit(b, held, "Not in the week of a release, and never after the standup has ended.")
    _sync(b)  # brings a's turn
    _process(b)  # a's turn: NO_CHANGE, already known
    _process(a)  # a's turn: CREATE, a never saw b's memory
    (made,) = git(a, "ls-files", "memories").split()
    _sync(b)
    merged = memgit_in_process("sync", "--json", cwd=a)
    assert merged.returncode == 0, merged.stderr.decode()
    taken = memgit_in_process("sync", cwd=b)
    assert taken.returncode == 0, taken.stderr.decode()
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert len(git(a, "ls-files", "memories").split()) == 2  # the fact, held twice
    report = json.loads(merged.stdout)
    assert [pair for pair in report["possible_duplicates"] if Path(held).stem in pair] == []
    merge = git(a, "rev-parse", "HEAD").strip()
    (apart,) = report["decided_apart"]
    assert apart["unit"] == "test-agent/sa/0#0" and apart["commit"] == merge
    decided = {(d["decision"], d["reason"], tuple(d["made"])) for d in apart["decisions"]}
    assert decided == {
        ("CANDIDATE", None, (f"CREATE {Path(made).stem}",)),
        ("NO_CHANGE", "already-known", ()),
    }
    told = taken.stdout.decode()
    assert "Decided apart: unit test-agent/sa/0#0 decided two ways: run " in told
    assert f"CREATE {Path(made).stem}" in told and "NO_CHANGE (already-known)" in told
    verified = memgit_in_process("verify", "--all", cwd=b)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    unit = "unit test-agent/sa/0#0 decided two ways"
    assert f"warning[decided-apart]: {merge[:12]}: {unit}" in verified.stderr.decode()


def test_a_merge_by_hand_that_keeps_a_memory_the_other_side_retired_is_refused(
    tmp_path: Path,
) -> None:
    """Soak seed 2 (after the fix above): resolving another file's conflict by hand,
    ``git merge`` kept this clone's copy of a memory the teammate had retracted (git
    sees this side add it). The checks looked for retirements in the first parent's
    history only, so the hooks, ``verify`` and the remote's pre-receive all passed it,
    and the retraction was undone for good."""
    _, a, b = _remote_and_clones(tmp_path)
    _capture(a, "sa", 0, "Remember that the staging database is reset every Monday.")
    _sync(a)
    _sync(b)
    _capture(b, "sb", 0, "Just chatting about the weather today.")
    _process(a)
    _process(b)
    (memory,) = git(b, "ls-files", "memories").split()
    _retract(b, memory)
    _sync(b)
    git(a, "fetch", "-q", "origin")
    git(a, "merge", "-q", "--no-edit", "origin/main")  # git keeps a's copy
    assert git(a, "ls-files", "memories").split() == [memory]
    checked = memgit_in_process("verify", "HEAD~1..HEAD", cwd=a)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert (
        f"error[retired-id-active]: {git(a, 'rev-parse', 'HEAD')[:12]}" in checked.stderr.decode()
    )
    refused = memgit_in_process("sync", cwd=a)
    assert refused.returncode == 1 and b"error[push-refused]" in refused.stderr
    git(a, "rm", "-q", memory)  # what the hooks' refusal tells a person to do
    git(a, "commit", "-q", "--amend", "--no-edit")
    _sync(a)
    assert memgit_in_process("verify", "--all", cwd=a).returncode == 0


def test_a_memory_forgotten_in_one_clone_that_the_other_made_too_stays_forgotten(
    tmp_path: Path,
) -> None:
    """As the retraction above, with ``memgit forget``: the merge base lacks the memory
    both clones' runs made, so git took the other clone's copy for an addition and the
    forgotten memory came back with the next sync."""
    remote, a, b = _remote_and_clones(tmp_path)
    _capture(a, "sa", 0, "Remember that the staging database is reset every Monday.")
    _sync(a)
    _sync(b)
    _capture(b, "sb", 0, "Just chatting about the weather today.")
    _process(a)
    _process(b)
    (memory,) = git(a, "ls-files", "memories").split()
    forgotten = memgit_in_process("forget", Path(memory).stem, cwd=a)
    assert forgotten.returncode == 0, forgotten.stderr.decode()
    _sync(a)
    _sync(b)
    _sync(a)
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(b, "ls-files", "memories") == ""


@pytest.mark.parametrize("merger", ["keeper", "forgetter"])
def test_a_plain_git_merge_that_brings_back_a_forgotten_memory_is_refused(
    tmp_path: Path, merger: str
) -> None:
    """Soak seed 4: both clones' runs made the same memory, one forgot it. ``memgit sync``
    leaves it out, but a plain ``git merge`` (the documented conflict path) took the
    other clone's copy and nothing named it: the forget was undone for good. Now the
    merge is refused (``forgotten-id-active``) whichever clone makes it, and the
    documented ``git rm`` settles it."""
    remote, a, b = _remote_and_clones(tmp_path)
    _capture(a, "sa", 0, "Remember that the staging database is reset every Monday.")
    _sync(a)  # pushed before it is processed
    _sync(b)
    _capture(b, "sb", 0, "Just chatting about the weather today.")
    _process(a)
    _process(b)
    (memory,) = git(a, "ls-files", "memories").split()
    forgotten = memgit_in_process("forget", Path(memory).stem, cwd=b)
    assert forgotten.returncode == 0, forgotten.stderr.decode()
    forgetter, keeper = b, a
    here, there = (keeper, forgetter) if merger == "keeper" else (forgetter, keeper)
    _sync(there)
    git(here, "fetch", "-q", "origin")
    git(here, "merge", "-q", "--no-edit", "origin/main")  # git takes the keeper's copy
    assert git(here, "ls-files", "memories").split() == [memory]
    checked = memgit_in_process("verify", "HEAD~1..HEAD", cwd=here)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    merge = git(here, "rev-parse", "HEAD")[:12]
    assert f"error[forgotten-id-active]: {merge}: {memory}: id: " in checked.stderr.decode()
    refused = memgit_in_process("sync", cwd=here)
    assert refused.returncode == 1 and b"error[forgotten-id-active]" in refused.stderr
    git(here, "rm", "-q", "-f", memory)  # what the refusal's hint says
    git(here, "commit", "-q", "--amend", "--no-edit")
    _sync(here)
    _sync(there)
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(a, "ls-files", "memories") == ""
    for clone in (a, b):
        verified = memgit_in_process("verify", "--all", cwd=clone)
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_merge_whose_only_conflict_is_resolved_by_removal_is_still_checked(
    tmp_path: Path,
) -> None:
    """Soak seed 2 (after both fixes above): the hooks check a merge commit, but
    pre-commit runs a hook during a merge only for the conflicted files its ``files``
    pattern matches. Resolve the only conflict by taking a teammate's removal and no
    file is left: memgit-supersession was skipped, the merge kept a memory the
    teammate had retracted, and only the next sync's push check (``push-refused``)
    noticed."""
    remote = tmp_path / "remote.git"
    seed = tmp_path / "seed"
    MemoryRepo.init(seed)
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    a, b = tmp_path / "a", tmp_path / "b"
    for clone in (a, b):
        git(tmp_path, "clone", "-q", str(remote), str(clone))
        MemoryRepo.init(clone, install_hooks=True)  # the hooks memgit init installs
    _capture(a, "sa", 0, "Remember that the staging database is reset every Monday.")
    _process(a)
    _capture(a, "sa", 1, "Remember that deploys happen on Tuesdays.")
    _sync(a)  # the second turn pushed before it is processed
    _sync(b)
    _capture(b, "sb", 0, "Just chatting about the weather today.")
    _process(a)
    _process(b)
    staging, deploys = sorted(
        git(a, "ls-files", "memories").split(), key=lambda p: "deploys" not in (a / p).read_text()
    )[::-1]
    assert "staging" in (a / staging).read_text() and "deploys" in (a / deploys).read_text()
    git(b, "rm", "-q", deploys)  # b retracts the memory both runs made ...
    git(b, "commit", "-q", "-m", "deploys are not fixed")
    _edit(b, staging, "Ask in the ops channel first.")  # ... and edits another
    _sync(b)
    git(a, "rm", "-q", staging)  # a retracts the one b edited: modify/delete
    git(a, "commit", "-q", "-m", "staging is not reset any more")
    assert memgit_in_process("sync", cwd=a).returncode == 4
    subprocess.run(["git", "-C", str(a), "merge", "-q", "refs/memgit-sync/origin/branch"],
                   capture_output=True, check=False)  # fmt: skip
    git(a, "rm", "-q", staging)  # take the removal: no conflicted file is left
    committed = subprocess.run(
        ["git", "-C", str(a), "commit", "-q", "--no-edit"], capture_output=True, text=True
    )
    assert committed.returncode == 1, "the merge kept the memory b retracted"
    assert f"error[retired-id-active]: {deploys}" in committed.stderr


def test_a_teammates_new_memory_is_not_taken_for_a_rename_of_one_edited_here(
    tmp_path: Path,
) -> None:
    """Soak seed 11: a edits memory M1 by hand; b forgets M1 and then keeps the same
    fact again from another turn, as M2 (another id, nearly the same bytes). git's
    merge (``merge-tree`` in sync, ``git merge`` for the person) took M2 for M1
    renamed: the conflict was a mix of both memories at M2's path, ids in conflict
    markers, and the documented resolution could not pass the hooks
    (``id-mismatch``). sync now merges path by path, and ``memgit init`` turns
    rename detection off for the person's ``git merge``: M1 is a modify/delete."""
    _, a, b = _remote_and_clones(tmp_path)
    fact = "Remember that the sessions live in Memcached."
    _capture(a, "sa", 0, fact)
    _process(a)
    _sync(a)
    _sync(b)
    (first,) = git(a, "ls-files", "memories").split()
    _edit(a, first, "Ask in the ops channel first.")
    assert memgit_in_process("forget", Path(first).stem, "--with-sources", cwd=b).returncode == 0
    _capture(b, "sb", 0, fact)
    _process(b)
    (second,) = git(b, "ls-files", "memories").split()
    assert second != first
    _sync(b)
    assert memgit_in_process("sync", cwd=a).returncode == 4  # a's edit beside b's forget
    subprocess.run(["git", "-C", str(a), "merge", "refs/memgit-sync/origin/branch"],
                   capture_output=True, check=False)  # fmt: skip
    conflicted = git(a, "diff", "--name-only", "--diff-filter=U").split()
    assert conflicted == [first]  # modify/delete of M1; M2 arrives as it is
    assert (a / second).read_bytes() == (b / second).read_bytes()
    git(a, "rm", "-q", first)  # docs/sharing.md: take the teammate's removal
    git(a, "commit", "-q", "--no-edit")
    _sync(a)
    _sync(b)
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(a, "ls-files", "memories").split() == [second]
    for clone in (a, b):
        verified = memgit_in_process("verify", "--all", cwd=clone)
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_memory_both_clones_forgot_does_not_pair_with_a_teammates_new_one(
    tmp_path: Path,
) -> None:
    """The same pairing with no edit: both clones forget M1, and b keeps the fact again
    as M2. git's ``merge-tree`` took M2 for M1 renamed on b's side and deleted on a's,
    a rename/delete conflict (exit 4) where nothing conflicts; path by path, sync
    merges it by itself."""
    remote, a, b = _remote_and_clones(tmp_path)
    fact = "Remember that the sessions live in Memcached."
    _capture(a, "sa", 0, fact)
    _process(a)
    _sync(a)
    _sync(b)
    (first,) = git(a, "ls-files", "memories").split()
    _capture(a, "sa", 1, "Just chatting about the weather today.")
    assert memgit_in_process("forget", Path(first).stem, cwd=a).returncode == 0
    assert memgit_in_process("forget", Path(first).stem, "--with-sources", cwd=b).returncode == 0
    _capture(b, "sb", 0, fact)
    _process(b)
    (second,) = git(b, "ls-files", "memories").split()
    _sync(b)
    _sync(a)  # exit 4 before: CONFLICT (rename/delete)
    _sync(b)
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    assert git(a, "ls-files", "memories").split() == [second]
