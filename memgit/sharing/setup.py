"""What ``memgit init`` sets up so a clone can share the repository.

One part travels with the repository, committed: the ``.gitattributes`` lines
that route memgit's files to the memory-aware merge driver. The rest is per
clone, in ``.git/`` (git never copies it): the driver's command, the remotes'
refspecs (:mod:`memgit.sharing.refspecs`) and the hooks
(:mod:`memgit.sharing.hooks`). So ``memgit init`` is run in every clone, and
again after adding a remote; each part is added only where it is missing, and
nothing a person set is changed.
"""

from __future__ import annotations

import shlex
import sys

import pygit2

ATTRIBUTES_FILE = ".gitattributes"
DRIVER = "memgit"
ATTRIBUTE_LINES = (
    f"memories/**/*.md merge={DRIVER}",
    f"runs/**/*.json merge={DRIVER}",
    f"inbox/**/*.yaml merge={DRIVER}",
)
DRIVER_MODULE = "memgit.sharing.merge_driver"
DRIVER_DESCRIPTION = "memgit: memory-aware merge of memories, run records and captures"
# A memory's file name is its id: git's rename detection, which pairs files by similar
# bytes, takes a teammate's new memory of the same fact for a memory edited here,
# renamed (docs/sharing.md#merging-clones). ``git merge`` reads ``pull.twohead`` for
# its strategy; git 2.39's ``ort`` ignores ``merge.renames``, ``recursive`` obeys it.
RENAME_FREE_MERGE = (("merge.renames", "false"), ("pull.twohead", "recursive"))


def attributes_with_memgit(existing: bytes | None) -> bytes | None:
    """``.gitattributes`` with memgit's lines appended where missing; None when it has
    them all. A line of the person's own that sets another merge for the same files
    comes earlier, so memgit's (later) lines win, as git reads them."""
    text = existing.decode("utf-8", "replace") if existing is not None else ""
    present = {" ".join(line.split()) for line in text.splitlines()}
    missing = [line for line in ATTRIBUTE_LINES if line not in present]
    if not missing:
        return None
    if text and not text.endswith("\n"):
        text += "\n"
    return (text + "".join(f"{line}\n" for line in missing)).encode("utf-8")


def driver_command() -> str:
    """The command git runs to merge one file: this interpreter by absolute path, so it
    works without an activated virtual environment (git quotes ``%P`` itself)."""
    return f"{shlex.quote(sys.executable)} -m {DRIVER_MODULE} %O %A %B %P"


def configure_merge_driver(repo: pygit2.Repository) -> bool:
    """Register the merge driver in the clone's config, and merges with no rename
    detection (where the person set neither); whether anything changed.

    A driver command that is not memgit's (a person pointed ``merge.memgit.driver``
    elsewhere) is kept; one that runs memgit's module through another interpreter
    (memgit was reinstalled) is brought up to date.
    """
    config = repo.config
    changed = False
    name_key, driver_key = f"merge.{DRIVER}.name", f"merge.{DRIVER}.driver"
    if name_key not in config:
        config[name_key] = DRIVER_DESCRIPTION
        changed = True
    wanted = driver_command()
    current = config[driver_key] if driver_key in config else None  # noqa: SIM401 (no .get)
    if current is None or (current != wanted and f"-m {DRIVER_MODULE} " in current):
        config[driver_key] = wanted
        changed = True
    for key, value in RENAME_FREE_MERGE:
        if key not in config:
            config[key] = value
            changed = True
    return changed
