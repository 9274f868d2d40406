"""Refuse ``.gitattributes`` lines that would store memgit's files as something else.

memgit reads its files from their blobs and compares working files with them.
Line-ending and ``ident`` conversions are fine: git's own clean filter (which
memgit applies when a working file differs from its blob) undoes them. But a
filter driver (``filter=lfs``) stores a pointer instead of the file, and
``working-tree-encoding`` a re-encoded copy, neither of which memgit (through
libgit2) can undo: memgit would read pointers as memories, and every later
SUPERSEDE or RETRACT in a clone would fail on what looks like a local edit. So
such attributes are refused where they are committed, naming the line; files
other than memgit's may use them freely.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator

from memgit.errors import Problem

ATTRIBUTES_FILE = ".gitattributes"
CONVERTING = ("filter", "working-tree-encoding")
# One file of each kind memgit writes, as a path from the top of the repository.
_OWN_FILES = (
    "memgit.yaml",
    "inbox/agent/00/session/000000.yaml",
    "memories/user/ab/abcdefghijkl.md",
    "runs/2026/11/20261130T103500Z-k3v9x2.json",
)


def iter_attributes_problems(path: str, data: bytes) -> Iterator[Problem]:
    """Problems of the ``.gitattributes`` file at ``path`` whose content is ``data``."""
    folder = path[: -len(ATTRIBUTES_FILE)]
    state: dict[tuple[str, str], int] = {}  # (own file, attribute) -> line that set it
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        words = line.split()
        if not words or words[0].startswith("#") or words[0].startswith("[attr]"):
            continue
        pattern, settings = words[0], words[1:]
        for own in _OWN_FILES:
            if not own.startswith(folder) or not _matches(pattern, own[len(folder) :]):
                continue
            for setting in settings:
                name = setting.lstrip("-!").split("=", 1)[0]
                if name not in CONVERTING:
                    continue
                if setting.startswith(("-", "!")):
                    state.pop((own, name), None)
                else:
                    state[(own, name)] = number
    for number in sorted(set(state.values())):
        names = sorted({name for (own, name), line in state.items() if line == number})
        owns = sorted({own.split("/")[0] for (own, name), line in state.items() if line == number})
        yield Problem(
            code="gitattributes-conversion",
            message=f"sets {', '.join(names)} for memgit's files ({', '.join(owns)}): Git "
            "would store something other than the files memgit reads",
            path=path,
            field=f"line {number}",
            hint="memgit's files must be stored as they are: narrow the pattern, or add "
            "'inbox/** -filter -working-tree-encoding' (and the same for memories/**, "
            "runs/** and memgit.yaml) after it",
        )


def _matches(pattern: str, path: str) -> bool:
    """gitattributes matching, as far as memgit's paths need it: a pattern without a
    slash matches a file name at any depth, one with a slash the path from the folder."""
    if pattern.startswith("/"):
        pattern = pattern[1:]
    if "/" not in pattern.rstrip("/"):
        return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
    if pattern.endswith("/**"):
        return path.startswith(pattern[: -len("**")]) or fnmatch.fnmatchcase(path, pattern)
    return fnmatch.fnmatchcase(path, pattern.replace("**/", "*").replace("/**", "/*"))
