"""Gate extraction quality: score any Gate backend on the hand-labelled set.

Usage (from the checkout)::

    .venv/bin/python bench/gate_quality.py                          # rules, development half
    .venv/bin/python bench/gate_quality.py --half heldout           # figures only
    .venv/bin/python bench/gate_quality.py --half both --json bench/results/gate-quality.json
    .venv/bin/python bench/gate_quality.py --backend command \\
        --command ".venv/bin/python bench/standin_gate.py" --half development
    .venv/bin/python bench/gate_quality.py --backend command \\
        --command "llm -m gpt-4o-mini --no-stream" --half development
    .venv/bin/python bench/gate_quality.py --backend openai --base-url http://127.0.0.1:8080/v1 \\
        --model qwen2.5-7b-instruct [--api-key-env OPENAI_API_KEY] --half both
    .venv/bin/python bench/gate_quality.py --set tests/gate_quality/development/de.yaml --only dv-de

The set is every ``*.yaml`` of ``tests/gate_quality/development/`` (the half rule
writers tune to) and/or ``tests/gate_quality/heldout/`` (the half figures are
reported on), or the one file ``--set`` names; format, matching rule and how the
held-out half is kept are in the README beside them. One memory repository is
made with ``MemoryRepo.init`` in a temporary folder and its ``gate:`` settings
set to the backend under test; each item gets a fresh copy of it, so no item sees
another's memories. Each of the item's messages is captured as its own turn of
the item's session, with its role (user, assistant or tool), through
``MemoryRepo.capture`` and processed with ``MemoryRepo.process`` before the next
is captured (so a correction's backend is shown the earlier memory as related,
as in use). Then the memories in the tree are read and scored by
``bench/gate_score.py``: a stored memory is correct when it holds every key term
of an expected memory unbroken, has its scope, and its sources quote only user
messages, or an assistant message beside the user's reply that follows it
(strict precision); precision = correct / stored (with its Wilson 95 %
interval), recall = matched expected / expected. A run that fails (a refused
answer, a backend error) is counted and the item scored on what its tree holds.
Every Git object of the item's repository (``git cat-file --batch-all-objects``)
and every memory is searched for the item's credentials; a must-not-retire
control whose expected memory was stored after an earlier message and is gone at
the end counts a wrong retirement.

Reported: overall, by half, by language and by category, the kinds of wrong
memories, credentials stored and wrong retirements; then, for items of the
development half only, every wrong memory (what was stored, and what was
expected) and every expected memory nobody stored, so a developer sees what to
fix. Of a held-out item only its figures are ever shown: never its id, text,
verdicts or memories, and ``--only``/``--keep`` are refused for it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gate_score import (
    Expected,
    ItemScore,
    Stored,
    Tally,
    Term,
    missing_terms,
    score_item,
    top_scope,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "gate_quality"
HALVES = ("development", "heldout")
SCHEMA_PATH = DATA / "set.schema.json"
SOURCE = "gate-quality"
AUTHOR = {"name": "Gate Quality", "email": "gate-quality@example.com"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message of an item, captured as its own turn with its role."""

    role: str
    content: str
    complete: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Item:
    id: str
    lang: str
    category: str
    half: str  # development | heldout, or "other" for a --set file outside both
    messages: tuple[Message, ...]
    expected: tuple[Expected, ...]
    replaced: tuple[tuple[Term, ...], ...]
    # credential values (prose ones and filled-in {secret:KIND}) no Git object may hold
    credentials: tuple[str, ...] = ()
    control: bool = False  # a must-not-retire control: every expected memory must stay

    @property
    def private(self) -> bool:
        """A held-out item: the bench never prints its text, id, verdicts or memories."""
        return self.half == "heldout"


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemRun:
    item: Item
    score: ItemScore
    error: str | None
    seconds: float
    retired: int = 0  # expected memories of a control stored once, then gone
    credentials_found: tuple[str, ...] = ()  # credential values a memory or object holds


def _terms(raw: Iterable[Any]) -> tuple[Term, ...]:
    return tuple(term if isinstance(term, str) else tuple(term) for term in raw)


def _secret_values() -> dict[str, str]:
    """kind -> the first fake value of that kind in tests/secret_fixtures.py."""
    sys.path.insert(0, str(ROOT / "tests"))
    from secret_fixtures import SECRET_FIXTURES

    values: dict[str, str] = {}
    for kind, _context, value in SECRET_FIXTURES:
        values.setdefault(kind, value)
    return values


def _expand_secrets(text: str, values: Mapping[str, str], used: list[str]) -> str:
    while "{secret:" in text:
        start = text.index("{secret:")
        end = text.index("}", start)
        value = values[text[start + len("{secret:") : end]]
        used.append(value)
        text = text[:start] + value + text[end + 1 :]
    return text


def half_files(half: str) -> list[Path]:
    """The files of a half (``development``, ``heldout`` or ``both``), in name order."""
    names = HALVES if half == "both" else (half,)
    if any(name not in HALVES for name in names):
        raise ValueError(f"unknown half {half!r}: development, heldout or both")
    return [path for name in names for path in sorted((DATA / name).glob("*.yaml"))]


def _half_of(path: Path) -> str:
    folder = path.resolve().parent.name
    return folder if folder in HALVES else "other"


def load_items(
    paths: Path | Sequence[Path] | None = None, *, half: str = "development"
) -> list[Item]:
    """The items of ``paths`` (one file or several; default: every file of ``half``),
    each file checked against the schema, ids unique over all of them, secrets filled in."""
    import jsonschema

    if paths is None:
        files = half_files(half)
    else:
        files = [paths] if isinstance(paths, Path) else list(paths)
    schema = json.loads(SCHEMA_PATH.read_text("utf-8"))
    values = _secret_values()
    items: list[Item] = []
    seen: dict[str, Path] = {}
    for path in files:
        raw = yaml.safe_load(path.read_text("utf-8"))
        try:
            jsonschema.validate(raw, schema)
        except jsonschema.ValidationError as err:
            # the schema's message quotes the item; of a held-out file only say where
            where = "/".join(str(part) for part in err.absolute_path)
            why = f"fails {err.validator!r}" if _half_of(path) == "heldout" else err.message
            raise ValueError(f"{path}: {where}: {why}") from None
        for entry in raw:
            if entry["id"] in seen:
                raise ValueError(f"{path}: id {entry['id']} is already used in {seen[entry['id']]}")
            seen[entry["id"]] = path
            items.append(_item(entry, _half_of(path), values))
    return items


def _item(entry: Mapping[str, Any], half: str, values: Mapping[str, str]) -> Item:
    used: list[str] = []
    messages = []
    for raw in entry["messages"]:
        message = {"role": "user", "content": raw} if isinstance(raw, str) else raw
        messages.append(
            Message(
                role=message["role"],
                content=_expand_secrets(message["content"], values, used),
                complete=message.get("complete"),
            )
        )
    return Item(
        id=entry["id"],
        lang=entry["lang"],
        category=entry["category"],
        half=half,
        messages=tuple(messages),
        expected=tuple(
            Expected(
                text=want["text"],
                scope=want["scope"],
                type=want["type"],
                terms=_terms(want["terms"]),
            )
            for want in entry["expect"]
        ),
        replaced=tuple(_terms(old["terms"]) for old in entry.get("supersedes", ())),
        credentials=tuple(dict.fromkeys([*entry.get("credentials", ()), *used])),
        control="must-not-retire control" in entry.get("note", ""),
    )


def make_template(where: Path, gate: Mapping[str, Any]) -> Path:
    """A memory repository as ``memgit init`` makes it, its ``gate:`` set to ``gate``."""
    from memgit.repo import MemoryRepo

    MemoryRepo.init(where)
    config = where / "memgit.yaml"
    data = yaml.safe_load(config.read_text("utf-8"))
    data["gate"] = {**data.get("gate", {}), **gate}
    data["author"] = AUTHOR
    config.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "utf-8")
    identity = ["-c", f"user.name={AUTHOR['name']}", "-c", f"user.email={AUTHOR['email']}"]
    subprocess.run(
        [
            "git",
            "-C",
            str(where),
            *identity,
            "commit",
            "-q",
            "-m",
            "gate under test",
            "--",
            "memgit.yaml",
        ],
        check=True,
        capture_output=True,
    )
    return where


def supported(quotes: Sequence[int], messages: Sequence[Message]) -> bool:
    """Strict precision: every quoted message (by index) is the user's, or an assistant's
    whose next user message, the user's reply to it, is quoted too. A memory with no
    source, or one quoting a tool message or a turn not of the item, is not supported."""
    if not quotes or any(n < 0 for n in quotes):
        return False
    quoted = set(quotes)
    for n in quoted:
        role = messages[n].role
        if role == "user":
            continue
        if role != "assistant":
            return False
        reply = next((k for k in range(n + 1, len(messages)) if messages[k].role == "user"), None)
        if reply is None or reply not in quoted:
            return False
    return True


def stored_memories(
    repo: Any, captured: Mapping[str, int], messages: Sequence[Message]
) -> list[Stored]:
    """Every memory file in the branch tip's tree, in path order; ``captured`` maps each
    capture path to the index of the item's message it holds, to judge the quotes."""
    from memgit.memory import read_memory

    tree = repo.git.head.peel().tree
    if "memories" not in tree:
        return []
    found = []
    stack = [("memories", tree["memories"])]
    while stack:
        prefix, node = stack.pop()
        for entry in node:
            path = f"{prefix}/{entry.name}"
            if entry.type_str == "tree":
                stack.append((path, repo.git[entry.id]))
            elif path.endswith(".md"):
                memory = read_memory(repo.git[entry.id].data, path=path)
                quotes = [captured.get(source.capture, -1) for source in memory.sources]
                found.append(
                    (
                        path,
                        Stored(
                            title=memory.title,
                            body=memory.body,
                            scope=memory.scope,
                            type=memory.type,
                            supported=supported(quotes, messages),
                        ),
                    )
                )
    return [stored for _path, stored in sorted(found, key=lambda pair: pair[0])]


def credentials_held(
    where: Path, values: Sequence[str], memories: Sequence[Stored]
) -> tuple[str, ...]:
    """The credential values found in any memory or any Git object of the repository."""
    if not values:
        return ()
    done = subprocess.run(
        ["git", "-C", str(where), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    )
    text = "\n".join(memory.text for memory in memories)
    return tuple(value for value in values if value.encode("utf-8") in done.stdout or value in text)


def _kept(memories: Sequence[Stored], want: Expected) -> bool:
    return any(
        not missing_terms(want.terms, memory.text) and top_scope(memory.scope) == want.scope
        for memory in memories
    )


def run_item(template: Path, item: Item, where: Path) -> ItemRun:
    """Capture each of the item's messages as a turn of its own, with its role, in a copy
    of ``template``, processing after each; score the tree, and count what a control
    lost and which credentials any memory or Git object holds."""
    from memgit.errors import MemgitError
    from memgit.repo import MemoryRepo

    started = time.perf_counter()
    shutil.copytree(template, where, symlinks=True)
    error = None
    captured: dict[str, int] = {}
    kept_once: set[int] = set()
    with MemoryRepo.open(where) as repo:
        try:
            for seq, message in enumerate(item.messages):
                content: dict[str, Any] = {"role": message.role, "content": message.content}
                if message.complete is not None:
                    content["complete"] = message.complete
                outcome = repo.capture(
                    {
                        "source": SOURCE,
                        "session": item.id,
                        "seq": seq,
                        "timestamp": f"2026-01-05T10:00:{seq:02d}Z",
                        "messages": [content],
                    }
                )
                captured[outcome.path] = seq
                repo.process()
                if item.control:
                    now = stored_memories(repo, captured, item.messages)
                    kept_once.update(n for n, want in enumerate(item.expected) if _kept(now, want))
        except MemgitError as err:
            error = f"{err.code}: {err.message}"
        stored = stored_memories(repo, captured, item.messages)
    retired = sum(not _kept(stored, item.expected[n]) for n in kept_once)
    score = score_item(stored, item.expected, replaced=item.replaced, credentials=item.credentials)
    return ItemRun(
        item=item,
        score=score,
        error=error,
        seconds=time.perf_counter() - started,
        retired=retired,
        credentials_found=credentials_held(where, item.credentials, stored),
    )


def evaluate(
    items: Sequence[Item],
    gate: Mapping[str, Any],
    *,
    workdir: Path,
    progress: Callable[[int, int, ItemRun], None] | None = None,
    keep: bool = True,
) -> list[ItemRun]:
    """Score the backend ``gate`` (memgit.yaml's ``gate:`` keys) on ``items``; without
    ``keep`` each item's repository is removed once scored."""
    template = make_template(workdir / "template", gate)
    runs = []
    for n, item in enumerate(items, 1):
        where = workdir / "items" / item.id
        run = run_item(template, item, where)
        if not keep:
            shutil.rmtree(where)
        runs.append(run)
        if progress is not None:
            progress(n, len(items), run)
    return runs


def summarise(runs: Sequence[ItemRun]) -> dict[str, Any]:
    """Overall, by half, by language and by category; every wrong and every missed
    memory, failed run and stored credential of the items that are not held out (of a
    held-out item only its count enters the figures)."""
    overall = Tally()
    by_half: dict[str, Tally] = {}
    by_lang: dict[str, Tally] = {}
    by_category: dict[str, Tally] = {}
    wrong: list[dict[str, Any]] = []
    missed: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    leaks: list[dict[str, Any]] = []
    retirements: list[dict[str, Any]] = []
    for run in runs:
        item, score = run.item, run.score
        failed_run = run.error is not None
        for tally in (
            overall,
            by_half.setdefault(item.half, Tally()),
            by_lang.setdefault(item.lang, Tally()),
            by_category.setdefault(item.category, Tally()),
        ):
            tally.add(
                score,
                failed=failed_run,
                control=item.control,
                retired=run.retired,
                credentials=len(run.credentials_found),
            )
        if item.private:
            continue
        if failed_run:
            failed.append({"item": item.id, "error": run.error})
        if run.credentials_found:
            leaks.append({"item": item.id, "count": len(run.credentials_found)})
        if run.retired:
            retirements.append({"item": item.id, "retired": run.retired})
        for verdict in score.verdicts:
            if verdict.kind == "correct":
                continue
            want = item.expected[verdict.expected] if verdict.expected is not None else None
            wrong.append(
                {
                    "item": item.id,
                    "category": item.category,
                    "kind": verdict.kind,
                    "stored": {
                        "title": verdict.stored.title,
                        "body": verdict.stored.body,
                        "scope": verdict.stored.scope,
                        "type": verdict.stored.type,
                    },
                    "expected": _expected_dict(want) if want is not None else None,
                    "missing_terms": list(verdict.missing),
                }
            )
        for index, want in enumerate(item.expected):
            if index not in score.matched:
                missed.append(
                    {"item": item.id, "category": item.category, "expected": _expected_dict(want)}
                )
    return {
        "overall": overall.to_dict(),
        "by_half": {key: value.to_dict() for key, value in sorted(by_half.items())},
        "by_language": {key: value.to_dict() for key, value in sorted(by_lang.items())},
        "by_category": {key: value.to_dict() for key, value in sorted(by_category.items())},
        "wrong": wrong,
        "missed": missed,
        "failed_runs": failed,
        "credentials_stored": leaks,
        "wrong_retirements": retirements,
        "seconds": sum(run.seconds for run in runs),
    }


def _expected_dict(want: Expected) -> dict[str, Any]:
    return {
        "text": want.text,
        "scope": want.scope,
        "type": want.type,
        "terms": [term if isinstance(term, str) else list(term) for term in want.terms],
    }


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _figure(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:5.3f}"


def _interval(tally: Mapping[str, Any]) -> str:
    interval = tally["precision_95"]
    return "      n/a     " if interval is None else f"[{interval[0]:.3f}, {interval[1]:.3f}]"


def render_text(summary: Mapping[str, Any], about: Mapping[str, Any]) -> str:
    lines = [
        f"Gate quality: backend {about['backend']}"
        + (f" (model {about['model']})" if about.get("model") else "")
        + f", {_count(summary['overall']['items'], 'item')} ({about['half']})"
        + f", memgit {about['commit']}, {about['date']}",
        "",
        f"{'':14} {'items':>5} {'stored':>6} {'correct':>7} {'prec':>5} {'95 % interval':>14}"
        f" {'expect':>6} {'matched':>7} {'recall':>6} {'scope':>5} {'failed':>6}",
    ]

    def row(name: str, tally: Mapping[str, Any]) -> str:
        return (
            f"{name:14} {tally['items']:5} {tally['stored']:6} {tally['correct']:7}"
            f" {_figure(tally['precision'])} {_interval(tally)} {tally['expected']:6}"
            f" {tally['matched']:7}  {_figure(tally['recall'])} {tally['scope_errors']:5}"
            f" {tally['failed_runs']:6}"
        )

    lines.append(row("overall", summary["overall"]))
    if len(summary["by_half"]) > 1:
        for name, tally in summary["by_half"].items():
            lines.append(row(f"  {name}", tally))
    for name, tally in summary["by_language"].items():
        lines.append(row(f"  {name}", tally))
    lines.append("")
    for name, tally in summary["by_category"].items():
        lines.append(row(name, tally))
    overall = summary["overall"]
    kinds = overall["verdicts"]
    lines += [
        "",
        "verdicts: " + (", ".join(f"{kind} {count}" for kind, count in kinds.items()) or "none"),
        f"types: {overall['type_agreements']} of {overall['correct']} correct memories"
        " have the expected type",
        f"wrong retirements: {overall['wrong_retirements']}"
        f" (in {_count(overall['controls'], 'must-not-retire control')})",
        f"credentials stored: {overall['credentials_stored']} (must be 0)",
    ]
    if summary["wrong"]:
        lines += ["", "Wrong memories (stored -> expected):"]
        for entry in summary["wrong"]:
            stored = entry["stored"]
            lines.append(
                f"  {entry['item']} [{entry['category']}] {entry['kind']}: "
                f"({stored['scope']}, {stored['type']}) {stored['title']!r}"
            )
            want = entry["expected"]
            if want is None:
                lines.append("      expected: nothing")
            else:
                note = f"; missing {entry['missing_terms']}" if entry["missing_terms"] else ""
                lines.append(f"      expected: ({want['scope']}) {want['text']!r}{note}")
    if summary["missed"]:
        lines += ["", "Missed (expected, nothing stored matches):"]
        for entry in summary["missed"]:
            want = entry["expected"]
            lines.append(
                f"  {entry['item']} [{entry['category']}] ({want['scope']}) {want['text']!r}"
            )
    for key, title in (
        ("wrong_retirements", "Controls that lost a memory"),
        ("credentials_stored", "Items whose credentials a memory or Git object holds"),
    ):
        if summary[key]:
            lines += ["", f"{title}:"]
            lines += [f"  {entry['item']}: {list(entry.values())[1]}" for entry in summary[key]]
    if summary["failed_runs"]:
        lines += ["", "Failed runs:"]
        lines += [f"  {entry['item']}: {entry['error']}" for entry in summary["failed_runs"]]
    if "heldout" in summary["by_half"]:
        lines += ["", "Held-out items enter the figures only: none is listed above."]
    return "\n".join(lines)


def gate_settings(args: argparse.Namespace) -> dict[str, Any]:
    gate: dict[str, Any] = {}
    if args.gate_yaml is not None:
        loaded = yaml.safe_load(args.gate_yaml.read_text("utf-8"))
        if not isinstance(loaded, dict):
            raise SystemExit(f"{args.gate_yaml}: expected a mapping of gate: settings")
        gate.update(loaded)
    gate["backend"] = args.backend or gate.get("backend", "rules")
    if args.command is not None:
        gate["command"] = shlex.split(args.command)
    for key in ("base_url", "model", "api_key_env"):
        if getattr(args, key) is not None:
            gate[key] = getattr(args, key)
    return gate


def checkout_commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("-dirty" if git("status", "--porcelain", "--", "memgit") else "")


def _fast_temp() -> str | None:
    """/dev/shm where it is a writable folder: every item commits several times, and a
    memory-backed folder halves a run on a busy disk. None: the usual temporary folder."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--half",
        choices=("development", "heldout", "both"),
        default="development",
        help="which half of tests/gate_quality/ to score (default development)",
    )
    parser.add_argument("--set", type=Path, help="score this one file instead of a half")
    parser.add_argument("--backend", help="gate.backend: rules (default), command, openai")
    parser.add_argument("--command", help="gate.command for the command backend, one string")
    parser.add_argument("--base-url", help="gate.base_url for the openai backend")
    parser.add_argument("--model", help="gate.model")
    parser.add_argument("--api-key-env", help="gate.api_key_env: the variable holding the key")
    parser.add_argument("--gate-yaml", type=Path, help="a YAML mapping of further gate: settings")
    parser.add_argument("--only", help="only items whose id starts with this (en, dv-es, en-06)")
    parser.add_argument(
        "--json", type=Path, help="also write the results as JSON here (- for stdout)"
    )
    parser.add_argument("--keep", type=Path, help="keep the item repositories in this new folder")
    args = parser.parse_args(argv)

    gate = gate_settings(args)
    try:
        items = load_items(args.set, half=args.half)
    except ValueError as err:
        parser.error(str(err))
    if any(item.private for item in items) and (args.only or args.keep):
        parser.error(
            "--only and --keep show held-out items one by one: score the held-out half whole"
        )
    items = [item for item in items if item.id.startswith(args.only or "")]
    if not items:
        parser.error(
            f"no items to score in {args.set or args.half}"
            + f" starting {args.only!r}" * bool(args.only)
        )
    about = {
        "backend": gate["backend"],
        "model": gate.get("model"),
        "commit": checkout_commit(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "half": str(args.set) if args.set is not None else args.half,
    }

    def progress(done: int, total: int, run: ItemRun) -> None:
        if run.item.private:
            print(f"[{done}/{total}] held-out item", file=sys.stderr)
            return
        verdicts = [v.kind for v in run.score.verdicts]
        status = f" error {run.error}" if run.error else ""
        print(
            f"[{done}/{total}] {run.item.id}: stored {len(verdicts)}"
            f" ({', '.join(verdicts) or 'none'}){status} {run.seconds:.2f}s",
            file=sys.stderr,
        )

    if args.keep is not None:
        args.keep.mkdir(parents=True)
        runs = evaluate(items, gate, workdir=args.keep, progress=progress)
    else:
        with tempfile.TemporaryDirectory(prefix="memgit-gate-quality-", dir=_fast_temp()) as folder:
            runs = evaluate(items, gate, workdir=Path(folder), progress=progress, keep=False)
    summary = summarise(runs)
    if args.json is not None:
        text = json.dumps({"about": about, **summary}, ensure_ascii=False, indent=1)
        if str(args.json) == "-":
            print(text)
            return 0
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", "utf-8")
    print(render_text(summary, about))
    return 0


if __name__ == "__main__":
    sys.exit(main())
