"""Sharing a memory repository between clones: what ``memgit init`` configures in a
clone (refspecs, the merge driver, hooks), the merge driver git runs, and ``memgit
sync`` (fetch, join, check, push)."""
