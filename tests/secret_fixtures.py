"""Fake secrets embedded in text a user might paste into an agent conversation.

Every value is assembled at import time from a seeded random generator and split literals,
so this file holds no realistic secret and secret scanners (ours included) stay quiet on it.
Reused by any test that must prove a secret never reaches a Git object.
"""

from __future__ import annotations

import base64
import json
import random
import string

__all__ = ["SECRET_FIXTURES"]

_rng = random.Random(20240611)

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
BASE64 = ALNUM + "+/"
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase


def _chars(alphabet: str, length: int) -> str:
    """``length`` random characters; a digit is forced in so value-shape rules always apply."""
    return "".join(_rng.choice(alphabet) for _ in range(length - 1)) + _rng.choice("23456789")


def _b64url(data: bytes) -> str:
    """Unpadded base64url, as in JWT segments."""
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _pem(label: str = "", *, block: bool = False, end: bool = True, newline: str = "\n") -> str:
    """A PEM private key block; its header is split so that this source never contains one."""
    marker = f"{label}PRIV" + "ATE KEY" + (" BLOCK" if block else "")
    body = newline.join(_chars(BASE64, 64) for _ in range(4))
    text = f"-----BEGIN {marker}-----{newline}{body}{newline}"
    return text + f"-----END {marker}-----" if end else text


def _jwt() -> str:
    """A JWT as a login flow would hand out: real base64url JSON segments, random signature."""
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = _b64url(json.dumps({"sub": "1234567890", "name": "Ada", "iat": 1700000000}).encode())
    return f"{header}.{claims}.{_chars(URLSAFE, 43)}"


def _build() -> list[tuple[str, str, str]]:
    """(kind, sample, value) for each case; every value has text on both sides except the
    truncated key block, which by definition runs to the end."""
    fixtures: list[tuple[str, str, str]] = []

    def add(kind: str, value: str, template: str) -> None:
        fixtures.append((kind, template.format(value), value))

    add("private-key", _pem("RSA "), "Here is the deploy key, please install it:\n{}\nThanks!")
    add("private-key", _pem("OPENSSH "), "cat ~/.ssh/id_ed25519 prints\n\n{}\n\nis that right?")
    add("private-key", _pem("EC "), "ec.pem:\n{}\n(generated with openssl ecparam)")
    add(
        "private-key",
        _pem("ENCRYPTED "),
        "The encrypted key is below.\n{}\nPassphrase is separate.",
    )
    add("private-key", _pem("PGP ", block=True), "pgp export: {}\nend of export")
    add(
        "private-key",
        _pem(newline="\\n"),
        '{{"type": "service_account", "project_id": "demo", "private_key": "{}\\n", '
        '"client_email": "bot@demo.iam.example.com"}}',
    )
    truncated = _pem("RSA ", end=False)
    fixtures.append(("private-key", f"My terminal cut this off:\n{truncated}", truncated))

    add(
        "aws-access-key-id",
        "AKIA" + _chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        "[default]\naws_access_key_id = {}\nregion = eu-west-1",
    )
    add(
        "aws-access-key-id",
        "ASIA" + _chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        "The temporary credentials start with {} and expire in an hour.",
    )
    add("aws-secret-access-key", _chars(BASE64, 40), "aws_secret_access_key = {}\n")
    add(
        "aws-secret-access-key",
        _chars(BASE64, 40),
        "My AWS secret key is {} - please keep it out of the logs.",
    )
    add(
        "aws-secret-access-key",
        _chars(BASE64, 40),
        '{{"Credentials": {{"AccessKeyId": "id", "SecretAccessKey": "{}", "Expiration": "soon"}}}}',
    )
    add(
        "github-token",
        "ghp_" + _chars(ALNUM, 36),
        "export GITHUB_TOKEN={}\nthen run gh auth status",
    )
    add(
        "github-token",
        "ghs_" + _chars(ALNUM, 36),
        "git remote set-url origin https://git:{}@github.com/acme/app.git",
    )
    add(
        "github-fine-grained-token",
        "github_pat_" + _chars(ALNUM, 22) + "_" + _chars(ALNUM, 59),
        "I created a fine-grained PAT: {} (expires in 30 days)",
    )
    add("gitlab-token", "glpat-" + _chars(URLSAFE, 20), "GITLAB_TOKEN is {}, scope api.")
    add(
        "gitlab-runner-token",
        "GR1348941" + _chars(URLSAFE, 20),
        "gitlab-runner register --registration-token {} --executor docker",
    )
    add("gitlab-runner-token", "glrt-" + _chars(URLSAFE, 20), "runner token: {}\n")
    add(
        "slack-token",
        "-".join(["xoxb", _chars(string.digits, 12), _chars(string.digits, 13), _chars(ALNUM, 24)]),
        "The bot token {} works for #general.",
    )
    add(
        "slack-token",
        "xapp-1-" + _chars(ALNUM, 11) + "-" + _chars(HEX, 64),
        "Socket mode needs the app-level token {} as well.",
    )
    add(
        "slack-webhook-url",
        "/".join(["T" + _chars(UPPER, 8), "B" + _chars(UPPER, 10), _chars(ALNUM, 24)]),
        "Post alerts to https://hooks.slack.com/services/{} please.",
    )
    add("stripe-key", "sk_live_" + _chars(ALNUM, 24), "stripe.api_key = '{}'  # production!")
    add(
        "stripe-key",
        "rk_test_" + _chars(ALNUM, 24),
        "Use the restricted key {} for the webhook worker.",
    )
    add("stripe-webhook-secret", "whsec_" + _chars(ALNUM, 32), "STRIPE_WEBHOOK_SECRET={}\n")
    add("google-api-key", "AIza" + _chars(URLSAFE, 35), "maps key={}&callback=initMap")
    add(
        "google-oauth-access-token",
        "ya29." + _chars(URLSAFE, 80),
        "gcloud auth print-access-token gave me {} just now.",
    )
    add(
        "google-oauth-client-secret",
        "GOCSPX-" + _chars(URLSAFE, 28),
        'client_id: "123.apps.example.com"\nclient secret is {} for the desktop app',
    )
    add(
        "anthropic-api-key",
        "sk-ant-api03-" + _chars(URLSAFE, 93) + "AA",
        "export ANTHROPIC_API_KEY={}\npython agent.py",
    )
    add("openai-api-key", "sk-proj-" + _chars(URLSAFE, 120), 'openai.api_key = "{}"')
    add("openai-api-key", "sk-" + _chars(ALNUM, 48), "my old key was {}, is it still valid?")
    add("openai-api-key", "sk-svcacct-" + _chars(URLSAFE, 60), "service account key {}.")
    add("jwt", _jwt(), "Cookie: session={}; Path=/; HttpOnly")
    add(
        "authorization-bearer",
        _chars(ALNUM, 40),
        "curl -H 'Authorization: Bearer {}' https://api.example.com/v1/me",
    )
    basic = base64.b64encode(("admin:" + _chars(ALNUM, 16)).encode()).decode()
    add("authorization-basic", basic, 'headers = {{"Authorization": "Basic {}"}}')
    add(
        "url-password",
        _chars(ALNUM + "!$%*+-_~", 20),
        "DATABASE_URL=postgres://app:{}@db.internal:5432/app?sslmode=require",
    )
    add("url-password", _chars(ALNUM, 16), "redis://:{}@cache:6379/0 is the broker")
    add("password-assignment", _chars(ALNUM + "!#%*+-_", 16), "DB_PASSWORD={}\nDB_USER=app")
    add(
        "password-assignment",
        _chars(ALNUM, 14),
        '{{"username": "admin", "password": "{}", "remember": true}}',
    )
    add("password-assignment", _chars(ALNUM, 12), "database:\n  passwd: {}\n  host: db")
    add("password-assignment", _chars(ALNUM, 12), "Login with PWD='{}' then rotate it.")
    add(
        "secret-assignment",
        _chars(ALNUM, 32),
        'client_secret: "{}"\ngrant_type: client_credentials',
    )
    add("secret-assignment", _chars(ALNUM + "!#%*+-_", 50), "SECRET_KEY = '{}'\nDEBUG = False")
    add(
        "token-assignment",
        _chars(ALNUM, 32),
        "GET /callback?access_token={}&expires_in=3600 HTTP/1.1",
    )
    add("token-assignment", _chars(HEX, 40), "auth_token: {}\n")
    add("api-key-assignment", _chars(ALNUM, 32), "export API_KEY={}\n./deploy.sh")
    add("api-key-assignment", _chars(ALNUM, 32), '{{"api-key": "{}", "region": "eu"}}')
    add("api-key-assignment", _chars(HEX, 32), "X-Api-Key: {}\nAccept: application/json")
    add(
        "huggingface-token",
        "hf_" + _chars(ALNUM, 34),
        "huggingface-cli login --token {} --add-to-git-credential",
    )
    add("npm-token", "npm_" + _chars(ALNUM, 36), "//registry.npmjs.org/:_authToken={}\n")
    add(
        "pypi-token",
        "pypi-AgEIcHlwaS5vcmc" + _chars(URLSAFE, 70),
        "[pypi]\nusername = __token__\npassword = {}\n",
    )
    add(
        "sendgrid-api-key",
        "SG." + _chars(URLSAFE, 22) + "." + _chars(URLSAFE, 43),
        "SENDGRID key {} for transactional mail.",
    )
    add("twilio-api-key", "SK" + _chars(HEX, 32), "Twilio API key SID {} with its secret.")
    add(
        "azure-storage-key",
        _chars(BASE64, 86) + "==",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={};"
        "EndpointSuffix=core.windows.net",
    )
    add(
        "digitalocean-token",
        "dop_v1_" + _chars(HEX, 64),
        "doctl auth init -t {} && doctl account get",
    )
    add(
        "shopify-token",
        "shpat_" + _chars(HEX, 32),
        "The Shopify admin token {} has write_products.",
    )
    add("mailgun-api-key", "key-" + _chars(HEX, 32), "MAILGUN_API_KEY={}\n")
    add(
        "discord-webhook-url",
        _chars(URLSAFE, 68),
        "webhook: https://discord.com/api/webhooks/123456789012345678/{} (the #ops channel)",
    )
    add(
        "telegram-bot-token",
        "AA" + _chars(URLSAFE, 33),
        "BotFather says: use this token to access the HTTP API: 123456789:{} keep it safe",
    )
    add("databricks-token", "dapi" + _chars(HEX, 32), "databricks configure --token {} --host x")
    add(
        "age-secret-key",
        "AGE-SECRET-KEY-1" + _chars("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
        "# created: 2024-06-11\n# public key: age1abc\n{}\n",
    )
    add(
        "heroku-api-key", "HRKU-" + _chars(URLSAFE, 60), "heroku authorizations:create returned {}."
    )
    add("vault-token", "hvs." + _chars(URLSAFE, 90), "VAULT_TOKEN={}\nvault kv get secret/app")

    # Families of gitleaks' default rules, and the shapes memgit issue 11 found leaking.
    digits = string.digits
    lower = string.ascii_lowercase
    ppk = "PuTTY-User-" + "Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\n"
    ppk += f"Public-Lines: 2\n{_chars(BASE64, 64)}\n{_chars(BASE64, 20)}\nPrivate-Lines: 2\n"
    ppk += f"{_chars(BASE64, 64)}\n{_chars(BASE64, 24)}\nPrivate-MAC: {_chars(HEX, 64)}"
    add("putty-private-key", ppk, "Here is my PuTTY key file:\n{}\nConvert it with puttygen.")
    add("private-key", _pem(" OPENSSH "), "two spaces in the header:\n{}\nstill a key")
    add(
        "azure-shared-access-key",
        _chars(BASE64, 43) + "=",
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;"
        "SharedAccessKey={};EntityPath=jobs",
    )
    add(
        "azure-sas-signature",
        _chars(ALNUM, 30) + "%2B" + _chars(ALNUM, 10) + "%3D",
        "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&sig={} expires soon",
    )
    add(
        "azure-ad-client-secret",
        _chars(ALNUM, 3) + "8Q~" + _chars(ALNUM + "_~.-", 33) + "a",
        "The app registration's client secret value is {} (expires 2027).",
    )
    add("mailchimp-api-key", _chars(HEX, 32) + "-us21", "newsletter key {} for the list")
    add(
        "discord-bot-token",
        "M" + _chars(ALNUM, 23) + "." + _chars(ALNUM, 6) + "." + _chars(URLSAFE, 27) + "a",
        "the bot logs in with {} on startup",
    )
    add("discord-client-secret", _chars(HEX, 64), "discord client secret: {}\n")
    add(
        "1password-secret-key",
        "-".join(["A3", _chars(UPPER + digits, 6), _chars(UPPER + digits, 11)])
        + "-"
        + "-".join(_chars(UPPER + digits, 5) for _ in range(3)),
        "Emergency kit secret key {} (keep it offline)",
    )
    add(
        "1password-service-account-token",
        "ops_eyJ" + _chars(ALNUM, 260),
        "op reads {} from the environment",
    )
    add("adobe-client-secret", "p8e-" + _chars(ALNUM, 32), "adobe io: {} for the worker")
    add("alibaba-access-key-id", "LTAI" + _chars(ALNUM, 20), "aliyun configure gave {} today")
    add("artifactory-api-key", "AKCp" + _chars(ALNUM, 69), "artifactory key {} for CI")
    add("clojars-api-token", "CLOJARS_" + _chars(ALNUM, 60), "deploy with {} to clojars")
    add("doppler-api-token", "dp.pt." + _chars(ALNUM, 43), "doppler setup --token {} done")
    add("duffel-api-token", "duffel_test_" + _chars(URLSAFE, 43), "flights api {} (test mode)")
    add(
        "dynatrace-api-token",
        "dt0c01." + _chars(UPPER + digits, 24) + "." + _chars(ALNUM, 64),
        "monitoring: {} for the agent",
    )
    add("easypost-api-token", "EZAK" + _chars(ALNUM, 54), "shipping key {} is live")
    add(
        "flutterwave-secret-key",
        "FLWSECK_TEST-" + _chars(HEX, 32) + "-X",
        "payments sandbox {} works",
    )
    add("frameio-api-token", "fio-u-" + _chars(URLSAFE, 64), "frame.io token {} for uploads")
    add(
        "grafana-token",
        "glsa_" + _chars(ALNUM, 32) + "_" + _chars(HEX, 8),
        "the dashboard bot uses {} now",
    )
    add(
        "harness-api-key",
        "pat." + _chars(URLSAFE, 22) + "." + _chars(ALNUM, 24) + "." + _chars(ALNUM, 20),
        "harness pipeline key {} (rotated)",
    )
    add("infracost-api-token", "ico-" + _chars(ALNUM, 32), "cost estimates need {} set")
    add("linear-api-key", "lin_api_" + _chars(ALNUM, 40), "linear: {} for the triage bot")
    add("new-relic-api-key", "NRAK-" + _chars(UPPER + digits, 27), "new relic user key {} here")
    add(
        "notion-api-token",
        "ntn_" + _chars(digits, 11) + _chars(ALNUM, 35),
        "notion integration secret {} for the wiki",
    )
    add("openshift-user-token", "sha256~" + _chars(URLSAFE, 43), "oc login --token={} --server=x")
    add("perplexity-api-key", "pplx-" + _chars(ALNUM, 48), "search api {} in the agent")
    add("planetscale-token", "pscale_tkn_" + _chars(URLSAFE, 43), "pscale auth with {} works")
    add(
        "postman-api-token",
        "PMAK-" + _chars(HEX, 24) + "-" + _chars(HEX, 34),
        "postman collection runner {} ok",
    )
    add("prefect-api-token", "pnu_" + _chars(ALNUM, 36), "prefect cloud login -k {} done")
    add("pulumi-api-token", "pul-" + _chars(HEX, 40), "pulumi login with {} then up")
    add("readme-api-token", "rdme_" + _chars(lower + digits, 70), "docs sync uses {} daily")
    add("rubygems-api-token", "rubygems_" + _chars(HEX, 48), "gem push with {} in CI")
    add("scalingo-api-token", "tk-us-" + _chars(URLSAFE, 48), "scalingo login --api-token {} ok")
    add(
        "sendinblue-api-token",
        "xkeysib-" + _chars(HEX, 64) + "-" + _chars(ALNUM, 16),
        "brevo smtp key {} for mail",
    )
    add("sentry-token", "sntryu_" + _chars(HEX, 64), "sentry-cli uses {} to upload")
    add("shippo-api-token", "shippo_live_" + _chars(HEX, 40), "labels via {} in prod")
    add("square-token", "sq0atp-" + _chars(URLSAFE, 22), "square sandbox {} works")
    uuid_ = "-".join(_chars(HEX, n) for n in (8, 4, 4, 4, 12))
    add(
        "microsoft-teams-webhook",
        f"{uuid_}@{uuid_}/IncomingWebhook/{_chars(HEX, 32)}/{uuid_}",
        "teams alerts go to https://acme.webhook.office.com/webhookb2/{} now",
    )
    docker = base64.b64encode(("deploy:" + _chars(ALNUM, 20)).encode()).decode()
    add("docker-auth", docker, '{{"auths": {{"registry.example.com": {{"auth": "{}"}}}}}}')
    add(
        "slack-token",
        "xoxe-1-" + _chars(ALNUM, 146),
        "the refresh token {} rotates daily",
    )
    add("slack-token", "xoxe.xoxp-1-" + _chars(ALNUM, 166), "config token {} for the app")
    header = _b64url(b'{ "alg": "HS256", "typ": "JWT" }')
    claims = _b64url(b'{ "sub": "42", "name": "Ada" }')
    add(
        "jwt",
        f"{header}.{claims}.{_chars(URLSAFE, 43)}",
        "session={} ; Path=/",
    )
    add("heroku-api-key", "-".join(_chars(HEX, n) for n in (8, 4, 4, 4, 12)), "HEROKU_API_KEY={}\n")
    add(
        "url-password",
        _chars(ALNUM, 6) + "/" + _chars(ALNUM, 4) + "#" + _chars(ALNUM, 3) + "@" + _chars(ALNUM, 5),
        "mysql://admin:{}@db.internal:3306/app is the database",
    )
    words = " ".join("".join(_rng.choice(lower) for _ in range(7)) for _ in range(4))
    add("password-assignment", words, "Connect with\npassword: {}\nand the usual user.")
    add("password-assignment", " ".join(_chars(ALNUM, 6) for _ in range(3)), 'password = "{}"\n')
    add(
        "password-assignment",
        _chars(ALNUM, 14),
        '{{"name": "login", "arguments": "{{\\"user\\": \\"ada\\", \\"password\\": \\"{}\\"}}"}}',
    )
    add(
        "api-key-assignment",
        _chars(ALNUM, 32),
        '{{"tool": "http", "arguments": "{{\\"headers\\": {{\\"X-API-Key\\": \\"{}\\"}}}}"}}',
    )
    add("github-token", "ghp_" + _chars(ALNUM, 36), "the runner printed ci-{}-deploy")
    fullwidth = "".join(chr(ord(char) + 0xFEE0) for char in "ghp_" + _chars(ALNUM, 36))
    add("github-token", fullwidth, "my token is {} (typed on a phone)")
    hidden = "ghp_" + _chars(ALNUM, 36)
    add("github-token", hidden[:10] + "\u200b" + hidden[10:], "zero-width inside: {} end")
    hyphen = "sk_live_" + _chars(ALNUM, 24)
    add("stripe-key", hyphen[:12] + "\u00ad" + hyphen[12:], "soft hyphen inside: {} end")
    key_id = "AKIA" + _chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    add(
        "aws-access-key-id",
        base64.b64encode(key_id.encode()).decode(),
        "kind: Secret\ndata:\n  AWS_ACCESS_KEY_ID: {}\n",
    )
    credentials = f"[default]\naws_secret_access_key = {_chars(BASE64, 40)}\n"
    add(
        "aws-secret-access-key",
        base64.b64encode(credentials.encode()).decode(),
        '{{"credentials": "{}", "profile": "default"}}',
    )
    # Credentials written in prose (issue 25), in the four languages the Gate reads.
    add("password-prose", _chars(ALNUM + "&!", 12), "Remember my laptop password is {} please")
    add("password-prose", _chars(ALNUM, 10), "mi contraseña del banco es {}, no la compartas")
    add("password-prose", _chars(ALNUM, 10), "Das WLAN-Passwort ist {}.\nDanke!")
    add("password-prose", _chars(ALNUM, 10), "我的电脑密码是{}，记住")
    add("pin-prose", _chars(string.digits, 6), "and my bank PIN is {} btw")
    add("wifi-key-prose", _chars(ALNUM, 14), "the wifi key is {} for the guests")
    return fixtures


SECRET_FIXTURES: list[tuple[str, str, str]] = _build()
