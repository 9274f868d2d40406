"""Gate extraction quality: score any Gate backend on the hand-labelled set.

Usage (from the checkout)::

    .venv/bin/python bench/gate_quality.py                          # the rules Gate
    .venv/bin/python bench/gate_quality.py --backend command \\
        --command ".venv/bin/python bench/standin_gate.py"
    .venv/bin/python bench/gate_quality.py --backend openai --base-url http://127.0.0.1:8080/v1 \\
        --model qwen2.5-7b-instruct [--api-key-env OPENAI_API_KEY]
    .venv/bin/python bench/gate_quality.py --json bench/results/gate-quality.json

The set is ``tests/gate_quality/set.yaml`` (format and matching rule in the
README beside it). One memory repository is made with ``MemoryRepo.init`` in a
temporary folder and its ``gate:`` settings set to the backend under test; each
item gets a fresh copy of it, so no item sees another's memories. Each of the
item's messages is captured as one user turn through ``MemoryRepo.capture`` and
processed with ``MemoryRepo.process`` before the next is captured (so a
correction's backend is shown the earlier memory as related, as in use), then
the memories in the tree are read and scored by ``bench/gate_score.py``: a
stored memory is correct when it holds every key term of an expected memory
unbroken and has its scope; precision = correct / stored, recall = matched
expected / expected. A run that fails (a refused answer, a backend error) is
counted and the item scored on what its tree holds.

Reported: overall, by language and by category, the kinds of wrong memories,
then every wrong memory (what was stored, and what was expected) and every
expected memory nobody stored, so a developer sees what to fix. Nothing is
random and nothing is tuned: the labels are held out from every backend.
"""

from __future__ import annotations

import argparse
import json
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
from gate_score import Expected, ItemScore, Stored, Tally, Term, score_item

ROOT = Path(__file__).resolve().parents[1]
SET_PATH = ROOT / "tests" / "gate_quality" / "set.yaml"
SCHEMA_PATH = ROOT / "tests" / "gate_quality" / "set.schema.json"
SOURCE = "gate-quality"
AUTHOR = {"name": "Gate Quality", "email": "gate-quality@example.com"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Item:
    id: str
    lang: str
    category: str
    messages: tuple[str, ...]
    expected: tuple[Expected, ...]
    replaced: tuple[tuple[Term, ...], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemRun:
    item: Item
    score: ItemScore
    error: str | None
    seconds: float


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


def _expand_secrets(text: str, values: Mapping[str, str]) -> str:
    while "{secret:" in text:
        start = text.index("{secret:")
        end = text.index("}", start)
        text = text[:start] + values[text[start + len("{secret:") : end]] + text[end + 1 :]
    return text


def load_items(path: Path = SET_PATH) -> list[Item]:
    """The items of the set, checked against its schema, secrets filled in."""
    import jsonschema

    raw = yaml.safe_load(path.read_text("utf-8"))
    jsonschema.validate(raw, json.loads(SCHEMA_PATH.read_text("utf-8")))
    values = _secret_values()
    return [
        Item(
            id=entry["id"],
            lang=entry["lang"],
            category=entry["category"],
            messages=tuple(_expand_secrets(text, values) for text in entry["messages"]),
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
        )
        for entry in raw
    ]


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


def stored_memories(repo: Any) -> list[Stored]:
    """Every memory file in the branch tip's tree, in path order."""
    from memgit.memory import parse_memory

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
                memory = parse_memory(repo.git[entry.id].data, path=path)
                found.append(
                    (
                        path,
                        Stored(
                            title=memory.title,
                            body=memory.body,
                            scope=memory.scope,
                            type=memory.type,
                        ),
                    )
                )
    return [stored for _path, stored in sorted(found, key=lambda pair: pair[0])]


def run_item(template: Path, item: Item, where: Path) -> ItemRun:
    """Capture and process the item's messages in a copy of ``template``; score the tree."""
    from memgit.errors import MemgitError
    from memgit.repo import MemoryRepo

    started = time.perf_counter()
    shutil.copytree(template, where, symlinks=True)
    error = None
    with MemoryRepo.open(where) as repo:
        try:
            for seq, text in enumerate(item.messages):
                repo.capture(
                    {
                        "source": SOURCE,
                        "session": item.id,
                        "seq": seq,
                        "timestamp": f"2026-01-05T10:00:{seq:02d}Z",
                        "messages": [{"role": "user", "content": text}],
                    }
                )
                repo.process()
        except MemgitError as err:
            error = f"{err.code}: {err.message}"
        stored = stored_memories(repo)
    score = score_item(stored, item.expected, replaced=item.replaced)
    return ItemRun(item=item, score=score, error=error, seconds=time.perf_counter() - started)


def evaluate(
    items: Sequence[Item],
    gate: Mapping[str, Any],
    *,
    workdir: Path,
    progress: Callable[[int, int, ItemRun], None] | None = None,
) -> list[ItemRun]:
    """Score the backend ``gate`` (memgit.yaml's ``gate:`` keys) on ``items``."""
    template = make_template(workdir / "template", gate)
    runs = []
    for n, item in enumerate(items, 1):
        run = run_item(template, item, workdir / "items" / item.id)
        runs.append(run)
        if progress is not None:
            progress(n, len(items), run)
    return runs


def summarise(runs: Sequence[ItemRun]) -> dict[str, Any]:
    """Overall, by language and by category, and every wrong and every missed memory."""
    overall = Tally()
    by_lang: dict[str, Tally] = {}
    by_category: dict[str, Tally] = {}
    wrong, missed, failed = [], [], []
    for run in runs:
        item, score = run.item, run.score
        failed_run = run.error is not None
        for tally in (
            overall,
            by_lang.setdefault(item.lang, Tally()),
            by_category.setdefault(item.category, Tally()),
        ):
            tally.add(score, failed=failed_run)
        if failed_run:
            failed.append({"item": item.id, "error": run.error})
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
        "by_language": {key: value.to_dict() for key, value in sorted(by_lang.items())},
        "by_category": {key: value.to_dict() for key, value in sorted(by_category.items())},
        "wrong": wrong,
        "missed": missed,
        "failed_runs": failed,
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


def render_text(summary: Mapping[str, Any], about: Mapping[str, Any]) -> str:
    lines = [
        f"Gate quality: backend {about['backend']}"
        + (f" (model {about['model']})" if about.get("model") else "")
        + f", {_count(summary['overall']['items'], 'item')}, memgit {about['commit']}"
        + f", {about['date']}",
        "",
        f"{'':14} {'items':>5} {'stored':>6} {'correct':>7} {'expect':>6} {'matched':>7}"
        f" {'prec':>5} {'recall':>6} {'scope':>5} {'failed':>6}",
    ]

    def row(name: str, tally: Mapping[str, Any]) -> str:
        return (
            f"{name:14} {tally['items']:5} {tally['stored']:6} {tally['correct']:7}"
            f" {tally['expected']:6} {tally['matched']:7} {_figure(tally['precision'])}"
            f"  {_figure(tally['recall'])} {tally['scope_errors']:5} {tally['failed_runs']:6}"
        )

    lines.append(row("overall", summary["overall"]))
    for name, tally in summary["by_language"].items():
        lines.append(row(f"  {name}", tally))
    lines.append("")
    for name, tally in summary["by_category"].items():
        lines.append(row(name, tally))
    kinds = summary["overall"]["verdicts"]
    lines += ["", "verdicts: " + ", ".join(f"{kind} {count}" for kind, count in kinds.items())]
    overall = summary["overall"]
    lines.append(
        f"types: {overall['type_agreements']} of {overall['correct']} correct memories"
        " have the expected type"
    )
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
    if summary["failed_runs"]:
        lines += ["", "Failed runs:"]
        lines += [f"  {entry['item']}: {entry['error']}" for entry in summary["failed_runs"]]
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=SET_PATH, help="the labelled set (YAML)")
    parser.add_argument("--backend", help="gate.backend: rules (default), command, openai")
    parser.add_argument("--command", help="gate.command for the command backend, one string")
    parser.add_argument("--base-url", help="gate.base_url for the openai backend")
    parser.add_argument("--model", help="gate.model")
    parser.add_argument("--api-key-env", help="gate.api_key_env: the variable holding the key")
    parser.add_argument("--gate-yaml", type=Path, help="a YAML mapping of further gate: settings")
    parser.add_argument("--only", help="only items whose id starts with this (en, zh, en-06)")
    parser.add_argument(
        "--json", type=Path, help="also write the results as JSON here (- for stdout)"
    )
    parser.add_argument("--keep", type=Path, help="keep the item repositories in this new folder")
    args = parser.parse_args(argv)

    gate = gate_settings(args)
    items = [item for item in load_items(args.set) if item.id.startswith(args.only or "")]
    about = {
        "backend": gate["backend"],
        "model": gate.get("model"),
        "commit": checkout_commit(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "set": str(args.set),
    }

    def progress(done: int, total: int, run: ItemRun) -> None:
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
        with tempfile.TemporaryDirectory(prefix="memgit-gate-quality-") as folder:
            runs = evaluate(items, gate, workdir=Path(folder), progress=progress)
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
