"""Find secrets in captured text and redact them in memory, before anything reaches Git.

Captured conversation text is untrusted, so allow-list markers that other scanners honour
(``gitleaks:allow``, ``pragma: allowlist secret``, ``nosec``, ``# noqa``) are ignored: anyone
who can put text in front of the agent could otherwise smuggle a secret into the repository.

Every detector is a ``(kind, pattern)`` row of :data:`_RULES`. Each pattern marks the secret
with a ``value`` group, so only the value is replaced and its context (the key name, the URL
host) stays readable. The same scan serves the pre-commit hook on staged files, so it must be
fast and linear on any input:

* every pattern starts with a literal, letting :mod:`re` jump between candidate prefixes
  instead of attempting a match at every offset; "not inside a longer word" is therefore
  checked by a look-behind placed *after* the prefix (see :func:`_token`);
* there are no nested quantifiers, and a long run is entered only from a prefix or keyword
  that cannot recur inside it, so no stretch of text is rescanned once per offset.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass

__all__ = ["KINDS", "SecretMatch", "find_secrets", "redact"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretMatch:
    """One secret: its stable kind and the offsets of the secret value in the scanned text."""

    kind: str
    start: int
    end: int


_TOKEN_CHARS = "A-Za-z0-9_-"


def _token(*prefixes: str, body: str) -> re.Pattern[str]:
    """A token made of one of ``prefixes`` (fixed-width regexes) and ``body``, not part of a
    longer word: mid-word matches are usually identifiers, and rejecting them right after the
    prefix keeps a run like ``eyJeyJeyJ…`` linear."""
    starts = "|".join(f"{prefix}(?<![{_TOKEN_CHARS}]{prefix})" for prefix in prefixes)
    return re.compile(f"(?P<value>(?:{starts}){body})(?![{_TOKEN_CHARS}])")


def _keyed(key: str) -> re.Pattern[str]:
    """The value assigned to ``key`` (a lower-case regex, matched case-insensitively).

    Accepts ``key=v``, ``key = "v"``, ``"key": "v"``, ``key => 'v'``, ``key := v`` and
    ``export KEY=v``. The value is 4+ characters up to whitespace, a quote, ``,`` ``;`` ``&`` or a
    bracket, so ``[REDACTED:…]`` is never a value. After a bare colon an unquoted value must
    contain a digit or symbol, since a plain word there ("the token: expired") is prose.
    """
    return re.compile(
        rf"""{key}["'`]?[ \t]*"""
        r"""(?:(?:=>?|:=)[ \t]*["'`]?|:[ \t]*(?:["'`]|(?=[a-z]*[0-9!#$%*+/=?@^_~|-])))"""
        r"""(?P<value>[^\s"'`,;&()<>\[\]{}]{4,})""",
        re.IGNORECASE,
    )


_PEM_LABEL = r"(?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----"

# Order matters only for ties (same start, same length): specific kinds come before generic
# ones, and the ``*-assignment`` rules come last, so a GitHub token assigned to ``token``
# reports ``github-token``.
# A kind may take several rows, so that each pattern starts with a single literal character.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # The whole block; an unterminated one runs to the end of the text.
    (
        "private-key",
        re.compile(rf"(?P<value>-----BEGIN {_PEM_LABEL}[\s\S]*?(?:-----END {_PEM_LABEL}|\Z))"),
    ),
    ("aws-access-key-id", _token("(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)", body="[A-Z0-9]{16}")),
    ("aws-secret-access-key", _keyed("secret[_ -]?access[_ -]?key")),
    # A 40-character base64 run within 80 characters after "aws" on the same line; it must
    # hold a digit or symbol and a letter past "f", so words and hex digests are not taken.
    # The gap stops at the next "aws", so each character is crossed by one candidate only.
    # The "aws" of a ``[REDACTED:aws-…]`` placeholder does not count: each redaction would
    # otherwise expose the next run, one pass at a time.
    (
        "aws-secret-access-key",
        re.compile(
            r"aws(?<!\[redacted:aws)(?:(?!aws)[^\n]){0,80}?(?<![a-z0-9/+=])"
            r"(?P<value>(?=[a-z/+]{0,39}[0-9/+])(?=[0-9a-f/+]{0,39}[g-z])[a-z0-9/+]{40})"
            r"(?![a-z0-9/+=])",
            re.IGNORECASE,
        ),
    ),
    ("github-token", _token("gh[pousr]_", body="[A-Za-z0-9]{36,}")),
    ("github-fine-grained-token", _token("github_pat_", body="[A-Za-z0-9_]{22,}")),
    ("gitlab-token", _token("glpat-", "gldt-", "glptt-", "glsoat-", body="[A-Za-z0-9_-]{20,}")),
    ("gitlab-runner-token", _token("glrt-", body="[A-Za-z0-9_-]{20,}")),
    ("gitlab-runner-token", _token("GR1348941", body="[A-Za-z0-9_-]{20,}")),
    ("slack-token", _token("(?:xox[abprs]|xapp)-", body="[A-Za-z0-9-]{10,}")),
    (
        "slack-webhook-url",
        re.compile(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<value>[A-Za-z0-9_/-]{20,})"
        ),
    ),
    ("stripe-key", _token("sk_(?:live|test)_", body="[A-Za-z0-9]{16,}")),
    ("stripe-key", _token("rk_(?:live|test)_", body="[A-Za-z0-9]{16,}")),
    ("stripe-webhook-secret", _token("whsec_", body="[A-Za-z0-9+/]{24,}")),
    ("google-api-key", _token("AIza", body="[A-Za-z0-9_-]{35}")),
    ("google-oauth-access-token", _token(r"ya29\.", body="[A-Za-z0-9_-]{20,}")),
    ("google-oauth-client-secret", _token("GOCSPX-", body="[A-Za-z0-9_-]{24,}")),
    ("anthropic-api-key", _token("sk-ant-", body="[A-Za-z0-9_-]{20,}")),
    # Generic ``sk-`` keys need a digit, so kebab-case names like ``sk-loading-spinner-…`` pass.
    ("openai-api-key", _token("sk-", body="(?!ant-)(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}")),
    ("jwt", _token("eyJ", body=r"[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")),
    ("huggingface-token", _token("hf_", body="[A-Za-z0-9]{30,}")),
    ("npm-token", _token("npm_", body="[A-Za-z0-9]{36,}")),
    (
        "pypi-token",
        _token("pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw", body="[A-Za-z0-9_-]{50,}"),
    ),
    ("sendgrid-api-key", _token(r"SG\.", body=r"[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    ("twilio-api-key", _token("SK", body="[0-9a-f]{32}")),
    (
        "azure-storage-key",
        re.compile(r"AccountKey=(?P<value>[A-Za-z0-9+/]{40,}={0,2})(?![A-Za-z0-9+/=])"),
    ),
    ("digitalocean-token", _token("do[opr]_v1_", body="[a-f0-9]{64}")),
    ("shopify-token", _token("shp(?:at|ca|pa|ss)_", body="[a-fA-F0-9]{32}")),
    ("mailgun-api-key", _token("key-", body="[0-9a-f]{32}")),
    (
        "discord-webhook-url",
        re.compile(r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?P<value>[A-Za-z0-9_-]{60,})"),
    ),
    # ``<bot id>:<secret>``: anchored on the colon, the secret being the part after it.
    (
        "telegram-bot-token",
        re.compile(r":(?<=[0-9]{8}:)(?P<value>AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])"),
    ),
    ("databricks-token", _token("dapi", body="[a-f0-9]{32}(?:-[0-9]+)?")),
    ("age-secret-key", _token("AGE-SECRET-KEY-1", body="[02-9AC-HJ-NP-Z]{58}")),
    ("heroku-api-key", _token("HRKU-", body="[A-Za-z0-9_-]{20,}")),
    ("vault-token", _token(r"hv[sb]\.", body="[A-Za-z0-9_-]{24,}")),
    # Only the password of ``scheme://user:<password>@host``; template fields such as
    # ``{password}`` or ``<password>`` are not passwords.
    ("url-password", re.compile(r"://[^\s:/@?#\[\]]*:(?P<value>[^\s/@?#\[\]{}<>]+)@")),
    (
        "authorization-bearer",
        re.compile(
            r"""authorization["'`]?[ \t]*[:=][ \t]*["'`]?bearer[ \t]+"""
            r"(?P<value>[a-z0-9._~+/-]{8,}=*)",
            re.IGNORECASE,
        ),
    ),
    (
        "authorization-basic",
        re.compile(
            r"""authorization["'`]?[ \t]*[:=][ \t]*["'`]?basic[ \t]+"""
            r"(?P<value>[a-z0-9+/]{6,}=*)",
            re.IGNORECASE,
        ),
    ),
    ("password-assignment", _keyed("(?:password|passwd|pwd)")),
    ("secret-assignment", _keyed("secret(?:[_-]?key)?")),
    ("token-assignment", _keyed("token")),
    ("api-key-assignment", _keyed("api[_-]?key")),
)

KINDS: tuple[str, ...] = tuple(dict.fromkeys(kind for kind, _ in _RULES))

# `re` cannot use its fast literal-prefix search for case-insensitive patterns (about ten times
# slower per rule), so those rules, written in lower case, run without the flag over a
# lower-cased copy of the text with the same offsets.
_SCANS: tuple[tuple[str, re.Pattern[str], bool], ...] = tuple(
    (
        kind,
        re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE),
        bool(pattern.flags & re.IGNORECASE),
    )
    for kind, pattern in _RULES
)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


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
    folded = _fold(text)
    candidates: list[tuple[int, int, int, str]] = []
    for order, (kind, pattern, fold) in enumerate(_SCANS):
        for match in pattern.finditer(folded if fold else text):
            candidates.append((match.start("value"), -match.end("value"), order, kind))
    candidates.sort()
    found: list[SecretMatch] = []
    taken = 0
    for start, negative_end, _, kind in candidates:
        if start >= taken:
            found.append(SecretMatch(kind=kind, start=start, end=-negative_end))
            taken = -negative_end
    return found


def redact(text: str) -> tuple[str, dict[str, int]]:
    """``text`` with each secret value replaced by ``[REDACTED:<kind>]``, and counts by kind.

    Replacing a value can expose a token that was glued to it (``…KEY-----ghp_…``), so the
    scan repeats until nothing is found: the result is idempotent and scans clean. It ends
    because no value cuts into a placeholder, so every pass shrinks the text outside them.
    """
    counts: Counter[str] = Counter()
    while matches := find_secrets(text):
        pieces: list[str] = []
        done = 0
        for match in matches:
            pieces += (text[done : match.start], f"[REDACTED:{match.kind}]")
            done = match.end
        pieces.append(text[done:])
        text = "".join(pieces)
        counts.update(match.kind for match in matches)
    return text, dict(counts)
