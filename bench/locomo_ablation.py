"""What each part of memgit's recall adds on LoCoMo: ``bench/locomo.py --ablation``.

Each row turns one more feature on, from FTS5's BM25 over the raw words up to
memgit as shipped. Features are switched off by patching memgit's internals in
this process only (the tokenizer in the schema, the stop-word list, the speaker
and context columns, the column weights, the recall vocabulary), then rebuilding
each index. The last row uses memgit unpatched; it must equal
``bench/locomo.py``'s main result.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memgit import tokens
from memgit.derived import database, refresh, rows, search, vocabulary

ORIGINAL = {
    "schema": database._SCHEMA,
    "stop": tokens.STOP_WORDS,
    "read_capture": refresh.read_capture,
    "context": rows.CONTEXT_CHARS,
    "weights": search.MESSAGE_WEIGHTS,
    "expand": vocabulary.expand,
}


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    captions: bool = True
    porter: bool = True
    stop_words: bool = True
    names: bool = True
    context: bool = True
    weights: tuple[float, float, float, float] | None = None
    vocabulary: bool = False


LADDER = (
    Variant(
        "BM25 (FTS5) over the words, turns as documents",
        captions=False,
        porter=False,
        stop_words=False,
        names=False,
        context=False,
        weights=(1.0, 0.0, 0.0, 0.0),
    ),
    Variant(
        "+ Porter stemming",
        captions=False,
        stop_words=False,
        names=False,
        context=False,
        weights=(1.0, 0.0, 0.0, 0.0),
    ),
    Variant(
        "+ English stop words dropped from the query",
        captions=False,
        names=False,
        context=False,
        weights=(1.0, 0.0, 0.0, 0.0),
    ),
    Variant(
        "+ photo captions captured with the turn",
        names=False,
        context=False,
        weights=(1.0, 0.0, 0.0, 0.0),
    ),
    Variant("+ speaker name column (weight 0.5)", context=False, weights=(1.0, 0.5, 0.0, 0.0)),
    Variant("+ previous message as context (weight 0.5)", weights=(1.0, 0.5, 0.5, 0.0)),
    Variant("+ next message as context (weight 0.4)"),
    Variant(
        "+ the recall vocabulary (added terms at half weight): memgit as shipped", vocabulary=True
    ),
)


def _without_names(data: bytes, *, path: str, blob: str, check: bool = False) -> Any:
    doc = ORIGINAL["read_capture"](data, path=path, blob=blob, check=check)
    messages = tuple(dataclasses.replace(m, name=None) for m in doc.messages)
    return dataclasses.replace(doc, messages=messages)


def apply(variant: Variant) -> None:
    schema = ORIGINAL["schema"]
    database._SCHEMA = schema if variant.porter else schema.replace("porter unicode61", "unicode61")
    tokens.STOP_WORDS = ORIGINAL["stop"] if variant.stop_words else frozenset()
    refresh.read_capture = ORIGINAL["read_capture"] if variant.names else _without_names
    rows.CONTEXT_CHARS = ORIGINAL["context"] if variant.context else 0
    search.MESSAGE_WEIGHTS = variant.weights or ORIGINAL["weights"]
    vocabulary.expand = ORIGINAL["expand"] if variant.vocabulary else _unexpanded


def _unexpanded(query: tokens.Query) -> tokens.Query:
    return query


def run_ablation(
    data: list[dict[str, Any]],
    build_corpus: Callable[..., Any],
    evaluate: Callable[[Any], dict[str, Any]],
) -> list[tuple[str, dict[str, Any]]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="memgit-locomo-ablation-") as tmp:
        corpora = {
            captions: build_corpus(data, Path(tmp) / str(captions), captions=captions)
            for captions in (False, True)
        }
        for variant in LADDER:
            apply(variant)
            corpus = corpora[variant.captions]
            for _, repo, _ in corpus.repos:
                repo.rebuild_index()
            result = evaluate(corpus)
            rows.append((variant.name, result))
            recall = " | ".join(f"{result['recall'][k]:.3f}" for k in (5, 10, 25, 50))
            print(f"| {variant.name} | {recall} |", flush=True)
        apply(Variant("restore", vocabulary=True))
    return rows
