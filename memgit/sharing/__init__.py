"""Sharing a memory repository: clones set up for it, merged memory files, sync."""
