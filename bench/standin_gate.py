"""A stand-in for a model Gate, for ``bench/locomo.py``: deterministic, not a model.

memgit's command backend runs this with the prompt on stdin (``gate: {backend:
command, command: [python, bench/standin_gate.py]}``) and reads the Gate answer
it prints. It makes one memory per supporting unit that states a first-person
fact, the way a model Gate compresses a turn: the memory keeps one sentence
(the longest declarative sentence with "I", "my", "we", ... of five words or
more, quoted exactly) and drops the rest of the turn. Every other unit is
NO_CHANGE. It reads nothing but the prompt, so nothing about the benchmark's
questions or evidence can reach it.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|mine|me|we|we're|we've|our|us)\b", re.I)
_TITLE = 80


def payload_of(prompt: str) -> dict[str, Any]:
    """The JSON part of the prompt: after the instructions, from the last "{" line."""
    start = prompt.rindex("\n\n{\n")
    value = json.loads(prompt[start:])
    assert isinstance(value, dict)
    return value


def fact_of(text: str) -> str | None:
    """The sentence a compressing Gate would keep, or None."""
    found = []
    for match in _SENTENCE.finditer(text):
        sentence = match.group(0).strip()
        if sentence.endswith("?") or len(sentence.split()) < 5:
            continue
        if _FIRST_PERSON.search(sentence) and text.count(sentence) == 1:
            found.append(sentence)
    return max(found, key=len) if found else None


def answer(payload: dict[str, Any]) -> dict[str, Any]:
    scope = payload["scopes"][0]
    kind = "fact" if "fact" in payload["memory_types"] else payload["memory_types"][0]
    candidates, coverage, bindings = [], [], []
    for unit in payload["units"]:
        if not unit.get("can_support"):
            continue
        fact = fact_of(unit["text"])
        if fact is None:
            coverage.append(
                {
                    "unit_id": unit["unit_id"],
                    "decision": "NO_CHANGE",
                    "reason": "no-durable-content",
                }
            )
            continue
        cid = f"c{len(candidates) + 1}"
        title = fact if len(fact) <= _TITLE else fact[: _TITLE - 3].rstrip() + "..."
        candidates.append(
            {
                "candidate_id": cid,
                "action": "CREATE",
                "type": kind,
                "scope": scope,
                "title": title,
                "body": fact,
            }
        )
        coverage.append(
            {"unit_id": unit["unit_id"], "decision": "CANDIDATE", "candidate_ids": [cid]}
        )
        bindings.append(
            {
                "candidate_id": cid,
                "claims": [{"unit_id": unit["unit_id"], "quote": fact, "role": "assertion"}],
            }
        )
    return {"candidates": candidates, "coverage": coverage, "evidence_bindings": bindings}


def main() -> int:
    print(json.dumps(answer(payload_of(sys.stdin.read())), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
