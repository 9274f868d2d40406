"""``memgit mcp``: a stdio MCP server over :class:`memgit.MemoryRepo` for agent hosts.

Needs the optional ``mcp`` SDK (``pip install -e '.[mcp]'`` in memgit's checkout); nothing outside
this package and ``memgit/cli/mcp.py`` imports it.
"""
