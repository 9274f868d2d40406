"""Values derived from blobs, kept in ``.git/memgit/parsed/`` across processes.

Every ``memgit process`` is a new process that reads every capture in the inbox
and every run record ever written; parsing them strictly again each time grows
with the history. A blob never changes, so what memgit derived from it once
holds for good: the entry is keyed by kind and blob id, and written only after
a successful parse (a broken file is never cached, so its error stays).

The cache is derived data only. A missing, unreadable, corrupt or outdated
entry is a miss: the value is computed from the blob again and rewritten. A
cache that cannot be written (read-only ``.git``, full disk) is skipped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

import pygit2

from memgit import __version__
from memgit.capture.turn import Turn, parse_capture, turn_from_trusted
from memgit.constants import CACHE_DIR
from memgit.settings import Settings, parse_settings, settings_from_json, settings_to_json
from memgit.store.tree import read_blob

T = TypeVar("T")

# Bump when the payload of any kind changes; entries of another version are misses.
# Entries also name the memgit release that wrote them, so a stricter parser re-checks.
FORMAT = 2
PARSED_DIR = "parsed"

_BLOB = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# What decoding an entry of the wrong shape raises.
_SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError)

# First level, in memory: (kind, blob) -> decoded value, the oldest dropped first once
# it holds MAX_DECODED (a long-running process, the planned MCP server, must not grow
# without bound; a run at 100k memories decodes a few thousand).
MAX_DECODED = 50_000
_decoded: dict[tuple[str, str], Any] = {}


def _keep(key: tuple[str, str], value: T) -> T:
    while len(_decoded) >= MAX_DECODED:
        _decoded.pop(next(iter(_decoded)))
    _decoded[key] = value
    return value


def cached(
    repo: pygit2.Repository,
    kind: str,
    blob: str,
    compute: Callable[[], T],
    *,
    encode: Callable[[T], Any],
    decode: Callable[[Any], T],
) -> T:
    """``compute()``, unless this process or the cache already derived it from ``blob``.

    ``encode`` turns the value into JSON data; ``decode`` rebuilds it and raises
    KeyError, TypeError, ValueError or AttributeError on data of the wrong shape.
    An exception from ``compute`` propagates and nothing is cached.
    """
    if not _BLOB.fullmatch(blob):
        return compute()  # not a full object id: no stable key
    key = (kind, blob)
    if key in _decoded:
        return _decoded[key]  # type: ignore[no-any-return]
    data = _load(repo, kind, blob)
    if data is not None:
        with suppress(*_SHAPE_ERRORS):  # an entry of the wrong shape is a miss
            return _keep(key, decode(data))
    value = _keep(key, compute())
    _store(repo, kind, blob, encode(value))
    return value


def _load(repo: pygit2.Repository, kind: str, blob: str) -> Any:
    """The JSON data cached for ``blob``, or None if there is no sound entry."""
    try:
        entry = json.loads(_entry_path(repo, kind, blob).read_bytes())
    except (OSError, ValueError):
        return None
    if (
        isinstance(entry, dict)
        and entry.get("format") == FORMAT
        and entry.get("memgit") == __version__
    ):
        return entry.get("value")
    return None


def _store(repo: pygit2.Repository, kind: str, blob: str, value: Any) -> None:
    """Write the entry atomically; if the cache cannot be written, do without it."""
    path = _entry_path(repo, kind, blob)
    entry = {"format": FORMAT, "memgit": __version__, "value": value}
    text = json.dumps(entry, separators=(",", ":"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{blob}.", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(text)
        if path.is_dir():
            # Not an entry, and only memgit writes here (rmtree refuses a symlink).
            shutil.rmtree(path)
        os.replace(tmp, path)
    except OSError:
        with suppress(OSError):
            os.unlink(tmp)


def _entry_path(repo: pygit2.Repository, kind: str, blob: str) -> Path:
    return Path(repo.path) / CACHE_DIR / PARSED_DIR / kind / blob[:2] / f"{blob}.json"


def capture_turn(repo: pygit2.Repository, blob: str, *, path: str) -> Turn:
    """The Turn of capture blob ``blob`` (named ``path`` in errors).

    The strict parse runs once per repository; later processes read the parse cache.
    """
    return cached(
        repo,
        "capture",
        blob,
        lambda: parse_capture(read_blob(repo, blob), path=path),
        encode=Turn.to_dict,
        decode=turn_from_trusted,
    )


def remember_capture(repo: pygit2.Repository, blob: str, turn: Turn) -> None:
    """Keep ``turn``, just parsed strictly from capture blob ``blob``, for later readers:
    memgit-schemas parses each new capture for real, and the next ``memgit process``
    then reads the capture from the cache instead of parsing it again."""
    if not _BLOB.fullmatch(blob) or ("capture", blob) in _decoded:
        return
    _keep(("capture", blob), turn)
    if not _entry_path(repo, "capture", blob).is_file():
        _store(repo, "capture", blob, Turn.to_dict(turn))


def repository_settings(repo: pygit2.Repository, data: bytes) -> Settings:
    """The Settings of memgit.yaml content ``data``: every command reads the file, and its
    strict parse and schema check (6 ms) run once per content per repository. The strict
    YAML loader yields only what JSON holds (text keys), so the entry gives them back."""
    return cached(
        repo,
        "settings",
        str(pygit2.hash(data)),
        lambda: parse_settings(data),
        encode=settings_to_json,
        decode=settings_from_json,
    )
