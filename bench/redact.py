"""Redaction speed: one megabyte of conversation, of prose that mentions passwords, of code.

Usage (from the checkout)::

    .venv/bin/python bench/redact.py            # best of 5, CPU seconds
    .venv/bin/python bench/redact.py --hostile  # the suite's hostile inputs at 1 MB
    PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/redact.py   # compare

Capture redacts every turn on an agent's hot path, so the detector must stay fast on
ordinary text: this reports ``redact()`` on three 1 MB texts (CPU time, best of N, since
the machine may be shared). Run it in two checkouts, interleaved, and read the ratio.
``--hostile`` runs the inputs of tests/test_redact.py's linearity test (which runs them at
250 KB) at 1 MB each, once, against the suite's 1 MB budget, and exits 1 if one is over.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from memgit.secrets.redact import redact

from secret_fixtures import SECRET_FIXTURES

SIZE = 1_000_000
FILLER = (
    "def handler(event):\n    token_count = len(event['tokens'])  # see docs\n"
    "The deploy failed: password reset emails were queued twice.\n"
    '{"id": 42, "status": "ok", "url": "https://example.com/a?b=c"}\n'
)
PROSE = (
    "I think we should switch the deploy to Fly next week, the pin on numpy is fine. "
    "Remember that the password is in 1Password and the staging key lives in the vault. "
    "我们下周把数据库迁移到 Postgres 16，密码在保险箱里。 Das Passwort steht im Tresor. "
    "La contraseña está en el gestor. PIN codes are four digits; passing tests again.\n"
)
CODE = (
    "    for key, value in sorted(items.items()):\n"
    "        if key.startswith('pin'):\n"
    "            print(key, value)\n"
)


def megabyte(block: str) -> str:
    return (block * (SIZE // len(block) + 1))[:SIZE]


def texts() -> dict[str, str]:
    samples = [sample for _, sample, value in SECRET_FIXTURES if not sample.endswith(value)]
    return {
        "conversation with secrets": megabyte(FILLER * 40 + "\n".join(samples)),
        "prose about passwords": megabyte(PROSE),
        "code": megabyte(CODE),
    }


def best(text: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.process_time()
        redact(text)
        times.append(time.process_time() - started)
    return min(times)


def hostile() -> int:
    """Every hostile unit at 1 MB, in its three forms: the long form of the suite's test."""
    from test_redact import HOSTILE_UNITS, TIME_BUDGET, hostile_texts

    over = 0
    for unit in HOSTILE_UNITS:
        spent = []
        for text in hostile_texts(unit, SIZE):
            started = time.process_time()
            redact(text)
            spent.append(time.process_time() - started)
        over += max(spent) >= TIME_BUDGET
        print(f"{unit!r:40} " + " ".join(f"{seconds:6.2f}" for seconds in spent) + " s")
    print(f"{over} of {len(HOSTILE_UNITS)} over {TIME_BUDGET} s")
    return 1 if over else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--hostile", action="store_true", help="the hostile inputs at 1 MB")
    args = parser.parse_args(argv)
    if args.hostile:
        return hostile()
    for name, text in texts().items():
        print(f"{name:28} {best(text, args.repeats):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
