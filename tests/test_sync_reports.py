"""What ``memgit sync`` tells: every round's possible duplicates, the remote's own
lines, and an exit status for every way it ends, each documented where people look.

Issue 24 items 6 and 9, with real clones of a real bare remote; the race of item 6
is a real ``memgit sync`` of another clone, run between this sync's fetch and push.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from memgit import MemoryRepo

from support import git, make_turn, memgit_cli

DOCS = Path(__file__).parents[1] / "docs"
HOOK_REFUSAL = "error[branch-frozen]: refs/heads/main: this server takes no pushes today"


def remote_and_clones(tmp_path: Path, *names: str) -> tuple[Path, list[Path]]:
    seed = tmp_path / "seed"
    MemoryRepo.init(seed)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    clones = []
    for name in names:
        git(tmp_path, "clone", "-q", str(remote), str(tmp_path / name))
        MemoryRepo.init(tmp_path / name)
        clones.append(tmp_path / name)
    return remote, clones


def work(path: Path, text: str) -> None:
    with MemoryRepo.open(path) as repo:
        repo.capture(make_turn(0, text, session=path.name))
        assert repo.process(backend="rules").runs


def test_duplicates_found_in_a_round_the_remote_outran_are_reported(tmp_path: Path) -> None:
    """Item 6: b's first round merges a's near-identical memory, then c pushes before
    b does; b's second round merges c's commit on top. Both rounds' findings count."""
    _, (a, b, c) = remote_and_clones(tmp_path, "a", "b", "c")
    work(a, "I prefer tabs over spaces in every Python file.")
    work(b, "I prefer tabs over spaces in every Python file!")
    work(c, "Always run the linter before every commit.")
    ours, theirs = memory_ids(b), memory_ids(a)
    assert len(ours) == len(theirs) == 1
    assert memgit_cli("sync", cwd=a).returncode == 0
    raced: list[int] = []

    def another_clone_pushes(step: str, done: int, total: int) -> None:
        if step == "push" and done == 0 and not raced:
            raced.append(memgit_cli("sync", cwd=c).returncode)

    with MemoryRepo.open(b) as repo:
        result = repo.sync(progress=another_clone_pushes)
    assert raced == [0]
    assert result.rounds == 2 and result.joined == "merge"
    assert len(memory_ids(b)) == 3
    assert [set(pair) for pair in result.possible_duplicates] == [ours | theirs]


def memory_ids(path: Path) -> set[str]:
    return {Path(p).stem for p in git(path, "ls-files", "memories").split()}


def refusing_hook(remote: Path) -> None:
    """A server policy of its own: a pre-receive hook that refuses every push and
    says why, as memgit's hooks/pre-receive does."""
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f'#!/bin/sh\necho "{HOOK_REFUSAL}" >&2\nexit 1\n', "utf-8")
    hook.chmod(0o755)


def test_the_lines_a_refusing_remote_prints_are_shown(tmp_path: Path) -> None:
    """Item 9: the remote's `remote: error[...]` lines reach the person, quoted."""
    remote, (a,) = remote_and_clones(tmp_path, "a")
    work(a, "I prefer tabs over spaces in every Python file.")
    refusing_hook(remote)
    before = git(remote, "for-each-ref")
    done = memgit_cli("sync", cwd=a)
    stderr = done.stderr.decode()
    assert f'remote: "{HOOK_REFUSAL}"' in stderr, stderr
    assert stderr.startswith("error[remote-refused]: origin: origin refused the push")
    assert done.returncode == 1
    assert git(remote, "for-each-ref") == before


def person_commits(path: Path, message: str, *, verify: bool = True) -> None:
    git(path, "add", "-A")
    git(path, "commit", "-q", *([] if verify else ["--no-verify"]), "-m", message)


def ends_ok(tmp_path: Path) -> Path:
    _, (a,) = remote_and_clones(tmp_path, "a")
    work(a, "I prefer tabs over spaces in every Python file.")
    return a


def ends_push_refused(tmp_path: Path) -> Path:
    _, (a,) = remote_and_clones(tmp_path, "a")
    work(a, "I prefer tabs over spaces in every Python file.")
    memory = next((a / "memories").rglob("*.md"))
    memory.write_text(memory.read_text("utf-8").replace("tabs", "braces"), "utf-8")
    person_commits(a, "made without the hooks", verify=False)
    return a


def ends_remote_refused(tmp_path: Path) -> Path:
    remote, (a,) = remote_and_clones(tmp_path, "a")
    work(a, "I prefer tabs over spaces in every Python file.")
    refusing_hook(remote)
    return a


def ends_with_no_remote(tmp_path: Path) -> Path:
    work_dir = tmp_path / "alone"
    MemoryRepo.init(work_dir)
    return work_dir


def ends_invalid_settings(tmp_path: Path) -> Path:
    a = ends_ok(tmp_path)
    (a / "memgit.yaml").write_text("review: [\n", "utf-8")
    return a


def ends_in_a_conflict(tmp_path: Path) -> Path:
    _, (a, b) = remote_and_clones(tmp_path, "a", "b")
    for clone, text in ((a, "ours\n"), (b, "theirs\n")):
        (clone / "NOTES.md").write_text(text, "utf-8")
        person_commits(clone, "notes")
    assert memgit_cli("sync", cwd=a).returncode == 0
    return b


def ends_unreachable(tmp_path: Path) -> Path:
    remote, (a,) = remote_and_clones(tmp_path, "a")
    shutil.rmtree(remote)
    return a


ENDINGS = {
    "ok": (ends_ok, 0, None),
    "push-refused": (ends_push_refused, 1, "push-refused"),
    "remote-refused": (ends_remote_refused, 1, "remote-refused"),
    "no-remote": (ends_with_no_remote, 2, "no-remote"),
    "invalid-settings": (ends_invalid_settings, 3, None),
    "sync-conflict": (ends_in_a_conflict, 4, "sync-conflict"),
    "remote-failed": (ends_unreachable, 5, "remote-failed"),
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_every_exit_status_of_sync_is_the_documented_one(tmp_path: Path, ending: str) -> None:
    """Item 9: each way sync ends, run for real; its status is the one `sync --help`,
    docs/sharing.md and docs/errors.md give."""
    make, status, code = ENDINGS[ending]
    clone = make(tmp_path)
    head = git(clone, "rev-parse", "HEAD")
    done = memgit_cli("sync", cwd=clone)
    assert done.returncode == status, done.stderr.decode()
    help_text = memgit_cli("sync", "--help").stdout.decode()
    assert re.search(rf"^\s+{status}\s+\S", help_text, re.M), help_text
    sharing = (DOCS / "sharing.md").read_text("utf-8")
    assert re.search(rf"^\| {status} \|", sharing, re.M)
    if code is None:
        return
    assert done.stderr.decode().startswith(f"error[{code}]")
    assert git(clone, "rev-parse", "HEAD") == head
    assert re.search(rf"^\| {status} \| [^|]*`{code}`", sharing, re.M), code
    errors = (DOCS / "errors.md").read_text("utf-8")
    assert re.search(rf"^\| `{code}` \| {status} \| [^|]*`memgit sync`", errors, re.M), code
    assert code in help_text


def test_sync_help_lists_no_status_it_never_exits_with() -> None:
    """The help's exit table is exactly the statuses the test above runs into."""
    help_text = memgit_cli("sync", "--help").stdout.decode()
    table = help_text.split("Exit statuses", 1)[1].split("Options:", 1)[0]
    listed = {int(n) for n in re.findall(r"^\s+(\d+)\s+\S", table, re.M)}
    assert listed == {status for _, status, _ in ENDINGS.values()}
