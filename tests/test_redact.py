"""Secret redaction: every known kind is removed, ordinary text is left alone, and the scan
stays linear on hostile input. Fake secrets come from :mod:`secret_fixtures`, built at run
time, so this file itself must scan clean."""

from __future__ import annotations

import hashlib
import itertools
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memgit.secrets import redact as redact_module
from memgit.secrets import rules as rules_module
from memgit.secrets.redact import KINDS, find_secrets, redact, redact_together, secret_values

from secret_fixtures import SECRET_FIXTURES

# CPU seconds for 1 MB: a backtracking pattern takes minutes there, while 1 MB holding
# 111,000 credentials to replace (a short password assignment, over and over) takes
# about 5 s of honest linear work since the prose credentials learned their second,
# shape-based test (each hit is judged in Python), so the budget leaves room for a slow
# machine without hiding a blow-up.
TIME_BUDGET = 12.0
# The hostile units below run at a quarter of that, with a quarter of the budget: the same
# CPU per character, and a backtracking pattern still takes minutes at 250 KB (quadratic
# work is 6e10 steps there). ``bench/redact.py --hostile`` runs them at 1 MB.
HOSTILE_SIZE = 250_000
HOSTILE_BUDGET = TIME_BUDGET * HOSTILE_SIZE / 1_000_000
PEM_HEAD = "-----BEGIN RSA " + "PRIVATE KEY-----"
PLAIN_VALUE = "correct" + "horse" + "42"
PW = "".join(["pass", "word"])  # no quoted value after ``PW =``: this file scans clean


def _first(kind: str) -> str:
    """The first fixture value of ``kind``, for building cases without literal secrets."""
    return next(value for fixture_kind, _, value in SECRET_FIXTURES if fixture_kind == kind)


def _ids() -> list[str]:
    """Readable test ids: ``github-token-1``, ``github-token-2``, …"""
    seen: dict[str, int] = {}
    ids = []
    for kind, _, _ in SECRET_FIXTURES:
        seen[kind] = seen.get(kind, 0) + 1
        ids.append(f"{kind}-{seen[kind]}")
    return ids


fixtures = pytest.mark.parametrize(("kind", "sample", "value"), SECRET_FIXTURES, ids=_ids())


# --- every fixture ------------------------------------------------------------------------


@fixtures
def test_fixture_value_is_replaced_and_context_survives(kind: str, sample: str, value: str) -> None:
    text, counts = redact(sample)
    assert value not in text
    assert counts == {kind: 1}
    assert text == sample.replace(value, f"[REDACTED:{kind}]")


@fixtures
def test_fixture_offsets_cover_exactly_the_value(kind: str, sample: str, value: str) -> None:
    [match] = find_secrets(sample)
    assert (match.kind, sample[match.start : match.end]) == (kind, value)


def test_every_kind_has_a_fixture_and_a_stable_name() -> None:
    assert len(KINDS) == len(set(KINDS)) >= 30
    assert {kind for kind, _, _ in SECRET_FIXTURES} == set(KINDS)
    assert all(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", kind) for kind in KINDS)


def test_many_secrets_in_one_text_are_sorted_and_disjoint() -> None:
    # The unterminated key block runs to the end of the text, so it goes last.
    tail = [(kind, sample) for kind, sample, value in SECRET_FIXTURES if sample.endswith(value)]
    rest = [(kind, sample) for kind, sample, value in SECRET_FIXTURES if not sample.endswith(value)]
    assert len(tail) == 1
    text = "\n\n".join(sample for _, sample in [*rest, *tail])
    matches = find_secrets(text)
    assert [match.kind for match in matches] == [kind for kind, _ in [*rest, *tail]]
    assert all(a.end <= b.start for a, b in itertools.pairwise(matches))
    redacted, counts = redact(text)
    assert not any(value in redacted for _, _, value in SECRET_FIXTURES)
    assert set(counts) <= set(KINDS)
    assert sum(counts.values()) == len(SECRET_FIXTURES)


# --- overlaps and rule order --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("token=" + _first("github-token") + "\n", "github-token"),
        ("ANTHROPIC_KEY " + _first("anthropic-api-key") + " ok", "anthropic-api-key"),
        ("Authorization: Bearer " + _first("jwt") + "\n", "jwt"),
        ("[pypi]\npassword = " + _first("pypi-token") + "\n", "pypi-token"),
        ("https://git:" + _first("github-token") + "@github.com/acme/app", "github-token"),
        ("X-Api-Key: " + _first("openai-api-key") + "\n", "openai-api-key"),
        # Same start: the longer match wins, even if it is the generic one.
        ("token=" + _first("github-token") + ".suffix", "token-assignment"),
    ],
    ids=["assignment", "anthropic", "bearer-jwt", "pypirc", "url", "header", "longer-wins"],
)
def test_overlapping_matches_keep_one_winner(text: str, kind: str) -> None:
    [match] = find_secrets(text)
    assert match.kind == kind


def test_earlier_match_swallows_a_later_one() -> None:
    github = _first("github-token")
    text = f"{PEM_HEAD}\nMIIB{'A' * 20}{github}\n-----END RSA " + "PRIVATE KEY-----\nafter"
    assert [match.kind for match in find_secrets(text)] == ["private-key"]
    assert redact(text)[0] == "[REDACTED:private-key]\nafter"


def test_unterminated_private_key_is_redacted_to_the_end() -> None:
    text = f"key:\n{PEM_HEAD}\nMIIB{'A' * 60}\n"
    assert redact(text) == ("key:\n[REDACTED:private-key]", {"private-key": 1})


@pytest.mark.parametrize("key", ["PASSWORD", "Password", "pAsSwOrD", "db.passwd", "pwd"])
def test_password_keys_are_case_insensitive(key: str) -> None:
    assert redact(f"{key}={PLAIN_VALUE}") == (
        f"{key}=[REDACTED:password-assignment]",
        {"password-assignment": 1},
    )


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (f'"Api-Key": "{PLAIN_VALUE}"', "api-key-assignment"),
        (f"export APIKEY={PLAIN_VALUE}", "api-key-assignment"),
        (f"ACCESS_TOKEN: {PLAIN_VALUE}", "token-assignment"),
        (f"Client_Secret => '{PLAIN_VALUE}'", "secret-assignment"),
        (f"auth_token := {PLAIN_VALUE}", "token-assignment"),
        (f"secret={PLAIN_VALUE}&next=1", "secret-assignment"),
    ],
)
def test_assignment_styles_redact_only_the_value(line: str, kind: str) -> None:
    assert redact(line) == (line.replace(PLAIN_VALUE, f"[REDACTED:{kind}]"), {kind: 1})


def test_offsets_survive_characters_that_lower_case_to_two() -> None:
    text = f"İstanbul İİ password={PLAIN_VALUE} tamam"
    [match] = find_secrets(text)
    assert text[match.start : match.end] == PLAIN_VALUE
    assert redact(text)[0] == "İstanbul İİ password=[REDACTED:password-assignment] tamam"


# --- lookalike and hidden characters: detection reads a normalised view -----------------


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(char) + 0xFEE0) for char in text)


@pytest.mark.parametrize(
    "disguise",
    [
        pytest.param(_fullwidth, id="full-width"),
        pytest.param(lambda value: value[:6] + "\u200b" + value[6:], id="zero-width-space"),
        pytest.param(lambda value: value[:6] + "\u00ad" + value[6:], id="soft-hyphen"),
        pytest.param(lambda value: "\u2060".join(value), id="word-joiner-everywhere"),
        pytest.param(lambda value: value[:6] + "\u202e" + value[6:], id="bidi-override"),
    ],
)
@pytest.mark.parametrize("kind", ["github-token", "anthropic-api-key", "aws-access-key-id"])
def test_a_disguised_secret_is_replaced_whole(kind: str, disguise: Any) -> None:
    """The original characters are replaced: neither the disguised form nor the plain ASCII
    value is left, and the text around it is untouched."""
    value = _first(kind)
    hidden = disguise(value)
    text, counts = redact(f"before {hidden} after")
    assert (text, counts) == (f"before [REDACTED:{kind}] after", {kind: 1})


def test_offsets_map_back_through_characters_that_normalise_to_several() -> None:
    """A ligature (one character, two in the view) before the secret shifts nothing."""
    value = _first("github-token")
    text = f"\ufb01le \u2026 {value[:8]}\u200b{value[8:]} done"
    [match] = find_secrets(text)
    assert text[match.start : match.end] == f"{value[:8]}\u200b{value[8:]}"


# --- one capture: a value found anywhere is redacted everywhere ---------------------------


def test_an_echoed_value_is_redacted_in_every_text() -> None:
    typed = PLAIN_VALUE + "x9"
    texts = [f"my {PW}={typed}", f"Got it, I will use {typed} from now on.", None]
    cleaned, counts = redact_together(texts)
    assert cleaned == [
        "my password=[REDACTED:password-assignment]",
        "Got it, I will use [REDACTED:password-assignment] from now on.",
        None,
    ]
    assert counts == {"password-assignment": 2}


def test_an_echo_is_found_in_its_disguised_form_and_inside_words_is_not() -> None:
    github = _first("github-token")
    cleaned, _ = redact_together(
        [f"see {github}", f"echo {_fullwidth(github)}!", f"prefix{github[4:]}suffix"]
    )
    assert cleaned[1] == "echo [REDACTED:github-token]!"
    assert cleaned[2] == f"prefix{github[4:]}suffix"


def test_a_key_body_line_quoted_alone_elsewhere_is_redacted() -> None:
    key = next(v for k, _, v in SECRET_FIXTURES if k == "private-key" and v.startswith(PEM_HEAD))
    line = key.splitlines()[2]
    cleaned, _ = redact_together([f"key:\n{key}\nok", f"is line 2 '{line}' right?"])
    assert cleaned[1] == "is line 2 '[REDACTED:private-key]' right?"
    assert line in secret_values(key)


def test_the_end_of_a_key_split_over_two_messages_is_redacted() -> None:
    """The first message has BEGIN and a few lines; the second the rest and END."""
    key = next(v for k, _, v in SECRET_FIXTURES if k == "private-key" and v.startswith(PEM_HEAD))
    lines = key.splitlines()
    first = "\n".join(lines[:3])
    second = "and the rest:\n" + "\n".join(lines[3:]) + "\nthanks"
    cleaned, _ = redact_together([first, second])
    assert cleaned == ["[REDACTED:private-key]", "and the rest:\n[REDACTED:private-key]\nthanks"]


# --- passwords: spaces, JSON inside JSON strings, URL userinfo -------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (f"{PW}: correct horse battery staple\nnext", "correct horse battery staple"),
        ("  - pass" + "phrase: correct horse battery staple", "correct horse battery staple"),
        (f"[db]\n{PW} = correct horse battery staple\n", "correct horse battery staple"),
        (f"my {PW}: c0rrect horse battery staple", "c0rrect horse battery staple"),
        (f'{PW} = "correct horse battery staple"', "correct horse battery staple"),
        (f"{PW.upper()}='correct horse battery staple';", "correct horse battery staple"),
        (f'{{\\"{PW}\\": \\"correct horse\\"}}', "correct horse"),
        (f'{{\\\\\\"{PW}\\\\\\": \\\\\\"tripleescaped42\\\\\\"}}', "tripleescaped42"),
        (f"{PW}: hunter2 horse # the old one", "hunter2 horse"),
        (f"{PW}=hunter2 and then I ran ls", "hunter2"),
        ("https://ada:" + "pa/ss#wo@rd@db.example.com:5432/app", "pa/ss#wo@rd"),
        ("redis://:" + "a@b/c#d@cache:6379", "a@b/c#d"),
    ],
)
def test_a_password_is_redacted_whole(text: str, value: str) -> None:
    [match] = find_secrets(text)
    assert text[match.start : match.end] == value


# --- untrusted text: allow-markers are ignored --------------------------------------------


@pytest.mark.parametrize(
    "marker",
    ["# gitleaks:allow", "# pragma: allowlist secret", "# nosec", "# noqa", "// noqa: S105"],
)
def test_allow_markers_in_captured_text_are_ignored(marker: str) -> None:
    for kind, sample, value in SECRET_FIXTURES:
        line_end = sample.find("\n", sample.index(value) + len(value))
        line_end = len(sample) if line_end < 0 else line_end
        marked = f"{sample[:line_end]}  {marker}{sample[line_end:]}"
        text, counts = redact(marked)
        assert value not in text
        assert counts == {kind: 1}


# --- idempotence --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "context",
    [
        "{}",
        "password={}",
        '"token": "{}"',
        "api_key: {}",
        "https://user:{}@host",
        "aws {}",
        "Authorization: Bearer {}",
        "AccountKey={}",
        "x {} x",
    ],
)
def test_placeholders_are_never_secrets(kind: str, context: str) -> None:
    assert find_secrets(context.format(f"[REDACTED:{kind}]")) == []


# Pieces that secrets, keys and placeholders are made of, so that generated text often comes
# close to a match (plain random text almost never does).
_SYNTAX = [
    *("password", "Token", "api_key", "secret", "aws", "Bearer", "Basic", "user", "AKIA"),
    *("ghp_", "sk-", "eyJ", "=", ":", '"', "'", "&", "@", ".", "-", "_", "[", "]", "://", "\n"),
    "Authorization: ",
    PEM_HEAD,
    "\n-----END RSA " + "PRIVATE KEY-----",
    "gitleaks:allow",
    *(f"[REDACTED:{kind}]" for kind in KINDS),
]
_VALUES = [value for _, _, value in SECRET_FIXTURES]


def _texts(*fragments: str) -> st.SearchStrategy[str]:
    pieces = st.one_of(st.text(max_size=8), st.sampled_from(fragments))
    return st.lists(pieces, max_size=24).map("".join)


_hypothesis = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_hypothesis
@given(_texts(*_SYNTAX, *_VALUES, *(value[: len(value) // 2] for value in _VALUES)))
def test_redacting_twice_changes_nothing(text: str) -> None:
    once, counts = redact(text)
    assert redact(once) == (once, {})
    assert find_secrets(once) == []
    assert all(count > 0 and kind in KINDS for kind, count in counts.items())


@_hypothesis
@given(st.sampled_from(SECRET_FIXTURES), _texts(*_SYNTAX), _texts(*_SYNTAX))
def test_no_fixture_value_survives_in_arbitrary_text(
    fixture: tuple[str, str, str], before: str, after: str
) -> None:
    _, sample, value = fixture
    assert value not in redact(f"{before}{sample}{after}")[0]


# --- ordinary text is left alone ----------------------------------------------------------


SHA = hashlib.sha1(b"memgit").hexdigest()
UUID = str(uuid.UUID(int=0x5EC2E7))


@pytest.mark.parametrize(
    "text",
    [
        "Please type your password to continue.",
        "password",
        "Password:",
        "password=",
        "password=\n",
        'password = ""',
        "password=${DB_PASSWORD}",
        "password: <your password here>",
        "Your password: changeme is not allowed",
        "The token: expired yesterday.",
        "token: ",
        "token:\n  type: jwt",
        "max_tokens=1024, total_tokens: 2048",
        "secret: tomatoes",
        "use sk-ab or sk-learn",
        f"fixed in commit {SHA}",
        f"aws deploy of {SHA}",
        f"request id {UUID}",
        f"aws request id {UUID}",
        "eyJ is how base64 JSON starts",
        "https://example.com:8443/path?q=a:b@c",
        "git@github.com:acme/app.git and ssh://git@host:22/repo",
        "postgres://user:{password}@host/db",
        "Authorization: Bearer <token>",
        "Authorization: Bearer $TOKEN",
        "AKIA is the prefix of AWS access key ids",
        "a key-value store",
        "[REDACTED:password-assignment]",
        # The rules taken from gitleaks, and the shapes of memgit issue 11.
        f"aws s3 cp --sse-c-key {SHA} and AWS_SHA={SHA}",
        f"git log {SHA}..{SHA} --format=%H",
        'url = "token=" + token  # built in code',
        'password = " + name + "',
        'password = "${DB_PASSWORD}"',
        "http://localhost:8080/api/users/@me and https://host:443/a/@b",
        "eyes.eyebrows.eyelids and ewoks.everywhere",
        "Mississippi.Mississippi.Mississippi",
        "see https://example.com/?sig=short",
        "VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZw==",
        "会議のパスワードは明日送ります。" + _fullwidth("password"),
        "Your password: changeme\u200b is not allowed",
        "-----END RSA " + "PRIVATE KEY-----",
        "short\n-----END RSA " + "PRIVATE KEY-----",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == (text, {})


# --- speed: linear on large and hostile input ---------------------------------------------


def _timed(text: str) -> float:
    """CPU seconds, not wall-clock ones: a backtracking pattern costs CPU, while the other
    test worker (``-n 2``) or a busy machine only stretch the wall clock."""
    started = time.process_time()
    redact(text)
    return time.process_time() - started


def test_a_megabyte_of_conversation_is_fast() -> None:
    filler = (
        "def handler(event):\n    token_count = len(event['tokens'])  # see docs\n"
        "The deploy failed: password reset emails were queued twice.\n"
        '{"id": 42, "status": "ok", "url": "https://example.com/a?b=c"}\n'
    )
    samples = [sample for _, sample, value in SECRET_FIXTURES if not sample.endswith(value)]
    block = filler * 40 + "\n".join(samples)
    text = (block * (1_000_000 // len(block) + 1))[:1_000_000]
    assert _timed(text) < TIME_BUDGET


# Units that, repeated or followed by a long run of one character, would make a
# backtracking pattern try every position against the rest of the text.
HOSTILE_UNITS = [
    "a",
    "-----BEGIN ",
    PEM_HEAD,
    "eyJ",
    "eyJa.",
    "eyJaaaa.eyJ" + "aaaa.",
    "sk-",
    "ghp_",
    "://a:",
    "password=",
    "password: ",
    "token:",
    "aws ",
    "aws" + "a1" * 20,
    "Authorization: Bearer ",
    "12345678:AA",
    "pwd=" + "abcd ",
    # The rules taken from gitleaks, and the shapes of memgit issue 11.
    "PuTTY-User-" + "Key-File-2: ",
    "&sig=",
    '\\"password\\": \\"',
    "password: a ",
    "\npassword: ",
    "://a:b@",
    "://a:b/",
    "e",
    "ey",
    "xoxe.",
    "M",
    "heroku: ",
    "discord=",
    "\n-----END RSA " + "PRIVATE KEY-----",
    "QUFBQUFB\n",
    "QUtJQ",
    "\u200b",
    "\uff41",
    "\ufb01",
    # Credentials written in prose (issue 25).
    "password is ",
    PW + " is sun" + "shine and ",
    "password for a ",
    "wifi key is 'a",
    "\npassword: correct horse ",
    "密码是",
    "pin: ",
    # Values read by their shape after a cue with no verb (tests/prose_credentials.yaml).
    "pw ",
    "PI" + "N 1234 ",
    "door code ",
    "password? it's ",
    "use a1b2c " + "to log in ",
    "log in with ",
    "pass" + "words: a1b2c ",
    "wifi, key ",
    "admin / ",
    "la clave es ",
    "用 a1b2 " + "登录",
    "口令：",
    # Values read by the structure of their clause (tests/prose_credentials_structure.yaml).
    "user a1 pass ",
    "recovery codes: ",
    "password. it's ",
    "password, type ",
    "alarm with " + "1234 ",
    "kibana user is a / ",
]


def hostile_texts(unit: str, size: int) -> list[str]:
    """``unit`` repeated to ``size`` characters, and ``unit`` before ``size`` of "a" or " "."""
    return [(unit * (size // len(unit) + 1))[:size], unit + "a" * size, unit + " " * size]


@pytest.mark.parametrize("unit", HOSTILE_UNITS)
def test_hostile_input_stays_linear(unit: str) -> None:
    for text in hostile_texts(unit, HOSTILE_SIZE):
        assert _timed(text) < HOSTILE_BUDGET


# --- invariants of the rule table ---------------------------------------------------------


def test_case_insensitive_rules_are_written_in_lower_case() -> None:
    """They run over a lower-cased copy of the text, so an upper-case letter would never match."""
    for kind, pattern in rules_module.RULES:
        assert "value" in pattern.groupindex, kind
        if pattern.flags & re.IGNORECASE:
            assert not re.search("[A-Z]", re.sub(r"\\.|\(\?P[<=]\w+>?", "", pattern.pattern)), kind


@pytest.mark.parametrize(
    "path",
    [Path(redact_module.__file__), Path(__file__), Path(__file__).with_name("secret_fixtures.py")],
    ids=lambda path: path.name,
)
def test_our_own_sources_scan_clean(path: Path) -> None:
    assert find_secrets(path.read_text("utf-8")) == []
