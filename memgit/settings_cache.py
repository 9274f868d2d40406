"""memgit.yaml's checked settings, kept across processes in ``.git/memgit/settings.json``.

Every command reads memgit.yaml, and its strict parse and schema check take
about 6 ms. The file holds one entry: the settings of one content (by blob id)
as this memgit release read them. Another content or release is a miss, after
which the entry is replaced; a file that cannot be read, trusted or written is
a miss too. A broken memgit.yaml is never kept, so its error stays.
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import suppress
from pathlib import Path

import pygit2

from memgit import __version__
from memgit.constants import CACHE_DIR
from memgit.settings import Settings, parse_settings, settings_from_json, settings_to_json

CACHE_FILE = "settings.json"


def cached_settings(repo: pygit2.Repository, data: bytes) -> Settings:
    """The Settings of memgit.yaml content ``data``, parsed once per content."""
    key = {"blob": str(pygit2.hash(data)), "memgit": __version__}
    path = Path(repo.path) / CACHE_DIR / CACHE_FILE
    with suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
        entry = json.loads(path.read_bytes())
        if {name: entry[name] for name in key} == key:
            return settings_from_json(entry["settings"])
    settings = parse_settings(data)
    with suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{CACHE_FILE}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({**key, "settings": settings_to_json(settings)}, handle)
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
    return settings
