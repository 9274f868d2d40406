"""``memgit process`` on real repositories, checked with the git CLI.

The offline ``rules`` backend end to end; the host backend (``gate_output=``)
for UPDATE, SUPERSEDE, RETRACT and DEFERRED; refused answers that leave
everything as it was; inbox retention; processing state derived from the tree
alone; and the CLI's ``--json``, human and ``--print-prompt`` output.

The helpers at the top are reused by test_backends.py and test_process_crash.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from memgit import MemoryRepo
from memgit.gate.contract import GateOutputError
from memgit.layout import capture_path
from memgit.memory import Memory, read_memory
from memgit.runrecord import parse_run_record

from support import bounded_cli, git, make_turn, memgit_cli, snapshot

SOURCE = "test-agent"
SESSION = "s1"

# ---------------------------------------------------------------- helpers


def turn(seq: int, *messages: tuple[str, str] | dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A turn of session s1 whose messages are (role, text) pairs or full message dicts."""
    built = [{"role": m[0], "content": m[1]} if isinstance(m, tuple) else dict(m) for m in messages]
    return make_turn(seq, messages=built, **fields)


def user_turn(seq: int, text: str, **fields: Any) -> dict[str, Any]:
    return turn(seq, ("user", text), **fields)


def unit(seq: int, index: int = 0, *, source: str = SOURCE, session: str = SESSION) -> str:
    """The evidence unit id of message ``index`` of turn ``seq``."""
    return f"{source}/{session}/{seq}#{index}"


def cpath(seq: int, *, source: str = SOURCE, session: str = SESSION) -> str:
    return capture_path(source, session, seq)


def open_repo(path: Path) -> MemoryRepo:
    """A fresh MemoryRepo: settings are read from memgit.yaml at open time."""
    return MemoryRepo.open(path)


def capture(path: Path, *turns: Mapping[str, Any]) -> None:
    repo = open_repo(path)
    for item in turns:
        repo.capture(item)


def configure(path: Path, *, gate: Mapping[str, Any] | None = None, **sections: Any) -> None:
    """Merge ``gate:`` keys (and other top-level sections) into memgit.yaml and commit it."""
    config_file = path / "memgit.yaml"
    data = yaml.safe_load(config_file.read_text("utf-8"))
    if gate:
        data.setdefault("gate", {}).update(gate)
    for key, value in sections.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    config_file.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    git(path, "commit", "-q", "-m", "configure memgit", "--", "memgit.yaml")


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD").strip()


def commit_count(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "HEAD"))


def trailers(path: Path, rev: str = "HEAD") -> list[tuple[str, str]]:
    """The commit's trailers, read by git itself."""
    text = git(path, "log", "-1", "--format=%(trailers:only,unfold)", rev)
    return [tuple(line.split(": ", 1)) for line in text.splitlines() if line]  # type: ignore[misc]


def changed(path: Path, rev: str = "HEAD") -> list[tuple[str, str]]:
    """(status letter, path) of what commit ``rev`` changed against its parent."""
    text = git(path, "diff", "--no-renames", "--name-status", f"{rev}~1", rev)
    return [tuple(line.split("\t", 1)) for line in text.splitlines()]  # type: ignore[misc]


def memories(path: Path, rev: str = "HEAD") -> dict[str, Memory]:
    """Every memory file in commit ``rev``, parsed and checked (id matches file name)."""
    names = git(path, "ls-tree", "-r", "--name-only", rev, "--", "memories").splitlines()
    found = {}
    for name in names:
        memory = read_memory(git(path, "show", f"{rev}:{name}"), path=name)
        assert memory.path == name
        found[memory.id] = memory
    return found


def memory_files(path: Path, rev: str = "HEAD") -> dict[str, str]:
    """path -> exact file content of every memory in ``rev``."""
    names = git(path, "ls-tree", "-r", "--name-only", rev, "--", "memories").splitlines()
    return {name: git(path, "show", f"{rev}:{name}") for name in names}


def run_records(path: Path, rev: str = "HEAD") -> dict[str, dict[str, Any]]:
    """run id -> the run record (schema-checked) of every run file in ``rev``."""
    names = git(path, "ls-tree", "-r", "--name-only", rev, "--", "runs").splitlines()
    found = {}
    for name in names:
        text = git(path, "show", f"{rev}:{name}")
        record = parse_run_record(text, path=name)
        assert record.path == name
        found[record.run_id] = json.loads(text)
    return found


def ref(path: Path, name: str) -> str | None:
    out = git(path, "rev-parse", "-q", "--verify", f"{name}^{{commit}}", check=False).strip()
    return out or None


def refs(path: Path, prefix: str = "refs/") -> dict[str, str]:
    text = git(path, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    return dict(line.split(" ", 1) for line in text.splitlines())  # type: ignore[misc]


def assert_clean(path: Path) -> None:
    """Nothing to commit and a sound object database."""
    assert git(path, "status", "--porcelain") == ""
    done = subprocess.run(
        ["git", "-C", str(path), "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "error" not in done.stderr, done.stdout + done.stderr


def pending_units(path: Path) -> list[str]:
    """Supporting unit ids still waiting for the Gate, derived by memgit from the tree."""
    from memgit.derived.lexical import LexicalIndex
    from memgit.derived.lookup import IndexLookup
    from memgit.state.processing import processing_state

    repo = open_repo(path)
    tree = repo.git.head.peel().tree
    lookup = IndexLookup(LexicalIndex(repo.git))
    state = processing_state(lookup, tree, max_deferrals=_max_deferrals(repo))
    return sorted(u.id for c in state.pending for u in c.units if u.can_support)


def _max_deferrals(repo: MemoryRepo) -> int:
    from memgit.state.processing import DEFAULT_MAX_DEFERRALS

    value = repo.settings.gate.get("max_deferrals", DEFAULT_MAX_DEFERRALS)
    return int(value)


def prompt_units(path: Path) -> list[dict[str, Any]]:
    """The units ``memgit process --print-prompt --json`` shows (the first pending batch)."""
    done = memgit_cli("-C", str(path), "process", "--print-prompt", "--json")
    assert done.returncode == 0, done.stderr.decode()
    data = json.loads(done.stdout)
    return [] if data is None else list(data["units"])


def answer(
    path: Path | None = None,
    *candidates: Mapping[str, Any],
    units: Iterable[str] | None = None,
    deferred: Iterable[str] = (),
) -> str:
    """A Gate answer as JSON text: ``candidates`` plus coverage for every pending unit.

    Each candidate is the candidate's fields plus ``claims``: [(unit id, quote), ...].
    Units claimed get CANDIDATE rows, ``deferred`` ones DEFERRED, the rest NO_CHANGE.
    The pending units come from ``units`` or, by default, the repository's prompt.
    """
    if units is None:
        assert path is not None
        request = open_repo(path).gate_prompt()
        units = [u.id for u in request.units if u.can_support] if request else []
    by_unit: dict[str, list[str]] = {}
    items, bindings = [], []
    for number, spec in enumerate(candidates, start=1):
        spec = dict(spec)
        cid = str(spec.pop("candidate_id", f"c{number}"))
        claims = spec.pop("claims")
        items.append({"candidate_id": cid, **spec})
        bindings.append(
            {
                "candidate_id": cid,
                "claims": [{"unit_id": u, "quote": q, "role": "assertion"} for u, q in claims],
            }
        )
        for u, _ in claims:
            by_unit.setdefault(u, []).append(cid)
    deferred = set(deferred)
    coverage = []
    for u in units:
        if u in by_unit:
            coverage.append({"unit_id": u, "decision": "CANDIDATE", "candidate_ids": by_unit[u]})
        elif u in deferred:
            coverage.append({"unit_id": u, "decision": "DEFERRED", "reason": "needs-context"})
        else:
            coverage.append({"unit_id": u, "decision": "NO_CHANGE", "reason": "no-durable-content"})
    return json.dumps({"candidates": items, "coverage": coverage, "evidence_bindings": bindings})


def create(title: str, body: str, claims: Sequence[tuple[str, str]], **fields: Any) -> dict:
    return {
        "action": "CREATE",
        "type": "fact",
        "scope": "user",
        "title": title,
        "body": body,
        "claims": list(claims),
        **fields,
    }


def process_json(path: Path, *args: str, input: bytes | None = None) -> dict[str, Any]:
    """Run ``memgit process --json`` (must succeed) and return its parsed output."""
    done = memgit_cli("-C", str(path), "process", "--json", *args, input=input)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    return dict(json.loads(done.stdout))


# ---------------------------------------------------------------- rules backend

RULES_TURNS = [
    turn(
        0,
        ("user", "Remember that the staging database listens on port 5433."),
        ("assistant", "Got it. Remember that I also like port 8080."),
    ),
    user_turn(1, "From now on, write commit messages in English."),
    user_turn(2, "I prefer dark roast coffee."),
    user_turn(3, "记住：项目代号是青鸟。"),
    user_turn(4, "Nice weather today, isn't it? Thanks for the help."),
]
RULES_EXPECTED = {  # quote -> (type, title)
    "Remember that the staging database listens on port 5433.": (
        "fact",
        "The staging database listens on port 5433",
    ),
    "From now on, write commit messages in English.": (
        "procedure",
        "Write commit messages in English",
    ),
    "I prefer dark roast coffee.": ("preference", "I prefer dark roast coffee"),
    "记住：项目代号是青鸟。": ("fact", "项目代号是青鸟"),
}


def test_rules_backend_end_to_end(repo_path: Path) -> None:
    """Explicit statements (English and Chinese) become memories with exact, checkable sources.

    The run is one commit holding only memory files and the run record, with
    Memgit-Run/-Backend/-Created trailers and refs/memgit/runs/<id>; chit-chat
    and assistant text yield nothing; the repository is clean and fsck-sound.
    """
    capture(repo_path, *RULES_TURNS)
    before = head(repo_path)
    result = open_repo(repo_path).process()

    (run,) = result.runs
    assert run.commit == head(repo_path) and run.backend == "rules"
    assert git(repo_path, "rev-parse", "HEAD~1").strip() == before
    found = memories(repo_path)
    assert {m.sources[0].quote: (m.type, m.title) for m in found.values()} == RULES_EXPECTED
    assert sorted(d.memory_id for d in run.decisions) == sorted(found)
    assert {d.action for d in run.decisions} == {"CREATE"}

    for memory in found.values():
        (source,) = memory.sources
        # The source names the capture blob as it is on the branch...
        assert source.blob == git(repo_path, "rev-parse", f"HEAD:{source.capture}").strip()
        # ...and that blob holds the quoted text in the quoted message.
        blob = git(repo_path, "cat-file", "-p", source.blob)
        assert source.quote in blob
        index = int(source.unit.rsplit("#", 1)[1])
        assert source.quote in yaml.safe_load(blob)["messages"][index]["content"]
        assert yaml.safe_load(blob)["messages"][index]["role"] == "user"
        assert memory.origin == "memgit" and memory.status == "active"
        # The run's time is its latest capture's, not the clock's (GIT_COMMITTER_DATE).
        assert memory.created == memory.updated == "2026-11-30T10:00:00Z"
        # the work tree holds the same file
        assert (repo_path / memory.path).read_text("utf-8") == git(
            repo_path, "show", f"HEAD:{memory.path}"
        )

    records = run_records(repo_path)
    assert list(records) == [run.run_id]
    record = records[run.run_id]
    assert record["backend"] == {"name": "rules"}
    assert [i["path"] for i in record["inputs"]] == [cpath(s) for s in range(5)]
    for item in record["inputs"]:
        assert item["blob"] == git(repo_path, "rev-parse", f"HEAD:{item['path']}").strip()
    assert [d["memory_id"] for d in record["decisions"]] == [d.memory_id for d in run.decisions]
    assert record["prompt_digest"].startswith("sha256:")

    assert trailers(repo_path) == [
        ("Memgit-Run", run.run_id),
        ("Memgit-Backend", "rules"),
        *[("Memgit-Created", d.memory_id) for d in run.decisions],
    ]
    assert ref(repo_path, f"refs/memgit/runs/{run.run_id}") == head(repo_path)
    touched = {p.split("/", 1)[0] for _, p in changed(repo_path)}
    assert touched == {"memories", "runs"}
    assert {s for s, _ in changed(repo_path)} == {"A"}
    assert pending_units(repo_path) == []
    assert_clean(repo_path)
    # The run refreshed the recall index to its own commit while git saved the index.
    status = open_repo(repo_path).index_status()
    assert status.tree_current and status.indexed_commit == head(repo_path)


def test_nothing_pending_is_a_no_op(repo_path: Path) -> None:
    """With every turn processed, process makes no commit, no ref, and says so."""
    capture(repo_path, *RULES_TURNS)
    open_repo(repo_path).process()
    before = snapshot(repo_path)

    result = open_repo(repo_path).process()
    assert result.runs == () and result.cleanup_commit is None and result.remaining == 0
    done = memgit_cli("-C", str(repo_path), "process")
    assert done.returncode == 0
    assert done.stdout.decode().strip() == "Nothing to process."
    assert snapshot(repo_path) == before


def test_an_empty_repository_has_nothing_to_process(repo_path: Path) -> None:
    """Right after init there is nothing pending and nothing to ask."""
    before = snapshot(repo_path)
    assert open_repo(repo_path).process().runs == ()
    assert open_repo(repo_path).gate_prompt() is None
    assert snapshot(repo_path) == before


def test_processing_twice_creates_no_duplicates(repo_path: Path) -> None:
    """Re-capturing a turn is a no-op, and the same statement said again is already known."""
    capture(repo_path, *RULES_TURNS)
    open_repo(repo_path).process()
    first = memory_files(repo_path)

    capture(repo_path, *RULES_TURNS)  # duplicates: nothing new to process
    assert open_repo(repo_path).process().runs == ()
    capture(repo_path, user_turn(5, "Remember that the staging database listens on port 5433."))
    result = open_repo(repo_path).process()

    (run,) = result.runs
    assert run.decisions == ()
    assert memory_files(repo_path) == first
    record = run_records(repo_path)[run.run_id]
    assert record["gate_output"]["coverage"] == [
        {"unit_id": unit(5), "decision": "NO_CHANGE", "reason": "already-known"}
    ]
    assert "Memgit-Created" not in dict(trailers(repo_path))
    assert_clean(repo_path)


@pytest.mark.parametrize(
    "messages",
    [
        [("user", "ok"), ("assistant", "Remember that the user likes cats.")],
        [("assistant", "From now on, I will answer in French.")],
        [
            ("user", "what does the log say?"),
            {"role": "tool", "name": "cat", "content": "Remember that X is 4.", "complete": False},
        ],
    ],
    ids=["assistant-after-user", "assistant-alone", "incomplete-tool-output"],
)
def test_assistant_text_and_cut_short_output_are_never_evidence(
    repo_path: Path, messages: list[Any]
) -> None:
    """ "remember that ..." said by the assistant, or in cut-short tool output, makes no memory."""
    capture(repo_path, turn(0, *messages))
    result = open_repo(repo_path).process()
    assert memories(repo_path) == {}
    assert all(run.decisions == () for run in result.runs)
    units = prompt_units(repo_path)
    assert units == []


def test_a_very_long_statement_never_blocks_the_rules_backend(repo_path: Path) -> None:
    """A 4,100-character 'Remember that ...' without a full stop: the run still commits,
    and the ordinary statement captured beside it becomes a memory.

    (Regression: the rules backend used to quote the whole sentence, past the
    schema's 4000-character limit, so its own answer was refused for ever.)
    """
    capture(
        repo_path,
        user_turn(0, "Remember that " + "the log line was too long " * 160),
        user_turn(1, "I prefer green tea."),
    )
    result = open_repo(repo_path).process()
    assert len(result.runs) == 1
    titles = {m.title for m in memories(repo_path).values()}
    assert "I prefer green tea" in titles
    for memory in memories(repo_path).values():
        assert all(len(source.quote) <= 4000 for source in memory.sources)
    assert pending_units(repo_path) == []


# ---------------------------------------------------------------- host backend

STAGING = "Remember that the staging database listens on port 5433."


@pytest.fixture
def with_memory(repo_path: Path) -> tuple[Path, Memory]:
    """A repository holding one memory made by the rules backend from turn 0."""
    capture(repo_path, user_turn(0, STAGING))
    open_repo(repo_path).process()
    (memory,) = memories(repo_path).values()
    return repo_path, memory


def test_host_update_rewrites_the_same_file(with_memory: tuple[Path, Memory]) -> None:
    """UPDATE keeps the id and file, rewrites title and body, and appends the new source."""
    path, old = with_memory
    capture(path, user_turn(1, "Actually staging moved to port 6543 last week."))
    text = answer(
        path,
        {
            "action": "UPDATE",
            "target": old.id,
            "type": "fact",
            "scope": old.scope,
            "title": "The staging database listens on port 6543",
            "body": "Staging moved from 5433 to 6543.",
            "claims": [(unit(1), "staging moved to port 6543")],
        },
    )
    result = open_repo(path).process(gate_output=text)

    (run,) = result.runs
    (decision,) = run.decisions
    assert (decision.action, decision.memory_id, decision.path) == ("UPDATE", old.id, old.path)
    assert changed(path) == sorted(
        [("M", old.path), ("A", f"runs/2026/11/{run.run_id}.json")], key=lambda x: x[1]
    )
    new = memories(path)[old.id]
    assert new.title == "The staging database listens on port 6543"
    assert new.body == "Staging moved from 5433 to 6543.\n"
    assert new.created == old.created
    assert [s.quote for s in new.sources] == [STAGING, "staging moved to port 6543"]
    assert trailers(path) == [
        ("Memgit-Run", run.run_id),
        ("Memgit-Backend", "host"),
        ("Memgit-Updated", old.id),
    ]
    assert refs(path, "refs/memgit/retired/") == {}
    assert_clean(path)


def test_host_supersede_retires_the_old_memory_in_the_same_commit(
    with_memory: tuple[Path, Memory],
) -> None:
    """SUPERSEDE: A leaves and B arrives in one commit; B names A and A's last commit.

    refs/memgit/retired/<A> keeps that commit reachable, and the trailer says A -> B.
    """
    path, old = with_memory
    capture(path, user_turn(1, "We replaced staging with a preview environment per branch."))
    last_with_old = head(path)
    text = answer(
        path,
        {
            "action": "SUPERSEDE",
            "target": old.id,
            "type": "fact",
            "scope": "project",
            "title": "Every branch gets a preview environment",
            "body": "Staging was replaced by per-branch previews.",
            "claims": [(unit(1), "replaced staging with a preview environment per branch")],
        },
    )
    (run,) = open_repo(path).process(gate_output=text).runs

    (decision,) = run.decisions
    assert decision.action == "SUPERSEDE" and decision.target == old.id
    new = memories(path)[decision.memory_id]
    assert old.id not in memories(path)
    assert new.id != old.id and new.path.startswith("memories/project/")
    assert sorted(changed(path)) == sorted(
        [("D", old.path), ("A", new.path), ("A", f"runs/2026/11/{run.run_id}.json")]
    )
    assert [(s.id, s.commit) for s in new.supersedes] == [(old.id, last_with_old)]
    # that commit is the last one holding A: it has the file, its child does not
    git(path, "cat-file", "-e", f"{last_with_old}:{old.path}")
    assert git(path, "cat-file", "-e", f"HEAD:{old.path}", check=False) == ""
    assert git(path, "rev-parse", "HEAD~1").strip() == last_with_old
    assert ref(path, f"refs/memgit/retired/{old.id}") == last_with_old
    assert ("Memgit-Superseded", f"{old.id} -> {new.id}") in trailers(path)
    assert not (path / old.path).exists()
    assert_clean(path)


def test_host_retract_removes_the_file_and_keeps_it_reachable(
    with_memory: tuple[Path, Memory],
) -> None:
    """RETRACT: the file leaves the tree, refs/memgit/retired/<id> names its last commit."""
    path, old = with_memory
    capture(path, user_turn(1, "Forget what I said about the staging port, it was wrong."))
    last_with_old = head(path)
    text = answer(
        path,
        {
            "action": "RETRACT",
            "target": old.id,
            "claims": [(unit(1), "what I said about the staging port")],
        },
    )
    (run,) = open_repo(path).process(gate_output=text).runs

    assert [(d.action, d.memory_id) for d in run.decisions] == [("RETRACT", old.id)]
    assert memories(path) == {}
    assert sorted(changed(path)) == sorted(
        [("D", old.path), ("A", f"runs/2026/11/{run.run_id}.json")]
    )
    assert ref(path, f"refs/memgit/retired/{old.id}") == last_with_old
    assert ("Memgit-Retracted", old.id) in trailers(path)
    assert_clean(path)


def test_host_deferred_units_are_retried_then_reported_stuck(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DEFERRED unit stays pending; after gate.max_deferrals deferrals it is stuck."""
    configure(repo_path, gate={"max_deferrals": 2})
    capture(repo_path, user_turn(0, "Maybe we should use the other one."))
    for attempt, date in enumerate(["@1764495060 +0000", "@1764495120 +0000"], start=1):
        monkeypatch.setenv("GIT_COMMITTER_DATE", date)  # time passes between retries
        assert pending_units(repo_path) == [unit(0)]
        result = open_repo(repo_path).process(gate_output=answer(repo_path, deferred=[unit(0)]))
        (run,) = result.runs
        assert run.decisions == () and run.commit == head(repo_path)
        assert len(run_records(repo_path)) == attempt
    assert result.stuck == (unit(0),)
    assert pending_units(repo_path) == []
    assert open_repo(repo_path).gate_prompt() is None

    done = memgit_cli("-C", str(repo_path), "process")
    assert done.returncode == 0
    assert f"1 unit deferred too often and skipped: {unit(0)}" in done.stdout.decode()
    assert_clean(repo_path)


def test_print_prompt_lists_the_pending_units(repo_path: Path) -> None:
    """--print-prompt shows exactly the pending units (text and JSON) and changes nothing."""
    capture(repo_path, *RULES_TURNS)
    before = snapshot(repo_path)

    units = prompt_units(repo_path)
    assert [u["unit_id"] for u in units] == [
        unit(0, 0),
        unit(0, 1),
        unit(1),
        unit(2),
        unit(3),
        unit(4),
    ]
    assert [u["can_support"] for u in units] == [True, False, True, True, True, True]
    text = memgit_cli("-C", str(repo_path), "process", "--print-prompt")
    assert text.returncode == 0
    out = text.stdout.decode()
    assert "You are the Gate of memgit" in out
    for item in units:
        assert item["unit_id"] in out and json.dumps(item["text"], ensure_ascii=False) in out
    assert snapshot(repo_path) == before

    open_repo(repo_path).process()
    done = memgit_cli("-C", str(repo_path), "process", "--print-prompt")
    assert done.returncode == 0 and done.stdout == b""
    assert "Nothing is pending." in done.stderr.decode()


def test_the_same_host_answer_twice_creates_no_duplicate(repo_path: Path) -> None:
    """Applying an answer again finds nothing pending: no commit, no second memory."""
    capture(repo_path, user_turn(0, "Our CI runs on Fridays only."))
    text = answer(
        repo_path,
        create("CI runs on Fridays", "CI runs on Fridays.", [(unit(0), "CI runs on Fridays")]),
    )
    assert len(open_repo(repo_path).process(gate_output=text).runs) == 1
    before = snapshot(repo_path)

    assert open_repo(repo_path).process(gate_output=text).runs == ()
    done = memgit_cli("-C", str(repo_path), "process", "--gate-output", "-", input=text.encode())
    assert done.returncode == 0, done.stderr.decode()
    assert snapshot(repo_path) == before
    assert len(memories(repo_path)) == 1


def test_an_old_answer_for_new_captures_is_refused(repo_path: Path) -> None:
    """Once new turns are pending, a stale answer misses them: refused, nothing written."""
    capture(repo_path, user_turn(0, "Our CI runs on Fridays only."))
    text = answer(
        repo_path,
        create("CI runs on Fridays", "CI runs on Fridays.", [(unit(0), "CI runs on Fridays")]),
    )
    open_repo(repo_path).process(gate_output=text)
    capture(repo_path, user_turn(1, "The office is closed on Mondays."))
    before = snapshot(repo_path)
    with pytest.raises(GateOutputError) as caught:
        open_repo(repo_path).process(gate_output=text)
    assert {p.code for p in caught.value.problems} >= {"incomplete-coverage"}
    assert snapshot(repo_path) == before
    assert pending_units(repo_path) == [unit(1)]


BAD_HOST_ANSWERS: dict[str, tuple[str, Any]] = {
    # name: (expected code, answer text built from the pending unit ids)
    "fenced": ("not-json", lambda good: "```json\n" + good + "\n```"),
    "prose": ("not-json", lambda good: "Sure! Here it is: " + good),
    "forged-quote": (
        "quote-not-found",
        lambda good: good.replace("CI runs on Fridays", "CI runs on Sundays"),
    ),
    "assistant-quote": (
        "proposal-without-agreement",  # no user unit of the turn after agrees to it
        lambda good: good.replace(
            f'"unit_id": "{unit(0, 0)}", "quote": "CI runs on Fridays"',
            f'"unit_id": "{unit(0, 1)}", "quote": "Noted, the CI."',
        ),
    ),
    "missing-coverage": (
        "incomplete-coverage",
        lambda good: json.dumps({**json.loads(good), "coverage": json.loads(good)["coverage"][:1]}),
    ),
    "unknown-target": (
        "unknown-target",
        lambda good: good.replace(
            '"action": "CREATE"', '"action": "RETRACT", "target": "n0such0memory"'
        ),
    ),
    "extra-key": (
        "schema",
        lambda good: good.replace('"action"', '"path": "memgit.yaml", "action"'),
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_HOST_ANSWERS))
def test_a_refused_host_answer_changes_nothing(repo_path: Path, name: str) -> None:
    """Any refused answer: exit 3, snapshot unchanged, turns pending; a valid answer then works.

    The cache under .git/memgit/ keeps the refusal's codes, never the answer's text.
    """
    capture(
        repo_path,
        turn(0, ("user", "Our CI runs on Fridays only."), ("assistant", "Noted, the CI.")),
        user_turn(1, "What time is it?"),
    )
    good = answer(
        repo_path,
        create("CI runs on Fridays", "CI runs on Fridays.", [(unit(0, 0), "CI runs on Fridays")]),
    )
    code, make_bad = BAD_HOST_ANSWERS[name]
    bad = make_bad(good)
    assert bad != good
    before = snapshot(repo_path)
    pending = pending_units(repo_path)

    with pytest.raises(GateOutputError) as caught:
        open_repo(repo_path).process(gate_output=bad)
    assert code in {p.code for p in caught.value.problems}
    assert snapshot(repo_path) == before
    assert pending_units(repo_path) == pending == [unit(0, 0), unit(1)]

    done = memgit_cli("-C", str(repo_path), "process", "--gate-output", "-", input=bad.encode())
    assert done.returncode == 3
    assert "error[gate-rejected]:" in done.stderr.decode() and code in done.stderr.decode()
    assert b"Traceback" not in done.stderr
    assert snapshot(repo_path) == before

    failed = sorted((repo_path / ".git" / "memgit" / "failed-runs").glob("*.json"))
    assert len(failed) == 2
    for record_file in failed:
        record = json.loads(record_file.read_text("utf-8"))
        assert code in [p["code"] for p in record["problems"]]
        assert "Fridays" not in record_file.read_text("utf-8")

    (run,) = open_repo(repo_path).process(gate_output=good).runs
    assert [d.action for d in run.decisions] == ["CREATE"]
    assert pending_units(repo_path) == []
    assert_clean(repo_path)


# ---------------------------------------------------------------- inbox retention

OLD = "2025-06-01T10:00:00Z"  # before the fixed "now" of 2025-11-30T09:30:00Z
RECENT = "2025-11-29T10:00:00Z"


NOW = 1764495000  # tests/conftest.py's fixed "now": 2025-11-30T09:30:00Z
DAY = 86400


def days_later(monkeypatch: pytest.MonkeyPatch, days: int, seconds: int = 0) -> None:
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{NOW + days * DAY + seconds} +0000")


def inbox_of(path: Path) -> list[str]:
    return git(path, "ls-tree", "-r", "--name-only", "HEAD", "--", "inbox").split()


def test_retention_counts_from_processing_and_removes_in_a_separate_commit(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture leaves the tree retention_days after the run that processed it, however
    old the conversation: processed today, a turn from June stays; 31 days later it goes,
    in a commit of its own. One processed later stays longer; memory sources still
    resolve by blob id, because Git keeps the removed captures' blobs."""
    configure(repo_path, inbox={"retention_days": 30})
    capture(
        repo_path,
        user_turn(0, STAGING, timestamp=OLD),
        user_turn(1, "Releases happen on Tuesdays.", timestamp=RECENT),
        user_turn(2, "Maybe use the other bucket.", timestamp=OLD),
    )
    text = answer(
        repo_path,
        create("Staging is on 5433", "Port 5433.", [(unit(0), "port 5433")]),
        create("Releases are on Tuesdays", "Tuesdays.", [(unit(1), "Releases happen")]),
        deferred=[unit(2)],
    )
    first = open_repo(repo_path).process(gate_output=text)
    assert first.expired == () and first.cleanup_commit is None and first.remaining == 1
    assert inbox_of(repo_path) == [cpath(0), cpath(1), cpath(2)]

    days_later(monkeypatch, 29)
    second = open_repo(repo_path).process(gate_output=answer(repo_path))  # decides unit 2
    assert second.expired == () and pending_units(repo_path) == []

    days_later(monkeypatch, 31)
    (run,) = second.runs
    third = open_repo(repo_path).process()
    assert third.runs == () and third.expired == (cpath(0), cpath(1))
    assert third.cleanup_commit == head(repo_path)
    assert git(repo_path, "rev-parse", "HEAD~1").strip() == run.commit
    assert changed(repo_path) == [("D", cpath(0)), ("D", cpath(1))]
    assert trailers(repo_path) == [
        ("Memgit-Expired", f"{SOURCE}/{SESSION}/0"),
        ("Memgit-Expired", f"{SOURCE}/{SESSION}/1"),
    ]
    subject = git(repo_path, "log", "-1", "--format=%s").strip()
    assert subject == "inbox: remove 2 captures processed over 30 days ago"
    assert inbox_of(repo_path) == [cpath(2)]  # processed on day 29
    assert pending_units(repo_path) == []

    found = memories(repo_path)
    assert len(found) == 2
    for memory in found.values():
        for source in memory.sources:
            assert source.quote in git(repo_path, "cat-file", "-p", source.blob)
    assert_clean(repo_path)


def test_retention_zero_days_never_removes_in_the_processing_call(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """retention_days: 0 keeps a capture through the call that processed it, and removes
    it in the next one."""
    configure(repo_path, inbox={"retention_days": 0})
    capture(repo_path, user_turn(0, STAGING, timestamp=OLD), user_turn(1, "hi", timestamp=RECENT))
    first = open_repo(repo_path).process()
    assert first.runs and first.expired == ()
    assert inbox_of(repo_path) == [cpath(0), cpath(1)]
    days_later(monkeypatch, 0, seconds=1)
    result = open_repo(repo_path).process()
    assert sorted(result.expired) == [cpath(0), cpath(1)]
    assert inbox_of(repo_path) == []
    (memory,) = memories(repo_path).values()
    assert STAGING in git(repo_path, "cat-file", "-p", memory.sources[0].blob)
    # the removed captures are not "pending" again
    assert pending_units(repo_path) == []
    assert open_repo(repo_path).process().runs == ()
    assert_clean(repo_path)


def test_turns_from_two_months_back_are_recalled_after_a_default_process(
    repo_path: Path,
) -> None:
    """Importing last month's conversations and processing them with the default settings
    (retention 30 days) keeps every turn in the inbox and in recall."""
    when = "2025-09-30T10:00:00Z"  # two months before the fixed "now"
    capture(
        repo_path,
        user_turn(0, "The deploy key rotates every Thursday at noon.", timestamp=when),
        user_turn(1, "Remember that the staging database listens on port 5433.", timestamp=when),
    )
    result = open_repo(repo_path).process()
    assert result.runs and result.expired == ()
    pack = open_repo(repo_path).recall("when does the deploy key rotate")
    assert cpath(0) in [hit.capture for hit in pack.turns]
    pack = open_repo(repo_path).recall("staging database port")
    assert any(hit.status == "active" for hit in pack.memories)
    # the memory's own turn comes beneath it
    assert cpath(1) in [hit.capture for hit in pack.grouped_turns()]


# ---------------------------------------------------------------- state from the tree


def test_processing_state_survives_deleting_the_cache(repo_path: Path) -> None:
    """.git/memgit/ holds caches only: without it the pending set is the same, before and after."""
    capture(repo_path, *RULES_TURNS[:3])
    open_repo(repo_path).process()
    capture(repo_path, *RULES_TURNS[3:])
    before_units = prompt_units(repo_path)
    assert [u["unit_id"] for u in before_units if u["can_support"]] == [unit(3), unit(4)]

    shutil.rmtree(repo_path / ".git" / "memgit")
    assert prompt_units(repo_path) == before_units
    assert pending_units(repo_path) == [unit(3), unit(4)]
    (run,) = open_repo(repo_path).process().runs
    assert len(run.decisions) == 1
    shutil.rmtree(repo_path / ".git" / "memgit")
    assert open_repo(repo_path).process().runs == ()
    assert len(memories(repo_path)) == 4
    assert_clean(repo_path)


def test_undoing_a_run_with_git_reset_makes_its_turns_pending_again(repo_path: Path) -> None:
    """`git reset --hard HEAD~1` drops the run record, so the turns are pending again,
    and processing them again gives the same memories (ids derive from content)."""
    capture(repo_path, *RULES_TURNS)
    open_repo(repo_path).process()
    first = memory_files(repo_path)
    assert pending_units(repo_path) == []

    git(repo_path, "reset", "-q", "--hard", "HEAD~1")
    assert memories(repo_path) == {}
    assert pending_units(repo_path) == [unit(0), unit(1), unit(2), unit(3), unit(4)]
    open_repo(repo_path).process()
    assert memory_files(repo_path) == first
    assert_clean(repo_path)


# ---------------------------------------------------------------- CLI


def test_cli_process_json(repo_path: Path) -> None:
    """`memgit process --json` reports each run: id, commit, decisions, and what remains."""
    capture(repo_path, *RULES_TURNS)
    data = process_json(repo_path)
    (run,) = data["runs"]
    assert run["commit"] == head(repo_path)
    assert ref(repo_path, f"refs/memgit/runs/{run['run_id']}") == run["commit"]
    assert run["backend"] == "rules" and run["model"] is None
    assert run["captures"] == [cpath(s) for s in range(5)]
    assert {d["action"] for d in run["decisions"]} == {"CREATE"}
    assert sorted(d["memory_id"] for d in run["decisions"]) == sorted(memories(repo_path))
    for decision in run["decisions"]:
        assert (repo_path / decision["path"]).is_file()
        assert decision["candidate_id"].startswith("c")
    assert data["remaining"] == 0 and data["stuck"] == [] and data["cleanup_commit"] is None
    assert process_json(repo_path)["runs"] == []


def test_cli_process_human_output(repo_path: Path) -> None:
    """The human output names the run, what it did, and each memory's id and path."""
    capture(repo_path, *RULES_TURNS)
    done = memgit_cli("-C", str(repo_path), "process")
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    run_id = dict(trailers(repo_path))["Memgit-Run"]
    assert lines[0] == f"Run {run_id}: 4 created from 5 captures in {head(repo_path)[:12]}"
    decided = {line.split()[1]: line.split()[2] for line in lines[1:]}
    assert all(line.split()[0] == "CREATE" for line in lines[1:])
    assert decided == {m.id: m.path for m in memories(repo_path).values()}
    assert_clean(repo_path)


def test_cli_host_backend_needs_an_answer(repo_path: Path) -> None:
    """`--backend host` without --gate-output is a usage error (exit 2), nothing written."""
    capture(repo_path, user_turn(0, STAGING))
    before = snapshot(repo_path)
    done = memgit_cli("-C", str(repo_path), "process", "--backend", "host")
    assert done.returncode == 2
    assert "error[usage]" in done.stderr.decode()
    assert snapshot(repo_path) == before


def test_cli_batches_make_one_commit_per_run(repo_path: Path) -> None:
    """With gate.batch_size 2, five turns take three runs, each its own commit and ref."""
    configure(repo_path, gate={"batch_size": 2})
    capture(repo_path, *RULES_TURNS)
    before = commit_count(repo_path)
    data = process_json(repo_path)
    assert [len(run["captures"]) for run in data["runs"]] == [2, 2, 1]
    assert commit_count(repo_path) == before + 3
    commits = git(repo_path, "rev-list", f"-{len(data['runs'])}", "HEAD").split()
    assert [run["commit"] for run in data["runs"]] == commits[::-1]
    for run in data["runs"]:
        assert ref(repo_path, f"refs/memgit/runs/{run['run_id']}") == run["commit"]
        assert ("Memgit-Run", run["run_id"]) in trailers(repo_path, run["commit"])
    assert len(memories(repo_path)) == 4
    assert len(run_records(repo_path)) == 3
    assert_clean(repo_path)


@pytest.mark.parametrize("source", ["/dev/zero", "-"])
def test_an_endless_gate_output_is_refused_at_the_limit(repo_path: Path, source: str) -> None:
    """--gate-output is read up to the Gate answer limit (4 MiB), not to the end: an
    endless file or stream is refused at once (it was a MemoryError, exit 70)."""
    capture(repo_path, user_turn(0, "Remember that the CI runs on Fridays."))
    before = snapshot(repo_path)
    with open("/dev/zero", "rb") as zeros:
        done = bounded_cli(repo_path, "process", "--gate-output", source, stdin=zeros)
    where = "<stdin>" if source == "-" else source
    assert done.returncode == 3, done.stderr.decode()
    assert done.stderr.decode().startswith(f"error[too-large]: {where}: ")
    assert snapshot(repo_path) == before


def test_a_retraction_works_in_a_clone_that_checks_memories_out_with_crlf(
    repo_path: Path, tmp_path: Path
) -> None:
    """A committed `* text eol=crlf` makes a clone check memgit's files out with CRLF,
    other bytes than their blobs; memgit took each for a local edit, so every later
    RETRACT or SUPERSEDE failed there (local-edits). Git's own conversion rules now
    decide whether a working file still equals its blob."""
    capture(repo_path, user_turn(0, "Remember that the old mirror is at mirror.example.org."))
    open_repo(repo_path).process(backend="rules")
    (memory,) = memories(repo_path).values()
    (repo_path / ".gitattributes").write_text("* text eol=crlf\n", "utf-8")
    git(repo_path, "add", ".gitattributes")
    git(repo_path, "commit", "-q", "--no-verify", "-m", "line endings for Windows users")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo_path), str(clone))
    assert b"\r\n" in (clone / memory.path).read_bytes()

    capture(clone, user_turn(1, "Forget the old mirror, it is gone."))
    retract = answer(
        None,
        {"action": "RETRACT", "target": memory.id, "claims": [(unit(1), "Forget the old mirror")]},
        units=[unit(1)],
    )
    (run,) = open_repo(clone).process(gate_output=retract).runs
    assert [d.action for d in run.decisions] == ["RETRACT"]
    assert memories(clone) == {}
    assert not (clone / memory.path).exists()
    assert git(clone, "status", "--porcelain") == ""
