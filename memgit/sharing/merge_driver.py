"""The merge driver git runs for memgit's files (``merge=memgit`` in .gitattributes).

Git calls ``python -m memgit.sharing.merge_driver %O %A %B %P``: the base, ours
(the result is written there), theirs, and the file's path in the repository.
Exit 0 means merged; 1 means a conflict, with markers left in %A for a person.
A memory is merged field by field, a run record or capture never conflicts
(:mod:`memgit.merge`); any other file, or one the driver cannot read,
is a plain conflict with both sides kept. The driver never loses a side: when
it fails it leaves %A as it was and exits 2, which git reports as a conflict.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memgit.merge import merge_file

USAGE = "usage: python -m memgit.sharing.merge_driver BASE OURS THEIRS PATH"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 4:
        print(f"error[usage]: {USAGE}", file=sys.stderr)
        return 2
    base, ours, theirs, path = args
    try:
        merged = merge_file(
            Path(base).read_bytes(), Path(ours).read_bytes(), Path(theirs).read_bytes(), path=path
        )
        Path(ours).write_bytes(merged.data)
    except OSError as err:
        print(f"error[merge-failed]: {path}: {err.strerror or err}", file=sys.stderr)
        return 2
    if merged.note:
        print(merged.note, file=sys.stderr)
    return 1 if merged.conflict else 0


if __name__ == "__main__":
    sys.exit(main())
