"""memgit-secrets: no file in the commit holds a secret.

The detector is the one capture redaction uses, so whatever memgit would have
redacted from a turn is refused in a person's commit too. Redaction
placeholders (``[REDACTED:kind]``) are not secrets.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from memgit.capture.redact import find_secrets
from memgit.errors import Problem
from memgit.governance.view import CommitView

HOOK_ID = "memgit-secrets"


def iter_text_secrets(path: str, data: bytes) -> Iterator[Problem]:
    if b"\0" in data[:8192]:
        return  # binary: nothing a person pasted from a conversation
    text = data.decode("utf-8", "replace")
    for match in find_secrets(text):
        line = text.count("\n", 0, match.start) + 1
        yield Problem(
            code="secret-detected",
            message=f"a secret ({match.kind}) is in the file",
            path=path,
            field=f"line {line}",
            hint="remove it or replace it with [REDACTED]; a secret in Git history is "
            "leaked to everyone who can clone the repository",
        )


def iter_secret_problems(view: CommitView) -> Iterator[Problem]:
    for path in sorted(view.changed):
        data = view.read(path)
        if data is not None:
            yield from iter_text_secrets(path, data)


def main(argv: list[str] | None = None) -> int:
    from memgit.governance.hooks import run_hook

    return run_hook(HOOK_ID, iter_secret_problems, sys.argv[1:] if argv is None else argv)
