"""memgit: an AI agent's long-term memory kept in a Git repository.

The public API is :class:`MemoryRepo`, the :class:`MemgitError` tree and
:func:`json_data`, which renders any result as its command's ``--json``. Heavy
modules (pygit2 above all) load on first use, so ``memgit --version`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["MemgitError", "MemoryRepo", "__version__", "json_data"]

if TYPE_CHECKING:
    from memgit.errors import MemgitError
    from memgit.jsonio import json_data
    from memgit.repo import MemoryRepo


def __getattr__(name: str) -> Any:
    if name == "MemoryRepo":
        from memgit.repo import MemoryRepo

        return MemoryRepo
    if name == "MemgitError":
        from memgit.errors import MemgitError

        return MemgitError
    if name == "json_data":
        from memgit.jsonio import json_data

        return json_data
    raise AttributeError(f"module 'memgit' has no attribute {name!r}")
