"""``memgit log``, ``show``, ``blame`` and ``diff`` on a real history (tests/history_support.py),
checked against the git CLI; bad input changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from history_support import CLUSTER, MOVED, STAGING, Story, build_story
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memgit import MemoryRepo
from memgit.errors import MemgitError

from support import git, memgit_cli, memgit_in_process, snapshot


@pytest.fixture
def story(tmp_path: Path) -> Story:
    return build_story(tmp_path / "memory")


def cli_json(path: Path, *args: str) -> dict:
    done = memgit_in_process("-C", str(path), *args, "--json")
    assert done.returncode == 0, done.stderr.decode()
    return dict(json.loads(done.stdout))


def git_follow(path: Path, file: str) -> list[str]:
    return git(path, "log", "--follow", "--format=%H", "--", file).split()


def test_log_lists_every_version_newest_first(story: Story) -> None:
    (history,) = MemoryRepo.open(story.path).log(story.a)
    rows = [(v.number, v.commit, v.change) for v in history.versions]
    assert rows == [
        (None, story.commits["superseded"], "superseded"),
        (3, story.commits["edited"], "edited"),
        (2, story.commits["updated"], "updated"),
        (1, story.commits["created"], "created"),
    ]
    assert not history.active
    newest, edited, updated, created = history.versions
    assert newest.superseded_by == story.b and newest.blob is None
    assert (edited.run_id, edited.author) == (None, "Test Person <test@example.com>")
    assert updated.moved_from == f"memories/project/{story.a[:2]}/{story.a}.md"
    assert updated.path == f"memories/project/staging/{story.a[:2]}/{story.a}.md"
    assert (created.backend, updated.backend) == ("rules", "host")
    for version in (newest, updated, created):
        trailer = git(
            story.path, "log", "-1", "--format=%(trailers:key=Memgit-Run,valueonly)", version.commit
        ).strip()
        assert version.run_id == trailer
    assert created.date == "2026-11-10T12:00:00Z"


def test_log_agrees_with_git_log_follow(story: Story) -> None:
    """git log --follow lists the same commits, path by path: it loses the memory where an
    UPDATE moved it to another scope and changed it too much for rename detection, so the
    moved memory's paths are asked one by one."""
    repo = MemoryRepo.open(story.path)
    for memory_id in (story.b, story.c, story.retracted):
        (history,) = repo.log(memory_id)
        (path,) = {v.path for v in history.versions}
        assert [v.commit for v in history.versions] == git_follow(story.path, path)
    (history,) = repo.log(story.a)
    paths = dict.fromkeys(v.path for v in history.versions)
    from_git = dict.fromkeys(c for path in paths for c in git_follow(story.path, path))
    assert [v.commit for v in history.versions] == list(from_git)
    assert len(paths) == 2


def test_log_follow_walks_the_chain_both_ways(story: Story) -> None:
    data = cli_json(story.path, "log", "--follow", story.b)
    assert [m["id"] for m in data["memories"]] == [story.c, story.b, story.a]
    assert [m["active"] for m in data["memories"]] == [True, False, False]
    newest = data["memories"][0]["versions"][0]
    assert (newest["change"], newest["supersedes"], newest["version"]) == ("created", [story.b], 1)
    assert data["memories"][1]["versions"][0]["superseded_by"] == story.c
    plain = cli_json(story.path, "log", story.b)
    assert [m["id"] for m in plain["memories"]] == [story.b]
    text = memgit_cli("-C", str(story.path), "log", story.a).stdout.decode()
    assert f"superseded by {story.b}" in text and "edited by a person" in text


def test_show_at_versions_dates_and_commits(story: Story) -> None:
    path, a = story.path, story.a
    old_path = f"memories/project/{a[:2]}/{a}.md"
    new_path = f"memories/project/staging/{a[:2]}/{a}.md"
    v1 = git(path, "show", f"{story.commits['created']}:{old_path}")
    v2 = git(path, "show", f"{story.commits['updated']}:{new_path}")
    v3 = git(path, "show", f"{story.commits['edited']}:{new_path}")
    cases = {
        f"{a}@v1": v1,
        f"{a}@v2": v2,
        f"{a}": v3,  # retired: its last version
        f"{a}@2026-11-10": v1,
        f"{a}@2026-11-11": v2,
        f"{a}@2026-11-12T11:59:59Z": v2,
        f"{a}@2026-11-12": v3,
        f"{a}@{story.commits['updated']}": v2,
        f"{a}@{story.commits['edited'][:10]}~1": v2,
        f"{a}@{story.commits['created']}": v1,
    }
    # The first through the program, the rest through its command line in process.
    for n, (spec, expected) in enumerate(cases.items()):
        run = memgit_in_process if n else memgit_cli
        done = run("-C", str(path), "show", spec)
        assert done.returncode == 0, (spec, done.stderr.decode())
        assert done.stdout.decode() == expected, spec
    data = cli_json(path, "show", f"{a}@2026-11-11")
    assert (data["version"], data["commit"], data["path"]) == (
        2,
        story.commits["updated"],
        new_path,
    )
    assert data["change"] == "updated"


def test_show_of_a_retired_memory_says_what_replaced_it(story: Story) -> None:
    """The file of a retired memory reads ``status: active`` (it was, in that version):
    show says on stderr, and --json in ``status``, that it is superseded (by which
    memory, in which commit) or retracted; stdout stays the file byte for byte."""
    path = story.path
    superseded = memgit_cli("-C", str(path), "show", f"{story.a}@v1")
    assert superseded.returncode == 0, superseded.stderr.decode()
    assert "status: active" in superseded.stdout.decode()
    when = story.commits["superseded"]
    assert superseded.stderr.decode() == (
        f"memory {story.a} is superseded by {story.b} in commit {when[:12]} on "
        "2026-11-14T12:00:00Z; the file shown is a version from when it was active\n"
    )
    assert cli_json(path, "show", story.a)["status"] == {
        "state": "superseded",
        "superseded_by": story.b,
        "commit": when,
        "date": "2026-11-14T12:00:00Z",
    }
    retracted = memgit_in_process("-C", str(path), "show", story.retracted)
    assert retracted.stderr.decode().startswith(
        f"memory {story.retracted} is retracted in commit {story.commits['retracted'][:12]}"
    )
    assert cli_json(path, "show", story.retracted)["status"]["state"] == "retracted"
    active = memgit_in_process("-C", str(path), "show", story.c)
    assert active.returncode == 0 and active.stderr == b""
    assert cli_json(path, "show", story.c)["status"] == {
        "state": "active",
        "superseded_by": None,
        "commit": None,
        "date": None,
    }


def test_diff_lists_fields_then_the_body(story: Story) -> None:
    data = cli_json(story.path, "diff", story.a, "v1", "v2")
    fields = {change["field"]: change for change in data["fields"]}
    assert (fields["scope"]["old"], fields["scope"]["new"]) == ("project", "project/staging")
    assert fields["tags"]["added"] == ["staging"] and fields["tags"]["removed"] == []
    assert [s["quote"] for s in fields["sources"]["added"]] == [
        "staging moved to port 6543 last week"
    ]
    assert "+Since last week: port 6543, for the project." in data["body"]
    assert " The staging database listens on port 5433." in data["body"]
    assert (data["old"]["version"], data["new"]["version"]) == (1, 2)
    text = memgit_cli("-C", str(story.path), "diff", story.a, "v1", "v2").stdout.decode()
    assert 'scope: "project" -> "project/staging"' in text
    assert "tags: +staging" in text and "sources: +1" in text
    default = cli_json(story.path, "diff", story.a)
    assert (default["old"]["version"], default["new"]["version"]) == (2, 3)
    assert default["fields"] == []
    assert default["body"][-1] == "+Ask the platform team before changing it."
    one = cli_json(story.path, "diff", story.a, "2026-11-10")
    assert (one["old"]["version"], one["new"]["version"]) == (1, 3)
    first = cli_json(story.path, "diff", story.c)
    assert first["old"] is None and first["new"]["version"] == 1


def capture_lines(path: Path, blob: str, lines: list[int]) -> str:
    """The lines ``[first, last]`` (from 1) of a capture blob, as git shows it."""
    text = git(path, "cat-file", "blob", blob).splitlines()
    return "\n".join(text[lines[0] - 1 : lines[1]])


def test_blame_points_at_the_run_and_the_capture_lines(story: Story) -> None:
    data = cli_json(story.path, "blame", story.a)
    assert [(line["line"], line["commit"]) for line in data["lines"]] == [
        (1, story.commits["created"]),  # kept through the move to another scope
        (2, story.commits["updated"]),
        (3, story.commits["edited"]),
    ]
    by_commit = {item["commit"]: item for item in data["commits"]}
    created = by_commit[story.commits["created"]]
    (quote,) = created["quotes"]
    assert quote["quote"] == STAGING and quote["role"] == "user"
    assert quote["timestamp"] == "2026-11-10T09:00:00Z"
    assert quote["unit"] == "test-agent/s1/0#1"
    assert (
        quote["capture"]
        == git(
            story.path,
            "log",
            "--diff-filter=A",
            "--format=",
            "--name-only",
            story.commits["created"] + "~1",
            "-1",
        ).strip()
    )
    assert quote["quote"] in capture_lines(story.path, quote["blob"], quote["lines"])
    (updated,) = by_commit[story.commits["updated"]]["quotes"]
    assert updated["quote"] == "staging moved to port 6543 last week"
    assert updated["quote"] in capture_lines(story.path, updated["blob"], updated["lines"])
    assert updated["quote"] in MOVED
    person = by_commit[story.commits["edited"]]
    assert person["quotes"] == [] and person["change"] == "edited" and person["run_id"] is None
    text = memgit_cli("-C", str(story.path), "blame", story.a).stdout.decode()
    assert f'user, 2026-11-10T09:00:00Z: "{STAGING}"' in text


def test_blame_of_a_quote_on_the_second_line_of_a_message(tmp_path: Path) -> None:
    """A literal block scalar holds one line of text per file line: blame names that line."""
    from history_support import answer, unit, user_turn

    path = tmp_path / "memory"
    MemoryRepo.init(path)
    repo = MemoryRepo.open(path)
    repo.capture(
        user_turn(0, "Some context first.\nPreviews now run on the shared cluster called zephyr.")
    )
    created = {
        "action": "CREATE",
        "type": "fact",
        "scope": "user",
        "title": "Previews run on zephyr",
        "body": "Previews run on zephyr.",
        "claims": [(unit(0, 1), CLUSTER)],
    }
    MemoryRepo.open(path).process(gate_output=answer(MemoryRepo.open(path), created))
    (name,) = git(path, "ls-files", "memories").splitlines()
    data = cli_json(path, "blame", name.rsplit("/", 1)[1].removesuffix(".md"))
    (quote,) = data["commits"][0]["quotes"]
    first, last = quote["lines"]
    assert first == last
    assert capture_lines(path, quote["blob"], quote["lines"]).strip() == CLUSTER


def test_bad_input_names_the_problem_and_changes_nothing(story: Story) -> None:
    path, a = story.path, story.a
    before = snapshot(path)
    cases = [
        (("show", "zzzzzzzzzzzz"), "unknown-memory", 2),
        (("log", "zzzzzzzzzzzz"), "unknown-memory", 2),
        (("blame", "zzzzzzzzzzzz@v1"), "unknown-memory", 2),
        (("diff", "zzzzzzzzzzzz"), "unknown-memory", 2),
        (("show", "../x"), "invalid-id", 3),
        (("log", "memories/user/x.md"), "invalid-id", 3),
        (("show", "a" * 5000), "invalid-id", 3),
        (("show", "ab\x1b[31mc"), "invalid-id", 3),
        (("show", f"{a}@v0"), "invalid-revision", 2),
        (("show", f"{a}@"), "invalid-revision", 2),
        (("show", f"{a}@no-such-branch"), "invalid-revision", 2),
        (("show", f"{a}@2026-13-45"), "invalid-revision", 2),
        (("show", f"{a}@HEAD\x1b]0;x"), "invalid-revision", 2),
        (("diff", a, "v1", "x" * 5000), "invalid-revision", 2),
        (("show", f"{a}@2026-11-01"), "no-version", 2),
        (("show", f"{a}@v9"), "no-version", 2),
        (("show", f"{a}@2026-11-15"), "no-version", 2),  # superseded by then
        (("show", f"{a}@HEAD"), "no-version", 2),  # no longer in the tree
        (("blame", f"{a}@1970-01-01"), "no-version", 2),
    ]
    for args, code, status in cases:
        done = memgit_in_process("-C", str(path), *args)
        err = done.stderr.decode()
        assert done.returncode == status, (args, err)
        first = err.splitlines()[0]
        assert first.startswith(f"error[{code}]: "), (args, err)
        assert "\x1b" not in err and "Traceback" not in err
        assert len(first) < 400, first
        assert done.stdout == b""
        as_json = memgit_in_process("-C", str(path), *args, "--json")
        assert json.loads(as_json.stdout)["error"]["code"] == code
    # The program itself says the same as its command line run in process.
    done = memgit_in_process("-C", str(path), "show", f"{a}@v9")
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == memgit_in_process("-C", str(path), "show", f"{a}@v9").stderr
    assert snapshot(path) == before


def test_recall_names_the_whole_supersession_chain(story: Story) -> None:
    """A -> B -> C: a term only A held ("platform", from a person's edit) finds A; the
    trace names C as the current successor and B -> C as the chain; with
    --include-retired, A and B are hits that carry their chains too."""
    ids = {
        story.b: "Every branch gets a preview environment",
        story.c: "Previews run on the zephyr cluster",
    }
    pack = cli_json(story.path, "recall", "platform", "team")
    (match,) = pack["trace"]["retired"]
    assert match["id"] == story.a
    assert match["superseded_by"]["id"] == story.c and match["superseded_by"]["active"]
    assert [(s["id"], s["title"], s["active"]) for s in match["chain"]] == [
        (story.b, ids[story.b], False),
        (story.c, ids[story.c], True),
    ]
    both = cli_json(story.path, "recall", "previews", "branch", "staging", "--include-retired")
    hits = {hit["id"]: hit for hit in both["memories"]}
    assert [s["id"] for s in hits[story.a]["chain"]] == [story.b, story.c]
    assert [s["id"] for s in hits[story.b]["chain"]] == [story.c]
    assert "chain" not in hits[story.c] and "superseded_by" not in hits[story.c]
    text = memgit_in_process("-C", str(story.path), "recall", "platform", "--include-retired")
    out = text.stdout.decode()
    assert f"superseded by {story.b} ({ids[story.b]}), then {story.c} ({ids[story.c]})" in out
    retracted = cli_json(story.path, "recall", "coffee", "machine")
    (gone,) = retracted["trace"]["retired"]
    assert gone["retracted"] and gone["chain"] == [] and gone["superseded_by"] is None


def test_log_walks_from_the_retired_ref_when_head_is_behind_it(story: Story) -> None:
    """A branch reset to before the memory existed: its retired ref still holds it."""
    git(story.path, "reset", "-q", "--hard", f"{story.commits['created']}~1")
    (history,) = MemoryRepo.open(story.path).log(story.a)
    assert [(v.number, v.commit) for v in history.versions] == [
        (3, story.commits["edited"]),
        (2, story.commits["updated"]),
        (1, story.commits["created"]),
    ]
    shown = memgit_in_process("-C", str(story.path), "show", story.a).stdout.decode()
    assert shown.endswith("Ask the platform team before changing it.\n")


def test_follow_finds_a_predecessor_whose_retired_ref_is_gone(story: Story) -> None:
    """Without refs/memgit/retired/A, A is unknown by itself, but its successor's
    ``supersedes`` names the commit where A was last active."""
    git(story.path, "update-ref", "-d", f"refs/memgit/retired/{story.a}")
    done = memgit_in_process("-C", str(story.path), "log", story.a)
    assert done.returncode == 2 and done.stderr.startswith(b"error[unknown-memory]: ")
    data = cli_json(story.path, "log", "--follow", story.c)
    assert [m["id"] for m in data["memories"]] == [story.c, story.b, story.a]
    assert [v["version"] for v in data["memories"][2]["versions"]] == [None, 3, 2, 1]


def test_a_change_merged_from_another_branch_is_the_commit_that_made_it(story: Story) -> None:
    """Issue 24 item 10: the side branch's edit is the version, not the merge that
    brought it (whose content the edit made), as `git log -- PATH` lists it."""
    path = story.path
    (history,) = MemoryRepo.open(path).log(story.c)
    file = history.versions[0].path
    git(path, "switch", "-q", "-c", "side")
    (path / file).write_text((path / file).read_text("utf-8") + "Zephyr is in eu-west.\n")
    git(path, "commit", "-q", "-am", "where zephyr runs")
    git(path, "switch", "-q", "main")
    (path / "notes.txt").write_text("unrelated\n", "utf-8")
    git(path, "add", "notes.txt")
    git(path, "commit", "-q", "-m", "an unrelated change")
    side = git(path, "rev-parse", "side").strip()
    git(path, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    (history,) = MemoryRepo.open(path).log(story.c)
    assert [(v.number, v.change) for v in history.versions] == [(2, "edited"), (1, "created")]
    assert history.versions[0].commit == side
    assert [v.commit for v in history.versions] == git(
        path, "log", "--format=%H", "--", file
    ).split()


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rev=st.text(max_size=80))
def test_any_rev_gives_a_version_or_our_own_error(story: Story, rev: str) -> None:
    """ID@REV for arbitrary REV: a snapshot, or a MemgitError with a code; never another
    exception, and the message stays one line."""
    repo = MemoryRepo.open(story.path)
    try:
        snap = repo.show(f"{story.a}@{rev}")
    except MemgitError as err:
        assert err.code in {"invalid-revision", "no-version"}, (rev, err.code)
        assert "\n" not in err.render().splitlines()[0]
        assert all(ord(c) >= 32 for c in err.message), err.message
    else:
        assert snap.memory_id == story.a


def test_the_example_in_history_md_runs(tmp_path: Path) -> None:
    """docs/history.md's first shell block, run as written with memgit on PATH."""
    import os
    import re
    import subprocess
    import sys

    doc = (Path(__file__).parents[1] / "docs" / "history.md").read_text("utf-8")
    block = re.search(r"```sh\n(.*?)```", doc, re.DOTALL)
    assert block is not None
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.group(1)],
        cwd=tmp_path,
        env={
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "TMPDIR": str(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "created  (run " in done.stdout
    assert "I prefer pytest over unittest" in done.stdout
    assert "--- /dev/null" in done.stdout


def test_history_md_lists_every_change() -> None:
    """The change table of docs/history.md holds exactly the changes memgit log reports."""
    import re

    from memgit.history.versions import CHANGES

    doc = (Path(__file__).parents[1] / "docs" / "history.md").read_text("utf-8")
    table = doc.split("| change | meaning |", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^\| `([a-z]+)` \|", table, re.MULTILINE) == list(CHANGES)


def test_blame_follows_a_move_git_does_not_see_as_a_rename(tmp_path: Path) -> None:
    """A person moves a memory to another scope and rewrites most of it: git's blame
    gives every line to the move, memgit's gives the kept line to the first commit."""
    path = tmp_path / "memory"
    MemoryRepo.init(path)
    memory_id = "abcdefgh2345"
    old = path / "memories" / "user" / "ab" / f"{memory_id}.md"
    new = path / "memories" / "project" / "ab" / f"{memory_id}.md"
    front = "---\nid: {id}\ntype: fact\nscope: {scope}\ntitle: {title}\nstatus: active\n---\n"
    old.parent.mkdir(parents=True)
    old.write_text(front.format(id=memory_id, scope="user", title="t") + "Kept.\n", "utf-8")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "a memory by hand")
    first = git(path, "rev-parse", "HEAD").strip()
    git(path, "rm", "-q", str(old))
    new.parent.mkdir(parents=True)
    title = "a much longer title " * 8
    body = "".join(f"New line {n} that says something else entirely.\n" for n in range(8))
    new.write_text(front.format(id=memory_id, scope="project", title=title) + "Kept.\n" + body)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "move it and rewrite it")
    moved = git(path, "rev-parse", "HEAD").strip()
    by_git = git(path, "blame", "--porcelain", "HEAD", "--", str(new.relative_to(path)))
    assert by_git.count(f"{first} ") == 0  # git saw no rename: the fix-up is needed
    data = cli_json(path, "blame", memory_id)
    assert [line["commit"] for line in data["lines"]] == [first] + [moved] * 8
    (history,) = MemoryRepo.open(path).log(memory_id)
    assert [(v.change, v.moved_from) for v in history.versions] == [
        ("edited", str(old.relative_to(path))),
        ("edited", None),
    ]
