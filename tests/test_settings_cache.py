"""memgit.yaml's settings kept in ``.git/memgit/settings.json``: used when sound, never
required, never holding a broken file's reading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_process import configure

from memgit import MemoryRepo, settings_cache

from support import git, memgit_cli

CACHE = Path(".git") / "memgit" / settings_cache.CACHE_FILE


def refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("parsed memgit.yaml although the cache holds it")


def test_settings_are_parsed_once_per_content(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = MemoryRepo.open(repo_path).settings
    blob = git(repo_path, "hash-object", "memgit.yaml").strip()
    assert json.loads((repo_path / CACHE).read_text("utf-8"))["blob"] == blob
    with monkeypatch.context() as inner:
        inner.setattr(settings_cache, "parse_settings", refuse)
        assert MemoryRepo.open(repo_path).settings == first
    configure(repo_path, gate={"batch_size": 7})
    assert MemoryRepo.open(repo_path).settings.gate["batch_size"] == 7
    assert json.loads((repo_path / CACHE).read_text("utf-8"))["blob"] != blob


@pytest.mark.parametrize("damage", ["garbage", "wrong-shape", "other-release", "folder"])
def test_an_unsound_entry_is_a_miss(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    expected = MemoryRepo.open(repo_path).settings
    cache = repo_path / CACHE
    entry = json.loads(cache.read_text("utf-8"))
    if damage == "garbage":
        cache.write_bytes(b"\xff{not json")
    elif damage == "wrong-shape":
        cache.write_text(json.dumps({**entry, "settings": {"scopes": 3}}), "utf-8")
    elif damage == "other-release":
        # What another release read may differ: this one reads the file again.
        changed = {**entry["settings"], "retention_days": entry["settings"]["retention_days"] + 1}
        cache.write_text(json.dumps({**entry, "memgit": "0.0.0", "settings": changed}), "utf-8")
    else:
        cache.unlink()
        cache.mkdir()
    assert MemoryRepo.open(repo_path).settings == expected
    if damage != "folder":
        assert json.loads(cache.read_text("utf-8"))["memgit"] == entry["memgit"]


def test_broken_settings_are_never_cached(repo_path: Path) -> None:
    (repo_path / CACHE).unlink(missing_ok=True)
    config = repo_path / "memgit.yaml"
    config.write_text(config.read_text("utf-8").replace("backend: rules", "backend: [rules"))
    for _ in range(2):
        done = memgit_cli("-C", str(repo_path), "recall", "tea", "--json")
        assert done.returncode != 0
        error = json.loads(done.stdout)["error"]
        assert (error["code"], error["path"]) == ("invalid-yaml", "memgit.yaml")
        assert not (repo_path / CACHE).exists()
