"""The recall vocabulary: a query that says "test framework" also looks for pytest.

Lexical recall finds only the words a memory holds, and people name the same
thing in different words: a memory says "I prefer pytest", the question asks
"which test framework". ``vocabulary.yaml`` beside this module holds a small,
general set of groups (a thing's names, and the names of its kinds; the file
says where each comes from and the rule for adding one). :func:`expand` adds
the related terms of every entry a query names; the query then gives its own
terms twice and the added ones once (:meth:`Query.fts`), so an added term
counts half. See docs/decisions/0011-recall-vocabulary.md.

Entries and query words are compared as the index compares them: through the
index's own FTS5 tokenizer (Porter stemming included), run in a private
in-memory SQLite database, so "frameworks" names "framework" exactly when the
index would match them.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from memgit.errors import InvalidInputError
from memgit.tokens import FTS_TOKENIZER, Expansion, Query, iter_query_words
from memgit.yamlio import parse_yaml

SOURCE = "memgit/derived/vocabulary.yaml"
# At most this many terms are added to one query (entries in file order).
MAX_EXPANSIONS = 32
_MAX_CACHED_WORDS = 50_000
_GROUP_KEYS = {"name", "from", "words", "kinds"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """A thing's interchangeable names (``words``) and the names of its kinds."""

    name: str
    origin: str
    words: tuple[str, ...]
    kinds: tuple[str, ...] = ()


def parse_vocabulary(text: str, *, source: str = SOURCE) -> tuple[Group, ...]:
    """The groups of a vocabulary file; a file of another shape raises ``invalid-vocabulary``."""
    data = parse_yaml(text, source=source)
    if not isinstance(data, dict) or data.get("format") != 1:
        raise _invalid("the file must be a mapping with format: 1", source, "format")
    groups = data.get("groups")
    if not isinstance(groups, list) or not groups:
        raise _invalid("groups must be a non-empty list", source, "groups")
    parsed = []
    for number, group in enumerate(groups):
        field = f"groups[{number}]"
        if not isinstance(group, dict) or not {"name", "from", "words"} <= set(group):
            raise _invalid("a group needs name, from and words", source, field)
        if set(group) - _GROUP_KEYS:
            extra = ", ".join(sorted(set(group) - _GROUP_KEYS))
            raise _invalid(f"unknown keys: {extra}", source, field)
        for key in ("name", "from"):
            if not isinstance(group[key], str) or not group[key].strip():
                raise _invalid(f"{key} must be text", source, f"{field}.{key}")
        words = _entries(group["words"], source, f"{field}.words")
        kinds = _entries(group.get("kinds", []), source, f"{field}.kinds", empty=True)
        parsed.append(Group(name=group["name"], origin=group["from"], words=words, kinds=kinds))
    return tuple(parsed)


def _entries(value: Any, source: str, field: str, *, empty: bool = False) -> tuple[str, ...]:
    if not isinstance(value, list) or not (value or empty):
        raise _invalid("must be a list of terms", source, field)
    for number, entry in enumerate(value):
        if not isinstance(entry, str) or not iter_query_words(entry):
            raise _invalid("a term must be text with a word in it", source, f"{field}[{number}]")
        if entry != entry.strip().lower():
            raise _invalid("a term is written in lower case", source, f"{field}[{number}]")
    if len(set(value)) != len(value):
        raise _invalid("a term is listed twice", source, field)
    return tuple(value)


def _invalid(message: str, source: str, field: str) -> InvalidInputError:
    return InvalidInputError(message, code="invalid-vocabulary", path=source, field=field)


class Stemmer:
    """Words to the index's tokens, by the index's own tokenizer (an in-memory FTS5
    table and its fts5vocab ``instance`` view); answers are kept, up to a bound."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE word USING fts5(w, tokenize='{FTS_TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE word_token USING fts5vocab(word, 'instance')")
        self._lock = threading.Lock()
        self._known: dict[str, tuple[str, ...]] = {}

    def tokens(self, words: Iterable[str]) -> list[tuple[str, ...]]:
        """Each word's tokens (one for nearly every word; none for a word the tokenizer drops)."""
        words = list(words)
        with self._lock:
            missing = [word for word in dict.fromkeys(words) if word not in self._known]
            if missing:
                if len(self._known) + len(missing) > _MAX_CACHED_WORDS:
                    self._known.clear()
                    missing = list(dict.fromkeys(words))
                self._known.update(self._read(missing))
            return [self._known[word] for word in words]

    def _read(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        found: dict[int, list[str]] = defaultdict(list)
        # One transaction, rolled back: FTS5 then keeps the rows in memory instead of
        # writing a segment per row, and the table is empty again afterwards.
        self._conn.execute("BEGIN")
        try:
            self._conn.executemany(
                "INSERT INTO word(rowid, w) VALUES (?, ?)", list(enumerate(words, 1))
            )
            for doc, term in self._conn.execute(
                "SELECT doc, term FROM word_token ORDER BY doc, offset"
            ):
                found[doc].append(term)
        finally:
            self._conn.execute("ROLLBACK")
        return {word: tuple(found[number]) for number, word in enumerate(words, 1)}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    text: str
    phrase: str  # the entry's query words, space-separated
    tokens: tuple[str, ...]
    group: int
    kind: bool


class Vocabulary:
    """The groups with every entry in the index's tokens, ready to expand queries."""

    def __init__(self, groups: Sequence[Group], stemmer: Stemmer) -> None:
        self.groups = tuple(groups)
        self.stemmer = stemmer
        entries = []
        every = [
            w for g in self.groups for text in (*g.words, *g.kinds) for w in iter_query_words(text)
        ]
        stemmer.tokens(every)  # one pass for the whole file; each entry then reads the cache
        for number, group in enumerate(self.groups):
            for kind, texts in ((False, group.words), (True, group.kinds)):
                for text in texts:
                    words = iter_query_words(text)
                    tokens = tuple(t for found in stemmer.tokens(words) for t in found)
                    entries.append(
                        _Entry(
                            text=text,
                            phrase=" ".join(words),
                            tokens=tokens,
                            group=number,
                            kind=kind,
                        )
                    )
        self._entries = tuple(entries)
        self._by_first: dict[str, list[_Entry]] = defaultdict(list)
        for entry in self._entries:
            if entry.tokens:
                self._by_first[entry.tokens[0]].append(entry)

    def expand(self, query: Query) -> Query:
        """``query`` with the terms its named entries bring in (docstring of the module)."""
        spoken = [t for found in self.stemmer.tokens(iter_query_words(query.text)) for t in found]
        searched = {t for found in self.stemmer.tokens(query.terms) for t in found}
        named: dict[int, list[_Entry]] = {}
        for start, token in enumerate(spoken):
            for entry in self._by_first.get(token, ()):
                if tuple(spoken[start : start + len(entry.tokens)]) == entry.tokens:
                    named.setdefault(entry.group, []).append(entry)
        added: dict[str, Expansion] = {}
        for entry in self._entries:
            found = named.get(entry.group)
            if not found or entry in found or set(entry.tokens) <= searched:
                continue
            if entry.kind and all(named_entry.kind for named_entry in found):
                continue  # a kind brings in its group's words, not its siblings
            if entry.phrase not in added and len(added) < MAX_EXPANSIONS:
                source = found[0].text
                added[entry.phrase] = Expansion(term=entry.text, phrase=entry.phrase, source=source)
        return replace(query, expansions=tuple(added.values()))

    def found_in(self, expansions: Sequence[Expansion], texts: Iterable[str]) -> tuple[str, ...]:
        """The terms of ``expansions`` that occur in one of ``texts`` as the index would
        match them (a phrase within one text, its words in order)."""
        spoken = [
            tuple(t for found in self.stemmer.tokens(iter_query_words(text)) for t in found)
            for text in texts
        ]
        found = []
        for expansion in expansions:
            wanted = tuple(t for w in self.stemmer.tokens(expansion.phrase.split()) for t in w)
            if wanted and any(_holds(tokens, wanted) for tokens in spoken):
                found.append(expansion.term)
        return tuple(found)


def _holds(tokens: tuple[str, ...], wanted: tuple[str, ...]) -> bool:
    size = len(wanted)
    return any(tokens[start : start + size] == wanted for start in range(len(tokens) - size + 1))


@functools.cache
def load_vocabulary() -> Vocabulary:
    """The vocabulary memgit ships, read once per process."""
    text = resources.files(__package__).joinpath("vocabulary.yaml").read_text("utf-8")
    return Vocabulary(parse_vocabulary(text), Stemmer())


def expand(query: Query) -> Query:
    """``query`` with the shipped vocabulary's terms added."""
    return load_vocabulary().expand(query)


def found_in(expansions: Sequence[Expansion], texts: Iterable[str]) -> tuple[str, ...]:
    """:meth:`Vocabulary.found_in` with the shipped vocabulary's tokenizer."""
    return load_vocabulary().found_in(expansions, texts)
