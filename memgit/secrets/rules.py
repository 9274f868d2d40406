"""The secret detectors: one ``(kind, pattern)`` row per pattern, scanned by :mod:`redact`.

The families come from gitleaks' default rule set (``config/gitleaks.toml``; see
docs/redaction.md for the version), rewritten so that each stays linear on any input, plus
the shapes gitleaks leaves to its generic rule (``password=…``, URL passwords, PuTTY keys,
Azure connection strings, docker ``auth``). gitleaks' allowlists and entropy filters are not
taken: captured text is untrusted, so nothing in it can exempt a value.

Each pattern marks the secret with a ``value`` group, so only the value is replaced and its
context (the key name, the URL host) stays readable. Linear time on any input:

* patterns start with a literal where they can, letting :mod:`re` jump between candidate
  prefixes instead of attempting a match at every offset; "not inside a longer word" is
  then checked by a look-behind placed *after* the prefix (see :func:`_token`); the few that
  cannot start with a literal are bounded, so each offset costs a constant;
* there are no ambiguous nested quantifiers, and a long run is entered only from a prefix or
  keyword that either cannot recur inside it or is swallowed by it, so no stretch of text is
  rescanned once per offset.

Rules with ``re.IGNORECASE`` are written in lower case: they run over a lower-cased copy of
the text (see :mod:`redact`).
"""

from __future__ import annotations

import re

from memgit.lazyre import LazyPattern, lazy
from memgit.secrets.prose import FUNCTION_WORDS, PLACES, PROSE_KINDS

__all__ = ["KINDS", "RULES"]

_TOKEN_CHARS = "A-Za-z0-9_-"


def _token(*prefixes: str, body: str, glued: bool = False) -> LazyPattern:
    """A token made of one of ``prefixes`` (fixed-width regexes) and ``body``.

    A plain token must not be part of a longer word: after a short or common prefix a
    mid-word match is usually an identifier, and rejecting it right after the prefix keeps a
    run like ``eyJeyJeyJ…`` linear. A ``glued`` token has a prefix no identifier carries
    (``ghp_``, ``glpat-``), so it counts wherever it stands: ``ci-ghp_…`` or ``…KEYghp_…``.
    """
    if glued:
        return lazy(f"(?P<value>(?:{'|'.join(prefixes)}){body})")
    starts = "|".join(f"{prefix}(?<![{_TOKEN_CHARS}]{prefix})" for prefix in prefixes)
    return lazy(f"(?P<value>(?:{starts}){body})(?![{_TOKEN_CHARS}])")


# An unquoted value: 4+ characters up to whitespace, a quote, a backslash (``\"`` closes a
# value in JSON inside a JSON string), ``,`` ``;`` ``&`` or a bracket, so ``[REDACTED:…]`` is
# never part of one. A password may go on over further words, none of which is a key or
# starts a comment (``# …``, ``// …``).
_WORD = r"""[^\s"'`,;&()<>\[\]{}\\]"""
_MORE_WORDS = r"""(?:[ \t]+(?!#|//)[^\s"'`,;&()<>\[\]{}\\=:]++(?![=:]))*+"""
# A word of prose, or a place a password is kept, as a whole word.
_PROSE_WORD = (
    "(?:"
    + "|".join(re.escape(word) for word in sorted(FUNCTION_WORDS | PLACES, key=len, reverse=True))
    + r")(?![^\s.,;:!?])"
)
_PASSPHRASE_WORDS = rf"""(?:[ \t]++(?!#|//|{_PROSE_WORD})[^\s"'`,;&()<>\[\]{{}}\\=:]++(?![=:]))*+"""
# After ``key``: an optional closing quote, escaped or not (``\"password\": …``).
_KEY_END = r"""(?:\\*["'`])?[ \t]*"""


def _keyed(key: str, *, words: bool = False) -> tuple[LazyPattern, ...]:
    """The value assigned to ``key`` (a lower-case regex, matched case-insensitively).

    A quoted value runs to its closing quote, spaces included; an unquoted one is one word.
    Accepts ``key=v``, ``key = "v"``, ``"key": "v"``, ``\\"key\\": \\"v\\"`` (JSON in a JSON
    string), ``key => 'v'``, ``key := v`` and ``export KEY=v``. A quoted value does not start
    with a space (``"token=" + name`` is code) or a template field (``"${TOKEN}"``). After a
    bare colon an unquoted value must contain a digit or symbol, since a plain word there
    ("the token: expired") is prose. With ``words``, an unquoted value after a colon or a
    spaced ``=`` (``password = a b c`` in an INI file) goes on over the words after it; a
    tight ``password=a b`` is shell, where the value ends at the space.
    """
    quoted = lazy(
        rf"""{key}{_KEY_END}(?:=>?|:=?)[ \t]*\\*(?P<quote>["'`])(?![ \t]|\$?\{{|<|%\()"""
        r"""(?P<value>(?:(?!(?P=quote))[^\\\n\[\]]){4,})""",
        re.IGNORECASE,
    )
    prose_guard = r"(?=[a-z]*[0-9!#$%*+/=?@^_~|-])"
    unquoted = lazy(
        rf"""{key}{_KEY_END}(?:(?:=>?|:=)[ \t]*|:[ \t]*{prose_guard})(?P<value>{_WORD}{{4,}}+)""",
        re.IGNORECASE,
    )
    if not words:
        return quoted, unquoted
    spaced = lazy(
        rf"""{key}(?:\\*["'`])?(?:[ \t]*(?:=>?|:=)[ \t]+|[ \t]+(?:=>?|:=)[ \t]*|[ \t]*:[ \t]*"""
        rf"""{prose_guard})(?P<value>{_WORD}{{4,}}+{_MORE_WORDS})""",
        re.IGNORECASE,
    )
    return quoted, unquoted, spaced


def _service(keyword: str, value: str) -> LazyPattern:
    """gitleaks' keyed shape: ``value`` assigned to a name holding ``keyword`` (lower case),
    such as ``HEROKU_API_KEY=…`` or ``"discord_token": "…"``."""
    return lazy(
        rf"""{keyword}[ \t\w.-]{{0,20}}?\\*["'`]?[ \t]*(?:=>?|:{{1,2}}=?|,)[ \t]*\\*["'`]?"""
        rf"(?P<value>{value})(?![a-z0-9_-])",
        re.IGNORECASE,
    )


_PASSWORD = "(?:password|passwd|passphrase|pwd)"
_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# Any label (``RSA``, ``OPENSSH``, ``ENCRYPTED``, two spaces where one belongs), any case.
_PEM_LABEL = r"[ a-z0-9_-]{0,100}?private[ ]{1,4}key(?:[ ]{1,4}block)?[ ]{0,4}-----"
_PRIVATE_KEY_ROWS = (
    "private-key",
    # The whole block; an unterminated one runs to the end of the text.
    lazy(
        rf"(?P<value>-----begin[ ]{_PEM_LABEL}[\s\S]*?(?:-----end[ ]{_PEM_LABEL}|\Z))",
        re.IGNORECASE,
    ),
)


def _rows(kind: str, patterns: tuple[LazyPattern, ...]) -> tuple[tuple[str, LazyPattern], ...]:
    """One row of ``kind`` for each of ``patterns`` (the shapes of one :func:`_keyed` key)."""
    return tuple((kind, pattern) for pattern in patterns)


def _base64_after(name: str) -> LazyPattern:
    """A base64 key of 40+ characters after ``name=`` (an Azure connection string's field)."""
    return lazy(rf"{name}=(?P<value>[A-Za-z0-9+/]{{40,}}={{0,2}})(?![A-Za-z0-9+/=])")


def _authorization(scheme: str, value: str) -> LazyPattern:
    """The credential of an ``Authorization: <scheme> …`` header, quoted or not."""
    return lazy(
        rf"""authorization\\*["'`]?[ \t]*[:=][ \t]*\\*["'`]?{scheme}[ \t]+(?P<value>{value})""",
        re.IGNORECASE,
    )


# Order matters only for ties (same start, same length): specific kinds come before generic
# ones, and the ``*-assignment`` rules come last, so a GitHub token assigned to ``token``
# reports ``github-token``. A kind may take several rows.
RULES: tuple[tuple[str, LazyPattern], ...] = (
    _PRIVATE_KEY_ROWS,
    # PuTTY's .ppk: from its header to the MAC after the private lines (or the end).
    (
        "putty-private-key",
        lazy(
            r"(?P<value>putty-user-key-file-[0-9]+:[\s\S]*?(?:private-mac:[ \t]*[0-9a-f]+|\Z))",
            re.IGNORECASE,
        ),
    ),
    ("aws-access-key-id", _token("(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)", body="[A-Z0-9]{16}")),
    *_rows("aws-secret-access-key", _keyed("secret[_ -]?access[_ -]?key")),
    # A 40-character base64 run within 80 characters after "aws" on the same line; it must
    # hold a digit or symbol and a letter past "f", so words and hex digests are not taken.
    # The gap stops at the next "aws", so each character is crossed by one candidate only.
    # The "aws" of a ``[REDACTED:aws-…]`` placeholder does not count: each redaction would
    # otherwise expose the next run, one pass at a time.
    (
        "aws-secret-access-key",
        lazy(
            r"aws(?<!\[redacted:aws)(?:(?!aws)[^\n]){0,80}?(?<![a-z0-9/+=])"
            r"(?P<value>(?=[a-z/+]{0,39}[0-9/+])(?=[0-9a-f/+]{0,39}[g-z])[a-z0-9/+]{40})"
            r"(?![a-z0-9/+=])",
            re.IGNORECASE,
        ),
    ),
    ("github-token", _token("gh[pousr]_", body="[A-Za-z0-9]{36,}", glued=True)),
    ("github-fine-grained-token", _token("github_pat_", body="[A-Za-z0-9_]{22,}", glued=True)),
    (
        "gitlab-token",
        _token(
            *"glpat- gldt- glptt- glsoat- glcbt- glft- glimt- glagent- gloas-".split(),
            body="[A-Za-z0-9_-]{20,}",
            glued=True,
        ),
    ),
    ("gitlab-runner-token", _token("glrt-", "GR1348941", body="[A-Za-z0-9_-]{20,}", glued=True)),
    (
        "slack-token",
        _token(r"xoxe\.xox[bp]-", "xox[abeoprs]-", "xapp-", body="[A-Za-z0-9-]{10,}", glued=True),
    ),
    (
        "slack-webhook-url",
        lazy(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<value>[A-Za-z0-9_/+-]{20,})"),
    ),
    (
        "stripe-key",
        _token("[sr]k_(?:live|test|prod)_", body="[A-Za-z0-9]{10,}", glued=True),
    ),
    ("stripe-webhook-secret", _token("whsec_", body="[A-Za-z0-9+/]{24,}", glued=True)),
    ("google-api-key", _token("AIza", body="[A-Za-z0-9_-]{35}")),
    ("google-oauth-access-token", _token(r"ya29\.", body="[A-Za-z0-9_-]{20,}", glued=True)),
    ("google-oauth-client-secret", _token("GOCSPX-", body="[A-Za-z0-9_-]{24,}", glued=True)),
    ("anthropic-api-key", _token("sk-ant-", body="[A-Za-z0-9_-]{20,}", glued=True)),
    # Generic ``sk-`` keys need a digit, so kebab-case names like ``sk-loading-spinner-…`` pass.
    ("openai-api-key", _token("sk-", body="(?!ant-)(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}")),
    # Base64 JSON starts ``eyJ`` (``{"``), ``eyA`` (``{ "``) or ``ew`` (``{`` and a newline).
    (
        "jwt",
        _token("e[wy]", body=r"[A-Za-z0-9_-]{10,}\.e[wy][A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*"),
    ),
    ("huggingface-token", _token("hf_", body="[A-Za-z0-9]{30,}", glued=True)),
    ("huggingface-token", _token("api_org_", body="[A-Za-z]{34}", glued=True)),
    ("npm-token", _token("npm_", body="[A-Za-z0-9]{36,}", glued=True)),
    (
        "pypi-token",
        _token(
            "pypi-AgEIcHlwaS5vcmc",
            "pypi-AgENdGVzdC5weXBpLm9yZw",
            body="[A-Za-z0-9_-]{50,}",
            glued=True,
        ),
    ),
    ("sendgrid-api-key", _token(r"SG\.", body=r"[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    ("twilio-api-key", _token("SK", body="[0-9a-f]{32}")),
    ("azure-storage-key", _base64_after("AccountKey")),
    ("azure-shared-access-key", _base64_after("SharedAccessKey")),
    # The signature of a shared access signature URL (``…?sv=…&sig=…``), URL-encoded or not.
    (
        "azure-sas-signature",
        lazy(r"sig=(?<=[?&;]sig=)(?P<value>(?:[A-Za-z0-9+/]|%2[BbFf]){30,}(?:=|%3[Dd]){0,2})"),
    ),
    # gitleaks' azure-ad-client-secret: three characters, a digit, "Q~", then 31-34 more.
    (
        "azure-ad-client-secret",
        lazy(
            r"(?<![A-Za-z0-9_~.])(?P<value>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})"
            r"(?![A-Za-z0-9_~.-])"
        ),
    ),
    ("digitalocean-token", _token("do[opr]_v1_", body="[a-f0-9]{64}", glued=True)),
    ("shopify-token", _token("shp(?:at|ca|pa|ss)_", body="[a-fA-F0-9]{32}", glued=True)),
    ("mailgun-api-key", _token("key-", body="[0-9a-f]{32}")),
    ("mailgun-api-key", _token("pubkey-", body="[0-9a-f]{32}")),
    # A Mailchimp key ends in its data centre, ``-us<N>``; it needs no key name.
    (
        "mailchimp-api-key",
        lazy(r"(?<![0-9A-Za-z])(?P<value>[0-9a-f]{32}-us[0-9]{1,2})(?![0-9A-Za-z])"),
    ),
    (
        "discord-webhook-url",
        lazy(r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?P<value>[A-Za-z0-9_-]{60,})"),
    ),
    # A bot token: the base64 user id (it starts M, N or O), a timestamp, an HMAC.
    (
        "discord-bot-token",
        lazy(
            rf"(?P<value>[MNO](?<![{_TOKEN_CHARS}][MNO])[A-Za-z0-9]{{23,25}}\.[A-Za-z0-9_-]{{6}}"
            rf"\.[A-Za-z0-9_-]{{27,38}})(?![{_TOKEN_CHARS}])"
        ),
    ),
    ("discord-client-secret", _service("discord", "[a-f0-9]{64}|[a-z0-9_-]{32}")),
    # ``<bot id>:<secret>``: anchored on the colon, the secret being the part after it.
    (
        "telegram-bot-token",
        lazy(r":(?<=[0-9]{8}:)(?P<value>AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])"),
    ),
    ("databricks-token", _token("dapi", body="[a-f0-9]{32}(?:-[0-9]+)?")),
    ("age-secret-key", _token("AGE-SECRET-KEY-1", body="[02-9AC-HJ-NP-Z]{58}", glued=True)),
    ("heroku-api-key", _token("HRKU-", body="[A-Za-z0-9_-]{20,}", glued=True)),
    ("heroku-api-key", _service("heroku", _UUID)),
    ("vault-token", _token(r"hv[sb]\.", body="[A-Za-z0-9_-]{24,}", glued=True)),
    ("1password-secret-key", _token("A3-", body="[A-Z0-9]{6}-[A-Z0-9-]{23,29}")),
    (
        "1password-service-account-token",
        _token("ops_eyJ", body="[A-Za-z0-9+/]{250,}={0,3}", glued=True),
    ),
    ("adobe-client-secret", _token("p8e-", body="[A-Za-z0-9]{32}")),
    ("alibaba-access-key-id", _token("LTAI", body="[A-Za-z0-9]{20}")),
    ("artifactory-api-key", _token("AKCp", body="[A-Za-z0-9]{69}")),
    ("clojars-api-token", _token("CLOJARS_", body="[A-Za-z0-9]{60}", glued=True)),
    ("doppler-api-token", _token(r"dp\.pt\.", body="[A-Za-z0-9]{43}", glued=True)),
    ("duffel-api-token", _token("duffel_(?:test|live)_", body="[A-Za-z0-9_=-]{43}", glued=True)),
    (
        "dynatrace-api-token",
        _token(r"dt0c01\.", body=r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", glued=True),
    ),
    ("easypost-api-token", _token("EZAK", "EZTK", body="[A-Za-z0-9]{54}")),
    (
        "flutterwave-secret-key",
        _token("FLWSECK_TEST-", "FLWSECK-", body="[a-hA-H0-9]{12,32}(?:-X)?", glued=True),
    ),
    ("frameio-api-token", _token("fio-u-", body="[A-Za-z0-9_=-]{64}", glued=True)),
    ("grafana-token", _token("glc_", body="[A-Za-z0-9+/]{32,}={0,2}", glued=True)),
    ("grafana-token", _token("glsa_", body="[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", glued=True)),
    (
        "harness-api-key",
        _token(r"(?:pat|sat)\.", body=r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    ),
    ("infracost-api-token", _token("ico-", body="[A-Za-z0-9]{32}")),
    ("linear-api-key", _token("lin_api_", body="[A-Za-z0-9]{40}", glued=True)),
    ("new-relic-api-key", _token("NRAK-", "NRII-", body="[A-Za-z0-9-]{27,32}", glued=True)),
    ("notion-api-token", _token("ntn_", body="[0-9]{11}[A-Za-z0-9]{35}")),
    ("openshift-user-token", _token("sha256~", body="[A-Za-z0-9_-]{43}", glued=True)),
    ("perplexity-api-key", _token("pplx-", body="[A-Za-z0-9]{48}", glued=True)),
    (
        "planetscale-token",
        _token("pscale_(?:tkn|oauth|pw)_", body="[A-Za-z0-9_=.-]{32,64}", glued=True),
    ),
    ("postman-api-token", _token("PMAK-", body="[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", glued=True)),
    ("prefect-api-token", _token("pnu_", body="[A-Za-z0-9]{36}", glued=True)),
    ("pulumi-api-token", _token("pul-", body="[a-f0-9]{40}")),
    ("readme-api-token", _token("rdme_", body="[a-z0-9]{70}", glued=True)),
    ("rubygems-api-token", _token("rubygems_", body="[a-f0-9]{48}", glued=True)),
    ("scalingo-api-token", _token("tk-us-", body="[A-Za-z0-9_-]{48}", glued=True)),
    ("sendinblue-api-token", _token("xkeysib-", body="[a-f0-9]{64}-[A-Za-z0-9]{16}", glued=True)),
    ("sentry-token", _token("sntryu_", body="[a-f0-9]{64}", glued=True)),
    ("sentry-token", _token("sntrys_eyJ", body="[A-Za-z0-9+/=_]{60,}", glued=True)),
    ("shippo-api-token", _token("shippo_(?:live|test)_", body="[a-fA-F0-9]{40}", glued=True)),
    ("square-token", _token("sq0atp-", "sq0csp-", body="[A-Za-z0-9_-]{22,60}", glued=True)),
    (
        "microsoft-teams-webhook",
        lazy(r"\.webhook\.office\.com/webhookb2/(?P<value>[A-Za-z0-9@/_-]{60,})"),
    ),
    # ``"auth"`` of ~/.docker/config.json: base64 of ``user:password``.
    (
        "docker-auth",
        lazy(r'"(?:auth|identitytoken)\\*"[ \t]*:[ \t]*\\*"(?P<value>[A-Za-z0-9+/]{12,}={0,2})'),
    ),
    # Only the password of ``scheme://user:<password>@host``, which may hold ``/``, ``#`` and
    # ``@``: it runs to the last ``@`` before a host, within 128 characters and before the
    # next ``://``. ``host:8443/path`` is a port, and template fields such as
    # ``{password}`` or ``<password>`` are not passwords.
    (
        "url-password",
        lazy(
            r"""://[^\s:/@?#\[\]"'`<>\\]{0,128}:"""
            r"""(?P<value>(?![0-9]{1,5}(?:[/?#\s]|$))(?:(?!://)[^\s"'`<>{}\[\]\\]){1,128})"""
            r"@(?=[A-Za-z0-9\[])"
        ),
    ),
    ("authorization-bearer", _authorization("bearer", "[a-z0-9._~+/-]{8,}=*")),
    ("authorization-basic", _authorization("basic", "[a-z0-9+/]{6,}=*")),
    *_rows("password-assignment", _keyed(_PASSWORD, words=True)),
    # ``password: plain words`` at the start of a line is configuration, not prose; but no
    # word of a passphrase is a word of prose or a place it is kept ("Password: check the
    # vault", "Password: stored in 1Password").
    (
        "password-assignment",
        lazy(
            rf"""^[ \t]*(?:[-*][ \t]+)?[a-z0-9_.-]*?{_PASSWORD}["'`]?[ \t]*:[ \t]*+"""
            rf"(?!{_PROSE_WORD})(?P<value>{_WORD}{{4,}}+{_PASSPHRASE_WORDS})"
            rf"(?![ \t]++{_PROSE_WORD})",
            re.IGNORECASE | re.MULTILINE,
        ),
    ),
    *_rows("secret-assignment", _keyed("secret(?:[_-]?key)?")),
    *_rows("token-assignment", _keyed("token")),
    *_rows("api-key-assignment", _keyed("api[_-]?key")),
)

# The kinds of these rules, then those of credentials written in prose (:mod:`prose`).
KINDS: tuple[str, ...] = tuple(dict.fromkeys([*(kind for kind, _ in RULES), *PROSE_KINDS]))
