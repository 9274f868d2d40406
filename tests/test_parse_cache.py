"""The parse cache in ``.git/memgit/parsed/``: used when sound, rebuilt when not, never required.

Each test computes the processing state as a new ``memgit process`` would (nothing
parsed in memory yet) and compares it with a cold computation (no cache at all).
The strict parsers are swapped for ones that fail, to prove a warm cache does
without them. Corrupt entries hold values that would change the state if trusted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
from test_process import RULES_TURNS, capture, configure, open_repo, user_turn

import memgit
from memgit import MemoryRepo, parsecache, pending
from memgit.capture import turn as turn_module
from memgit.governance.evidence import iter_source_problems
from memgit.governance.view import view_of_commit
from memgit.layout import capture_path
from memgit.memory import parse_memory
from memgit.pending import DEFAULT_MAX_DEFERRALS, ProcessingState, processing_state

from support import git, memgit_cli

KINDS = ("capture", "run-coverage")

NewProcess = Callable[[Path], ProcessingState]


@pytest.fixture
def processed(repo_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three runs over five turns (two turns a run), then two turns still pending."""
    monkeypatch.setattr(parsecache, "_decoded", {})  # other tests' turns have the same blobs
    configure(repo_path, gate={"batch_size": 2})
    capture(repo_path, *RULES_TURNS)
    assert len(open_repo(repo_path).process().runs) == 3
    capture(repo_path, user_turn(5, "I prefer tea."), user_turn(6, "Remember the code is 42."))
    return repo_path


@pytest.fixture
def new_process(monkeypatch: pytest.MonkeyPatch) -> NewProcess:
    """The processing state of HEAD, computed with nothing parsed in this process yet
    and no coverage table (tests/test_coverage.py tests that)."""

    def compute(path: Path) -> ProcessingState:
        monkeypatch.setattr(pending, "_states", {})
        monkeypatch.setattr(parsecache, "_decoded", {})
        # Without the coverage table, which would spare reading run records at all.
        for name in ("coverage.sqlite", "coverage.sqlite-wal", "coverage.sqlite-shm"):
            (path / ".git" / "memgit" / name).unlink(missing_ok=True)
        repo = open_repo(path).git
        state = processing_state(repo, repo.head.peel().tree, max_deferrals=DEFAULT_MAX_DEFERRALS)
        assert state.pending and state.processed and state.fully_processed
        return state

    return compute


@contextlib.contextmanager
def refused(monkeypatch: pytest.MonkeyPatch, *targets: tuple[object, str]) -> Iterator[None]:
    """Within the block, calling any of ``targets`` (module, name) fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("parsed a file the cache holds")

    with monkeypatch.context() as inner:
        for module, name in targets:
            inner.setattr(module, name, refuse)
        yield


def no_parsing(monkeypatch: pytest.MonkeyPatch) -> contextlib.AbstractContextManager[None]:
    return refused(monkeypatch, (parsecache, "parse_capture"), (pending, "parse_run_record"))


def parsed_dir(path: Path) -> Path:
    return path / ".git" / "memgit" / "parsed"


def entry_files(path: Path) -> list[tuple[str, Path]]:
    """(kind, entry file) of every entry in the cache."""
    return [
        (kind, entry) for kind in KINDS for entry in sorted((parsed_dir(path) / kind).glob("*/*"))
    ]


def blobs(path: Path, folder: str) -> set[str]:
    listing = git(path, "ls-tree", "-r", "HEAD", "--", folder).splitlines()
    return {line.split()[2] for line in listing}


def assert_sound_entries(path: Path) -> None:
    """A current entry for every capture and run record of HEAD, and no temporary file."""
    found: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for kind, entry in entry_files(path):
        assert entry.is_file() and entry.suffix == ".json", entry
        data = json.loads(entry.read_bytes())
        assert (data["format"], data["memgit"]) == (parsecache.FORMAT, memgit.__version__)
        found[kind].add(entry.stem)
    assert found == {"capture": blobs(path, "inbox"), "run-coverage": blobs(path, "runs")}


def cold_state(path: Path, new_process: NewProcess) -> ProcessingState:
    shutil.rmtree(parsed_dir(path), ignore_errors=True)
    return new_process(path)


# ---------------------------------------------------------------- a warm cache


def test_a_process_fills_the_cache_and_the_next_parses_nothing(
    processed: Path, new_process: NewProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every capture leaves its entry (memgit-schemas parsed it to commit it); `memgit
    process` knows its own run records without reading them; a process that reads
    everything leaves an entry per file, and the next derives the same state as a cold
    one from the entries alone."""
    capture_entries = {entry.stem for kind, entry in entry_files(processed) if kind == "capture"}
    assert capture_entries == blobs(processed, "inbox")

    cold = cold_state(processed, new_process)
    assert_sound_entries(processed)
    with no_parsing(monkeypatch):
        assert new_process(processed) == cold


def test_a_process_parses_no_capture_the_capture_command_checked(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The strict parse of a new capture runs once: in the check that commits it."""
    monkeypatch.setattr(parsecache, "_decoded", {})
    capture(repo_path, *RULES_TURNS)
    monkeypatch.setattr(parsecache, "_decoded", {})  # as in the next process
    with refused(monkeypatch, (parsecache, "parse_capture")):
        result = open_repo(repo_path).process()
    assert len(result.runs) == 1 and result.runs[0].decisions


# ---------------------------------------------------------------- a broken cache


def _edit(entry: Path, change: Callable[[Any], Any], **fields: Any) -> None:
    """Change an entry's value (and other fields), keeping it well-formed JSON."""
    data = json.loads(entry.read_bytes())
    data.update(fields, value=change(data["value"]))
    entry.write_text(json.dumps(data), "ascii")


def _misleading(value: Any) -> Any:
    """A capture moved to another seq; coverage rows dropped: either changes the state."""
    return {**value, "seq": value["seq"] + 100} if isinstance(value, dict) else []


def _without_a_key(value: Any) -> Any:
    """A capture without its messages; coverage rows without their decisions."""
    if isinstance(value, dict):
        return {key: item for key, item in value.items() if key != "messages"}
    return [row[:1] for row in value]


def _wrong_shape(value: Any) -> Any:
    """A capture that is no object; coverage rows that are strings, each of which
    would unpack into two one-letter unit ids if not checked."""
    return ["source", "session"] if isinstance(value, dict) else ["ab", "cd"]


def _directory(entry: Path) -> None:
    entry.unlink()
    (entry / "inside").mkdir(parents=True)


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "empty": lambda entry: entry.write_bytes(b""),
    "truncated": lambda entry: entry.write_bytes(entry.read_bytes()[:-7]),
    "not-utf8": lambda entry: entry.write_bytes(b'\xff\xfe{"format": 1}'),
    "not-an-object": lambda entry: entry.write_text("[1, 2]", "ascii"),
    "no-value": lambda entry: entry.write_text(
        json.dumps({"format": parsecache.FORMAT, "memgit": memgit.__version__}), "ascii"
    ),
    "older-format": lambda entry: _edit(entry, _misleading, format=parsecache.FORMAT - 1),
    "other-release": lambda entry: _edit(entry, _misleading, memgit="0.0.0-other"),
    "wrong-shape": lambda entry: _edit(entry, _wrong_shape),
    "missing-key": lambda entry: _edit(entry, _without_a_key),
    "directory": _directory,
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_entry_is_rebuilt_never_trusted(
    processed: Path, new_process: NewProcess, monkeypatch: pytest.MonkeyPatch, corruption: str
) -> None:
    cold = cold_state(processed, new_process)
    for _, entry in entry_files(processed):
        CORRUPTIONS[corruption](entry)

    assert new_process(processed) == cold
    assert_sound_entries(processed)
    with no_parsing(monkeypatch):
        assert new_process(processed) == cold


def test_a_deleted_cache_is_rebuilt(processed: Path, new_process: NewProcess) -> None:
    cold = cold_state(processed, new_process)
    shutil.rmtree(processed / ".git" / "memgit")
    assert new_process(processed) == cold
    assert_sound_entries(processed)


# ---------------------------------------------------------------- a cache that cannot be written


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_cache_is_read_around(processed: Path, new_process: NewProcess) -> None:
    """Corrupt entries in folders memgit may not write: the state is still right."""
    cold = cold_state(processed, new_process)
    entries = entry_files(processed)
    for _, entry in entries:
        entry.write_bytes(b"{")
    folders = [parsed_dir(processed), *sorted(parsed_dir(processed).rglob("*/"))]
    for folder in folders:
        folder.chmod(0o500)
    try:
        assert new_process(processed) == cold
        assert [entry.read_bytes() for _, entry in entries] == [b"{"] * len(entries)
    finally:
        for folder in folders:
            folder.chmod(0o700)


def test_a_cache_folder_that_is_a_file_is_done_without(
    processed: Path, new_process: NewProcess
) -> None:
    """No folder can be made (for root too): every write fails, and nothing else does."""
    cold = cold_state(processed, new_process)
    shutil.rmtree(parsed_dir(processed))
    parsed_dir(processed).write_bytes(b"not a folder")
    assert new_process(processed) == cold
    assert parsed_dir(processed).read_bytes() == b"not a folder"


def test_an_entry_linked_to_a_folder_elsewhere_is_left_alone(
    processed: Path, new_process: NewProcess, tmp_path: Path
) -> None:
    """The cache removes a folder in an entry's place, but never through a symlink."""
    cold = cold_state(processed, new_process)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "keep").mkdir(parents=True)
    entries = [entry for _, entry in entry_files(processed)]
    for entry in entries:
        entry.unlink()
        entry.symlink_to(elsewhere, target_is_directory=True)
    assert new_process(processed) == cold
    assert (elsewhere / "keep").is_dir()
    assert all(entry.is_symlink() for entry in entries)


# ---------------------------------------------------------------- broken files


def _bad_capture() -> tuple[str, str]:
    text = "source: test-agent\nsession: s1\nseq: 9\ntimestamp: soon\nmessages: []\n"
    return capture_path("test-agent", "s1", 9), text


BROKEN = {
    "capture": (*_bad_capture(), "invalid-timestamp"),
    "run-coverage": (
        "runs/2026/11/20261130T100000Z-broken.json",
        '{"format_version": 1}\n',
        "schema",
    ),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_file_is_never_cached_and_fails_every_time(processed: Path, kind: str) -> None:
    """A capture or run record the strict parser refuses stops `process` with its error,
    on every run: what failed to parse is not in the cache."""
    path, text, code = BROKEN[kind]
    (processed / path).parent.mkdir(parents=True, exist_ok=True)
    (processed / path).write_text(text, "utf-8")
    git(processed, "add", path)
    git(processed, "commit", "-q", "-m", f"a broken {kind}")
    blob = git(processed, "rev-parse", f"HEAD:{path}").strip()

    for _ in range(2):
        done = memgit_cli("-C", str(processed), "process", "--json")
        assert done.returncode == 3, done.stderr.decode()
        error = json.loads(done.stdout)["error"]
        assert (error["code"], error["path"]) == (code, path)
        assert blob not in {entry.stem for _, entry in entry_files(processed)}


# ---------------------------------------------------------------- the evidence check


def test_the_evidence_check_reads_cached_captures_it_can_find(
    processed: Path, new_process: NewProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sources are checked against cached captures without a strict parse; an entry
    for a blob the repository lacks does not make that blob evidence."""
    cold_state(processed, new_process)
    repo = open_repo(processed).git
    view = view_of_commit(repo, repo.head.peel())
    names = git(processed, "ls-tree", "-r", "--name-only", "HEAD", "--", "memories").split()
    memories = {name: parse_memory((processed / name).read_bytes(), path=name) for name in names}
    assert len(memories) == 4
    monkeypatch.setattr(parsecache, "_decoded", {})
    with refused(monkeypatch, (turn_module, "turn_from_data")):
        for name, memory in memories.items():
            assert list(iter_source_problems(view, name, memory)) == []

    name, memory = next(iter(memories.items()))
    (source,) = memory.sources
    absent = "0" * 40
    planted = parsed_dir(processed) / "capture" / absent[:2] / f"{absent}.json"
    planted.parent.mkdir(parents=True)
    shutil.copy(
        parsed_dir(processed) / "capture" / source.blob[:2] / f"{source.blob}.json", planted
    )
    moved = dataclasses.replace(memory, sources=(dataclasses.replace(source, blob=absent),))
    codes = [problem.code for problem in iter_source_problems(view, name, moved)]
    assert codes == ["source-capture-missing"]


# ---------------------------------------------------------------- memgit.yaml


def settings_entries(path: Path) -> set[str]:
    return {entry.stem for entry in (parsed_dir(path) / "settings").glob("*/*.json")}


def test_settings_are_parsed_once_per_content(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new process opening the repository reads memgit.yaml's entry, not the YAML;
    another content is another entry."""
    monkeypatch.setattr(parsecache, "_decoded", {})  # as in a new process
    first = MemoryRepo.open(repo_path).settings
    blob = git(repo_path, "hash-object", "memgit.yaml").strip()
    assert settings_entries(repo_path) == {blob}
    monkeypatch.setattr(parsecache, "_decoded", {})
    with refused(monkeypatch, (parsecache, "parse_settings")):
        assert MemoryRepo.open(repo_path).settings == first

    configure(repo_path, gate={"batch_size": 7})
    monkeypatch.setattr(parsecache, "_decoded", {})
    assert MemoryRepo.open(repo_path).settings.gate["batch_size"] == 7
    assert len(settings_entries(repo_path)) == 2


def test_broken_settings_are_never_cached(repo_path: Path) -> None:
    config = repo_path / "memgit.yaml"
    config.write_text(config.read_text("utf-8").replace("backend: rules", "backend: [rules"))
    for _ in range(2):
        done = memgit_cli("-C", str(repo_path), "recall", "tea", "--json")
        assert done.returncode != 0
        error = json.loads(done.stdout)["error"]
        assert (error["code"], error["path"]) == ("invalid-yaml", "memgit.yaml")
        assert settings_entries(repo_path) == set()


def test_the_in_memory_level_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that reads many blobs (a long-running server) keeps at most
    MAX_DECODED decoded values, dropping the oldest; a dropped one is read again
    from the entry on disk, not computed."""
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    monkeypatch.setattr(parsecache, "MAX_DECODED", 3)
    monkeypatch.setattr(parsecache, "_decoded", {})
    blobs = [f"{n:040x}" for n in range(5)]
    computed: list[str] = []

    def read(blob: str) -> str:
        def compute() -> str:
            computed.append(blob)
            return f"value of {blob}"

        return parsecache.cached(repo, "test", blob, compute, encode=str, decode=str)

    for blob in blobs:
        assert read(blob) == f"value of {blob}"
    assert len(parsecache._decoded) == 3
    assert ("test", blobs[0]) not in parsecache._decoded
    assert read(blobs[0]) == f"value of {blobs[0]}"
    assert computed == blobs  # the dropped value came back from disk
