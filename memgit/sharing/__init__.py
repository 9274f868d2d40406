"""Sharing a memory repository between clones: what ``memgit init`` configures in a
clone (refspecs, the merge driver, hooks) and the merge driver git runs."""
