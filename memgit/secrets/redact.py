"""Find secrets in captured text and redact them in memory, before anything reaches Git.

Captured conversation text is untrusted, so allow-list markers that other scanners honour
(``gitleaks:allow``, ``pragma: allowlist secret``, ``nosec``, ``# noqa``) are ignored: anyone
who can put text in front of the agent could otherwise smuggle a secret into the repository.

The detectors are the rows of :data:`memgit.secrets.rules.RULES`. They read a normalised
view of the text (:mod:`memgit.secrets.textview`: NFKC, format characters removed), and the
match is mapped back, so the original characters are what is replaced. Three more sources
of matches cover what one regex over one text cannot:

* a base64 run whose decoded text holds a secret (docker's ``auth``, a base64 AWS key in a
  Kubernetes secret) is a secret as a whole;
* the tail of a private key whose ``BEGIN`` line is in another message: the base64 lines
  just before an ``END`` line;
* values already found elsewhere in the same capture (:func:`redact_together`): an
  assistant echoing a password is redacted although the echo has no ``password=`` before it.

The same scan serves the pre-commit hook on staged files, so it must be fast and linear on
any input; see :mod:`memgit.secrets.rules` for how the patterns keep that.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
import string
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from memgit.lazyre import LazyPattern, lazy
from memgit.secrets.prose import (
    PROSE_KINDS,
    iter_clause_credentials,
    iter_prose_credentials,
    iter_random_beside_credential,
)
from memgit.secrets.rules import KINDS, RULES
from memgit.secrets.textview import view_of

__all__ = [
    "CREDENTIAL_KINDS",
    "KINDS",
    "RANDOM_TOKEN_KIND",
    "SecretMatch",
    "find_credentials",
    "find_secrets",
    "redact",
    "redact_together",
    "secret_values",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretMatch:
    """One secret: its stable kind and the offsets of the secret value in the scanned text."""

    kind: str
    start: int
    end: int


# `re` cannot use its fast literal-prefix search for case-insensitive patterns (about ten times
# slower per rule), so those rules, written in lower case, run without the flag over a
# lower-cased copy of the text with the same offsets.
_SCANS: tuple[tuple[str, LazyPattern, bool], ...] = tuple(
    (kind, lazy(pattern.pattern, pattern.flags & ~re.IGNORECASE), True)
    if pattern.flags & re.IGNORECASE
    else (kind, pattern, False)
    for kind, pattern in RULES
)
# Ties go to the rules, in their order, then to prose, then to decoded runs, then to echoes.
_PROSE_ORDER = len(_SCANS)
_DECODED_ORDER = len(_SCANS) + 1
_ECHO_ORDER = len(_SCANS) + 2
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)

# A run of base64 (standard or URL-safe) long enough to hold a key, 12 bytes or more, with
# both upper- and lower-case letters, as base64 of text has: a kebab-case name (such as the
# kind in a placeholder) is not worth decoding.
_BASE64_RUN = lazy(
    r"(?<![A-Za-z0-9+/_-])(?=[a-z0-9+/_-]*[A-Z])(?=[A-Z0-9+/_-]*[a-z])[A-Za-z0-9+/_-]{16,}+={0,2}"
)
_CONTROL = lazy(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# How much of the line before a base64 run is read with its decoded text (a key name).
_DECODE_CONTEXT = 80
_PEM_END = lazy(r"-----end[ ][ a-z0-9_-]{0,100}?private[ ]{1,4}key(?:[ ]{1,4}block)?[ ]{0,4}-----")
_LINE_BREAK = lazy(r"\r?\n|\\n")
_BASE64_LINE = lazy(r"[a-z0-9+/=]+")
_KEY_BODY_KINDS = frozenset({"private-key", "putty-private-key"})
_ECHOED_LINE = 20

Candidate = tuple[int, int, int, str]  # start, -end, rule order, kind


def _fold(text: str) -> str:
    """``text`` in lower case with unchanged offsets. :meth:`str.lower` is fast but turns a few
    characters (``'İ'``) into two, so such texts fall back to folding ASCII letters only."""
    folded = text.lower()
    return folded if len(folded) == len(text) else text.translate(_ASCII_LOWER)


def find_secrets(text: str) -> list[SecretMatch]:
    """All secrets in ``text``, non-overlapping, sorted by start.

    Of overlapping matches the earlier-starting, then the longer, then the one whose rule is
    listed first wins.
    """
    return _find(text, known={}, decode=True)


# Credentials given by name (a password, a PIN, ``token=…``), as opposed to tokens known by
# their shape (``ghp_…``): a memory that states one is about the secret itself.
CREDENTIAL_KINDS: frozenset[str] = frozenset(
    {
        *PROSE_KINDS,
        "password-assignment",
        "secret-assignment",
        "token-assignment",
        "api-key-assignment",
    }
)
RANDOM_TOKEN_KIND = "random-token"


def find_credentials(text: str) -> list[SecretMatch]:
    """The credentials in ``text`` that a memory must not state: those given by name
    (:data:`CREDENTIAL_KINDS`), a long random-looking token beside a credential word or a
    generated-looking one anywhere
    (``random-token``) that no rule knows the shape of. The Gate's second fence: capture
    redacts what it recognises, and this refuses what reached a memory anyway."""
    found = find_secrets(text)
    taken = [(match.start, match.end) for match in found]
    view = view_of(text)
    for start, end in iter_random_beside_credential(view.text, _fold(view.text)):
        begin, finish = view.span(start, end)
        if not any(begin < other_end and other_start < finish for other_start, other_end in taken):
            found.append(SecretMatch(kind=RANDOM_TOKEN_KIND, start=begin, end=finish))
    return sorted(
        (m for m in found if m.kind in CREDENTIAL_KINDS or m.kind == RANDOM_TOKEN_KIND),
        key=lambda match: match.start,
    )


def _find(text: str, *, known: Mapping[str, str], decode: bool) -> list[SecretMatch]:
    view = view_of(text)
    folded = _fold(view.text)
    candidates = [
        *_rule_candidates(view.text, folded),
        *_key_tails(folded),
        *(
            (start, -end, _PROSE_ORDER, kind)
            for start, end, kind in iter_prose_credentials(view.text, folded)
        ),
    ]
    if decode:
        candidates += _decoded_candidates(view.text)
    if known:
        candidates += _echo_candidates(view.text, known)
    candidates.sort()
    found: list[SecretMatch] = []
    spans: list[tuple[int, int]] = []  # sorted and disjoint
    taken = 0
    for start, negative_end, _, kind in candidates:
        if start >= taken:
            begin, end = view.span(start, -negative_end)
            found.append(SecretMatch(kind=kind, start=begin, end=end))
            spans.append((start, -negative_end))
            taken = -negative_end
    # A value found by the structure of its clause only where nothing else found one: a rule
    # that knows a token's shape names its kind better and knows where it ends.
    starts = [start for start, _ in spans]
    reached = 0
    for start, end, kind in sorted(iter_clause_credentials(view.text, folded)):
        after = bisect.bisect_right(starts, start)
        if start < reached or (after and spans[after - 1][1] > start):
            continue
        if after < len(spans) and spans[after][0] < end:
            continue
        begin, finish = view.span(start, end)
        found.append(SecretMatch(kind=kind, start=begin, end=finish))
        reached = end
    return sorted(found, key=lambda match: match.start)


def _rule_candidates(view: str, folded: str) -> Iterator[Candidate]:
    for order, (kind, pattern, fold) in enumerate(_SCANS):
        for match in pattern.finditer(folded if fold else view):
            yield match.start("value"), -match.end("value"), order, kind


def _decoded_candidates(view: str) -> Iterator[Candidate]:
    """Base64 runs whose decoded text, read after the start of the run's line (so that a key
    name before the run counts), holds a secret. Decoded text is not decoded again."""
    for run in _BASE64_RUN.finditer(view):
        decoded = _decode(run.group())
        if decoded is None:
            continue
        line_start = view.rfind("\n", 0, run.start()) + 1
        context = view[max(line_start, run.start() - _DECODE_CONTEXT) : run.start()]
        for match in _find(context + decoded, known={}, decode=False):
            if match.end > len(context):
                yield run.start(), -run.end(), _DECODED_ORDER, match.kind
                break


def _decode(run: str) -> str | None:
    """The text a base64 run encodes, or None when it encodes no readable text."""
    body = run.rstrip("=").replace("-", "+").replace("_", "/")
    if len(body) % 4 == 1:
        return None
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
        text = data.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return None if _CONTROL.search(text) else text


def _key_tails(folded: str) -> Iterator[Candidate]:
    """The end of a private key whose ``BEGIN`` line is not in this text (a key pasted over
    two messages): the base64 lines right before an ``END`` line, and that line. Each stretch
    of text is walked once: the walk back stops at the previous ``END``."""
    floor = 0
    for end in _PEM_END.finditer(folded):
        if folded.rfind("-----begin", floor, end.start()) < 0:
            start = _body_start(folded, floor, end.start())
            if start is not None:
                yield start, -end.end(), 0, "private-key"
        floor = end.end()


def _body_start(folded: str, floor: int, end: int) -> int | None:
    """Where the base64 lines that end at ``end`` start (None if fewer than 32 characters)."""
    breaks = [(found.start(), found.end()) for found in _LINE_BREAK.finditer(folded, floor, end)]
    bounds = [floor, *(after for _, after in breaks)]
    stops = [*(before for before, _ in breaks), end]
    start, size = None, 0
    for line_start, line_end in zip(reversed(bounds), reversed(stops), strict=True):
        line = folded[line_start:line_end]
        stripped = line.strip()
        if not stripped:
            continue
        if not _BASE64_LINE.fullmatch(stripped):
            break
        start = line_start + (len(line) - len(line.lstrip()))
        size += len(stripped)
    return start if size >= 32 else None


def _echo_candidates(view: str, known: Mapping[str, str]) -> Iterator[Candidate]:
    """Each occurrence of a known value that is not part of a longer word."""
    for value, kind in known.items():
        at = view.find(value)
        while at >= 0:
            end = at + len(value)
            if not (_joins(view, at - 1, value[0]) or _joins(view, end, value[-1])):
                yield at, -end, _ECHO_ORDER, kind
            at = view.find(value, at + 1)


def _joins(view: str, index: int, edge: str) -> bool:
    """Whether the character at ``index`` continues a word that ends in ``edge``."""
    return 0 <= index < len(view) and edge.isalnum() and view[index].isalnum()


def secret_values(text: str) -> dict[str, str]:
    """Each secret value in ``text`` (as detection reads it) -> its kind; for a key block also
    each body line of 20+ characters, which a later message may quote on its own."""
    values: dict[str, str] = {}
    for match in find_secrets(text):
        value = view_of(text[match.start : match.end]).text
        values.setdefault(value, match.kind)
        if match.kind in _KEY_BODY_KINDS:
            for line in _LINE_BREAK.split(value):
                if len(line.strip()) >= _ECHOED_LINE and not line.startswith("-----"):
                    values.setdefault(line.strip(), match.kind)
    return values


def redact(text: str, *, known: Mapping[str, str] | None = None) -> tuple[str, dict[str, int]]:
    """``text`` with each secret value replaced by ``[REDACTED:<kind>]``, and counts by kind.

    ``known`` (value -> kind, see :func:`secret_values`) adds values found elsewhere, which
    are redacted wherever they stand as a word of their own.

    Replacing a value can expose a token that was glued to it (``…KEY-----ghp_…``), so the
    scan repeats until nothing is found: the result is idempotent and scans clean. It ends
    because no value cuts into a placeholder, so every pass shrinks the text outside them.
    """
    counts: Counter[str] = Counter()
    while matches := _find(text, known=known or {}, decode=True):
        pieces: list[str] = []
        done = 0
        for match in matches:
            pieces += (text[done : match.start], f"[REDACTED:{match.kind}]")
            done = match.end
        pieces.append(text[done:])
        text = "".join(pieces)
        counts.update(match.kind for match in matches)
    return text, dict(counts)


def redact_together(texts: Sequence[str | None]) -> tuple[list[str | None], dict[str, int]]:
    """Redact the texts of one capture as a whole: a value found in any of them is redacted
    in every one, wherever it appears (the counts include those echoes)."""
    known: dict[str, str] = {}
    for text in texts:
        if text:
            for value, kind in secret_values(text).items():
                known.setdefault(value, kind)
    counts: Counter[str] = Counter()
    cleaned: list[str | None] = []
    for text in texts:
        if text is None:
            cleaned.append(None)
            continue
        clean, found = redact(text, known=known)
        cleaned.append(clean)
        counts.update(found)
    return cleaned, dict(counts)
