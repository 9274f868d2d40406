"""Agent host integrations: the hook programs hosts run, and ``memgit install``.

A host (Claude Code, Codex, any program with turns to hand over) runs
:mod:`memgit.hosts.hook` on its events; :mod:`memgit.hosts.install` merges
that command into the host's configuration. The readable wrappers users can
install by hand live in the checkout's top-level ``hooks/`` folder.
"""
