"""A commit as the checks see it: a tree, its parent tree, and what changed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import pygit2

from memgit.constants import CONFIG_FILE, MEMORIES_DIR, REFS_RETIRED
from memgit.errors import MemgitError
from memgit.governance.retired_join import forgotten_by_a_side, retired_by_a_side
from memgit.governance.retirements import Retirements, retired_in
from memgit.memory import Memory, read_memory
from memgit.merge import merge_memory
from memgit.settings import Settings, parse_settings
from memgit.state.lookup import Lookup, TreeWalk
from memgit.store.tree import blob_at, diff_trees, iter_blobs, read_blob

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CommitView:
    """What one commit (or a tree about to become one) holds and changes."""

    repo: pygit2.Repository
    # What the checks ask of whole trees: the derived store for memgit's own writes,
    # the tree itself for the hooks and verify.
    lookup: Lookup
    tree: pygit2.Tree
    parent: pygit2.Tree | None
    # Paths whose content differs from the parent, and paths the parent had but the tree lacks.
    changed: frozenset[str]
    deleted: frozenset[str]
    # The commit this tree builds on (None for a root commit).
    base: pygit2.Oid | None = None
    label: str | None = None
    # The commit's message, where one is known (memgit verify); a staged tree has none yet.
    message: str | None = None
    # Retirements read from history (memgit verify), besides refs/memgit/retired/.
    retirements: Retirements = field(default_factory=dict, compare=False, repr=False)
    # Memory files a merge brings from its other parents that the first parent lacks:
    # checked again for retired ids, though each was checked where it was made.
    merged_in: frozenset[str] = frozenset()
    # Memory files a merge keeps from its first parent that another parent lacks because
    # its history retired them (the same memory made on both sides, one side retired it).
    retired_beside: frozenset[str] = frozenset()
    # Memory files a merge keeps that a parent lacks because its history forgot them
    # (``memgit forget``) since the merge base: the same memory, made on both sides.
    forgotten_beside: frozenset[str] = frozenset()
    # For a merge, each other parent's tree with the merge base's tree: a file both
    # sides changed is explained by the merge when it is the merge driver's join of them.
    joins: tuple[tuple[pygit2.Tree, pygit2.Tree | None], ...] = ()
    _cache: dict[str, object] = field(default_factory=dict, compare=False, repr=False)

    def read(self, path: str) -> bytes | None:
        blob = blob_at(self.tree, path)
        return read_blob(self.repo, blob) if blob is not None else None

    def parsed(self, path: str, parse: Callable[..., T]) -> T:
        """``parse(data, path=path)`` of this tree's file, once per view: several
        checks read each changed memory and run record. A parse error is raised
        again each time."""
        key = f"parsed:{parse.__module__}.{parse.__qualname__}:{path}"
        if key not in self._cache:
            try:
                self._cache[key] = parse(self.read(path) or b"", path=path)
            except MemgitError as err:
                self._cache[key] = err
        value = self._cache[key]
        if isinstance(value, MemgitError):
            raise value
        return value  # type: ignore[return-value]

    def memories(self, paths: Iterable[str]) -> Iterator[tuple[str, Memory]]:
        """(path, memory) for each of ``paths`` that parses: a broken one is
        memgit-schemas' to report, so the other checks pass over it."""
        for path in paths:
            try:
                memory = self.parsed(path, read_memory)
            except MemgitError:
                continue
            yield path, memory

    def changed_memories(self) -> Iterator[tuple[str, Memory]]:
        """(path, memory) of each memory file this commit adds or changes that parses."""
        return self.memories(self.changed_under(f"{MEMORIES_DIR}/", ".md"))

    def mode(self, path: str) -> pygit2.enums.FileMode | None:
        """The file mode of this tree's entry at ``path`` (None where there is none)."""
        try:
            return self.tree[path].filemode
        except KeyError:
            return None

    def read_parent(self, path: str) -> bytes | None:
        blob = blob_at(self.parent, path)
        return read_blob(self.repo, blob) if blob is not None else None

    def rewritten(self, path: str) -> bool:
        """The parent had this file with other content (``changed`` may also hold files
        selected for checking, as ``pre-commit run --all-files`` selects every file)."""
        before = blob_at(self.parent, path)
        return before is not None and before != blob_at(self.tree, path)

    def joined(self, path: str) -> bool:
        """This merge's memory at ``path`` is exactly what the merge driver makes of the
        parents' versions (each explained where it was made), with no conflict left."""
        data = self.read(path)
        ours = self.read_parent(path)
        for theirs_tree, base_tree in self.joins:
            theirs_blob = blob_at(theirs_tree, path)
            if data is None or ours is None or theirs_blob is None:
                continue
            base_blob = blob_at(base_tree, path)
            base = read_blob(self.repo, base_blob) if base_blob is not None else b""
            merged = merge_memory(base, ours, read_blob(self.repo, theirs_blob), path=path)
            if not merged.conflict and merged.data == data:
                return True
        return False

    def differs(self, path: str) -> bool:
        """This commit adds or changes the file."""
        return blob_at(self.parent, path) != blob_at(self.tree, path)

    def object_data(self, oid_hex: str) -> bytes | None:
        """A blob by id, from anywhere in the object database (captures past cleanup)."""
        try:
            found = self.repo.get(oid_hex)
        except (ValueError, pygit2.GitError):
            return None
        return found.data if isinstance(found, pygit2.Blob) else None

    def commit_tree(self, oid_hex: str) -> pygit2.Tree | None:
        try:
            found = self.repo.get(oid_hex)
        except (ValueError, pygit2.GitError):
            return None
        return found.tree if isinstance(found, pygit2.Commit) else None

    @property
    def settings(self) -> Settings | None:
        """The tree's own memgit.yaml, or None when it is missing or broken."""
        if "settings" not in self._cache:
            self._cache["settings"] = self._settings_in(self.read(CONFIG_FILE))
        value = self._cache["settings"]
        return value if isinstance(value, Settings) else None

    @property
    def parent_settings(self) -> Settings | None:
        """The parent tree's memgit.yaml, or None when it is missing or broken."""
        return self._settings_in(self.read_parent(CONFIG_FILE))

    def _settings_in(self, data: bytes | None) -> Settings | None:
        try:
            return parse_settings(data) if data is not None else None
        except MemgitError:
            return None

    def retired_before(self, memory_id: str) -> bool:
        """Whether ``memory_id`` was retired in this tree's base or an ancestor of it: by
        a retiring commit's trailers (for verify), or by ``refs/memgit/retired/<id>``.

        The ref names the last commit the memory was active in, not the one that retired
        it, so a base that descends from it was retired only if the base no longer holds
        the memory: a teammate's branch that updated the memory from that very commit
        has not seen the retirement, and its update is no resurrection."""
        if self.base is None:
            return False
        if retired_in(self.repo, self.retirements, memory_id, self.base) is not None:
            return True
        ref = self.repo.references.get(f"{REFS_RETIRED}{memory_id}")
        if ref is None:
            return False
        active_at = ref.target
        if not isinstance(active_at, pygit2.Oid):
            return False
        if active_at != self.base and not self.repo.descendant_of(self.base, active_at):
            return False
        return self.parent is None or not self.lookup.memory_paths(self.parent, memory_id)

    def paths_of(self, memory_id: str) -> list[str]:
        """Every path of this tree holding memory ``memory_id`` (ids are file names):
        the parent's, as the lookup gives them, with this commit's changes on top."""
        base = self.lookup.memory_paths(self.parent, memory_id) if self.parent is not None else []
        leaf = f"/{memory_id}.md"
        kept = [p for p in base if p not in self.deleted and p not in self.changed]
        added = [p for p in self.changed if p.startswith(f"{MEMORIES_DIR}/") and p.endswith(leaf)]
        return sorted({*kept, *added})

    def changed_under(self, prefix: str, suffix: str) -> Iterator[str]:
        return (p for p in sorted(self.changed) if p.startswith(prefix) and p.endswith(suffix))


def diff_paths(
    repo: pygit2.Repository, parent: pygit2.Tree | None, tree: pygit2.Tree
) -> tuple[frozenset[str], frozenset[str]]:
    """(changed or added, deleted) paths between two trees; equal subtrees are skipped."""
    if parent is None:
        return frozenset(path for path, _ in iter_blobs(repo, tree)), frozenset()
    diff = diff_trees(repo, parent, tree)
    changed = frozenset(path for path, entry in diff.items() if entry is not None)
    return changed, frozenset(diff.keys() - changed)


def view_of_commit(
    repo: pygit2.Repository, commit: pygit2.Commit, lookup: Lookup | None = None
) -> CommitView:
    base = commit.parents[0] if commit.parents else None
    view = view_of_tree(repo, commit.tree, base, lookup, merged=commit.parents[1:])
    return replace(view, label=str(commit.id), message=commit.message)


def view_of_tree(
    repo: pygit2.Repository,
    tree: pygit2.Tree,
    base: pygit2.Commit | None,
    lookup: Lookup | None = None,
    *,
    merged: Sequence[pygit2.Commit] = (),
) -> CommitView:
    """A tree about to be committed on ``base`` (memgit's writes, the staged tree), and
    merging ``merged``; without a ``lookup``, the checks read whole trees themselves."""
    parent = base.tree if base is not None else None
    changed, deleted = diff_paths(repo, parent, tree)
    view = CommitView(
        repo=repo,
        lookup=lookup if lookup is not None else TreeWalk(repo),
        tree=tree,
        parent=parent,
        changed=changed,
        deleted=deleted,
        base=base.id if base is not None else None,
    )
    return _as_merge(view, merged) if merged else view


def _as_merge(view: CommitView, others: Sequence[pygit2.Commit]) -> CommitView:
    """A merge is checked only for what differs from every parent: what each side brings
    was checked where it was made. But a memory retired on the first parent's side must
    not come back through the merge (``merged_in``), nor one a side retired or forgot
    since the merge base (``retired_beside``, ``forgotten_beside``), and a memory both
    sides changed must be the merge driver's join of them (``joins``)."""
    repo = view.repo
    changed = set(view.changed)
    for other in others:
        changed &= diff_paths(repo, other.tree, view.tree)[0]
    merged_in = {
        path
        for path in view.changed - changed
        if path.startswith(f"{MEMORIES_DIR}/") and blob_at(view.parent, path) is None
    }
    joins = []
    retired: set[str] = set()
    forgotten: set[str] = set()
    first = repo.get(view.base) if view.base is not None else None
    refs = {
        name: ref.target
        for name in repo.references
        if name.startswith(REFS_RETIRED)
        and isinstance(ref := repo.references[name], pygit2.Reference)
        and isinstance(ref.target, pygit2.Oid)
    }
    for other in others:
        base = repo.merge_base(view.base, other.id) if view.base is not None else None
        base_commit = repo.get(base) if base is not None else None
        base_tree = base_commit.tree if isinstance(base_commit, pygit2.Commit) else None
        joins.append((other.tree, base_tree))
        retired.update(
            path
            for path in retired_by_a_side(repo, view.tree, [(other, refs)], base)
            if blob_at(view.parent, path) is not None
        )
        sides = [side for side in (first, other) if isinstance(side, pygit2.Commit)]
        forgotten.update(forgotten_by_a_side(repo, view.tree, sides, base))
    return replace(
        view,
        changed=frozenset(changed),
        merged_in=frozenset(merged_in),
        retired_beside=frozenset(retired),
        forgotten_beside=frozenset(forgotten - retired),
        joins=tuple(joins),
    )
