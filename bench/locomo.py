"""LoCoMo retrieval: memgit's recall over captured turns, before and after processing.

Usage (from the checkout)::

    .venv/bin/python bench/locomo.py [--data ../shared/data/locomo/locomo10.json] [--json out.json]

For each of the 10 conversations a memory repository is created in a temporary
folder (the data never enters the project), and every session is captured with
``MemoryRepo.capture_many`` as one commit: each dialogue turn becomes one
captured turn whose single message has role ``user``, the speaker as ``name``,
the session's date as ``timestamp``, and as content the text (plus, where the
turn shared a photo, ``[shares <caption>]``, as a host that describes images
would capture it; ``--no-captions`` leaves that out). Each question is recalled
verbatim with ``MemoryRepo.recall`` (k = 50) and compared with its gold
evidence turns, in three states, side by side in one run:

(a) **raw turns**: captured, not processed;
(b) **after a default process**: ``MemoryRepo.process()`` with ``memgit init``'s
    settings (the offline rules Gate, the 30-day inbox retention), as a user
    runs it; recall returns memories with their source turns and other turns;
(c) **memories only, with their sources**: of the same pack, only the memories
    and the turns beneath them.

A second pipeline captures the same conversations again and processes them with
``gate.backend: command`` running ``bench/standin_gate.py``, a deterministic
stand-in for a model Gate (one memory per first-person statement, keeping one
sentence of the turn; not a model), and reports (b) and (c) for it.

How a pack counts: its turns are read in ``ranked`` order, each memory's
``source_turns`` taking the ranks right after the memory (the memory itself
takes no rank; a turn already read is not counted twice), or for (c) the
memories in their own order, each followed by its source turns. recall@k is
the fraction of an item's evidence turns among the first k turns so read,
averaged over all items (items without evidence count 1), as in the LoCoMo
paper (Table 3); hit@k is the share of items with at least one evidence turn
there. **memory recall@k** credits an evidence turn when it is a source of one
of the first k memories (memories take the ranks, sources none): whether the
memory layer itself points at the evidence, where (c) measures whether the
original turns come back under the memories (source recovery). Evidence ids are
split on ``;`` and spaces (one item holds ``"D8:6; D9:17"``), and ids that name
no turn are skipped and counted.

Tuning, honestly: the message column weights (the context columns) and
``memgit.recall.MEMORY_RANK_WEIGHT`` are chosen by recall@10 on the first half
of the conversations (0-4; the shipped value wins a tie) and reported on the
other half (5-9) and on all ten. The gold evidence is used for scoring and that
choice only; nothing else (capture, the Gate, recall) sees it.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
KS = (5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
PUBLISHED = {
    "dense DRAGON (paper)": (0.567, 0.662, 0.767, 0.827),
    "plain BM25": (0.46, 0.53, 0.63, 0.70),
}


def session_date(text: str) -> str:
    when = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def iter_sessions(conversation: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    sessions = []
    for key, turns in conversation.items():
        if key.startswith("session_") and not key.endswith("date_time") and isinstance(turns, list):
            number = int(key.split("_")[1])
            sessions.append((number, conversation[f"{key}_date_time"], turns))
    return sorted(sessions)


def build_repository(
    sample: dict[str, Any], where: Path, *, captions: bool
) -> tuple[Any, dict[tuple[str, int], str]]:
    """A memory repository holding every turn of one conversation; (session, seq) -> dia_id."""
    from memgit.repo import MemoryRepo

    MemoryRepo.init(where)
    repo = MemoryRepo.open(where)
    ids: dict[tuple[str, int], str] = {}
    for number, date, turns in iter_sessions(sample["conversation"]):
        session = f"{sample['sample_id']}-s{number}"
        batch = []
        for seq, turn in enumerate(turns):
            content = turn["text"]
            if captions and turn.get("blip_caption"):
                content = f"{content} [shares {turn['blip_caption']}]"
            batch.append(
                {
                    "source": "locomo",
                    "session": session,
                    "seq": seq,
                    "timestamp": session_date(date),
                    "thread": sample["sample_id"],
                    "messages": [{"role": "user", "name": turn["speaker"], "content": content}],
                }
            )
            ids[(session, seq)] = turn["dia_id"]
        repo.capture_many(batch, source=f"locomo:{session}")
    return repo, ids


_ID_SPLIT = re.compile(r"[;,\s]+")


@dataclass
class Corpus:
    """The 10 conversations captured into repositories, ready to query."""

    repos: list[tuple[dict[str, Any], Any, dict[tuple[str, int], str]]]
    build_seconds: float


def build_corpus(data: list[dict[str, Any]], root: Path, *, captions: bool) -> Corpus:
    started = time.perf_counter()
    repos = []
    for sample in data:
        repo, ids = build_repository(sample, root / sample["sample_id"], captions=captions)
        repo.recall("warm up", k=1)
        repos.append((sample, repo, ids))
    return Corpus(repos=repos, build_seconds=time.perf_counter() - started)


def process_corpus(corpus: Corpus) -> dict[str, Any]:
    """One default ``memgit process`` per conversation, as a user runs it after capturing:
    the rules Gate, memgit.yaml as ``memgit init`` writes it (retention included)."""
    started = time.perf_counter()
    runs = memories = expired = remaining = 0
    for _, repo, _ in corpus.repos:
        result = repo.process()
        runs += len(result.runs)
        memories += sum(1 for run in result.runs for d in run.decisions if d.action == "CREATE")
        expired += len(result.expired)
        remaining += result.remaining
        repo.recall("warm up", k=1)
    return {
        "runs": runs,
        "memories_created": memories,
        "captures_expired": expired,
        "captures_pending": remaining,
        "seconds": time.perf_counter() - started,
    }


def gold_turns(qa: dict[str, Any], known: set[str], counts: dict[str, int]) -> set[str]:
    """Evidence ids of one item that name a turn; the rest are counted and skipped."""
    gold = set()
    for entry in qa.get("evidence", []):
        parts = [part for part in _ID_SPLIT.split(str(entry)) if part]
        if len(parts) > 1:
            counts["joined"] += 1
        for part in parts:
            if part in known:
                gold.add(part)
            else:
                counts["skipped"] += 1
    if qa.get("evidence") and not gold:
        counts["emptied"] += 1
    return gold


@dataclass(frozen=True)
class Item:
    """One question's result: the evidence ids found in each way of reading the pack."""

    sample: int
    category: int
    gold: frozenset[str]
    turns: tuple[str | None, ...]
    memories: tuple[str | None, ...]
    memory_sources: tuple[frozenset[str], ...]
    seconds: float


def _read(turns: Any, ids: dict[tuple[str, int], str]) -> tuple[str | None, ...]:
    """Dialogue ids in reading order, each turn once."""
    seen: set[tuple[str, int]] = set()
    found = []
    for hit in turns:
        key = (hit.turn.session, hit.turn.seq)
        if key not in seen:
            seen.add(key)
            found.append(ids.get(key))
    return tuple(found)


def score_items(
    corpus: Corpus, counts: dict[str, int] | None = None, samples: set[int] | None = None
) -> list[Item]:
    """Ask every question (of the conversations numbered in ``samples``) once."""
    counts = counts if counts is not None else {"skipped": 0, "joined": 0, "emptied": 0}
    items = []
    for number, (sample, repo, ids) in enumerate(corpus.repos):
        if samples is not None and number not in samples:
            continue
        known = set(ids.values())
        for qa in sample["qa"]:
            gold = gold_turns(qa, known, counts)
            items.append(ask(repo, qa, number, frozenset(gold), ids))
    return items


def ask(
    repo: Any, qa: dict[str, Any], sample: int, gold: frozenset[str], ids: dict[Any, str]
) -> Item:
    """One question recalled and timed, and what it found as dialogue ids."""
    started = time.perf_counter()
    pack = repo.recall(qa["question"], k=max(KS))
    seconds = time.perf_counter() - started
    return Item(
        sample=sample,
        category=qa["category"],
        gold=gold,
        turns=_read(pack.grouped_turns(), ids),
        memories=_read(pack.grouped_turns(memories_only=True), ids),
        memory_sources=tuple(
            frozenset(x for x in _read(hit.source_turns, ids) if x) for hit in pack.memories
        ),
        seconds=seconds,
    )


def _recall(items: list[Item], found: Any) -> dict[str, dict[int, float]]:
    """recall@k and hit@k over ``items``; ``found(item, k)`` is the ids read at k."""
    recall = {k: 0.0 for k in KS}
    hit = {k: 0.0 for k in KS}
    for item in items:
        for k in KS:
            got = len(item.gold & found(item, k))
            recall[k] += got / len(item.gold) if item.gold else 1.0
            hit[k] += 1.0 if (got or not item.gold) else 0.0
    size = max(len(items), 1)
    return {
        "recall": {k: v / size for k, v in recall.items()},
        "hit": {k: v / size for k, v in hit.items()},
    }


def summarise(items: list[Item]) -> dict[str, Any]:
    """Every measure of one state over ``items``."""
    turns = _recall(items, lambda item, k: set(item.turns[:k]))
    memories = _recall(items, lambda item, k: set(item.memories[:k]))
    pointed = _recall(
        items,
        lambda item, k: set().union(*item.memory_sources[:k]) if item.memory_sources else set(),
    )
    by_category: dict[int, list[Item]] = defaultdict(list)
    for item in items:
        by_category[item.category].append(item)
    latencies = sorted(item.seconds for item in items) or [0.0]
    return {
        "items": len(items),
        "recall": turns["recall"],
        "hit": turns["hit"],
        "memories_with_sources": memories,
        "memory_recall": pointed["recall"],
        "categories": {
            CATEGORIES[code]: {
                "items": len(group),
                **{
                    f"recall@{k}": value
                    for k, value in _recall(group, lambda item, k: set(item.turns[:k]))[
                        "recall"
                    ].items()
                },
            }
            for code, group in sorted(by_category.items())
        },
        "latency_ms": {
            "p50": 1000 * statistics.median(latencies),
            "p95": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
            "mean": 1000 * statistics.fmean(latencies),
        },
    }


def halves(corpus: Corpus) -> tuple[set[int], set[int]]:
    """Conversations to choose constants on, and the held-out ones to report on."""
    size = len(corpus.repos)
    tune = set(range((size + 1) // 2))
    return tune, set(range(size)) - tune


def split(items: list[Item], corpus: Corpus) -> dict[str, dict[str, Any]]:
    tune, held = halves(corpus)
    return {
        "all": summarise(items),
        "tune": summarise([i for i in items if i.sample in tune]),
        "held_out": summarise([i for i in items if i.sample in held]),
    }


def evaluate(corpus: Corpus) -> dict[str, Any]:
    """All questions, read as turns (what ``--ablation`` compares)."""
    counts = {"skipped": 0, "joined": 0, "emptied": 0}
    result = summarise(score_items(corpus, counts))
    return {**result, "evidence": counts, "build_seconds": corpus.build_seconds}


MESSAGE_WEIGHT_GRID = ((0.7, 0.4), (0.5, 0.4), (0.3, 0.2), (0.3, 0.4), (0.5, 0.2), (0.5, 0.6))
MEMORY_WEIGHT_GRID = (0.25, 0.0, 0.5, 1.0, 2.0, 4.0)


def choose(
    corpus: Corpus, values: tuple[Any, ...], apply: Any, view: str = "recall"
) -> tuple[Any, list[tuple[Any, float]]]:
    """The value of ``values`` with the best recall@10 on the tuning half (the first,
    shipped, value wins a tie), and every value's figure."""
    tune, _ = halves(corpus)
    tried = []
    for value in values:
        apply(value)
        result = summarise(score_items(corpus, samples=tune))
        figure = result[view]["recall"][10] if view != "recall" else result["recall"][10]
        tried.append((value, figure))
    best = max(tried, key=lambda pair: (pair[1], -values.index(pair[0])))[0]
    apply(best)
    return best, tried


def set_message_weights(context: tuple[float, float]) -> None:
    from memgit.derived import search

    search.MESSAGE_WEIGHTS = (1.0, 0.5, *context)


def set_memory_weight(weight: float) -> None:
    import memgit.recall

    memgit.recall.MEMORY_RANK_WEIGHT = weight


def use_standin_gate(corpus: Corpus) -> None:
    """gate.backend: command, running bench/standin_gate.py, committed in each repository."""
    import subprocess

    import yaml

    from memgit.repo import MemoryRepo

    script = Path(__file__).resolve().parent / "standin_gate.py"
    for number, (sample, repo, ids) in enumerate(corpus.repos):
        where = Path(repo.git.workdir)
        config = where / "memgit.yaml"
        data = yaml.safe_load(config.read_text("utf-8"))
        data.setdefault("gate", {}).update(
            {"backend": "command", "command": [sys.executable, str(script)], "model": "standin"}
        )
        config.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
        subprocess.run(
            [
                "git",
                "-C",
                str(where),
                "-c",
                "core.hooksPath=/dev/null",
                "commit",
                "-q",
                "-am",
                "gate: the bench's stand-in command backend",
            ],
            check=True,
        )
        corpus.repos[number] = (sample, MemoryRepo.open(where), ids)  # settings are read at open


def _row(name: str, values: dict[int, float]) -> str:
    return f"| {name} | " + " | ".join(f"{values[k]:.3f}" for k in KS) + " |"


def render(report: dict[str, Any]) -> str:
    lines = ["| recall@k (hit@k for the raw turns) | " + " | ".join(f"k={k}" for k in KS) + " |"]
    lines.append("| --- |" + " --- |" * len(KS))
    names = {"all": "all 10", "tune": "0-4, tuning half", "held_out": "5-9, held out"}
    for part, label in names.items():
        raw = report["raw"][part]
        lines.append(_row(f"(a) raw turns, {label}", raw["recall"]))
        if part == "all":
            lines.append(_row("(a) raw turns, hit@k, all 10", raw["hit"]))
        for pipeline, title in (
            ("rules", "default process (rules Gate)"),
            ("standin", "stand-in model Gate"),
        ):
            if pipeline not in report:
                continue
            state = report[pipeline][part]
            lines.append(_row(f"(b) after {title}, {label}", state["recall"]))
            lines.append(
                _row(
                    f"(c) memories + sources, {title}, {label}",
                    state["memories_with_sources"]["recall"],
                )
            )
            lines.append(_row(f"memory recall, {title}, {label}", state["memory_recall"]))
    for name, values in PUBLISHED.items():
        lines.append(f"| {name} recall@k | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    lines.append("")
    lines.append(
        "| category (raw turns, all 10) | items | " + " | ".join(f"recall@{k}" for k in KS) + " |"
    )
    lines.append("| --- | --- |" + " --- |" * len(KS))
    for name, values in report["raw"]["all"]["categories"].items():
        cells = " | ".join(f"{values[f'recall@{k}']:.3f}" for k in KS)
        lines.append(f"| {name} | {values['items']} | {cells} |")
    evidence = report["evidence"]
    latency = report["raw"]["all"]["latency_ms"]
    lines.append("")
    lines.append(
        f"{report['raw']['all']['items']} questions; {evidence['skipped']} evidence ids named no "
        f"turn and were skipped ({evidence['joined']} evidence strings held several ids and were "
        f"split; {evidence['emptied']} items were left with no evidence and count 1); query "
        f"latency p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms (k=50, Python API, "
        f"warm, raw turns); capture + index of all conversations {report['build_seconds']:.1f} s."
    )
    for pipeline in ("rules", "standin"):
        if pipeline in report:
            work = report[pipeline]["process"]
            after = report[pipeline]["all"]["latency_ms"]
            lines.append(
                f"{pipeline}: {work['runs']} runs in {work['seconds']:.1f} s, "
                f"{work['memories_created']} memories created, {work['captures_expired']} captures "
                f"removed by retention, {work['captures_pending']} still pending; query latency "
                f"p50 {after['p50']:.1f} ms, p95 {after['p95']:.1f} ms."
            )
    tuned = report["tuning"]
    lines.append("")
    lines.append(
        "Chosen on conversations 0-4 by recall@10: context weights (before, after) "
        f"{tuned['message_weights']['chosen']} of "
        + ", ".join(f"{v} {f:.3f}" for v, f in tuned["message_weights"]["tried"])
        + "; memory rank weight "
        f"{tuned['memory_weight']['chosen']} of "
        + ", ".join(f"{v} {f:.3f}" for v, f in tuned["memory_weight"]["tried"])
        + "."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="path to locomo10.json")
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    parser.add_argument("--no-captions", action="store_true", help="leave photo captions out")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument(
        "--ablation", action="store_true", help="measure what each recall feature adds"
    )
    parser.add_argument(
        "--no-standin", action="store_true", help="skip the stand-in command-backend pipeline"
    )
    parser.add_argument(
        "--vocabulary",
        action="store_true",
        help="recall every question with the recall vocabulary on and off, in one run",
    )
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text("utf-8"))[: args.limit]
    if args.ablation:
        from locomo_ablation import run_ablation

        run_ablation(data, build_corpus, evaluate)
        return 0
    if args.vocabulary:
        from locomo_vocabulary import run_vocabulary

        result = run_vocabulary(data, sys.modules[__name__], captions=not args.no_captions)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=2, default=list), "utf-8")
        return 0
    captions = not args.no_captions
    report: dict[str, Any] = {"tuning": {}}
    with tempfile.TemporaryDirectory(prefix="memgit-locomo-") as tmp:
        corpus = build_corpus(data, Path(tmp) / "rules", captions=captions)
        chosen, tried = choose(corpus, MESSAGE_WEIGHT_GRID, set_message_weights)
        report["tuning"]["message_weights"] = {"chosen": chosen, "tried": tried}
        counts = {"skipped": 0, "joined": 0, "emptied": 0}
        report["raw"] = split(score_items(corpus, counts), corpus)
        report["evidence"] = counts
        report["build_seconds"] = corpus.build_seconds
        rules_work = process_corpus(corpus)
        if not args.no_standin:
            standin = build_corpus(data, Path(tmp) / "standin", captions=captions)
            use_standin_gate(standin)
            standin_work = process_corpus(standin)
            chosen, tried = choose(standin, MEMORY_WEIGHT_GRID, set_memory_weight)
            report["standin"] = {**split(score_items(standin), standin), "process": standin_work}
        else:
            chosen, tried = choose(corpus, MEMORY_WEIGHT_GRID, set_memory_weight)
        report["tuning"]["memory_weight"] = {"chosen": chosen, "tried": tried}
        report["rules"] = {**split(score_items(corpus), corpus), "process": rules_work}
    print(render(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=list), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
