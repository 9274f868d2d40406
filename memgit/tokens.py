"""Text to index terms, and a user's query to FTS5 terms that can never be syntax.

FTS5 does the English side: the ``porter unicode61 remove_diacritics 2``
tokenizer folds case and diacritics and stems. It does not segment Chinese or
Japanese, which have no spaces between words, so every run of CJK characters
is rewritten here, in Python, before it reaches SQLite: into its single
characters and overlapping character bigrams when indexing, and into bigrams
(or the character, for a run of one) when querying. See
docs/decisions/0003-cjk-tokenisation.md.

A query never reaches FTS5 as syntax: it is split into words here, and each
word is passed as a double-quoted FTS5 string, so ``AND``, ``NEAR``, ``*``,
``"``, ``:`` and column names are plain words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memgit.constants import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from memgit.errors import InvalidInputError

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
MAX_TERM_CHARS = 64

# Scripts written without spaces between words: Han, kana, Hangul (whose words
# carry attached particles, so bigrams help there too).
_CJK = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
    "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
CJK_RUN = re.compile(f"[{_CJK}]+")
# What FTS5's unicode61 keeps as token characters (letters and numbers); the
# rest separates. Underscore is punctuation to unicode61, so it separates too.
_QUERY_PIECE = re.compile(f"[{_CJK}]+|[^\\W_]+")

# Function words that carry no topic. Measured on LoCoMo (docs/performance.md):
# dropping them raises recall and cuts query time, because BM25 no longer
# scores nearly every document for "what did you".
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during
    each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just me more most my myself no
    nor not of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves
    s t ll re ve d m don didn doesn isn wasn aren weren
    """.split()
)


def _cjk_index_tokens(run: str) -> str:
    if len(run) == 1:
        return run
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    return " ".join([*run, *bigrams])


def index_text(text: str) -> str:
    """``text`` as FTS5 should see it: NFKC-normalised, CJK runs segmented."""
    text = unicodedata.normalize("NFKC", text)
    if not CJK_RUN.search(text):
        return text
    return CJK_RUN.sub(lambda match: f" {_cjk_index_tokens(match.group())} ", text)


# A query's own terms are given this many times in the MATCH expression, the
# terms the vocabulary adds once: FTS5's bm25() sums over every phrase of the
# expression, so an added term counts 1/OWN_TERM_REPEAT of a term the user typed
# (docs/decisions/0011-recall-vocabulary.md).
OWN_TERM_REPEAT = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Expansion:
    """A term the recall vocabulary adds to a query: ``term`` as the vocabulary
    writes it, ``phrase`` its words as a query has them (CJK as character pairs),
    ``source`` the vocabulary entry the query named that brought it in."""

    term: str
    phrase: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """A parsed query: the terms to search, what was left out and why, and the
    terms the vocabulary added (none until :func:`memgit.derived.vocabulary.expand`)."""

    text: str
    terms: tuple[str, ...]
    stop_words: tuple[str, ...] = ()
    dropped: int = 0
    expansions: tuple[Expansion, ...] = ()

    def fts(self, columns: tuple[str, ...] = ()) -> str:
        """An FTS5 MATCH expression: every term quoted, joined by OR; with expansions,
        the own terms OWN_TERM_REPEAT times and each added phrase once, looked for in
        ``columns`` only when given."""
        own = " OR ".join(quote_term(term) for term in self.terms)
        if not self.expansions:
            return own
        where = "{" + " ".join(columns) + "} : " if columns else ""
        added = [where + quote_term(expansion.phrase) for expansion in self.expansions]
        return " OR ".join([own] * OWN_TERM_REPEAT + added)

    @property
    def score_scale(self) -> int:
        """What bm25() of :meth:`fts` is divided by to be on the scale of the own terms."""
        return OWN_TERM_REPEAT if self.expansions else 1


def quote_term(term: str) -> str:
    """One term as an FTS5 string: whatever it holds, it is text, never an operator."""
    return '"' + term.replace('"', '""') + '"'


def iter_query_words(text: str) -> list[str]:
    """Words of a query in order: letter/digit runs, CJK runs as bigrams."""
    words: list[str] = []
    for match in _QUERY_PIECE.finditer(unicodedata.normalize("NFKC", text)):
        piece = match.group()
        if CJK_RUN.fullmatch(piece):
            if len(piece) == 1:
                words.append(piece)
            else:
                words.extend(piece[i : i + 2] for i in range(len(piece) - 1))
        else:
            words.append(piece[:MAX_TERM_CHARS].lower())
    return words


def parse_query(text: object, *, max_terms: int = MAX_QUERY_TERMS) -> Query:
    """Split a query into distinct terms; stop words go unless nothing else is left.

    Raises ``invalid-query`` for a query that is not text, is empty, has no
    word in it, or is longer than MAX_QUERY_CHARS. A query with more than
    ``max_terms`` distinct terms keeps the first ``max_terms``.
    """
    if not isinstance(text, str):
        raise InvalidInputError(
            f"a query must be text, not {type(text).__name__}", code="invalid-query"
        )
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            f"the query is {len(text):,} characters; the limit is {MAX_QUERY_CHARS:,}",
            code="invalid-query",
            hint=f"only the first {max_terms} distinct words are used anyway; send fewer",
        )
    if not text.strip():
        raise InvalidInputError(
            "the query is empty",
            code="invalid-query",
            hint="give some words to look for, e.g. `memgit recall 'postgres version'`",
        )
    seen: dict[str, None] = {}
    for word in iter_query_words(text):
        seen.setdefault(word, None)
    words = list(seen)
    if not words:
        raise InvalidInputError(
            f"the query {_shorten(text)} has no words to look for",
            code="invalid-query",
            hint="a query needs letters or digits; punctuation alone matches nothing",
        )
    kept = [word for word in words if word not in STOP_WORDS]
    stop = [word for word in words if word in STOP_WORDS]
    if not kept:
        kept, stop = words, []
    return Query(
        text=text,
        terms=tuple(kept[:max_terms]),
        stop_words=tuple(stop),
        dropped=max(0, len(kept) - max_terms),
    )


def _shorten(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")
