"""The host backend: the calling agent supplies the Gate answer itself.

The agent answers a prompt it read earlier (``memgit process --print-prompt``), and
captures may arrive, or another run commit, before it hands the answer back. So the
answer names the prompt it answers (``prompt_digest``), and an answer to any other
prompt than the one memgit would ask now is refused before anything is checked or
written. Re-planning instead would apply a decision to units or related memories
the agent never saw.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from memgit.errors import ConflictError
from memgit.gate.contract import SOURCE
from memgit.gate.prompt import GateRequest

DIGEST_FIELD = "prompt_digest"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(slots=True)
class HostBackend:
    """Returns the answer given with ``--gate-output``; a refusal cannot be corrected here."""

    text: str
    name: str = "host"
    model: str | None = None
    can_correct: bool = False

    def answer(self, request: GateRequest) -> str:
        named = named_digest(self.text)
        if named is not None and named != request.digest:
            raise ConflictError(
                f"the answer is for prompt {named[:19]}..., but the prompt now is "
                f"{request.digest[:19]}...: captures arrived or memories changed since",
                code="prompt-changed",
                path=SOURCE,
                field=DIGEST_FIELD,
                hint="run `memgit process --print-prompt` again and answer the prompt it "
                "prints; nothing was changed",
            )
        return self.text


def named_digest(text: str) -> str | None:
    """The prompt digest an answer names, or None when it names none (or is not JSON,
    or names something that is not a digest: the Gate contract reports those)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    named = value.get(DIGEST_FIELD) if isinstance(value, dict) else None
    return named if isinstance(named, str) and _DIGEST.fullmatch(named) else None
