"""``memgit log`` lists every version that reached the branch, from either side of a merge.

Issue 24 item 10, with two real clones of a real bare remote joined by ``memgit
sync``: the log walked first parents only, so a teammate's update that a sync merged
showed as the merge commit (or not at all, when both sides changed the memory).
"""

from __future__ import annotations

import json
from pathlib import Path

from test_sync import _remote_and_clones, _sync, _work

from memgit import MemoryRepo

from support import git, make_turn, memgit_cli


def update(
    path: Path, memory_id: str, session: str, text: str, tag: str, *, body: bool = False
) -> None:
    """A run in clone ``path`` that UPDATEs the memory: one more tag, this clone's new
    turn as a source, and (with ``body``) a body that adds what the turn said."""
    from test_process import answer  # the Gate-answer builder of the process tests

    with MemoryRepo.open(path) as repo:
        repo.capture(make_turn(1, text, session=session))
        old = next(m for m in repo.recall("staging", k=5).memories if m.memory.id == memory_id)
        unit = f"test-agent/{session}/1#0"
        candidate = {
            "action": "UPDATE",
            "target": memory_id,
            "type": old.memory.type,
            "scope": old.memory.scope,
            "title": old.memory.title,
            "body": "The staging database is reset every Monday." + (f"\n{text}" if body else ""),
            "tags": [tag],
            "claims": [(unit, text.rstrip("."))],
        }
        assert repo.process(gate_output=answer(None, candidate, units=[unit])).runs


def shared_memory(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """Clones a and b, both holding one memory a made: (a, b, its id, its path)."""
    _, (a, b) = _remote_and_clones(tmp_path, "a", "b")
    for clone in (a, b):
        MemoryRepo.init(clone)  # registers the merge driver
    _work(a, "sa", ["Remember that the staging database is reset every Monday."])
    _sync(a)
    _sync(b)
    (memory,) = git(a, "ls-files", "memories").split()
    return a, b, Path(memory).stem, memory


def run_commit(path: Path) -> str:
    return git(path, "rev-parse", "HEAD").strip()


def test_a_teammates_update_merged_by_sync_is_its_own_version(tmp_path: Path) -> None:
    a, b, memory_id, memory = shared_memory(tmp_path)
    created = run_commit(a)
    update(b, memory_id, "sb", "Mondays wipe the staging database.", "db", body=True)
    theirs = run_commit(b)
    _sync(b)
    _work(a, "sa2", ["I prefer tabs over spaces in every Python file."])
    assert _sync(a).joined == "merge"

    (history,) = MemoryRepo.open(a).log(memory_id)
    rows = [(v.number, v.commit, v.change) for v in history.versions]
    assert rows == [(2, theirs, "updated"), (1, created, "created")]
    assert history.versions[0].run_id is not None
    # git's own log of the file agrees; show and blame find the version.
    assert git(a, "log", "--format=%H", "--", memory).split() == [theirs, created]
    shown = memgit_cli("show", f"{memory_id}@v2", cwd=a)
    assert shown.stdout.decode() == git(a, "show", f"{theirs}:{memory}")
    for spec in (memory_id, f"{memory_id}@HEAD"):  # from the version, and through the merge
        blamed = json.loads(memgit_cli("blame", spec, "--json", cwd=a).stdout)
        lines = {line["text"]: line["commit"] for line in blamed["lines"]}
        assert lines["Mondays wipe the staging database."] == theirs
        versions = {item["commit"]: item.get("version") for item in blamed["commits"]}
        assert versions == {created: 1, theirs: 2}


def test_both_sides_updates_and_their_join_are_all_versions(tmp_path: Path) -> None:
    a, b, memory_id, _ = shared_memory(tmp_path)
    created = run_commit(a)
    update(a, memory_id, "sa", "Staging is reset on Mondays at six.", "ops")
    ours = run_commit(a)
    update(b, memory_id, "sb", "Mondays wipe the staging database.", "db")
    theirs = run_commit(b)
    _sync(b)
    assert _sync(a).joined == "merge"
    merged = run_commit(a)

    (history,) = MemoryRepo.open(a).log(memory_id)
    assert [v.number for v in history.versions] == [4, 3, 2, 1]
    assert history.versions[0].commit == merged and history.versions[0].change == "merged"
    assert {v.commit for v in history.versions[1:3]} == {ours, theirs}
    assert {v.change for v in history.versions[1:3]} == {"updated"}
    assert history.versions[3].commit == created
    done = memgit_cli("log", memory_id, cwd=a)
    assert done.returncode == 0 and theirs[:12].encode() in done.stdout


def test_a_teammates_retraction_merged_by_sync_is_the_removal_listed(tmp_path: Path) -> None:
    """The memory left the branch on the teammate's side (a `git rm`, recorded as the
    hooks record it): a's log ends with that commit, not the merge that brought it."""
    a, b, memory_id, memory = shared_memory(tmp_path)
    created = run_commit(a)
    git(b, "rm", "-q", memory)
    git(b, "commit", "-q", "-m", f"not true any more\n\nMemgit-Retracted: {memory_id}")
    removed = run_commit(b)
    git(b, "update-ref", f"refs/memgit/retired/{memory_id}", f"{removed}~1")
    _sync(b)
    _work(a, "sa2", ["I prefer tabs over spaces in every Python file."])
    assert _sync(a).joined == "merge"

    (history,) = MemoryRepo.open(a).log(memory_id)
    assert not history.active
    rows = [(v.number, v.commit, v.change) for v in history.versions]
    assert rows == [(None, removed, "retracted"), (1, created, "created")]
