"""A stand-in for a local model: it answers a Gate prompt with valid Gate JSON.

Each user unit that can support a memory becomes one CREATE quoting the unit's whole
text, so a recipe's run makes one memory per statement, the same every time (a
model at temperature 0 answering the same prompt). The recipes of docs/gate.md are
run against it (tests/test_gate_recipes.py): behind an HTTP server that answers as
Ollama or llama-server does, and as a program named ``llm`` on PATH, run as this
file: ``python scripted_model.py [llm's arguments]`` with the prompt on stdin.
"""

from __future__ import annotations

import json
import sys
from typing import Any

# The models the fake `llm` knows, as `llm models` lists them with the llm-ollama
# plugin: those Ollama serves (set by the test through this environment variable).
MODELS_ENV = "SCRIPTED_LLM_MODELS"
MIN_QUOTE, MAX_QUOTE = 8, 4000


def gate_answer(payload: dict[str, Any]) -> str:
    """The Gate JSON for a prompt's user part (its ``units``, ``memory_types``, ``scopes``)."""
    candidates, coverage, bindings = [], [], []
    kind = "preference" if "preference" in payload["memory_types"] else payload["memory_types"][0]
    for unit in payload["units"]:
        if not unit["can_support"]:
            continue
        text = unit["text"]
        if unit["role"] != "user" or not MIN_QUOTE <= len(text) <= MAX_QUOTE:
            coverage.append(
                {
                    "unit_id": unit["unit_id"],
                    "decision": "NO_CHANGE",
                    "reason": "no-durable-content",
                }
            )
            continue
        cid = f"c{len(candidates) + 1}"
        title = text if len(text) <= 80 else text[:77] + "..."
        candidates.append(
            {
                "candidate_id": cid,
                "action": "CREATE",
                "type": kind,
                "scope": payload["scopes"][0],
                "title": title,
                "body": text,
            }
        )
        coverage.append(
            {"unit_id": unit["unit_id"], "decision": "CANDIDATE", "candidate_ids": [cid]}
        )
        claim = {"unit_id": unit["unit_id"], "quote": text, "role": "assertion"}
        bindings.append({"candidate_id": cid, "claims": [claim]})
    answer = {"candidates": candidates, "coverage": coverage, "evidence_bindings": bindings}
    return json.dumps(answer, ensure_ascii=False)


def user_payload(prompt: str) -> dict[str, Any]:
    """The user part of a command backend's prompt: the JSON object after the instructions."""
    return dict(json.loads(prompt[prompt.rindex("\n\n{\n") + 2 :]))


def llm(argv: list[str]) -> int:
    """The `llm` CLI as the recipe runs it: `llm -m MODEL --no-stream`, prompt on stdin.
    An option it does not know, or a model no plugin offers, fails as llm does."""
    import os

    known = [name for name in os.environ.get(MODELS_ENV, "").split(",") if name]
    model, args = None, list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("-m", "--model") and args:
            model = args.pop(0)
        elif arg in ("--no-stream", "-n", "--no-log"):
            continue
        else:
            print(f"Error: No such option: {arg}", file=sys.stderr)
            return 2
    if model not in known:
        print(f"Error: 'Unknown model: {model}'", file=sys.stderr)
        return 1
    sys.stdout.write(gate_answer(user_payload(sys.stdin.read())) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(llm(sys.argv[1:]))
