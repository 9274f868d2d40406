"""Credentials written in prose (issue 25): redacted at capture in EN, ES, DE and ZH, never
stored in any Git object; prose that merely mentions a password stays verbatim; a person's
commit of one is refused; and the Gate contract refuses a memory that states one.

Values are assembled at run time, so this file holds no credential and scans clean.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_process import answer, capture, configure, create, pending_units, unit, user_turn

from memgit.secrets.redact import find_credentials, find_secrets, redact
from memgit.turn import read_capture

from support import everything_git_keeps, git, git_environment, make_turn, memgit_cli, snapshot

VENV_BIN = Path(sys.executable).parent


def strong(seed: int) -> str:
    """A password with digits and a symbol, different for each form."""
    return f"Qv{seed:02d}" + "m&" + "Tr4z"


def letters(first: str, second: str) -> str:
    """A password of letters only (``sun`` + ``flower``), which counts only at a clause end."""
    return first + second


def digits(seed: int) -> str:
    return str(482_100 + seed)


PW, PIN, WIFI = "password-prose", "pin-prose", "wifi-key-prose"

# (template with one {}, the kind, the value).
FORMS: list[tuple[str, str, str]] = [
    # English
    ("Remember my laptop password is {} please", PW, strong(1)),
    ("my wifi password is {}.", PW, letters("sun", "flower")),
    ("the password for the router is {}", PW, strong(3)),
    ("The password to the staging box is {}, don't share it", PW, strong(4)),
    ("PIN: {}", PIN, digits(5)),
    ("my PIN is {}", PIN, digits(6)),
    ("and my bank PIN is {} btw", PIN, digits(7)),
    ("the wifi key is {}", WIFI, strong(8)),
    ("wifi password: {}", PW, letters("blue", "harbour")),
    ("my passcode is {}", PW, digits(10)),
    ('the passphrase is "{}"', PW, " ".join(("orbit", "lantern", "pebble", "quartz"))),
    ("Password: {}\nthanks", PW, strong(12)),
    ("my email password's {} now", PW, strong(13)),
    ("The new password has been changed to {}", PW, strong(14)),
    ("my password is now {}", PW, strong(15)),
    ("the VPN password was set to {} yesterday", PW, strong(16)),
    ("WPA2 key: {}", WIFI, strong(17)),
    ("The network key is {} for guests", WIFI, strong(18)),
    ("Wi-Fi password is {}!", PW, letters("moon", "river")),
    ("the password is `{}`", PW, strong(20)),
    # Spanish
    ("mi contraseña es {}", PW, strong(21)),
    ("la contraseña del portátil es {}", PW, letters("gato", "negro")),
    ("la clave del wifi es {}", WIFI, strong(23)),
    ("Contraseña: {}", PW, strong(24)),
    ("la contraseña para el banco es {}, no la compartas", PW, strong(25)),
    ("mi PIN es {}", PIN, digits(26)),
    ("el código PIN es {}", PIN, digits(27)),
    ("la clave de acceso es {}", PW, strong(28)),
    ("la contrasena del correo es ahora {}", PW, strong(29)),
    ("clave wifi: {}", WIFI, strong(30)),
    # German
    ("mein Passwort ist {}", PW, strong(31)),
    ("das WLAN-Passwort ist {}.", PW, letters("Sonnen", "schein")),
    ("das Kennwort lautet {}", PW, strong(33)),
    ("Passwort: {}", PW, strong(34)),
    ("das Passwort für das WLAN lautet: {}", PW, strong(35)),
    ("meine PIN ist {}", PIN, digits(36)),
    ("der WLAN-Schlüssel ist {}", WIFI, strong(37)),
    ("Das Routerpasswort ist jetzt {}", PW, strong(38)),
    ("die Geheimzahl ist {}", PIN, digits(39)),
    ("Mein E-Mail-Kennwort: {}", PW, strong(40)),
    # Chinese
    ("我的电脑密码是{}，记住", PW, strong(41)),
    ("密码：{}", PW, strong(42)),
    ("口令是 {}，别告诉别人", PW, strong(43)),
    ("银行卡密码是 {}", PW, digits(44)),
    ("WiFi密码是{}", PW, strong(45)),
    ("PIN码是{}", PIN, digits(46)),
    ("支付密码为{}", PW, digits(47)),
    ("我的邮箱密码改成了{}", PW, strong(48)),
    ("密碼是 {}", PW, strong(49)),
    # A login given as user and password, and a complement of place (the quality set's
    # development half).
    ("the staging admin login is admin / {}, we share it", PW, strong(51)),
    ("credentials: root/{}", PW, strong(52)),
    ("登录账号是 admin / {}", PW, strong(53)),
    ("Das WLAN-Passwort im Büro ist {}, falls du es brauchst.", PW, strong(54)),
    ("the wifi password in the office is {}", PW, strong(55)),
    # Shapes the third batch of development items showed leaking: a complement "fürs",
    # an app key, a login with no verb, a pre-shared key, Redis' AUTH string, "pass".
    ("mein Passwort fürs Firmen-WLAN ist {}, merk dir das", PW, strong(56)),
    ("测试网关的 appkey 是 {}，只能发白名单", PW, f"yf_test_{digits(57)}"),
    ("the SFTP drop is on port 2222, login tidepool / {}", PW, strong(58)),
    ("the VPN is WireGuard, shared PSK is {}, ask Omar", PW, strong(59)),
    ("host cache-01, db index 3, AUTH string {}. Sessions use db 4.", PW, strong(60)),
    ("usuario lector, pass {}. Los reportes van contra la réplica", PW, strong(61)),
    # The password named in the sentence that sets it (an assistant's proposal, too).
    ("Shall I set the staging admin password to {}?", PW, strong(62)),
    ("I changed my wifi password to {} yesterday", PW, strong(63)),
]

# Prose that mentions a password without giving one: kept exactly as written.
MENTIONS = [
    "Password: see the vault",
    "Password: check the vault",
    "Password: stored in 1Password",
    "the password is in 1Password",
    "the password is stored in Bitwarden",
    "I forgot my password",
    "reset your password",
    "password123 is a bad password example?",
    "The password is wrong.",
    "the password is expired now",
    "the password is rotated every 90 days",
    "my password is 8 characters long",
    "the password must be at least 12 characters",
    "Is the password the same as staging?",
    "What is the wifi password?",
    "wifi password: ask Dana",
    "Your PIN is required to continue.",
    "the PIN is four digits",
    "pin the numpy version to 1.26",
    "The passphrase is separate.",
    "密码是多少？",
    "密码在保险箱里",
    "请重置你的密码",
    "Das Passwort steht im Tresor.",
    "Ich habe mein Passwort vergessen",
    "das Passwort ist abgelaufen",
    "La contraseña está en el gestor.",
    "olvidé mi contraseña",
    "la contraseña es incorrecta",
    "la clave es practicar todos los días",
    "the login is admin / see the vault",
    "the login page is slow",
    "the password in the vault is stale",
    "interface User { password: string; name: string }",
    "const schema = { password: z.string().min(12) }",
    "we pass the build flags through make",
    "the appkey is in the vault",
    "the AUTH string is set in the env file",
    "the login page is at /auth/login",
    "die Tests laufen fürs Release auf CI",
    "set the password to expire every 90 days",
    "reset your password to continue",
]


def form_id(form: tuple[str, str, str]) -> str:
    return form[0].replace("{}", "_")[:40]


def test_the_sets_are_as_large_as_issue_25_asks() -> None:
    assert len(FORMS) >= 40 and len(MENTIONS) >= 20
    assert len({value for _, _, value in FORMS}) == len(FORMS)


@pytest.mark.parametrize(("template", "kind", "value"), FORMS, ids=form_id)
def test_a_prose_credential_loses_its_value_only(template: str, kind: str, value: str) -> None:
    """The value becomes the placeholder; every word around it stays."""
    assert redact(template.format(value)) == (template.format(f"[REDACTED:{kind}]"), {kind: 1})


@pytest.mark.parametrize("text", MENTIONS)
def test_a_mention_of_a_password_stays_verbatim(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == (text, {})


def test_two_credentials_in_one_sentence_are_both_redacted() -> None:
    text = f"my password is {strong(50)} and my PIN is {digits(50)}"
    assert redact(text) == (
        f"my password is [REDACTED:{PW}] and my PIN is [REDACTED:{PIN}]",
        {PW: 1, PIN: 1},
    )


def test_a_cue_without_a_verb_reads_the_value_by_its_shape() -> None:
    """After ``token`` a value must look like a key (eight or more letters and digits), but
    in parentheses a password's shape will do; a name followed by ``(`` is a call in code."""
    short = "zq" + "9x7"  # letters and a digit: a password's shape, too short for a key
    assert redact(f"the token ({short}) works") == (f"the token ([REDACTED:{PW}]) works", {PW: 1})
    assert redact(f"the token {short} works") == (f"the token {short} works", {})
    assert redact(f"pw {strong(51)}") == (f"pw [REDACTED:{PW}]", {PW: 1})
    assert redact(f"pw {strong(51)}(realm)") == (f"pw {strong(51)}(realm)", {})


def test_the_assistant_echoing_a_prose_password_loses_it_too() -> None:
    from memgit.secrets.redact import redact_together

    value = letters("sun", "flower")
    cleaned, counts = redact_together(
        [f"my wifi password is {value}", f"Got it: {value}. I will remember."]
    )
    assert cleaned == [
        f"my wifi password is [REDACTED:{PW}]",
        f"Got it: [REDACTED:{PW}]. I will remember.",
    ]
    assert counts == {PW: 2}


# --- through memgit capture: nothing Git keeps holds a value ------------------------------


@dataclass(frozen=True, slots=True)
class Captured:
    repo: Path
    results: list[dict[str, Any]]

    def content(self, seq: int) -> str:
        path = self.results[seq]["path"]
        turn = read_capture(git(self.repo, "show", f"HEAD:{path}").encode(), path=path)
        return turn.messages[0].content


@contextmanager
def captured_texts(base: Path, texts: list[str], *, process: bool = False) -> Iterator[Captured]:
    """``texts``, each the user message of its own turn, captured with one ``--file`` into
    a new repository under ``base`` (and processed by the offline Gate if ``process``),
    with a Git environment of its own for as long as the block runs."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in git_environment(base).items():
            patch.setenv(name, value)
        repo = base / "memory"
        assert memgit_cli("init", str(repo)).returncode == 0
        turns = base / "turns.jsonl"
        turns.write_text(
            "".join(
                json.dumps(make_turn(seq, text), ensure_ascii=False) + "\n"
                for seq, text in enumerate(texts)
            ),
            "utf-8",
        )
        done = memgit_cli("capture", "--file", str(turns), "--json", cwd=repo)
        assert done.returncode == 0, done.stderr.decode()
        if process:
            processed = memgit_cli("-C", str(repo), "process")
            assert processed.returncode == 0, processed.stderr.decode()
        yield Captured(repo, json.loads(done.stdout)["captures"])


def holds(data: str | bytes, value: str) -> bool:
    """Whether ``data`` holds ``value``; a run of digits counts only where no digit touches
    it, since Git's own numbers (timestamps, sizes) hold every short run somewhere."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if re.fullmatch(r"[0-9]+", value):
        return re.search(rf"(?<![0-9]){value}(?![0-9])", text) is not None
    return value in text or json.dumps(value)[1:-1] in text


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Captured]:
    """Every form, then every mention, as the user message of its own turn: one --file."""
    texts = [template.format(value) for template, _, value in FORMS] + MENTIONS
    with captured_texts(tmp_path_factory.mktemp("prose"), texts) as done:
        yield done


def test_no_prose_credential_reaches_any_git_object(captured: Captured) -> None:
    kept = everything_git_keeps(captured.repo)
    assert any(b"[REDACTED:password-prose]" in data for data in kept.values())
    for _, _, value in FORMS:
        for where, data in kept.items():
            assert value.encode() not in data, where
            assert json.dumps(value)[1:-1].encode() not in data, where


def test_each_capture_counts_its_redaction(captured: Captured) -> None:
    for seq, (template, kind, _) in enumerate(FORMS):
        assert captured.results[seq]["redactions"] == {kind: 1}
        assert captured.content(seq) == template.format(f"[REDACTED:{kind}]")


def test_mentions_are_stored_as_written(captured: Captured) -> None:
    for offset, text in enumerate(MENTIONS):
        seq = len(FORMS) + offset
        assert captured.results[seq].get("redactions", {}) == {}
        assert captured.content(seq) == text


# --- people's commits: the pre-commit hook and memgit verify -------------------------------


HUMAN_MEMORY = """\
---
id: {id}
type: fact
scope: user
title: {title}
status: active
created: '2026-11-30T12:00:00Z'
updated: '2026-11-30T12:00:00Z'
origin: human
author: Test Person
sources: []
---
{body}
"""


def human_memory(repo: Path, memory_id: str, title: str, body: str) -> str:
    at = f"memories/user/{memory_id[:2]}/{memory_id}.md"
    (repo / at).parent.mkdir(parents=True, exist_ok=True)
    (repo / at).write_text(HUMAN_MEMORY.format(id=memory_id, title=title, body=body), "utf-8")
    git(repo, "add", "--", at)
    return at


def hook(repo: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "memgit-check-secrets"), *paths],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_pre_commit_hook_refuses_a_prose_password(repo_path: Path) -> None:
    value = strong(60)
    notes = repo_path / "notes.md"
    notes.write_text(f"# Home\n\nmy wifi password is {value}\n", "utf-8")
    git(repo_path, "add", "notes.md")
    done = hook(repo_path, "notes.md")
    assert done.returncode == 1
    assert "error[secret-detected]: notes.md: line 3: a secret (password-prose)" in done.stderr
    assert value not in done.stderr
    notes.write_text("# Home\n\nthe wifi password is in 1Password\n", "utf-8")
    git(repo_path, "add", "notes.md")
    assert hook(repo_path, "notes.md").returncode == 0


def test_verify_refuses_a_hand_written_memory_that_states_a_credential(repo_path: Path) -> None:
    """A prose password is secret-detected; a random token beside "login", which no rule
    knows the shape of, is the memory fence's credential-in-memory. Neither prints it."""
    base = git(repo_path, "rev-parse", "HEAD").strip()
    token = "Zq8Kp2" + "Lm9Xw4Rt7Y"
    human_memory(repo_path, "laptop000001", "Laptop", f"My laptop password is {strong(61)}.")
    human_memory(repo_path, "router000001", "Router login", f"The router login is {token}.")
    human_memory(repo_path, "vault0000001", "Where the passwords are", "In 1Password, team vault.")
    git(repo_path, "commit", "-q", "--no-verify", "-m", "memories by hand")
    done = memgit_cli("verify", f"{base}..HEAD", cwd=repo_path)
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error[")]
    assert len(errors) == 2, stderr
    assert errors[0].startswith("error[secret-detected]: ")
    assert "memories/user/la/laptop000001.md: line 13: a secret (password-prose)" in errors[0]
    assert errors[1].startswith("error[credential-in-memory]: ")
    assert "memories/user/ro/router000001.md: body: " in errors[1]
    assert token not in stderr and strong(61) not in stderr


# --- the Gate's second fence: a scripted command backend ----------------------------------

PROGRAM = """\
import pathlib, sys
sys.stdin.read()
here = pathlib.Path(sys.argv[0]).parent
with (here / "calls").open("a") as calls:
    calls.write("x")
sys.stdout.write((here / "answer.json").read_text("utf-8"))
"""


@pytest.fixture
def scripted(repo_path: Path, tmp_path: Path) -> Callable[[str], Path]:
    """A command backend that prints ``answer.json`` whatever it is asked."""
    folder = tmp_path / "gate"
    folder.mkdir()
    (folder / "gate.py").write_text(PROGRAM, "utf-8")
    command = [sys.executable, str(folder / "gate.py")]
    configure(repo_path, gate={"backend": "command", "command": command, "model": "canned"})

    def answering(answer_text: str) -> Path:
        (folder / "answer.json").write_text(answer_text, "utf-8")
        return folder

    return answering


def test_the_contract_refuses_a_memory_that_states_a_credential(
    repo_path: Path, scripted: Callable[[str], Path]
) -> None:
    """Capture cannot know "login" names a credential, so the token reaches the Gate; a model
    that makes it a memory is refused twice (one correction round) and nothing is written."""
    token = "Zq8Kp2" + "Lm9Xw4Rt7Y"
    said = f"Remember that the router login is {token}"
    capture(repo_path, user_turn(0, said))
    title = f"Router login is {token}"
    folder = scripted(answer(None, create(title, said, [(unit(0), said)]), units=[unit(0)]))
    before, pending = snapshot(repo_path), pending_units(repo_path)
    done = memgit_cli("-C", str(repo_path), "process")
    stderr = done.stderr.decode()
    assert done.returncode == 3, stderr
    assert stderr.startswith("error[gate-rejected]: gate output: candidates[0].title: ")
    assert "(credential-in-memory x2)" in stderr
    assert (folder / "calls").read_text() == "xx"
    assert snapshot(repo_path) == before and pending_units(repo_path) == pending
    assert token not in stderr


def test_the_contract_lets_a_memory_say_where_a_credential_is_kept(
    repo_path: Path, scripted: Callable[[str], Path]
) -> None:
    said = "Remember that the staging password is in 1Password"
    capture(repo_path, user_turn(0, said))
    title = "Staging password is in 1Password"
    scripted(answer(None, create(title, said, [(unit(0), said)]), units=[unit(0)]))
    done = memgit_cli("-C", str(repo_path), "process")
    assert done.returncode == 0, done.stderr.decode()
    assert "Staging password is in 1Password" in git(repo_path, "log", "-p", "-1")


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        (f"Laptop password is {strong(70)}", {PW}),
        (f"la clave del wifi es {strong(71)}", {WIFI}),
        (f"PIN码是{digits(72)}", {PIN}),
        ("Deploy token=" + strong(73), {"token-assignment"}),
        # A key after a key word is a credential in prose since the corpus of
        # tests/prose_credentials.yaml, and one later in the clause of "login" since
        # tests/prose_credentials_structure.yaml; beside "login" in another sentence, a random
        # token is still the fence's.
        ("API key for staging: " + "Zq8Kp2" + "Lm9Xw4Rt7Y", {PW}),
        ("登录密钥 " + "Zq8Kp2" + "Lm9Xw4Rt7Y", {PW}),
        ("the router login, " + "Zq8Kp2" + "Lm9Xw4Rt7Y", {PW}),
        ("the router login. " + "Zq8Kp2" + "Lm9Xw4Rt7Y is on the sticker", {"random-token"}),
    ],
)
def test_the_fence_finds_named_credentials_and_random_tokens(text: str, kinds: set[str]) -> None:
    assert {match.kind for match in find_credentials(text)} == kinds


@pytest.mark.parametrize(
    "text",
    [
        "The staging password is in 1Password",
        "Rotate the API key every 90 days",
        "The key commit is 3f9a2b1c4d5e6f708192a3b4c5d6e7f809a1b2c3",
        "Release v1.2.3-rc.4+build5 changed the login page",
        "Zq8Kp2" + "Lm9Xw4Rt7Y is the name of the build agent",
        "Request id 123e4567-e89b-12d3-a456-426614174000 failed at login",
        "The deploy key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8",
    ],
)
def test_the_fence_leaves_ordinary_memories_alone(text: str) -> None:
    assert find_credentials(text) == []


def test_the_rules_gate_keeps_the_rest_of_a_turn_that_names_a_credential(
    repo_path: Path,
) -> None:
    """The offline Gate never proposes what the fence refuses: one statement with a token
    beside "login" must not fail the run and hold back the turn's other statements."""
    token = "Zq8Kp2" + "Lm9Xw4Rt7Y"
    capture(
        repo_path,
        user_turn(
            0, f"Remember that the router login is {token}. Remember that we deploy on Fridays."
        ),
    )
    done = memgit_cli("-C", str(repo_path), "process")
    assert done.returncode == 0, done.stderr.decode()
    memories = git(repo_path, "ls-tree", "-r", "--name-only", "HEAD", "--", "memories").split()
    stored = "".join(git(repo_path, "show", f"HEAD:{name}") for name in memories)
    assert "deploy on Fridays" in stored and token not in stored
