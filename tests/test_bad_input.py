"""Hostile, broken and oversized input is refused cleanly and changes nothing.

The cases drive ``memgit capture`` as a user does, since its stderr line and exit
status are what users and agent hosts see: the corpus and generated inputs through
its command line run in process (``memgit_in_process``: the same parser and error
boundary, without an interpreter's start per case), the others as the real program.
Every refusal must:

- print ``error[CODE]: PATH: FIELD: message`` as the first line of stderr,
  naming the input (``<stdin>``, ``FILE:LINE``, ``memgit.yaml``) and the field;
- exit with the status docs/errors.md gives that code (never 0, never 70, no
  traceback);
- with ``--json``, print the same code, path and field as ``{"error": {...}}``;
- leave refs, HEAD, index and working tree byte-for-byte as they were.

The data lives in ``tests/corpus/`` (see its README); inputs too big or too
binary for files are generated here. A Hypothesis property drives the parser
directly with arbitrary values.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memgit.capture.read import parse_turn
from memgit.errors import MemgitError, quote_foreign
from memgit.jsonio import json_data
from memgit.layout import capture_path
from memgit.repo import MemoryRepo
from memgit.settings import DEFAULT_CONFIG
from memgit.turn import read_capture

from support import bounded_cli, git, make_turn, memgit_cli, memgit_in_process, snapshot

CORPUS = Path(__file__).parent / "corpus"
ERRORS_DOC = Path(__file__).parents[1] / "docs" / "errors.md"
MIB = 1024 * 1024


def documented_statuses() -> dict[str, int]:
    """Exit status of every error code, read from the code table of docs/errors.md."""
    statuses: dict[str, int] = {}
    for line in ERRORS_DOC.read_text("utf-8").splitlines():
        row = re.fullmatch(r"\|\s*(`[a-z0-9-]+`(?:\s*/\s*`[a-z0-9-]+`)*)\s*\|\s*(\d+)\s*\|.*", line)
        if row:
            for code in re.findall(r"`([a-z0-9-]+)`", row.group(1)):
                statuses[code] = int(row.group(2))
    return statuses


STATUS = documented_statuses()


# --- the contract of a refusal ------------------------------------------------


def assert_refused(
    done: subprocess.CompletedProcess[bytes],
    *,
    code: str,
    path: str,
    field: str | None = None,
    says: str | None = None,
    as_json: bool = False,
) -> str:
    """Check one failed command against docs/errors.md; return its first stderr line."""
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert done.returncode not in (0, 70), stderr
    assert code in STATUS, f"error code {code} is not documented in docs/errors.md"
    assert done.returncode == STATUS[code], stderr
    first = stderr.splitlines()[0] if stderr else ""
    prefix = f"error[{code}]: {path}: " + (f"{field}: " if field else "")
    assert first.startswith(prefix), f"expected {prefix!r}...\ngot {first!r}"
    if says is not None:
        assert says in first, first
    if as_json:
        error = json.loads(done.stdout)["error"]
        assert (error["code"], error["path"], error["exit_status"]) == (
            code,
            path,
            done.returncode,
        )
        if field is not None:
            assert error["field"] == field
    else:
        assert done.stdout == b""
    return first


def assert_clean(path: Path) -> None:
    """What a successful write leaves: nothing to commit, a sound repository."""
    assert git(path, "status", "--porcelain") == ""
    git(path, "fsck", "--strict")


def turn_bytes(**fields: object) -> bytes:
    return json.dumps(make_turn(**fields)).encode("utf-8")


# --- the corpus files ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Expect:
    """The header line of a corpus file: ``# expect: CODE [field=] [line=] [says=]``."""

    code: str
    field: str | None = None
    line: int | None = None
    says: str | None = None


def read_case(path: Path) -> tuple[Expect, bytes]:
    """The expectation and the input (everything below the header line)."""
    header, _, body = path.read_bytes().partition(b"\n")
    words = shlex.split(header.decode("utf-8"))
    assert words[:2] == ["#", "expect:"], f"{path.name}: the first line must be '# expect: CODE'"
    options = dict(word.split("=", 1) for word in words[3:])
    assert set(options) <= {"field", "line", "says"}, f"{path.name}: unknown key in {options}"
    line = int(options["line"]) if "line" in options else None
    return Expect(words[2], options.get("field"), line, options.get("says")), body


def corpus_params(folder: str, pattern: str) -> list[Any]:
    params = []
    for path in sorted((CORPUS / folder).glob(pattern)):
        params.append(pytest.param(path, id=path.name.split(".")[0]))
    return params


@pytest.mark.parametrize("case", corpus_params("invalid", "*.json*"))
def test_invalid_turn_is_refused_and_changes_nothing(
    case: Path, repo_path: Path, tmp_path: Path
) -> None:
    """Each invalid corpus input gives its documented error, path, field and status."""
    expect, data = read_case(case)
    before = snapshot(repo_path)
    if case.suffix == ".jsonl":
        turns = tmp_path / case.name  # outside the repository
        turns.write_bytes(data)
        done = memgit_in_process("capture", "--file", str(turns), "--json", cwd=repo_path)
        where = f"{turns}:{expect.line}" if expect.line else str(turns)
    else:
        done = memgit_in_process("capture", "--json", cwd=repo_path, input=data)
        where = "<stdin>"
    assert_refused(
        done, code=expect.code, path=where, field=expect.field, says=expect.says, as_json=True
    )
    assert snapshot(repo_path) == before


@pytest.mark.parametrize("case", corpus_params("valid", "*.json"))
def test_valid_turn_is_captured_and_reads_back(case: Path, repo_path: Path) -> None:
    """Each valid corpus turn is committed; the stored file is the same turn, Git is clean."""
    data = case.read_bytes()
    done = memgit_in_process("capture", "--json", cwd=repo_path, input=data)
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result["duplicate"] is False
    assert result["redactions"] == {}
    assert result["commit"] == git(repo_path, "rev-parse", "HEAD").strip()
    stored = read_capture((repo_path / result["path"]).read_bytes(), path=result["path"])
    assert json_data(stored) == json_data(parse_turn(data, source="<stdin>"))
    assert_clean(repo_path)
    again = MemoryRepo.open(repo_path).capture(data)
    assert again.duplicate and again.commit is None


@pytest.mark.parametrize("case", corpus_params("valid", "*.jsonl"))
def test_valid_json_lines_are_one_commit(case: Path, repo_path: Path) -> None:
    """A valid JSON Lines file (blank and CRLF lines included) is captured as one commit."""
    count = sum(1 for line in case.read_bytes().splitlines() if line.strip())
    head = git(repo_path, "rev-parse", "HEAD").strip()
    done = memgit_in_process("capture", "--file", str(case), "--json", cwd=repo_path)
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert len(result["captures"]) == count
    assert git(repo_path, "rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert_clean(repo_path)


# --- generated inputs ---------------------------------------------------------


def _invalid_utf8() -> tuple[bytes, Expect]:
    data = turn_bytes(content="caf@").replace(b"caf@", b"caf\xe9")  # Latin-1, not UTF-8
    return data, Expect("invalid-utf8", field=f"byte {data.index(b'caf') + 3}")


def _bom() -> tuple[bytes, Expect]:
    return b"\xef\xbb\xbf" + turn_bytes(), Expect("invalid-utf8", field="byte 0")


def _deep_arrays() -> tuple[bytes, Expect]:
    return b"[" * 10_000 + b"]" * 10_000, Expect("json-too-deep", field="line 1, column 65")


def _deep_inside_a_turn() -> tuple[bytes, Expect]:
    data = turn_bytes(content="@").replace(b'"@"', b'{"a":' * 10_000 + b"1" + b"}" * 10_000)
    column = data.index(b'{"a":') + 1 + 5 * (64 - 3)  # levels 1-3: turn, messages, message
    return data, Expect("json-too-deep", field=f"line 1, column {column}")


def _message_50_mb() -> tuple[bytes, Expect]:
    return turn_bytes(content="x" * 50_000_000), Expect("too-large", field="messages[0].content")


def _message_one_byte_over() -> tuple[bytes, Expect]:
    # 1 MiB of UTF-8 with a multi-byte character at the end, so bytes are counted, not chars.
    content = "x" * (MIB - 1) + "\xe9"
    return turn_bytes(content=content), Expect("too-large", field="messages[0].content")


def _input_over_64_mib() -> tuple[bytes, Expect]:
    return turn_bytes() + b" " * (64 * MIB + MIB), Expect("too-large", says="67,108,864")


def _integer_5000_digits() -> tuple[bytes, Expect]:
    return turn_bytes().replace(b'"seq": 0', b'"seq": ' + b"9" * 5000), Expect(
        "invalid-json", field="seq"
    )


GENERATED: dict[str, Callable[[], tuple[bytes, Expect]]] = {
    "invalid-utf8": _invalid_utf8,
    "byte-order-mark": _bom,
    "10000-deep-arrays": _deep_arrays,
    "10000-deep-inside-a-turn": _deep_inside_a_turn,
    "message-50-MB": _message_50_mb,
    "message-one-byte-over-1-MiB": _message_one_byte_over,
    "input-over-64-MiB": _input_over_64_mib,
    "integer-with-5000-digits": _integer_5000_digits,
}


@pytest.mark.parametrize("make", GENERATED.values(), ids=GENERATED.keys())
def test_generated_input_on_stdin_is_refused(
    make: Callable[[], tuple[bytes, Expect]], repo_path: Path
) -> None:
    """Binary, deep and oversized stdin input is refused by name, quickly, changing nothing."""
    data, expect = make()
    before = snapshot(repo_path)
    done = memgit_in_process("capture", cwd=repo_path, input=data)
    assert_refused(done, code=expect.code, path="<stdin>", field=expect.field, says=expect.says)
    assert snapshot(repo_path) == before


def test_json_lines_with_an_invalid_utf8_line_name_that_line(
    repo_path: Path, tmp_path: Path
) -> None:
    """In --file, a line of invalid UTF-8 is reported as FILE:LINE; the good lines stay out."""
    turns = tmp_path / "turns.jsonl"
    turns.write_bytes(b"\n".join([turn_bytes(seq=0), b'{"source": "\xff"}', turn_bytes(seq=2)]))
    before = snapshot(repo_path)
    done = memgit_cli("capture", "--file", str(turns), cwd=repo_path)
    assert_refused(done, code="invalid-utf8", path=f"{turns}:2", field="byte 12")
    assert snapshot(repo_path) == before


def test_json_lines_with_a_line_over_64_mib_is_refused(repo_path: Path, tmp_path: Path) -> None:
    """In --file, one line over the 64 MiB input limit is refused with FILE:LINE."""
    turns = tmp_path / "turns.jsonl"
    with turns.open("wb") as out:
        out.write(turn_bytes(seq=0) + b"\n")
        out.write(b" " * (64 * MIB + 1) + b"\n")
        out.write(turn_bytes(seq=1) + b"\n")
    before = snapshot(repo_path)
    done = memgit_cli("capture", "--file", str(turns), cwd=repo_path)
    assert_refused(done, code="too-large", path=f"{turns}:2")
    assert snapshot(repo_path) == before


def test_a_turn_of_1001_messages_says_the_limit(repo_path: Path) -> None:
    """More than 1,000 messages is refused with a message that names the limit, not a dump."""
    messages = [{"role": "user", "content": f"message {i}"} for i in range(1001)]
    before = snapshot(repo_path)
    done = memgit_cli("capture", cwd=repo_path, input=turn_bytes(messages=messages))
    code = "too-large" if b"error[too-large]" in done.stderr else "schema"
    first = assert_refused(done, code=code, path="<stdin>", field="messages")
    assert "1000" in first.replace(",", ""), first
    assert "message 0" not in first, first
    assert snapshot(repo_path) == before


@pytest.mark.parametrize(
    "turn",
    [
        pytest.param(
            make_turn(messages=[{"role": "user", "content": "x"}] * 1000), id="1000-messages"
        ),
        pytest.param(make_turn(content="\xe9" * (MIB // 2)), id="content-exactly-1-MiB"),
    ],
)
def test_inputs_at_the_limits_are_accepted(turn: dict[str, Any], repo_path: Path) -> None:
    """The limits are inclusive: 1,000 messages and a 1 MiB message are captured."""
    done = memgit_cli("capture", cwd=repo_path, input=json.dumps(turn).encode())
    assert done.returncode == 0, done.stderr.decode()
    assert_clean(repo_path)


# --- the repository around the input ------------------------------------------


def commit_all(path: Path, message: str = "setup") -> None:
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)


@pytest.mark.parametrize("case", corpus_params("repo", "*.yaml"))
def test_broken_memgit_yaml_is_refused_by_name(
    case: Path, repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A committed memgit.yaml that is hostile or breaks its schema fails fast, by name."""
    monkeypatch.chdir(repo_path)  # where a `!!python` tag, were it run, would write
    expect, _ = read_case(case)
    (repo_path / "memgit.yaml").write_bytes(case.read_bytes())
    commit_all(repo_path)
    before = snapshot(repo_path)
    started = time.process_time()  # CPU seconds: a busy machine does not stretch them
    done = memgit_in_process("capture", cwd=repo_path, input=turn_bytes())
    spent = time.process_time() - started
    assert_refused(done, code=expect.code, path="memgit.yaml", field=expect.field, says=expect.says)
    assert spent < 10, f"took {spent:.1f} CPU s: the YAML must be refused before it is expanded"
    assert snapshot(repo_path) == before
    assert not (repo_path / "memgit-was-here").exists()


def test_oversized_memgit_yaml_is_refused(repo_path: Path) -> None:
    """A memgit.yaml over the 4 MiB YAML limit is refused before it is parsed."""
    (repo_path / "memgit.yaml").write_text("# padding\n" * (4 * MIB // 10 + 1), "utf-8")
    commit_all(repo_path)
    before = snapshot(repo_path)
    done = memgit_cli("capture", cwd=repo_path, input=turn_bytes())
    assert_refused(done, code="yaml-too-large", path="memgit.yaml")
    assert snapshot(repo_path) == before


def test_memgit_yaml_that_never_ends_is_refused_at_the_limit(repo_path: Path) -> None:
    """memgit.yaml is read from the working tree; one that is a link to /dev/zero is read
    up to the YAML limit and refused (it was read to the end: a MemoryError, exit 70)."""
    (repo_path / "memgit.yaml").unlink()
    (repo_path / "memgit.yaml").symlink_to("/dev/zero")
    done = bounded_cli(repo_path, "capture", input=turn_bytes())
    assert_refused(done, code="yaml-too-large", path="memgit.yaml")


def test_inbox_symlinked_outside_is_refused(repo_path: Path, tmp_path: Path) -> None:
    """inbox/ replaced by a symlink to a folder outside: unsafe-path, nothing written there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo_path / "inbox").symlink_to(outside, target_is_directory=True)
    before = snapshot(repo_path)
    done = memgit_cli("capture", cwd=repo_path, input=turn_bytes())
    assert_refused(done, code="unsafe-path", path="inbox")
    assert snapshot(repo_path) == before
    assert list(outside.iterdir()) == []


def test_source_folder_symlinked_outside_is_refused(repo_path: Path, tmp_path: Path) -> None:
    """A symlink deeper down (inbox/<source>) is refused the same way."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo_path / "inbox").mkdir()
    (repo_path / "inbox" / "test-agent").symlink_to(outside, target_is_directory=True)
    before = snapshot(repo_path)
    done = memgit_cli("capture", cwd=repo_path, input=turn_bytes())
    assert_refused(done, code="unsafe-path", path="inbox/test-agent")
    assert snapshot(repo_path) == before
    assert list(outside.iterdir()) == []


def test_committed_inbox_symlink_is_a_path_conflict(repo_path: Path, tmp_path: Path) -> None:
    """A symlink committed as inbox is not a folder memgit can write into: path-conflict."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo_path / "inbox").symlink_to(outside, target_is_directory=True)
    commit_all(repo_path, "inbox is a link")
    before = snapshot(repo_path)
    done = memgit_cli("capture", cwd=repo_path, input=turn_bytes())
    assert_refused(done, code="path-conflict", path="inbox")
    assert snapshot(repo_path) == before
    assert list(outside.iterdir()) == []


def test_committed_file_named_inbox_is_a_path_conflict(repo_path: Path) -> None:
    """A committed file where the inbox folder must go: path-conflict."""
    (repo_path / "inbox").write_text("not a folder\n", "utf-8")
    commit_all(repo_path)
    before = snapshot(repo_path)
    done = memgit_cli("capture", cwd=repo_path, input=turn_bytes())
    assert_refused(done, code="path-conflict", path="inbox")
    assert snapshot(repo_path) == before


def test_untracked_file_named_inbox_is_a_path_conflict(repo_path: Path) -> None:
    """An untracked file where the inbox folder must go: path-conflict, as documented."""
    (repo_path / "inbox").write_text("not a folder\n", "utf-8")
    before = snapshot(repo_path)
    done = memgit_cli("capture", cwd=repo_path, input=turn_bytes())
    assert_refused(done, code="path-conflict", path="inbox")
    assert snapshot(repo_path) == before


def test_untracked_file_at_the_capture_path_is_a_local_edit(repo_path: Path) -> None:
    """A file of the person's own where the capture would go is never overwritten."""
    path = capture_path("test-agent", "s1", 0)
    (repo_path / path).parent.mkdir(parents=True)
    (repo_path / path).write_text("my own notes\n", "utf-8")
    before = snapshot(repo_path)
    done = memgit_cli("capture", cwd=repo_path, input=turn_bytes())
    assert_refused(done, code="local-edits", path=path)
    assert snapshot(repo_path) == before


def test_memories_symlinked_outside_is_refused(memrepo: MemoryRepo, tmp_path: Path) -> None:
    """memories/ replaced by a symlink to a folder outside: `memgit process` (the command
    that writes memories; capture never does) refuses with unsafe-path, writes nothing."""
    memrepo.capture(make_turn(0, "Remember that staging uses Postgres 16."))
    memrepo.process(backend="rules")
    memrepo.capture(make_turn(1, "Remember that I prefer pytest over unittest."))
    outside = tmp_path / "outside"
    outside.mkdir()
    memories = memrepo.workdir / "memories"
    shutil.rmtree(memories)
    memories.symlink_to(outside, target_is_directory=True)
    before = snapshot(memrepo.workdir)
    done = memgit_cli("process", cwd=memrepo.workdir)
    assert_refused(done, code="unsafe-path", path="memories")
    assert snapshot(memrepo.workdir) == before
    assert list(outside.iterdir()) == []


def test_detached_head_is_refused(repo_path: Path) -> None:
    """memgit writes only to a branch: a detached HEAD is a conflict."""
    git(repo_path, "checkout", "-q", "--detach", "HEAD")
    before = snapshot(repo_path)
    done = memgit_cli("capture", cwd=repo_path, input=turn_bytes())
    assert_refused(done, code="detached-head", path="HEAD")
    assert snapshot(repo_path) == before


def test_repository_with_no_commits_is_not_initialised(tmp_path: Path) -> None:
    """A fresh `git init` (unborn branch, no memgit.yaml) gets a clear usage error."""
    git(tmp_path, "init", "-q", "fresh")
    repo = tmp_path / "fresh"
    before = snapshot(repo)
    done = memgit_cli("capture", cwd=repo, input=turn_bytes())
    assert_refused(done, code="not-initialised", path=str(repo.resolve()), says="memgit.yaml")
    assert snapshot(repo) == before


def test_unborn_branch_with_a_memgit_yaml_is_refused(tmp_path: Path) -> None:
    """memgit.yaml copied into a repository with no commits: unborn-branch, nothing made."""
    git(tmp_path, "init", "-q", "fresh")
    repo = tmp_path / "fresh"
    (repo / "memgit.yaml").write_text(DEFAULT_CONFIG, "utf-8")
    before = snapshot(repo)
    done = memgit_cli("capture", cwd=repo, input=turn_bytes())
    first = assert_refused(done, code="unborn-branch", path="HEAD")
    assert "main" in first
    assert snapshot(repo) == before


HOLD_LOCK = """
import sys, time
from pathlib import Path
from memgit.store.lock import WriterLock
lock = WriterLock(Path(sys.argv[1]), timeout=5)
lock.acquire()
if sys.argv[2] == "journal":
    lock.write({})  # what publish does right after acquiring
print("locked", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param(
            "acquire-only",
        ),
        "journal",
    ],
)
def test_a_live_memgit_writer_blocks_with_lock_busy(mode: str, repo_path: Path) -> None:
    """A second writer gives up after MEMGIT_LOCK_TIMEOUT with lock-busy naming the holder."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(repo_path / ".git"), mode],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"locked\n"
        before = snapshot(repo_path)
        done = memgit_cli(
            "capture", cwd=repo_path, input=turn_bytes(), env={"MEMGIT_LOCK_TIMEOUT": "0.5"}
        )
        lock_file = str(repo_path / ".git" / "memgit" / "lock")
        first = assert_refused(done, code="lock-busy", path=lock_file)
        assert snapshot(repo_path) == before
    finally:
        holder.kill()
        holder.wait()
    assert f"process {holder.pid} " in first and "(running)" in first, first


# The real `memgit` command, waiting 0.2 s rather than 5 s for a lock a git process holds:
# the refusal is under test, not the length of the wait.
SHORT_GIT_LOCK_WAIT = (
    "import sys, memgit.store.engine as engine; engine.REF_LOCK_WAIT = 0.2; "
    "from memgit.cli.main import main; sys.exit(main())"
)


def test_stale_index_lock_is_reported_and_left_alone(repo_path: Path) -> None:
    """A .git/index.lock left by another program: git-lock, and memgit does not delete it."""
    lock = repo_path / ".git" / "index.lock"
    lock.write_bytes(b"")
    before = snapshot(repo_path)
    done = subprocess.run(
        [sys.executable, "-c", SHORT_GIT_LOCK_WAIT, "capture"],
        cwd=repo_path,
        input=turn_bytes(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert_refused(done, code="git-lock", path=str(lock))
    assert lock.exists()
    assert snapshot(repo_path) == before


def test_outside_any_repository(tmp_path: Path) -> None:
    """Run in a plain folder: not-a-repository, and the folder stays empty."""
    folder = tmp_path / "plain"
    folder.mkdir()
    done = memgit_cli("capture", cwd=folder, input=turn_bytes())
    assert_refused(done, code="not-a-repository", path=str(folder.resolve()))
    assert list(folder.iterdir()) == []


def test_git_repository_without_memgit_yaml(tmp_path: Path) -> None:
    """A Git repository with history but no memgit.yaml: not-initialised."""
    repo = tmp_path / "plain-git"
    git(tmp_path, "init", "-q", "plain-git")
    (repo / "README").write_text("hello\n", "utf-8")
    commit_all(repo)
    before = snapshot(repo)
    done = memgit_cli("capture", cwd=repo, input=turn_bytes())
    assert_refused(done, code="not-initialised", path=str(repo.resolve()))
    assert snapshot(repo) == before


def test_bare_repository(tmp_path: Path) -> None:
    """A bare repository has no working tree for memgit: bare-repository."""
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", "bare.git")
    before = sorted(str(path.relative_to(bare)) for path in bare.rglob("*"))
    done = memgit_cli("-C", str(bare), "capture", input=turn_bytes())
    assert_refused(done, code="bare-repository", path=f"{bare.resolve()}/")
    assert sorted(str(path.relative_to(bare)) for path in bare.rglob("*")) == before


def test_json_error_document_lists_every_problem(repo_path: Path) -> None:
    """--json prints the documented error object; several problems give one line each."""
    turn = make_turn()
    del turn["source"], turn["timestamp"]
    done = memgit_cli("capture", "--json", cwd=repo_path, input=json.dumps(turn).encode())
    error = json.loads(done.stdout)["error"]
    assert set(error) == {"code", "message", "path", "field", "hint", "exit_status", "problems"}
    assert (error["code"], error["path"], error["exit_status"]) == ("schema", "<stdin>", 3)
    assert len(error["problems"]) == 2
    lines = [line for line in done.stderr.decode().splitlines() if line.startswith("error[")]
    assert len(lines) == 2
    assert "'source'" in lines[0] and "'timestamp'" in lines[1]


# --- the Python API -------------------------------------------------------------


@pytest.mark.parametrize(
    "turn",
    [
        pytest.param(make_turn(content="nul \x00 and \u2028"), id="control-characters"),
        pytest.param(
            make_turn(content="\ud800"),
            id="lone-surrogate-in-content",
        ),
        pytest.param(
            make_turn(thread="t\udc00"),
            id="lone-surrogate-in-thread",
        ),
        pytest.param(
            make_turn(seq=2.0),
            id="float-seq",
        ),
    ],
)
def test_api_turns_are_refused_or_read_back(turn: dict[str, Any], memrepo: MemoryRepo) -> None:
    """MemoryRepo.capture(dict) either refuses with a MemgitError, leaving the repository
    as it was, or writes a capture file that memgit reads back as the same turn."""
    before = snapshot(memrepo.workdir)
    try:
        outcome = memrepo.capture(turn)
    except MemgitError:
        assert snapshot(memrepo.workdir) == before
        return
    stored = read_capture((memrepo.workdir / outcome.path).read_bytes(), path=outcome.path)
    assert json_data(stored) == json_data(parse_turn(turn, source="<api>"))


# Arbitrary JSON-like values, and turn-shaped dicts whose every field may be anything.
# Arbitrary JSON-like values.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
# Valid turns (with timestamps that are well-formed but not always real dates) ...
safe_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,10}", fullmatch=True)
timestamps = st.from_regex(
    r"[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-6][0-9]:[0-6][0-9](\.[0-9]{1,9})?"
    r"(Z|[+-][0-2][0-9]:[0-6][0-9])",
    fullmatch=True,
)
valid_messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text(max_size=30)},
    optional={"name": st.text(min_size=1, max_size=10), "complete": st.booleans()},
)
valid_turns = st.fixed_dictionaries(
    {
        "source": safe_names,
        "session": safe_names,
        "seq": st.integers(0, 999_999_999),
        "timestamp": timestamps,
        "messages": st.lists(valid_messages, min_size=1, max_size=3),
    },
    optional={"thread": st.text(min_size=1, max_size=20)},
)
FIELDS = ["source", "session", "seq", "timestamp", "thread", "messages", "redactions", "extra"]


@st.composite
def nearly_valid(draw: st.DrawFn) -> dict[str, Any]:
    """... with one field (or one message's field) dropped or replaced by anything."""
    turn = draw(valid_turns)
    target = turn
    if draw(st.booleans()):
        target = draw(st.sampled_from(turn["messages"]))
    key = draw(st.sampled_from([*FIELDS, "role", "content", "name", "complete"]))
    if draw(st.booleans()):
        target.pop(key, None)
    else:
        target[key] = draw(json_values | st.text(st.characters(), max_size=10))
    return turn


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """A turn's JSON bytes with a byte replaced, cut short, or something hostile inserted."""
    data = bytearray(_json_text(draw(valid_turns)).encode("utf-8"))
    if draw(st.booleans()):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        data[draw(st.integers(0, len(data))) :] = b""
    at = draw(st.integers(0, len(data)))
    data[at:at] = draw(st.sampled_from([b"", b"[" * 70, b"NaN", b"\xef\xbb\xbf", b"\\ud800", b'"']))
    return bytes(data)


raw_inputs = st.one_of(
    st.binary(max_size=200),
    st.text(st.characters(), max_size=200),
    valid_turns,
    nearly_valid(),
    nearly_valid().map(_json_text),
    damaged(),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_inputs)
def test_parse_turn_raises_only_memgit_errors(value: bytes | str | dict[str, Any]) -> None:
    """Whatever bytes, text or JSON-like value arrives, parse_turn returns a Turn or raises
    a MemgitError; never another exception (which the CLI would report as exit 70)."""
    try:
        parse_turn(value, source="<stdin>")
    except MemgitError as err:
        assert err.code and err.path == "<stdin>"
        assert 2 <= int(err.exit_status) < 70


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain words", '"plain words"'),
        ('say "hi" \\ bye', '"say \\"hi\\" \\\\ bye"'),
        ("\x1b[2Jline\r\nerror[ok]: fine", '"\\x1b[2Jline\\r\\nerror[ok]: fine"'),
        ("\u202eevil\u200b\x9b\x7f\u2028", '"\\u202eevil\\u200b\\x9b\\x7f\\u2028"'),
        ("naïve 中文 ✓", '"naïve 中文 ✓"'),
        ("x" * 250, '"' + "x" * 200 + '"...'),
    ],
    ids=["plain", "quotes", "terminal", "invisible", "unicode-kept", "cut"],
)
def test_foreign_text_is_quoted_on_one_inert_line(text: str, shown: str) -> None:
    assert quote_foreign(text) == shown
