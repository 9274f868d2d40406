"""Files named on the command line, where ``-`` means standard input."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO

from memgit.errors import UsageError

STDIN = "<stdin>"


def open_input(path: Path) -> tuple[str, BinaryIO]:
    """The name to report (``<stdin>`` for ``-``) and the open binary stream; a file
    that cannot be opened is refused as ``unreadable``, naming it."""
    name = STDIN if str(path) == "-" else str(path)
    try:
        stream = sys.stdin.buffer if name == STDIN else open(path, "rb")  # noqa: SIM115
    except OSError as err:
        raise UsageError(f"cannot read: {err.strerror}", code="unreadable", path=name) from err
    return name, stream
