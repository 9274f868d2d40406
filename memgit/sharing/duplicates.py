"""Memories two clones created apart that say nearly the same: kept, and reported.

A merge keeps both (each has its own evidence and run); sync names the pairs
whose words mostly coincide, so a person (or the next Gate run) can merge them.
"""

from __future__ import annotations

from collections.abc import Iterable

import pygit2

from memgit.errors import MemgitError
from memgit.memory import read_memory
from memgit.store.tree import read_blob
from memgit.tokens import STOP_WORDS, iter_query_words

SIMILARITY = 0.6
"""Shared words over all words (title and body) from which two memories are reported."""


def possible_duplicates(
    repo: pygit2.Repository,
    ours: Iterable[tuple[str, pygit2.Oid]],
    theirs: Iterable[tuple[str, pygit2.Oid]],
) -> list[tuple[str, str]]:
    """(our memory id, their memory id) of each close pair, sorted; ``ours`` and
    ``theirs`` are (path, blob id) of the memories each side added."""
    mine = _words_by_id(repo, ours)
    other = _words_by_id(repo, theirs)
    pairs = []
    for a, words_a in mine.items():
        for b, words_b in other.items():
            if a != b and words_a and words_b:
                shared = len(words_a & words_b) / len(words_a | words_b)
                if shared >= SIMILARITY:
                    pairs.append((a, b))
    return sorted(pairs)


def _words_by_id(
    repo: pygit2.Repository, files: Iterable[tuple[str, pygit2.Oid]]
) -> dict[str, frozenset[str]]:
    found = {}
    for path, blob in files:
        try:
            memory = read_memory(read_blob(repo, blob), path=path)
        except MemgitError:
            continue  # not a memory memgit can read: memgit-schemas reports it
        text = f"{memory.title}\n{memory.body or ''}"
        found[memory.id] = frozenset(w for w in iter_query_words(text) if w not in STOP_WORDS)
    return found
