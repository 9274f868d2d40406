"""LoCoMo retrieval: memgit's lexical recall over captured turns, scored like the paper.

Usage (from the checkout)::

    .venv/bin/python bench/locomo.py [--data ../shared/data/locomo/locomo10.json] [--json out.json]

For each of the 10 conversations a memory repository is created in a temporary
folder (the data never enters the project), and every session is captured with
``MemoryRepo.capture_many`` as one commit: each dialogue turn becomes one
captured turn whose single message has role ``user``, the speaker as ``name``,
the session's date as ``timestamp``, and as content the text (plus, where the
turn shared a photo, ``[shares <caption>]``, as a host that describes images
would capture it; ``--no-captions`` leaves that out). Each question is then
recalled verbatim with ``MemoryRepo.recall`` and the captured turns of the
evidence pack are compared with the question's gold evidence turns. Then each
repository is processed once, as a user would (``MemoryRepo.process()`` with
``memgit init``'s settings: the offline rules Gate, the 30-day inbox retention),
and every question is asked again: recall must survive processing.

Metrics, as in the LoCoMo paper (Table 3): recall@k is the fraction of an
item's evidence turns found in the top k turns, averaged over all items, items
without evidence counting 1; hit@k is the share of items with at least one
evidence turn in the top k. Evidence ids are split on ``;`` (one item holds
``"D8:6; D9:17"``), and ids that name no turn are skipped and counted.
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


def evaluate(corpus: Corpus) -> dict[str, Any]:
    recall_sum = {k: 0.0 for k in KS}
    hit_sum = {k: 0.0 for k in KS}
    by_category: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"n": 0, **{f"r{k}": 0.0 for k in KS}}
    )
    latencies: list[float] = []
    counts = {"skipped": 0, "joined": 0, "emptied": 0}
    items = 0
    for sample, repo, ids in corpus.repos:
        known = set(ids.values())
        for qa in sample["qa"]:
            gold = gold_turns(qa, known, counts)
            started = time.perf_counter()
            pack = repo.recall(qa["question"], k=max(KS))
            latencies.append(time.perf_counter() - started)
            ranked = [ids.get((turn.session, turn.seq)) for turn in pack.turns]
            items += 1
            category = by_category[qa["category"]]
            category["n"] += 1
            for k in KS:
                found = len(gold & set(ranked[:k]))
                value = found / len(gold) if gold else 1.0
                recall_sum[k] += value
                hit_sum[k] += 1.0 if (found or not gold) else 0.0
                category[f"r{k}"] += value
    latencies.sort()
    return {
        "items": items,
        "evidence": counts,
        "recall": {k: recall_sum[k] / items for k in KS},
        "hit": {k: hit_sum[k] / items for k in KS},
        "categories": {
            CATEGORIES[code]: {"items": c["n"], **{f"recall@{k}": c[f"r{k}"] / c["n"] for k in KS}}
            for code, c in sorted(by_category.items())
        },
        "latency_ms": {
            "p50": 1000 * statistics.median(latencies),
            "p95": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
            "mean": 1000 * statistics.fmean(latencies),
        },
        "build_seconds": corpus.build_seconds,
    }


def render(result: dict[str, Any], processed: dict[str, Any] | None = None) -> str:
    lines = ["| | " + " | ".join(f"k={k}" for k in KS) + " |", "| --- |" + " --- |" * len(KS)]
    lines.append(
        "| memgit recall@k, captured | "
        + " | ".join(f"{result['recall'][k]:.3f}" for k in KS)
        + " |"
    )
    lines.append(
        "| memgit hit@k, captured | " + " | ".join(f"{result['hit'][k]:.3f}" for k in KS) + " |"
    )
    if processed is not None:
        for name in ("recall", "hit"):
            cells = " | ".join(f"{processed[name][k]:.3f}" for k in KS)
            lines.append(f"| memgit {name}@k, after a default process | {cells} |")
    for name, values in PUBLISHED.items():
        lines.append(f"| {name} recall@k | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    lines.append("")
    lines.append("| category | items | " + " | ".join(f"recall@{k}" for k in KS) + " |")
    lines.append("| --- | --- |" + " --- |" * len(KS))
    for name, values in result["categories"].items():
        cells = " | ".join(f"{values[f'recall@{k}']:.3f}" for k in KS)
        lines.append(f"| {name} | {values['items']} | {cells} |")
    latency = result["latency_ms"]
    lines.append("")
    lines.append(
        f"{result['items']} questions; {result['evidence']['skipped']} evidence ids named no "
        f"turn and were skipped ({result['evidence']['joined']} evidence strings held several "
        f"ids and were split; {result['evidence']['emptied']} items were left with no evidence "
        f"and count 1); query latency p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms "
        f"(k=50, Python API, warm); capture + index of all 10 conversations "
        f"{result['build_seconds']:.1f} s."
    )
    if processed is not None:
        work = processed["process"]
        lines.append("")
        lines.append(
            f"After one default `memgit process` per conversation (rules Gate, "
            f"{work['seconds']:.1f} s): {work['runs']} runs, {work['memories_created']} "
            f"memories created, {work['captures_expired']} captures removed by retention, "
            f"{work['captures_pending']} still pending."
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
        "--no-process",
        action="store_true",
        help="skip the second measurement, after one default `memgit process`",
    )
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text("utf-8"))[: args.limit]
    if args.ablation:
        from locomo_ablation import run_ablation

        run_ablation(data, build_corpus, evaluate)
        return 0
    with tempfile.TemporaryDirectory(prefix="memgit-locomo-") as tmp:
        corpus = build_corpus(data, Path(tmp), captions=not args.no_captions)
        result = evaluate(corpus)
        processed = None
        if not args.no_process:
            work = process_corpus(corpus)
            processed = {**evaluate(corpus), "process": work}
    print(render(result, processed))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"captured": result, "processed": processed}
        args.json.write_text(json.dumps(payload, indent=2), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
