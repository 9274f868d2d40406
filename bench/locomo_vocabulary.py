"""The recall vocabulary on LoCoMo, on and off in one run: ``bench/locomo.py --vocabulary``.

The conversations are captured once (as ``bench/locomo.py`` does), and every
question is recalled twice, query by query: by a ``MemoryRepo`` whose settings
say ``recall.vocabulary: true`` (the default) and by one over the same
repository saying ``false``. That is done for (a) the raw captured turns and
(b) after one default ``memgit process`` (rules Gate). Figures are recall@k and
hit@k as ``bench/locomo.py`` defines them, for all ten conversations, per
category, and for the questions the vocabulary added terms to; plus the query
latency both ways (interleaved, so the ratio is fair on a shared machine).

Nothing here tunes anything: the vocabulary file is the shipped one, and the
gold evidence is used for scoring only. LoCoMo is everyday conversation; the
vocabulary targets what users of coding agents say about their tools, so a
small or negative change here is a finding, not a reason to edit the file.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
from pathlib import Path
from typing import Any

from memgit.derived.vocabulary import expand
from memgit.repo import MemoryRepo
from memgit.tokens import parse_query

MODES = ("on", "off")


def _twins(repo: MemoryRepo) -> dict[str, MemoryRepo]:
    """The repository opened as it is (vocabulary on) and with recall.vocabulary: false."""
    off = MemoryRepo(repo.git, dataclasses.replace(repo.settings, recall_vocabulary=False))
    off.recall("warm up", k=1)
    return {"on": repo, "off": off}


def ask_both(corpus: Any, locomo: Any) -> tuple[dict[str, list[Any]], set[int]]:
    """Every question, asked with the vocabulary on and off in turn: items per mode, and
    the numbers of the questions the vocabulary added terms to."""
    items: dict[str, list[Any]] = {mode: [] for mode in MODES}
    touched: set[int] = set()
    number = 0
    for sample_number, (sample, repo, ids) in enumerate(corpus.repos):
        repos = _twins(repo)
        known = set(ids.values())
        for qa in sample["qa"]:
            gold = locomo.gold_turns(qa, known, {"skipped": 0, "joined": 0, "emptied": 0})
            if expand(parse_query(qa["question"])).expansions:
                touched.add(number)
            # Alternate which goes first, so that neither always finds SQLite's pages warm.
            for mode in MODES if number % 2 == 0 else MODES[::-1]:
                item = locomo.ask(repos[mode], qa, sample_number, frozenset(gold), ids)
                items[mode].append(item)
            number += 1
    return items, touched


def compare(items: dict[str, list[Any]], touched: set[int], summarise: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"questions": len(items["on"]), "touched": len(touched)}
    for mode in MODES:
        every = summarise(items[mode])
        some = summarise([item for n, item in enumerate(items[mode]) if n in touched])
        result[mode] = {"all": every, "touched": some}
    on = [item.seconds for item in items["on"]]
    off = [item.seconds for item in items["off"]]
    result["latency_ratio_p50"] = statistics.median(on) / statistics.median(off)
    result["changed_top10"] = sum(
        1
        for a, b in zip(items["on"], items["off"], strict=True)
        if set(a.turns[:10]) != set(b.turns[:10])
    )
    return result


def run_vocabulary(data: list[dict[str, Any]], locomo: Any, *, captions: bool) -> dict[str, Any]:
    """(a) raw turns and (b) after a default process, each with the vocabulary on and off;
    ``locomo`` is bench/locomo.py's module (its corpus, reading and scoring)."""
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="memgit-locomo-vocabulary-") as tmp:
        corpus = locomo.build_corpus(data, Path(tmp) / "rules", captions=captions)
        for state in ("raw", "rules"):
            if state == "rules":
                report["process"] = locomo.process_corpus(corpus)
            items, touched = ask_both(corpus, locomo)
            report[state] = compare(items, touched, locomo.summarise)
            print(render_state(state, report[state], locomo.KS), flush=True)
    return report


def render_state(state: str, result: dict[str, Any], ks: tuple[int, ...]) -> str:
    title = {"raw": "(a) raw turns", "rules": "(b) after a default process (rules Gate)"}[state]
    lines = [f"{title}: {result['questions']} questions, {result['touched']} with added terms"]
    lines.append("| recall@k | " + " | ".join(f"k={k}" for k in ks) + " |")
    lines.append("| --- |" + " --- |" * len(ks))
    for part, label in (("all", "all questions"), ("touched", "questions with added terms")):
        for mode in MODES:
            values = result[mode][part]["recall"]
            cells = " | ".join(f"{values[k]:.3f}" for k in ks)
            lines.append(f"| vocabulary {mode}, {label} | {cells} |")
    for mode in MODES:
        values = result[mode]["all"]["hit"]
        cells = " | ".join(f"{values[k]:.3f}" for k in ks)
        lines.append(f"| hit@k, vocabulary {mode}, all questions | {cells} |")
    lines.append("")
    lines.append("| category, recall@10 | items | on | off |")
    lines.append("| --- | --- | --- | --- |")
    for name, values in result["on"]["all"]["categories"].items():
        off = result["off"]["all"]["categories"][name]
        lines.append(
            f"| {name} | {values['items']} | {values['recall@10']:.3f} | {off['recall@10']:.3f} |"
        )
    on_ms = result["on"]["all"]["latency_ms"]
    off_ms = result["off"]["all"]["latency_ms"]
    lines.append("")
    lines.append(
        f"latency (k=50, warm, interleaved): on p50 {on_ms['p50']:.1f} ms, p95 {on_ms['p95']:.1f}"
        f" ms; off p50 {off_ms['p50']:.1f} ms, p95 {off_ms['p95']:.1f} ms; p50 ratio "
        f"{result['latency_ratio_p50']:.2f}; top-10 turns changed for {result['changed_top10']} "
        "questions."
    )
    return "\n".join(lines)
