"""Seeded synthetic memory repositories for the benchmarks, built fast and cached.

Filling a repository with 100,000 files through 100,000 memgit captures would take
hours, so the corpus is written directly in the state such a history would leave:
``memgit init``, then every capture file at the path memgit gives it
(:func:`memgit.layout.capture_path`) with the bytes memgit would write
(:func:`memgit.turn.render_capture`), committed as one commit through
``git fast-import``, checked out so the index is populated, and ``git status``
checked clean. Built corpora are cached under ``bench/.cache/`` keyed by size,
seed and :data:`CORPUS_VERSION`; benchmarks work on copies (:func:`copy_corpus`).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from memgit.jsonio import json_data
from memgit.repo import MemoryRepo
from memgit.turn import Message, Turn, render_capture

# Bump whenever generated content or layout changes, so stale caches are not reused.
CORPUS_VERSION = 1
DEFAULT_CACHE = Path(__file__).resolve().parent / ".cache"
MANIFEST = "manifest.json"
SOURCES = ("claude-code", "cursor", "aider", "codex-cli", "chat-web", "support-bot")
EPOCH = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
BENCH_EPOCH = datetime(2027, 1, 1, tzinfo=UTC)
_COMMITTER = "memgit bench <bench@localhost>"

_VOCABULARY = (
    "the test suite fails when the cache is cold because config loader reads the wrong path "
    "please check whether migration handles empty rows and keep old behaviour for users who "
    "pinned version function returns none instead of raising so caller never sees error we "
    "should add retry with backoff around network call but only for idempotent requests "
    "refactor this module into smaller pieces then update docs and changelog deploy staging "
    "after review latency budget memory usage index rebuild schema field nullable default "
    "timezone parser branch merge conflict rebase commit hook lint type annotation fixture"
)
_WORDS = tuple(_VOCABULARY.split())
_PATHS = (
    "src/app/config.py",
    "src/app/models/user.py",
    "tests/test_api.py",
    "docs/setup.md",
    "web/components/Table.tsx",
    "scripts/deploy.sh",
    "pyproject.toml",
    "migrations/0042_add_index.sql",
)
_TOOLS = ("bash", "read_file", "grep", "edit_file")


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """One conversation in the corpus; ``turns`` is also the next free ``seq``."""

    source: str
    session: str
    turns: int
    start: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Corpus:
    """A built (or cached) corpus: the pristine repository and how it was made."""

    repo: Path
    size: int
    seed: int
    sessions: tuple[SessionInfo, ...]
    build_seconds: float
    phases: dict[str, float]
    cached: bool


class TextGen:
    """Plausible agent-conversation text of a few hundred bytes, from a seeded RNG."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def sentence(self) -> str:
        words = self.rng.choices(_WORDS, k=self.rng.randint(6, 18))
        if self.rng.random() < 0.4:
            words.insert(self.rng.randrange(len(words)), f"`{self.rng.choice(_PATHS)}`")
        return " ".join(words).capitalize() + self.rng.choice((".", ".", "?", "!"))

    def paragraph(self, low: int, high: int) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(low, high)))

    def code(self) -> str:
        name = self.rng.choice(_WORDS)
        lines = [f"def {name}_{i}(value):\n    return value + {i}" for i in range(1, 3)]
        return "```python\n" + "\n\n".join(lines) + "\n```"

    def tool_output(self) -> str:
        rows = [
            f"{self.rng.choice(_PATHS)}:{self.rng.randint(1, 400)}: {self.sentence()}"
            for _ in range(self.rng.randint(2, 6))
        ]
        return "\n".join(rows)

    def messages(self) -> tuple[Message, ...]:
        """A user message, usually an answer, sometimes a tool call's output."""
        found = [Message(role="user", content=self.paragraph(1, 3))]
        if self.rng.random() < 0.25:
            found.append(
                Message(
                    role="tool",
                    name=self.rng.choice(_TOOLS),
                    content=self.tool_output(),
                    complete=True,
                )
            )
        if self.rng.random() < 0.85:
            answer = self.paragraph(1, 4)
            if self.rng.random() < 0.3:
                answer += "\n\n" + self.code()
            found.append(Message(role="assistant", content=answer))
        return tuple(found)


def session_count(size: int) -> int:
    """A few hundred conversations for big corpora, a few dozen for small ones."""
    return max(10, min(300, size // 25))


def plan_sessions(size: int, rng: random.Random) -> tuple[SessionInfo, ...]:
    """Split ``size`` turns over sessions with a skewed (log-normal) length spread."""
    count = session_count(size)
    weights = [rng.lognormvariate(0.0, 1.0) for _ in range(count)]
    turns = [1] * count
    for index in rng.choices(range(count), weights=weights, k=size - count):
        turns[index] += 1
    sessions = []
    for index, length in enumerate(turns):
        start = EPOCH + timedelta(minutes=rng.randrange(365 * 24 * 60))
        name = f"{start:%Y%m%d}-{rng.getrandbits(32):08x}-{index}"
        sessions.append(
            SessionInfo(
                source=rng.choice(SOURCES),
                session=name,
                turns=length,
                start=start.isoformat().replace("+00:00", "Z"),
            )
        )
    return tuple(sessions)


def iter_turns(sessions: tuple[SessionInfo, ...], rng: random.Random) -> Iterator[Turn]:
    """Every turn of every session, seq 0..n-1, timestamps a few seconds to minutes apart."""
    text = TextGen(rng)
    for info in sessions:
        moment = datetime.fromisoformat(info.start)
        for seq in range(info.turns):
            moment += timedelta(seconds=rng.randint(5, 240))
            yield Turn(
                source=info.source,
                session=info.session,
                seq=seq,
                timestamp=moment.isoformat().replace("+00:00", "Z"),
                messages=text.messages(),
            )


def _git(repo: Path, *args: str, stdin: IO[bytes] | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], stdin=stdin, capture_output=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


def _fast_import(repo: Path, turns: Iterator[Turn], message: str) -> int:
    """Stream every capture file into one commit on top of ``main``; returns the file count."""
    parent = _git(repo, "rev-parse", "refs/heads/main").strip()
    proc = subprocess.Popen(
        ["git", "-C", str(repo), "fast-import", "--quiet", "--done"],
        stdin=subprocess.PIPE,
    )
    assert proc.stdin is not None
    out = proc.stdin
    msg = message.encode()
    out.write(b"commit refs/heads/main\n")
    out.write(f"committer {_COMMITTER} {int(time.time())} +0000\n".encode())
    out.write(b"data %d\n%s\nfrom %s\n" % (len(msg), msg, parent.encode()))
    count = 0
    for turn in turns:
        data = render_capture(turn).encode("utf-8")
        out.write(b"M 100644 inline %s\ndata %d\n%s\n" % (turn.path.encode(), len(data), data))
        count += 1
    out.write(b"\ndone\n")
    out.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    return count


def assert_clean(repo: Path) -> None:
    """The benchmark's precondition: nothing staged, modified or untracked."""
    status = _git(repo, "status", "--porcelain", "--untracked-files=all")
    if status.strip():
        raise RuntimeError(f"{repo} is not clean:\n{status[:2000]}")


def _build(repo: Path, size: int, seed: int) -> tuple[tuple[SessionInfo, ...], dict[str, float]]:
    """Create the repository at ``repo``; returns its sessions and per-phase seconds."""
    phases: dict[str, float] = {}
    began = time.perf_counter()
    MemoryRepo.init(repo)
    rng = random.Random(seed)
    sessions = plan_sessions(size, rng)
    phases["init"] = time.perf_counter() - began

    began = time.perf_counter()
    message = f"bench: synthetic corpus of {size} captures (seed {seed})"
    written = _fast_import(repo, iter_turns(sessions, rng), message)
    assert written == size, (written, size)
    phases["render+fast-import"] = time.perf_counter() - began

    began = time.perf_counter()
    _git(repo, "reset", "--hard", "--quiet")  # writes the working tree and a full index
    assert_clean(repo)
    phases["checkout+status"] = time.perf_counter() - began
    return sessions, phases


def format_tag() -> str:
    """A short hash of how memgit renders and places a capture today.

    It is part of the cache key, so a corpus built before memgit's capture
    format changed is rebuilt rather than silently benchmarked.
    """
    sample = Turn(
        source="s",
        session="t",
        seq=1,
        timestamp="2026-01-01T00:00:00Z",
        messages=(Message(role="user", content="a: b\n'c' #d"),),
    )
    rendered = f"{sample.path}\n{render_capture(sample)}"
    return hashlib.sha1(rendered.encode("utf-8")).hexdigest()[:8]


def corpus_dir(cache: Path, size: int, seed: int) -> Path:
    return cache / f"corpus-n{size}-s{seed}-v{CORPUS_VERSION}-{format_tag()}"


def build_corpus(
    size: int, seed: int, cache: Path = DEFAULT_CACHE, *, rebuild: bool = False
) -> Corpus:
    """The cached corpus for (size, seed), building it first if needed.

    A build happens in a scratch folder renamed into place at the end, so an
    interrupted build never leaves a half-made corpus that looks cached.
    """
    final = corpus_dir(cache, size, seed)
    if rebuild and final.exists():
        shutil.rmtree(final)
    if (final / MANIFEST).exists():
        return _load(final, cached=True)
    scratch = final.with_name(f"{final.name}.building-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    began = time.perf_counter()
    sessions, phases = _build(scratch / "repo", size, seed)
    manifest = {
        "size": size,
        "seed": seed,
        "version": CORPUS_VERSION,
        "build_seconds": time.perf_counter() - began,
        "phases": phases,
        "sessions": [[info.source, info.session, info.turns, info.start] for info in sessions],
    }
    (scratch / MANIFEST).write_text(json.dumps(manifest))
    os.replace(scratch, final)
    return _load(final, cached=False)


def _load(folder: Path, *, cached: bool) -> Corpus:
    data: dict[str, Any] = json.loads((folder / MANIFEST).read_text())
    sessions = tuple(
        SessionInfo(source=source, session=session, turns=turns, start=start)
        for source, session, turns, start in data["sessions"]
    )
    return Corpus(
        repo=folder / "repo",
        size=data["size"],
        seed=data["seed"],
        sessions=sessions,
        build_seconds=data["build_seconds"],
        phases=data["phases"],
        cached=cached,
    )


def copy_corpus(corpus: Corpus, dest: Path) -> Path:
    """A private working copy of the corpus, with a fresh index and a clean status.

    ``cp -a`` keeps mtimes but not inode numbers or ctimes, which git's index
    records; without ``update-index --refresh`` the first ``git commit`` would
    re-hash every file and the git baseline would pay for our copy.
    """
    subprocess.run(["cp", "-a", "--reflink=auto", str(corpus.repo), str(dest)], check=True)
    _git(dest, "update-index", "-q", "--refresh")
    assert_clean(dest)
    return dest


class TurnFeed:
    """New turns that continue the corpus's sessions, the same sequence for every contender.

    Each contender gets its own feed built from the same seed, so contender A's
    k-th capture writes exactly the file contender B's k-th capture writes.
    """

    def __init__(self, corpus: Corpus, seed: int) -> None:
        self.rng = random.Random(f"feed-{seed}-{corpus.size}")
        self.text = TextGen(self.rng)
        self.sessions = corpus.sessions
        self.next_seq = {(info.source, info.session): info.turns for info in corpus.sessions}
        self.count = 0

    def next_turn(self) -> dict[str, Any]:
        """The next turn, as the JSON object an agent would pipe to ``memgit capture``."""
        info = self.rng.choice(self.sessions)
        key = (info.source, info.session)
        seq = self.next_seq[key]
        self.next_seq[key] = seq + 1
        moment = BENCH_EPOCH + timedelta(seconds=7 * self.count)
        self.count += 1
        return {
            "source": info.source,
            "session": info.session,
            "seq": seq,
            "timestamp": moment.isoformat().replace("+00:00", "Z"),
            "messages": [json_data(message) for message in self.text.messages()],
        }
