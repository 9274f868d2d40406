"""The recall index: SQLite FTS5 with BM25, cached in ``.git/memgit/index.sqlite``.

``lexical.LexicalIndex`` is the entry point; the other modules are its parts:
``tokens`` (text and queries to terms, CJK segmentation), ``documents`` (files
to values), ``database`` (schema, opening, transactions), ``rows`` (inserts
and deletes), ``refresh`` (tree-stamped refresh), ``retired`` (retired refs),
``overlay`` (uncommitted edits), ``search`` (ranked queries), ``snippets`` and
``overview`` (the numbers behind ``memgit map``). Only this package imports
sqlite3.
"""
