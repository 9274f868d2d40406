"""Rewrite the history of every local ref, then move all the refs at once.

A rewrite is two rules: one for each file of each commit's tree (keep it, drop
it, or give its new content) and one for commit and tag messages. Every commit
reachable from a ref is rebuilt parents first; a commit whose tree, parents and
message come out the same keeps its id, so history before the first change is
untouched. Commits and annotated tags are rebuilt from their raw objects, so
author, committer, tagger and encoding stay byte for byte (a signature does not
survive: it signed other content, and is dropped).

The new objects are all written before any ref moves. The plan (every ref's old
and new id, and the checked-out tree before and after) is written to
``.git/memgit/rewrite.json`` and named in the writer lock's journal; only then
do the refs move, in one ref transaction. A writer killed while they move leaves
the journal, and the next one to take the lock finishes the move
(:func:`finish_rewrite`): so the refs end up all old (killed before the plan
was journaled) or all new, never some of each.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from memgit import git
from memgit.constants import CACHE_DIR, LOCK_FILE
from memgit.errors import ConflictError
from memgit.jsonio import json_as, json_data
from memgit.store.lock import WriterLock

PLAN_FILE = "rewrite.json"
JOURNAL_OP = "rewrite"

# A file's rule: its path, blob id and the commits rewritten so far (old -> new, hex)
# give what to keep there: the same blob id, new content, or None to drop the file.
FileRule = Callable[[str, pygit2.Oid, Mapping[str, str]], pygit2.Oid | bytes | None]
MessageRule = Callable[[bytes], bytes]

_SIGNATURE_HEADERS = (b"gpgsig", b"gpgsig-sha256", b"mergetag")
_SIGNATURE_BLOCK = re.compile(rb"\n?-----BEGIN (PGP|SSH) SIGNATURE-----.*\Z", re.DOTALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class RefMove:
    name: str = field(metadata=json_as(key="ref"))
    old: str
    new: str | None  # None: the ref is deleted


class HistoryRewriter:
    """Builds the new objects for one rewrite; nothing is published here."""

    def __init__(self, repo: pygit2.Repository, files: FileRule, message: MessageRule) -> None:
        self.repo = repo
        self.files = files
        self.message = message
        self.commits: dict[str, str] = {}
        self._trees: dict[tuple[str, str], pygit2.Oid | None] = {}

    def rewrite_refs(
        self, names: Iterable[str], *, drop: Iterable[str] = ()
    ) -> tuple[RefMove, ...]:
        """The moves that put the refs ``names`` on the rewritten history (and delete the
        refs ``drop``); refs that come out the same are not listed."""
        targets = {name: self.repo.references[name].target for name in names}
        tips = [oid for oid in targets.values() if isinstance(oid, pygit2.Oid)]
        self._rewrite_commits(tips)
        moves = []
        dropped = set(drop)
        for name, target in sorted(targets.items()):
            if not isinstance(target, pygit2.Oid):
                continue
            if name in dropped:
                moves.append(RefMove(name=name, old=str(target), new=None))
                continue
            new = self._object(target)
            if new != target:
                moves.append(RefMove(name=name, old=str(target), new=str(new)))
        return tuple(moves)

    def _rewrite_commits(self, tips: list[pygit2.Oid]) -> None:
        commits = [self._peel_to_commit(oid) for oid in tips]
        starts = [c.id for c in commits if c is not None]
        if not starts:
            return
        walker = self.repo.walk(
            starts[0], pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE
        )
        for start in starts[1:]:
            walker.push(start)
        for commit in walker:
            self.commits[str(commit.id)] = str(self._commit(commit))

    def _peel_to_commit(self, oid: pygit2.Oid) -> pygit2.Commit | None:
        found = self.repo.get(oid)
        while isinstance(found, pygit2.Tag):
            found = self.repo.get(found.target)
        return found if isinstance(found, pygit2.Commit) else None

    def _object(self, oid: pygit2.Oid) -> pygit2.Oid:
        """The new id of a ref's target: a rewritten commit, a rebuilt tag, or itself."""
        found = self.repo.get(oid)
        if isinstance(found, pygit2.Commit):
            return pygit2.Oid(hex=self.commits[str(oid)])
        if isinstance(found, pygit2.Tag):
            return self._tag(found)
        return oid

    def _commit(self, commit: pygit2.Commit) -> pygit2.Oid:
        tree = self._tree(commit.tree, "") or self.repo.TreeBuilder().write()
        parents = [self.commits[str(p)] for p in commit.parent_ids]
        raw = self.repo.odb.read(commit.id)[1]
        header, _, message = raw.partition(b"\n\n")
        new_message = self.message(message)
        same_parents = parents == [str(p) for p in commit.parent_ids]
        if tree == commit.tree_id and same_parents and new_message == message:
            return commit.id
        lines = [b"tree " + str(tree).encode()]
        lines += [b"parent " + p.encode() for p in parents]
        lines += _kept_headers(header)
        data = b"\n".join(lines) + b"\n\n" + new_message
        return self.repo.odb.write(pygit2.enums.ObjectType.COMMIT, data)

    def _tag(self, tag: pygit2.Tag) -> pygit2.Oid:
        target = self._object(tag.target)
        raw = self.repo.odb.read(tag.id)[1]
        header, _, message = raw.partition(b"\n\n")
        new_message = self.message(message)
        if target == tag.target and new_message == message:
            return tag.id
        new_message = _SIGNATURE_BLOCK.sub(b"", new_message)
        lines = [b"object " + str(target).encode()]
        lines += [line for line in header.split(b"\n") if not line.startswith(b"object ")]
        data = b"\n".join(lines) + b"\n\n" + new_message
        return self.repo.odb.write(pygit2.enums.ObjectType.TAG, data)

    def _tree(self, tree: pygit2.Tree, prefix: str) -> pygit2.Oid | None:
        """The rewritten tree; None when nothing is left of it (git holds no empty folder)."""
        key = (prefix, str(tree.id))
        if key in self._trees:
            return self._trees[key]
        builder = self.repo.TreeBuilder()
        changed = False
        for entry in tree:
            path = f"{prefix}{entry.name}"
            kept: pygit2.Oid | None = entry.id
            if entry.type_str == "tree":
                kept = self._tree(self.repo[entry.id].peel(pygit2.Tree), f"{path}/")
            elif entry.type_str == "blob":
                content = self.files(path, entry.id, self.commits)
                kept = self.repo.create_blob(content) if isinstance(content, bytes) else content
            if kept is None:
                changed = True
                continue
            changed = changed or kept != entry.id
            builder.insert(str(entry.name), kept, entry.filemode)
        result = (builder.write() if len(builder) else None) if changed else tree.id
        self._trees[key] = result
        return result


def _kept_headers(header: bytes) -> list[bytes]:
    """A commit's headers after tree and parents, without signatures (and their
    continuation lines, which start with a space)."""
    kept: list[bytes] = []
    skipping = False
    for line in header.split(b"\n"):
        if line.startswith(b" "):
            if not skipping:
                kept.append(line)
            continue
        name = line.split(b" ", 1)[0]
        skipping = name in _SIGNATURE_HEADERS
        if name not in (b"tree", b"parent") and not skipping:
            kept.append(line)
    return kept


def local_refs(repo: pygit2.Repository) -> list[str]:
    """Every ref that names an object directly (symbolic ones follow them)."""
    names = []
    for name in repo.listall_references():
        ref = repo.references.get(name)
        if ref is not None and isinstance(ref.target, pygit2.Oid):
            names.append(name)
    return sorted(names)


def publish_rewrite(
    repo: pygit2.Repository,
    lock: WriterLock,
    moves: tuple[RefMove, ...],
    checkout: tuple[str, str] | None,
) -> None:
    """Journal the plan, move every ref in one transaction, bring the checkout from the
    old tree to the new one (``checkout``), and drop what still holds the old history:
    reflogs, unreachable objects, derived caches. Held: the writer lock."""
    plan = {
        "refs": json_data(moves),
        "checkout": list(checkout) if checkout is not None else None,
    }
    path = Path(repo.path) / CACHE_DIR / PLAN_FILE
    temporary = path.with_suffix(".tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump(plan, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    lock.write({"op": JOURNAL_OP, "plan": PLAN_FILE})
    _move(repo, moves)
    _finish(repo, plan)
    lock.write({})


def planned_moves(repo: pygit2.Repository) -> tuple[dict[str, Any], tuple[RefMove, ...]] | None:
    """The journaled plan of a rewrite and its ref moves; None when there is none."""
    path = Path(repo.path) / CACHE_DIR / PLAN_FILE
    try:
        plan = json.loads(path.read_text("utf-8"))
        moves = tuple(
            RefMove(name=item["ref"], old=item["old"], new=item["new"]) for item in plan["refs"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return plan, moves


def finish_rewrite(repo: pygit2.Repository) -> None:
    """Complete a rewrite whose writer was killed after its plan was journaled: every
    ref still at its old id is moved, then the checkout and cleanup run again. The
    caller has removed the ref locks the killed writer left."""
    planned = planned_moves(repo)
    if planned is None:
        return
    plan, moves = planned
    pending = tuple(
        move
        for move in moves
        if (ref := repo.references.get(move.name)) is not None and str(ref.target) == move.old
    )
    _move(repo, pending)
    _finish(repo, plan)


def _move(repo: pygit2.Repository, moves: tuple[RefMove, ...]) -> None:
    if not moves:
        return
    try:
        with repo.transaction() as transaction:
            for move in moves:
                transaction.lock_ref(move.name)
            for move in moves:
                ref = repo.references.get(move.name)
                if ref is None or str(ref.target) != move.old:
                    raise ConflictError(
                        f"{move.name} moved while the history was rewritten",
                        code="ref-moved",
                        path=move.name,
                        hint="nothing was changed; run the command again",
                    )
                if move.new is None:
                    transaction.remove(move.name)
                else:
                    transaction.set_target(
                        move.name, pygit2.Oid(hex=move.new), None, "memgit: rewrite"
                    )
    except pygit2.GitError as err:
        raise ConflictError(
            f"cannot lock the refs to rewrite: {err}",
            code="git-lock",
            path="refs",
            hint="a git command may be running; retry when it is done",
        ) from err


def _finish(repo: pygit2.Repository, plan: Mapping[str, Any]) -> None:
    git_dir = Path(repo.path)
    checkout = plan.get("checkout")
    if checkout is not None:
        # A two-tree merge moves the index and files from the old tree to the new one
        # and refuses to overwrite an edit; already at the new tree, it changes nothing.
        # Stat data gone stale (a copied checkout) would read as edits: refresh it first.
        git.run(repo.workdir, "update-index", "-q", "--refresh")
        _git(repo, "read-tree", "-m", "-u", checkout[0], checkout[1])
    _git(repo, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    # Files git leaves naming old commits or holding an old message.
    for leftover in ("ORIG_HEAD", "FETCH_HEAD", "COMMIT_EDITMSG"):
        (git_dir / leftover).unlink(missing_ok=True)
    _git(repo, "gc", "--quiet", "--prune=now")
    cache = git_dir / CACHE_DIR
    for item in cache.iterdir():
        if item.name in (LOCK_FILE, PURGED_FILE):
            continue
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink(missing_ok=True)


PURGED_FILE = "purged-commits"
"""The commits purges replaced, one id a line: what this clone must never take back.
Not a cache: it is never rebuilt or dropped, and it holds ids, never content."""


def record_purged(repo: pygit2.Repository, replaced: Iterable[str]) -> None:
    """Add the ids of commits a purge replaced to :data:`PURGED_FILE`."""
    path = Path(repo.path) / CACHE_DIR / PURGED_FILE
    known = purged_commits(repo)
    new = sorted(set(replaced) - known)
    if new:
        with path.open("a", encoding="ascii") as record:
            record.write("".join(f"{oid}\n" for oid in new))


def purged_commits(repo: pygit2.Repository) -> frozenset[str]:
    """The commits purges in this clone replaced (none when it never purged)."""
    try:
        text = (Path(repo.path) / CACHE_DIR / PURGED_FILE).read_text("ascii")
    except (FileNotFoundError, UnicodeDecodeError):
        return frozenset()
    return frozenset(line for line in text.split() if len(line) == 40)


def _git(repo: pygit2.Repository, *args: str) -> None:
    workdir = repo.workdir or repo.path
    done = git.run(workdir, *args)
    if not done.ok:
        raise git.failed(
            done,
            path=args[0],
            hint="the refs are rewritten; run any memgit command to finish the cleanup",
        )
