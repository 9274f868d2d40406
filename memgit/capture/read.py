"""Read turns from the outside world: one JSON object, or JSON Lines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from memgit.constants import MAX_INPUT_BYTES, MAX_JSONL_BYTES
from memgit.errors import InvalidInputError
from memgit.jsonio import parse_json
from memgit.turn import Turn, turn_from_data


def read_limited(
    stream: IO[bytes],
    *,
    source: str,
    limit: int = MAX_INPUT_BYTES,
    hint: str = "capture one turn per call, or many with --file turns.jsonl",
) -> bytes:
    """All of ``stream``, refusing (without reading on) input larger than ``limit``: every
    read of foreign input (stdin, a file an option names) goes through here."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise InvalidInputError(
            f"input is larger than the {limit:,}-byte limit",
            code="too-large",
            path=source,
            hint=hint,
        )
    return data


def parse_turn(data: bytes | str | dict[str, Any], *, source: str) -> Turn:
    """One turn from JSON text (strictly parsed) or an already parsed mapping."""
    if isinstance(data, dict):
        # Python values get the same strictness as JSON text: no NaN, no lone
        # surrogates, nothing JSON cannot carry.
        try:
            data = json.dumps(data, allow_nan=True)
        except (TypeError, ValueError) as err:
            raise InvalidInputError(
                f"the turn holds a value JSON cannot carry: {err}",
                code="invalid-json",
                path=source,
            ) from err
    if not data.strip():
        raise InvalidInputError(
            "no input: expected a turn as a JSON object",
            code="empty-input",
            path=source,
            hint="see `memgit capture --help` for the turn format",
        )
    value = parse_json(data, source=source)
    return turn_from_data(value, source=source)


def iter_jsonl_turns(
    stream: IO[bytes], *, source: str, limit: int = MAX_JSONL_BYTES
) -> Iterator[tuple[str, Turn]]:
    """(``file:line``, turn) from JSON Lines; errors name the file and line. The whole
    input is bounded too (``limit`` bytes), as a stream of valid lines may never end."""
    lineno = 0
    total = 0
    while True:
        line = stream.readline(MAX_INPUT_BYTES + 1)
        if not line:
            return
        total += len(line)
        if total > limit:
            raise InvalidInputError(
                f"input is larger than the {limit:,}-byte limit",
                code="too-large",
                path=source,
                hint="split the file and capture each part (capturing again is a no-op)",
            )
        lineno += 1
        where = f"{source}:{lineno}"
        if len(line) > MAX_INPUT_BYTES:
            raise InvalidInputError(
                f"line is longer than the {MAX_INPUT_BYTES:,}-byte limit",
                code="too-large",
                path=where,
            )
        if not line.strip():
            continue
        yield where, parse_turn(line.rstrip(b"\r\n"), source=where)
