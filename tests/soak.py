"""The convergence soak of issue 24: three clones of one remote, working apart at random.

A bare remote served by a real ``git daemon`` on 127.0.0.1, set up as docs/sharing.md
says (``memgit init``, ``git init --bare``, ``git remote add``, ``memgit init`` again,
``git push``); three clones (``git clone``, ``memgit init``, which installs the hooks).
Then a seeded random sequence of what a team does, one step at a time in a random
clone: capture (with and without ``seq``, some turns holding a fake secret, some
stating memories the rules Gate keeps, some changing a mind about a memory another
clone made), process, sync (so turns are often pushed before they are processed),
a hand edit of a memory's body committed with git, ``git rm`` of a memory committed
with git, ``memgit forget``, the same memory replaced differently in two clones (a
contradiction), and ``memgit review approve ID --keep MEMORY`` on an open one.

Every step that exits non-zero must be a documented refusal the engine then handles
as a person would: ``sync-conflict`` (exit 4) is merged by hand as docs/sharing.md
says (``git merge refs/memgit-sync/origin/branch``, resolve, ``git commit``, sync).
Anything else fails the seed, with the log of every step.

Then every clone syncs, round after round, until a whole round changes nothing, and
:func:`check` holds every invariant the issue's acceptance names. Used by
``tests/test_sync_soak.py`` (a few seeds) and ``bench/sync_soak.py`` (many).
"""

from __future__ import annotations

import json
import random
import re
import resource
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from remotes import git_daemon

from secret_fixtures import SECRET_FIXTURES
from support import git, memgit_cli, memgit_in_process

CLONES = ("ada", "bo", "cy")
QUIET_ROUNDS = 6  # sync rounds allowed before the clones must be quiet
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
AUTHOR = "Test Person <test@example.com>"
RETIRED_ACTIVE = re.compile(r"error\[(?:retired|forgotten)-id-active\]: (\S+\.md):")

# Facts the rules Gate keeps ("Remember that ...") and changes of mind about them
# ("... now ... instead of ..."): each topic's values are words no other topic uses, so
# a memory's topic and current value can be read back from its title.
TOPICS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "deploys": (
        "Remember that deploys happen on {value}.",
        "Deploys now happen on {value} instead of {old}.",
        ("Tuesdays", "Thursdays", "Fridays", "Mondays", "Wednesdays"),
    ),
    "sessions": (
        "Remember that the sessions live in {value}.",
        "The sessions now live in {value} instead of {old}.",
        ("Redis", "Memcached", "Postgres", "DynamoDB", "Cassandra"),
    ),
    "builds": (
        "Remember that the build server runs {value}.",
        "The build server now runs {value} instead of {old}.",
        ("Debian", "Ubuntu", "Alpine", "Fedora", "Gentoo"),
    ),
    "notes": (
        "Remember that the release notes are written in {value}.",
        "The release notes are now written in {value} instead of {old}.",
        ("English", "German", "Spanish", "French", "Italian"),
    ),
    "backups": (
        "Remember that the nightly backup goes to {value}.",
        "The nightly backup now goes to {value} instead of {old}.",
        ("Frankfurt", "Dublin", "Oregon", "Tokyo", "Sydney"),
    ),
}
CHATTER = (
    "Just chatting about the weather today.",
    "Thanks, that helped a lot.",
    "Can you summarise the last answer?",
    "What time is it in Tokyo right now?",
)
PREFERENCES = (
    "I prefer tabs over spaces in every {word} file.",
    "I prefer short commit messages in the {word} repository.",
    "Remember that the {word} dashboard lives on the second monitor.",
)
WORDS = ("amber", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo")

# How often each step is picked, out of their sum.
WEIGHTS = {
    "capture": 34,
    "process": 16,
    "sync": 22,
    "edit": 6,
    "rm": 4,
    "forget": 4,
    "rivals": 5,
    "keep": 14,
}


class SoakFailure(AssertionError):
    """A seed failed: the message names the step or invariant, then the whole step log."""

    def __init__(self, message: str, report: Report) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class Step:
    number: int
    clone: str
    action: str
    detail: str
    exit: int = 0
    note: str = ""

    def line(self) -> str:
        status = f"exit {self.exit}" if self.exit else "ok"
        note = f" -- {self.note}" if self.note else ""
        return f"{self.number:3d} {self.clone:3s} {self.action:8s} {self.detail} [{status}]{note}"


@dataclass
class Report:
    """What a seed did and what the checks found."""

    seed: int
    steps: list[Step] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    captures: dict[str, str] = field(default_factory=dict)  # path -> the step that made it
    secrets: list[str] = field(default_factory=list)
    removed_captures: set[str] = field(default_factory=set)
    forgotten: set[str] = field(default_factory=set)
    duplicates: set[frozenset[str]] = field(default_factory=set)
    decided_apart: set[str] = field(default_factory=set)  # units sync reported
    contradictions_closed: set[str] = field(default_factory=set)
    kept_rivals: set[frozenset[str]] = field(default_factory=set)
    quiet_after: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process and its children: the time on a quiet machine
    final: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None

    def log(self) -> str:
        return "\n".join(step.line() for step in self.steps)

    def summary(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "ok": self.failure is None,
            "steps": len(self.steps),
            "counts": dict(sorted(self.counts.items())),
            "captures": len(self.captures),
            "quiet_after_rounds": self.quiet_after,
            "seconds": round(self.seconds, 1),
            "cpu_seconds": round(self.cpu_seconds, 1),
            **self.final,
            "failure": self.failure.splitlines()[0] if self.failure else None,
        }


def run_seed(root: Path, seed: int, steps: int, *, pre_receive: bool = False) -> Report:
    """Run one seed in a fresh folder ``root``; the report says what happened, and
    :class:`SoakFailure` (the report attached) what went wrong."""
    report = Report(seed=seed)
    started = time.monotonic()
    cpu = _cpu()
    served = root / "served"
    served.mkdir(parents=True)
    try:
        with git_daemon(served) as url:
            soak = Soak(root, url, seed, report, pre_receive=pre_receive)
            soak.set_up()
            soak.opening()
            for number in range(1, steps + 1):
                soak.step(number)
            soak.sync_until_quiet()
            check(soak)
    except SoakFailure as failure:
        report.failure = str(failure)
        raise
    except Exception as error:  # a git command or an answer the engine did not expect
        report.failure = f"seed {seed}: {error!r}\n{report.log()}"
        raise SoakFailure(report.failure, report) from error
    finally:
        report.seconds = time.monotonic() - started
        report.cpu_seconds = _cpu() - cpu
    return report


class Soak:
    """The three clones and the remote, and the random steps on them."""

    def __init__(
        self, root: Path, url: str, seed: int, report: Report, *, pre_receive: bool
    ) -> None:
        self.root = root
        self.url = url
        self.rng = random.Random(seed)
        self.report = report
        self.pre_receive = pre_receive
        self.remote = root / "served" / "memory.git"
        self.clones = {name: root / name for name in CLONES}
        self.sessions: dict[str, list[str]] = {name: [] for name in CLONES}
        self.next_seq: dict[str, int] = defaultdict(int)
        self.clock = 0

    # -- set-up, as docs/sharing.md says ---------------------------------------------

    def set_up(self) -> None:
        first = self.root / "first"
        self._cli(self.root, "init", str(first))
        git(self.root, "init", "-q", "--bare", str(self.remote))
        if self.pre_receive:
            hook = self.remote / "hooks" / "pre-receive"
            hook.write_text(
                "#!/bin/sh\n"
                f'MEMGIT="{sys.executable} -m memgit.cli.main"\n'
                "if ! $MEMGIT verify --ref-updates - ; then exit 1; fi\n",
                "utf-8",
            )
            hook.chmod(0o755)
        git(first, "remote", "add", "origin", f"{self.url}/memory.git")
        self._cli(first, "init")
        git(first, "push", "-q")
        for path in self.clones.values():
            git(self.root, "clone", "-q", f"{self.url}/memory.git", str(path))
            self._cli(path, "init")

    # -- the steps -------------------------------------------------------------------

    def opening(self) -> None:
        """Step 0, the same in every seed: a fact every clone holds, replaced two ways
        in two clones, the contradiction synced, and closed with review approve --keep."""
        self._capture(0, "ada", "Remember that the sessions live in Redis.")
        self._process(0, "ada")
        for name in CLONES:
            self._sync(0, name)
        self._rivals(0, "ada")
        for name in [*CLONES, *CLONES]:
            self._sync(0, name)
        self._keep(0, "ada")
        if not self.report.contradictions_closed:
            self._fail("the opening's two replacements of one memory made no contradiction")

    def step(self, number: int) -> None:
        actions = list(WEIGHTS)
        action = self.rng.choices(actions, weights=[WEIGHTS[a] for a in actions])[0]
        name = self.rng.choice(CLONES)
        getattr(self, f"_{action}")(number, name)

    def _record(self, number: int, clone: str, action: str, detail: str, **more: Any) -> Step:
        step = Step(number=number, clone=clone, action=action, detail=detail, **more)
        self.report.steps.append(step)
        self.report.counts[action] += 1
        return step

    def _capture(self, number: int, name: str, text: str | None = None) -> None:
        secret = None
        if text is None:
            text, secret = self._say(name)
        sessions = self.sessions[name]
        if not sessions or self.rng.random() < 0.2:
            sessions.append(f"{name}-s{len(sessions)}")
        session = self.rng.choice(sessions)
        self.clock += 1
        turn: dict[str, Any] = {
            "source": "soak",
            "session": session,
            "timestamp": (START + timedelta(minutes=self.clock)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "messages": [{"role": "user", "content": text}],
        }
        with_seq = self.rng.random() < 0.5
        if with_seq:
            turn["seq"] = self.next_seq[session]
        done = self._cli(self.clones[name], "capture", "--json", stdin=json.dumps(turn))
        detail = f"{session} {'seq ' + str(turn['seq']) if with_seq else 'no seq'}: {text[:60]!r}"
        step = self._record(number, name, "capture", detail, exit=done.returncode)
        if done.returncode != 0:
            self._fail(f"capture refused: {_err(done)}")
        outcome = json.loads(done.stdout)
        self.next_seq[session] = max(self.next_seq[session], outcome["seq"] + 1)
        self.report.captures[outcome["path"]] = f"step {number}"
        step.note = outcome["path"]
        if secret is not None:
            self.report.secrets.append(secret)
            step.note += f" (secret: {sorted(outcome['redactions'])})"
            if not outcome["redactions"]:
                self._fail("a turn holding a secret was stored with no redaction")

    def _say(self, name: str) -> tuple[str, str | None]:
        """A turn's text, and the secret it holds (if any)."""
        roll = self.rng.random()
        held = self._topic_memories(name)
        if roll < 0.3 and held:
            _, topic, value = self.rng.choice(held)
            return self._change(topic, value), None
        if roll < 0.55:
            topic = self.rng.choice(sorted(TOPICS))
            remember, _, values = TOPICS[topic]
            return remember.format(value=self.rng.choice(values)), None
        if roll < 0.7:
            word = self.rng.choice(WORDS)
            return self.rng.choice(PREFERENCES).format(word=f"{word}-{self.clock}"), None
        if roll < 0.82:
            _, sample, value = self.rng.choice(SECRET_FIXTURES)
            return f"{sample}\n\nRemember that the {name} gateway token rotates weekly.", value
        return self.rng.choice(CHATTER), None

    def _change(self, topic: str, old: str, avoid: str | None = None) -> str:
        _, change, values = TOPICS[topic]
        new = self.rng.choice([v for v in values if v not in (old, avoid)])
        return change.format(value=new, old=old)

    def _process(self, number: int, name: str) -> None:
        done = self._cli(self.clones[name], "process", "--json")
        step = self._record(number, name, "process", "rules", exit=done.returncode)
        if done.returncode != 0:
            self._fail(f"process failed: {_err(done)}")
        step.note = _run_note(done.stdout)

    def _sync(self, number: int, name: str, *, action: str = "sync") -> bool:
        """Sync, resolving a conflict as docs/sharing.md says; whether anything moved."""
        path = self.clones[name]
        before = self._state(path)
        done = self._cli(path, "sync", "--json")
        step = self._record(number, name, action, "memgit sync", exit=done.returncode)
        if done.returncode == 4 and b"error[sync-conflict]" in done.stderr:
            step.note = _err(done)
            self._resolve(number, name)
            done = self._cli(path, "sync", "--json")
            step = self._record(number, name, action, "memgit sync again", exit=done.returncode)
        if done.returncode != 0:
            self._fail(f"sync failed: {_err(done)}")
        result = json.loads(done.stdout)
        for pair in result["possible_duplicates"]:
            self.report.duplicates.add(frozenset(pair))
        self.report.decided_apart.update(apart["unit"] for apart in result["decided_apart"])
        step.note = f"{result['joined']}, {result['rounds']} round(s)"
        if result["contradictions"]:
            step.note += f", {len(result['contradictions'])} open contradiction(s)"
        return self._state(path) != before

    def _resolve(self, number: int, name: str) -> None:
        """A person's merge of a sync conflict: ``git merge`` the fetched branch, take
        a teammate's removal, keep both sides' lines of a body (an edit by hand, so
        ``origin: human``), commit through the hooks."""
        path = self.clones[name]
        merging = subprocess.run(
            ["git", "-C", str(path), "merge", "-q", "refs/memgit-sync/origin/branch"],
            capture_output=True,
            text=True,
            check=False,
        )
        unmerged = git(path, "diff", "--name-only", "--diff-filter=U").split()
        if merging.returncode == 0 or not unmerged:
            self._fail(f"git merge did not stop on the conflict sync reported: {merging.stderr}")
        stages: dict[str, set[str]] = defaultdict(set)
        for line in git(path, "ls-files", "-u").splitlines():
            info, conflicted = line.split("\t", 1)
            stages[conflicted].add(info.split()[2])
        resolved = []
        for conflicted in unmerged:
            file = path / conflicted
            if stages[conflicted] != {"1", "2", "3"} and stages[conflicted] != {"2", "3"}:
                # One side removed it (a retraction, a forget): a removed id cannot come
                # back, so the person takes the removal.
                git(path, "rm", "-q", conflicted)
                resolved.append(f"{conflicted} removed (one side removed it)")
                continue
            text = file.read_text("utf-8")
            if not conflicted.startswith("memories/") or "<<<<<<<" not in text:
                self._fail(f"a conflict a person cannot resolve as documented: {conflicted}")
            file.write_text(_as_human(_resolve_markers(text)), "utf-8")
            git(path, "add", conflicted)
            resolved.append(f"{conflicted} edited (stages {sorted(stages[conflicted])})")
        committed = _commit(path, "--no-edit")
        retired = sorted(set(RETIRED_ACTIVE.findall(committed.stderr)))
        if committed.returncode != 0 and retired:
            # A memory one clone retired or forgot that the other's run made too: git's merge
            # brings it back, the hooks name it, the person removes it (docs/sharing.md).
            git(path, "rm", "-q", "-f", *retired)
            resolved.append(f"{', '.join(retired)} removed (removed by a side, named by the hooks)")
            committed = _commit(path, "--no-edit")
        step = self._record(number, name, "resolve", "; ".join(resolved), exit=committed.returncode)
        if committed.returncode != 0:
            step.note = committed.stderr.strip()[-300:]
            self._fail(f"the hooks refused a documented conflict resolution: {committed.stderr}")

    def _edit(self, number: int, name: str) -> None:
        path = self.clones[name]
        memories = self._memory_files(path)
        if not memories:
            return
        chosen = self.rng.choice(memories)
        file = path / chosen
        file.write_text(_as_human(file.read_text("utf-8")) + f"Edited in {name}, step {number}.\n")
        committed = _commit(path, "-am", f"Edit {Path(chosen).stem} by hand")
        self._record(number, name, "edit", chosen, exit=committed.returncode)
        if committed.returncode != 0:
            self._fail(f"a hand edit was refused: {committed.stderr}")

    def _rm(self, number: int, name: str) -> None:
        path = self.clones[name]
        memories = self._memory_files(path)
        if not memories:
            return
        chosen = self.rng.choice(memories)
        git(path, "rm", "-q", chosen)
        committed = _commit(path, "-m", f"Remove {Path(chosen).stem}: no longer true")
        step = self._record(number, name, "rm", chosen, exit=committed.returncode)
        if committed.returncode != 0:
            self._fail(f"git rm of a memory was refused: {committed.stderr}")
        message = git(path, "log", "-1", "--format=%B")
        memory_id = Path(chosen).stem
        if f"Memgit-Retracted: {memory_id}" not in message and "Memgit-Superseded" not in message:
            self._fail(f"the commit-msg hook did not record the retraction: {message}")
        retired = git(
            path, "rev-parse", "-q", "--verify", f"refs/memgit/retired/{memory_id}", check=False
        ).strip()
        if retired != git(path, "rev-parse", "HEAD~1").strip():
            self._fail(f"the post-commit hook did not set refs/memgit/retired/{memory_id}")
        step.note = "retracted"

    def _forget(self, number: int, name: str) -> None:
        path = self.clones[name]
        memories = self._memory_files(path)
        if not memories:
            return
        memory_id = Path(self.rng.choice(memories)).stem
        sources = self.rng.random() < 0.3
        args = ["forget", memory_id, "--json", *(["--with-sources"] if sources else [])]
        done = self._cli(path, *args)
        step = self._record(number, name, "forget", " ".join(args[1:]), exit=done.returncode)
        if done.returncode != 0:
            self._fail(f"forget failed: {_err(done)}")
        result = json.loads(done.stdout)
        self.report.forgotten.add(memory_id)
        removed = [p for p in result.get("captures", []) if isinstance(p, str)]
        self.report.removed_captures.update(removed)
        if removed:
            step.note = f"and {len(removed)} capture(s)"

    def _rivals(self, number: int, name: str) -> None:
        """One memory replaced two ways in two clones that both hold it, each processed
        before either syncs: a contradiction once they meet."""
        others = [other for other in CLONES if other != name]
        other = self.rng.choice(others)
        mine = {memory_id: (topic, value) for memory_id, topic, value in self._topic_memories(name)}
        shared = [
            (memory_id, *mine[memory_id])
            for memory_id, _, _ in self._topic_memories(other)
            if memory_id in mine
        ]
        if not shared:
            return
        memory_id, topic, value = self.rng.choice(shared)
        self._record(number, name, "rivals", f"{memory_id} ({topic}: {value}) here and in {other}")
        first = self._change(topic, value)
        second = self._change(topic, value, avoid=first.split(" instead")[0].split()[-1])
        for clone, text in ((name, first), (other, second)):
            self._capture(number, clone, text)
            self._process(number, clone)

    def _keep(self, number: int, name: str) -> None:
        """Close an open contradiction: in this clone, else the next one that has one
        (a person who sees it in review resolves it)."""
        start = CLONES.index(name)
        for name in CLONES[start:] + CLONES[:start]:
            path = self.clones[name]
            listed = self._cli(path, "review", "list", "--json")
            if listed.returncode != 0:
                self._fail(f"review list failed: {_err(listed)}")
            items = [i for i in json.loads(listed.stdout) if i["kind"] == "contradiction"]
            if items:
                break
        else:
            return
        item = self.rng.choice(items)
        keep = self.rng.choice(item["rivals"])["id"]
        done = self._cli(path, "review", "approve", item["id"], "--keep", keep, "--json")
        step = self._record(
            number, name, "keep", f"approve {item['id']} --keep {keep}", exit=done.returncode
        )
        if done.returncode != 0:
            self._fail(f"review approve --keep failed: {_err(done)}")
        self.report.contradictions_closed.add(item["id"])
        self.report.kept_rivals.add(frozenset(rival["id"] for rival in item["rivals"]))
        step.note = f"retired {json.loads(done.stdout)['retired']}"

    # -- quiet -----------------------------------------------------------------------

    def sync_until_quiet(self) -> None:
        for round_number in range(1, QUIET_ROUNDS + 1):
            before = self._state(self.remote)
            moved = [self._sync(-round_number, name, action="quiet") for name in CLONES]
            if not any(moved) and self._state(self.remote) == before:
                self.report.quiet_after = round_number
                return
        self._fail(f"still not quiet after {QUIET_ROUNDS} sync rounds")

    # -- reading clones --------------------------------------------------------------

    def _state(self, path: Path) -> str:
        return git(
            path, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/", "refs/memgit/"
        )

    def _memory_files(self, path: Path) -> list[str]:
        return sorted(git(path, "ls-files", "memories").split())

    def _topic_memories(self, name: str) -> list[tuple[str, str, str]]:
        """(id, topic, current value) of the memories about a topic in ``name``'s tree."""
        found = []
        for relative in self._memory_files(self.clones[name]):
            title = _field(self.clones[name] / relative, "title")
            for topic, (_, _, values) in TOPICS.items():
                at = {value: title.find(value) for value in values if value in title}
                if at:
                    found.append((Path(relative).stem, topic, min(at, key=lambda v: at[v])))
                    break
        return found

    def _cli(self, cwd: Path, *args: str, stdin: str | None = None) -> Any:
        return memgit_in_process(*args, cwd=cwd, input=stdin.encode() if stdin else None)

    def _fail(self, message: str) -> None:
        raise SoakFailure(f"seed {self.report.seed}: {message}\n{self.report.log()}", self.report)


# -- the checks ----------------------------------------------------------------------


def check(soak: Soak) -> None:
    """Every invariant of issue 24's acceptance, on the clones after quiet."""
    clones = list(soak.clones.values())
    report = soak.report
    trees = {git(path, "rev-parse", "HEAD^{tree}").strip() for path in clones}
    trees.add(git(soak.remote, "rev-parse", "main^{tree}").strip())
    if len(trees) != 1:
        soak._fail(f"the clones and the remote hold {len(trees)} different trees")
    refs = {
        git(path, "for-each-ref", "--format=%(refname) %(objectname)", "refs/memgit/")
        for path in [*clones, soak.remote]
    }
    if len(refs) != 1:
        soak._fail("the clones and the remote hold different refs/memgit/*")
    first = clones[0]
    files = git(first, "ls-tree", "-r", "--name-only", "HEAD").split()
    present = set(files)

    lost = sorted(set(report.captures) - present - report.removed_captures)
    if lost:
        soak._fail(f"{len(lost)} acknowledged capture(s) lost: {lost[:5]}")

    memories = {Path(f).stem: f for f in files if f.startswith("memories/")}
    retired = {
        name.rsplit("/", 1)[1]
        for name in git(
            first, "for-each-ref", "--format=%(refname)", "refs/memgit/retired/"
        ).split()
    }
    if retired & set(memories):
        soak._fail(f"retired memories active again: {sorted(retired & set(memories))}")
    if report.forgotten & set(memories):
        soak._fail(f"forgotten memories active again: {sorted(report.forgotten & set(memories))}")
    listed = {
        item["id"]
        for item in json.loads(memgit_in_process("review", "list", "--json", cwd=first).stdout)
        if item["kind"] == "contradiction"
    }
    replaced_by: dict[str, set[str]] = defaultdict(set)
    for memory_id, relative in memories.items():
        for replaced in _supersedes(git(first, "show", f"HEAD:{relative}")):
            replaced_by[replaced].add(memory_id)
    open_items = {old for old, new in replaced_by.items() if len(new) > 1}
    if open_items - listed:
        soak._fail(f"contradictions review list does not show: {sorted(open_items - listed)}")

    unreported = _decided_twice(soak, first, files, memories, replaced_by)
    if unreported:
        soak._fail(f"units decided twice with different results, unreported: {unreported[:5]}")

    for path in clones:
        if git(path, "status", "--porcelain"):
            soak._fail(f"{path.name}: the working tree is not clean after sync")
        verified = memgit_cli("verify", "--all", cwd=path)
        if verified.returncode != 0:
            soak._fail(f"{path.name}: memgit verify --all: {_err(verified)}")
        _fsck(soak, path)
    _fsck(soak, soak.remote)
    everything = subprocess.run(
        ["git", "-C", str(soak.remote), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "replace")
    leaked = [secret[:8] for secret in report.secrets if secret in everything]
    if leaked:
        soak._fail(f"secrets reached the remote's objects: {leaked}")
    report.final = {
        "memories": len(memories),
        "captures_in_tree": sum(f.startswith("inbox/") for f in files),
        "runs": sum(f.startswith("runs/") for f in files),
        "open_contradictions": len(open_items),
        "contradictions_closed": len(report.contradictions_closed),
        "possible_duplicates": len(report.duplicates),
        "decided_apart": len(report.decided_apart),
        "conflicts_resolved": report.counts["resolve"],
    }


def _decided_twice(
    soak: Soak,
    path: Path,
    files: list[str],
    memories: dict[str, str],
    replaced_by: dict[str, set[str]],
) -> list[str]:
    """Units two run records decided with different results, where neither sync's
    report of a unit decided apart, nor its possible-duplicate notice, nor an open or
    closed contradiction, told anyone."""
    outcomes: dict[str, dict[str, tuple[str, ...]]] = defaultdict(dict)
    for relative in (f for f in files if f.startswith("runs/")):
        record = json.loads(git(path, "show", f"HEAD:{relative}"))
        made = defaultdict(list)
        for decision in record["decisions"]:
            # The memory a unit made, not how: two clones that replace two copies of
            # one fact by the same successor, or where one lacked the memory replaced,
            # agree (the merge joins the successor and retires what either replaced).
            made[decision["candidate_id"]].append(decision["memory_id"])
        for row in record["gate_output"]["coverage"]:
            if row["decision"] == "DEFERRED":
                continue  # not decided: asked again later
            result = [row["decision"]]
            for candidate in row.get("candidate_ids", []):
                result.extend(made.get(candidate, ["(not applied)"]))
            outcomes[row["unit_id"]][record["run_id"]] = tuple(result)
    unreported = []
    for unit, by_run in sorted(outcomes.items()):
        if len(set(by_run.values())) < 2:
            continue
        made_ids = {entry for result in by_run.values() for entry in result[1:]}
        told = (
            unit in soak.report.decided_apart
            or any(frozenset(pair) <= made_ids for pair in soak.report.duplicates)
            or any(
                len(made_ids & rivals) > 1
                for rivals in [*soak.report.kept_rivals, *replaced_by.values()]
            )
        )
        if not told:
            unreported.append(f"{unit}: {dict(by_run)}")
    return unreported


def _fsck(soak: Soak, path: Path) -> None:
    done = subprocess.run(
        ["git", "-C", str(path), "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or done.stdout.strip() or "error" in done.stderr:
        soak._fail(f"{path.name}: git fsck: {done.stdout}{done.stderr}")


# -- small helpers -------------------------------------------------------------------


def _cpu() -> float:
    """CPU seconds of this process and of its waited-for children, user and system."""
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
    )


def _commit(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``git commit`` as a person runs it: through the hooks ``memgit init`` installed."""
    return subprocess.run(
        ["git", "-C", str(path), "commit", "-q", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _err(done: Any) -> str:
    text = done.stderr.decode("utf-8", "replace") if isinstance(done.stderr, bytes) else ""
    return f"exit {done.returncode}: {text.strip()[-600:]}"


def _run_note(stdout: bytes) -> str:
    try:
        runs = json.loads(stdout).get("runs", [])
    except ValueError:
        return ""
    return ", ".join(
        f"{run.get('run_id')}: "
        + " ".join(f"{d['action']} {d['memory_id']}" for d in run.get("decisions", []))
        for run in runs
    )


def _field(file: Path, key: str) -> str:
    for line in file.read_text("utf-8").splitlines():
        if line.startswith(f"{key}: "):
            return line.split(": ", 1)[1].strip("'\"")
    return ""


def _supersedes(text: str) -> list[str]:
    front = text.split("\n---", 1)[0]
    block = re.search(r"^supersedes:\n((?:[- ] .*\n)+)", front + "\n", re.MULTILINE)
    return re.findall(r"^- id: (\S+)$", block.group(1), re.MULTILINE) if block else []


def _as_human(text: str) -> str:
    """A memory edited by a person says so: ``origin: human`` and its ``author``."""
    text = text.replace("\norigin: memgit\n", "\norigin: human\n", 1)
    if "\nauthor: " not in text.split("\n---", 1)[0]:
        text = text.replace("\norigin: human\n", f"\norigin: human\nauthor: {AUTHOR}\n", 1)
    return text


def _resolve_markers(text: str) -> str:
    """Git's conflict markers resolved as a person would: in the front matter this
    side's line (the edit made here), in the body the lines of both sides, ours first."""
    kept = []
    side = None  # None outside a conflict, else "ours", "base" or "theirs"
    fences = 0
    for line in text.splitlines(keepends=True):
        if line.startswith("<<<<<<< "):
            side = "ours"
        elif line.startswith("||||||| ") and side:
            side = "base"
        elif line.startswith("=======") and side:
            side = "theirs"
        elif line.startswith(">>>>>>> ") and side:
            side = None
        elif side == "base" or (side == "theirs" and fences < 2):
            continue
        else:
            fences += line.rstrip("\n") == "---"
            kept.append(line)
    return "".join(kept)
