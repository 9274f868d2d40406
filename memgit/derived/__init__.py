"""The derived store: one SQLite file, ``.git/memgit/index.sqlite``, stamped with a tree.

It holds the recall index (SQLite FTS5 with BM25) and the processing state's
rows, both refreshed from the same tree diff. ``lexical.LexicalIndex`` owns
the connection and keeps it current; the other modules are its parts:
``documents`` (files to values), ``database`` (schema, opening, transactions),
``refresh`` (the tree-stamped refresh), ``rows`` and ``state_rows`` (the
recall rows and the processing state's), ``lookup`` (the store's answers to
the checks and the state, :mod:`memgit.state.lookup`), ``archive`` (turns the
history removed), ``retired`` (retired refs), ``overlay`` (uncommitted edits),
``tokens`` (text and queries to terms), ``search`` (ranked queries),
``snippets``, ``similar`` and ``overview``. Only this package imports sqlite3.
"""
