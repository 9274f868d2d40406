"""memgit-secrets: no file of the commit, no file name, and no commit message holds a secret,
and no memory states a credential.

The detector is the one capture redaction uses, so whatever memgit would have
redacted from a turn is refused in a person's commit too. Redaction
placeholders (``[REDACTED:kind]``) are not secrets.

Every file is read, binary or not: a secret after a NUL byte is still a secret, so bytes
are decoded with errors replaced rather than skipped, and UTF-16 or UTF-32 text (by its
byte-order mark, or without one by the pattern of its NUL bytes) is decoded as such. A
problem never prints the secret: a path that holds one is shown redacted.

A commit message is checked where it is known: memgit's own commits (the commit engine
screens the message with the files) and ``memgit verify``. At pre-commit time git has no
message yet, so people's messages need the ``commit-msg`` stage:
``memgit-check-secrets --commit-msg FILE`` (see docs/governance.md).
"""

from __future__ import annotations

import codecs
import sys
from collections.abc import Iterator
from pathlib import Path

from memgit.constants import MEMORIES_DIR
from memgit.errors import MemgitError, Problem
from memgit.governance.view import CommitView
from memgit.memory import read_memory
from memgit.secrets.paths import shown_path
from memgit.secrets.redact import RANDOM_TOKEN_KIND, find_credentials, find_secrets

HOOK_ID = "memgit-secrets"
MESSAGE_PATH = "commit message"
_HINT = (
    "remove it or replace it with [REDACTED]; a secret in Git history is "
    "leaked to everyone who can clone the repository"
)
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SAMPLE = 4096


def decode_for_scan(data: bytes) -> str:
    """The text a scan reads in a file's bytes; undecodable bytes become U+FFFD."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding, "replace")
    return data.decode(_utf16_without_bom(data) or "utf-8", "replace")


def _utf16_without_bom(data: bytes) -> str | None:
    """``utf-16-le``/``-be`` when NUL bytes fill one byte of most pairs (ASCII-range text
    as UTF-16) and almost none of the other, else None."""
    sample = data[:_SAMPLE]
    if len(sample) < 4:
        return None
    even, odd = sample[0::2], sample[1::2]
    for high, low, encoding in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if high.count(0) * 10 >= len(high) * 6 and low.count(0) * 10 <= len(low):
            return encoding
    return None


def iter_text_secrets(path: str, data: bytes) -> Iterator[Problem]:
    """A problem for each secret in the content of the file at ``path``."""
    text = decode_for_scan(data)
    for match in find_secrets(text):
        line = text.count("\n", 0, match.start) + 1
        yield Problem(
            code="secret-detected",
            message=f"a secret ({match.kind}) is in the file",
            path=shown_path(path),
            field=f"line {line}",
            hint=_HINT,
        )


def iter_name_secrets(path: str) -> Iterator[Problem]:
    """A problem for each secret in a file's path: tree entries are Git objects too."""
    for match in find_secrets(path):
        yield Problem(
            code="secret-detected",
            message=f"a secret ({match.kind}) is in the file's name",
            path=shown_path(path),
            field="path",
            hint=_HINT,
        )


def iter_message_secrets(message: str) -> Iterator[Problem]:
    """A problem for each secret in a commit message."""
    for match in find_secrets(message):
        line = message.count("\n", 0, match.start) + 1
        yield Problem(
            code="secret-detected",
            message=f"a secret ({match.kind}) is in the commit message",
            path=MESSAGE_PATH,
            field=f"line {line}",
            hint="reword the commit (git commit --amend) before it is pushed, and rotate "
            "the secret if it was",
        )


def iter_memory_credentials(view: CommitView) -> Iterator[Problem]:
    """The Gate's credential fence, for memories that did not come through the Gate (a
    person's commit, a pull request): a long random-looking token beside a credential word,
    or a generated-looking one anywhere, in a title or body. A credential given by name
    (``my PIN is …``) is ``secret-detected`` already, like in any file."""
    for path in view.changed_under(f"{MEMORIES_DIR}/", ".md"):
        try:
            memory = view.parsed(path, read_memory)
        except MemgitError:
            continue  # memgit-schemas reports it
        for name, text in (("title", memory.title), ("body", memory.body)):
            if any(match.kind == RANDOM_TOKEN_KIND for match in find_credentials(text)):
                yield Problem(
                    code="credential-in-memory",
                    message=f"the memory's {name} holds a random-looking token (beside a "
                    "credential word, or generated-looking)",
                    path=shown_path(path),
                    field=name,
                    hint="a memory may say where a credential is kept, never the credential; "
                    "remove it, and rotate it if it was ever pushed",
                )


def iter_secret_problems(view: CommitView) -> Iterator[Problem]:
    if view.message is not None:
        yield from iter_message_secrets(view.message)
    for path in sorted(view.changed):
        yield from iter_name_secrets(path)
        data = view.read(path)
        if data is not None:
            yield from iter_text_secrets(path, data)
    yield from iter_memory_credentials(view)


def message_as_recorded(text: str) -> str:
    """A message as git will record it: comment lines and what follows the scissors line
    dropped (``git commit -v`` puts the diff there)."""
    kept = []
    for line in text.splitlines(keepends=True):
        if line.startswith("# ------------------------ >8 ------------------------"):
            break
        if not line.startswith("#"):
            kept.append(line)
    return "".join(kept)


def check_message_file(argv: list[str]) -> int:
    """``--commit-msg FILE``: the ``commit-msg`` stage, where git hands over the message."""
    if len(argv) != 1:
        print("error[usage]: --commit-msg takes the message file git passes", file=sys.stderr)
        return 2
    message = message_as_recorded(decode_for_scan(Path(argv[0]).read_bytes()))
    problems = list(iter_message_secrets(message))
    for problem in problems:
        print(problem.render(), file=sys.stderr)
    if problems:
        print(f"{HOOK_ID}: {len(problems)} problem(s); nothing was committed", file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    from memgit.governance.hooks import run_hook

    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--commit-msg"]:
        return check_message_file(args[1:])
    return run_hook(HOOK_ID, iter_secret_problems, args)
