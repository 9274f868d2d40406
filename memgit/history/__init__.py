"""A memory's history, read from the commit graph: log, show, blame, diff.

Everything here only reads: Git already holds every version of every memory,
and these modules find them by id (the scope, and so the path, can change on
UPDATE) through HEAD's history (every side of a merge) or
``refs/memgit/retired/<id>``.
"""
