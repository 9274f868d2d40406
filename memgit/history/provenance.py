"""The source quotes behind one run's change to one memory, down to the capture's lines.

A run record lists its decisions (``memory_id``, ``candidate_id``) and the Gate's
evidence bindings (each candidate's claims: ``unit_id`` and ``quote``); its inputs pin
each capture by blob id, so a quote is found even after the capture left the inbox.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from memgit.errors import InvalidInputError
from memgit.jsonio import decode_utf8
from memgit.layout import capture_path
from memgit.runrecord import RunRecord
from memgit.store.tree import read_blob
from memgit.turn import read_capture
from memgit.yamlio import scalar_lines


@dataclass(frozen=True, slots=True, kw_only=True)
class Quote:
    """One claim of a candidate: where it was said, by whom, when, and the exact words.

    ``lines`` are the first and last line of the capture file that hold the quote
    (the whole message where YAML folded it); None where the capture is not in this
    clone or does not hold the message.
    """

    capture: str | None
    unit: str
    role: str | None = None
    name: str | None = None
    timestamp: str | None = None
    quote: str
    blob: str | None
    lines: tuple[int, int] | None = None


def candidate_ids(record: RunRecord, memory_id: str) -> list[str]:
    """The candidates of the run whose decisions produced (or retired) ``memory_id``."""
    found = []
    for decision in record.decisions:
        candidate = decision.get("candidate_id")
        if decision.get("memory_id") == memory_id and isinstance(candidate, str):
            found.append(candidate)
    return found


def run_quotes(repo: pygit2.Repository, record: RunRecord, memory_id: str) -> tuple[Quote, ...]:
    """Every claim behind the run's candidates for ``memory_id``, in the record's order."""
    wanted = set(candidate_ids(record, memory_id))
    blobs = {item.path: item.blob for item in record.inputs}
    quotes = []
    bindings = record.gate_output.get("evidence_bindings")
    for binding in bindings if isinstance(bindings, list) else ():
        if not isinstance(binding, dict) or binding.get("candidate_id") not in wanted:
            continue
        for claim in binding.get("claims") or ():
            unit, quote = claim.get("unit_id"), claim.get("quote")
            if isinstance(unit, str) and isinstance(quote, str):
                quotes.append(_locate(repo, unit, quote, blobs))
    return tuple(quotes)


def _locate(repo: pygit2.Repository, unit: str, quote: str, blobs: dict[str, str]) -> Quote:
    key, _, index_text = unit.rpartition("#")
    parts = key.split("/")
    if len(parts) != 3 or not parts[2].isdigit() or not index_text.isdigit():
        return Quote(unit=unit, quote=quote, capture=None, blob=None)
    path = capture_path(parts[0], parts[1], int(parts[2]))
    blob = blobs.get(path)
    index = int(index_text)
    try:
        data = read_blob(repo, blob) if blob is not None else None
    except (KeyError, ValueError):
        data = None
    if data is None or blob is None:
        return Quote(unit=unit, quote=quote, capture=path, blob=blob)
    try:
        turn = read_capture(data, path=path, blob=blob, check=False)
        message = turn.messages[index]
        text = decode_utf8(data, source=path)
        first, last, style = scalar_lines(text, ("messages", index, "content"), source=path)
    except (InvalidInputError, IndexError, KeyError):
        return Quote(unit=unit, quote=quote, capture=path, blob=blob)
    lines = (first, last)
    at = message.content.find(quote)
    if style == "|" and at >= 0:  # a literal block: one file line per line of text
        start = first + 1 + message.content.count("\n", 0, at)
        lines = (start, first + 1 + message.content.count("\n", 0, at + len(quote)))
    return Quote(
        unit=unit,
        quote=quote,
        capture=path,
        blob=blob,
        role=message.role,
        name=message.name,
        timestamp=turn.timestamp,
        lines=lines,
    )
