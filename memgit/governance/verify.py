"""``memgit verify``: run every check over every commit of a range (pull requests, CI).

People can skip client hooks (``--no-verify``, ``SKIP=``); verify, run in CI
or by the server's pre-receive hook, is where that is caught. Each commit is
checked against its first parent; a merge commit only for what differs from
every parent, since the rest was checked in the history it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pygit2

from memgit.constants import MEMORIES_DIR
from memgit.errors import InvalidInputError, Problem, UsageError, quote_foreign
from memgit.governance.checks import iter_all_problems
from memgit.governance.contradictions import Contradiction, find_contradictions
from memgit.governance.counts import RangeCounts, count_range
from memgit.governance.memgit_refs import MEMGIT_REFS, Targets, rewritten
from memgit.governance.retirements import Retirements, history_retirements, retired_in
from memgit.governance.rewrites import (
    BRANCHES,
    allows_rewrite,
    dropped,
    is_rewrite,
    memory_branch_tip,
    rewrite_problem,
)
from memgit.governance.view import CommitView, view_of_commit
from memgit.jsonio import json_as, json_data
from memgit.sharing.decided_apart import DecidedApart, decided_apart_in
from memgit.state.lookup import Lookup, TreeWalk
from memgit.store.tree import iter_blobs


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    commit: str
    hook: str
    problem: Problem

    def render(self) -> str:
        rendered = self.problem.render()
        return rendered.replace("]: ", f"]: {self.commit[:12]}: ", 1)

    def to_dict(self) -> dict[str, Any]:
        """The problem's fields flattened beside the commit and hook, one object a finding."""
        return {"commit": self.commit, "hook": self.hook, **json_data(self.problem)}


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyResult:
    """The commits checked, oldest first, what was found in them, and what they did
    (``counts``, for the pull-request summary; not part of ``to_dict``)."""

    commits: tuple[str, ...] = field(metadata=json_as(before=("ok",)))
    findings: tuple[Finding, ...] = field(metadata=json_as(key="problems"))
    counts: RangeCounts = field(metadata=json_as(omit="always"))
    # In the newest commit checked: memories that replace the same one (a warning; a
    # person resolves it with `memgit review`), not a problem of any commit.
    contradictions: tuple[Contradiction, ...] = ()
    # Units that runs on two sides of a merge checked decided two ways (a warning too).
    decided_apart: tuple[DecidedApart, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.findings


def resolve_commits(
    repo: pygit2.Repository, revisions: str | None, *, all_history: bool
) -> list[pygit2.Commit]:
    """Commits to check, oldest first: ``A..B``, ``A...B``, ``REV`` (its whole history),
    or the default.

    The default is the current branch against its upstream, as a pull request
    would show it.
    """
    if all_history:
        if revisions is not None:
            raise UsageError(
                "--all checks all history; it takes no range",
                code="usage",
                hint="drop the range, or drop --all",
            )
        return walk_commits(repo, [_resolve(repo, "HEAD")], [])
    if revisions is None:
        upstream = _upstream(repo)
        if upstream is None:
            raise UsageError(
                "the current branch has no upstream to verify against",
                code="usage",
                hint="pass a range such as origin/main..HEAD, or --all for all history",
            )
        return walk_commits(repo, [_resolve(repo, "HEAD")], [upstream])
    if "..." in revisions:
        # As git reads A...B: what either side has that their merge base lacks.
        left, _, right = revisions.partition("...")
        a, b = _resolve(repo, left or "HEAD"), _resolve(repo, right or "HEAD")
        base = repo.merge_base(a, b)
        return walk_commits(repo, [a, b], [base] if base is not None else [])
    if ".." in revisions:
        start, _, end = revisions.partition("..")
        hide = [_resolve(repo, start or "HEAD")]
        return walk_commits(repo, [_resolve(repo, end or "HEAD")], hide)
    return walk_commits(repo, [_resolve(repo, revisions)], [])


def commits_by_id(repo: pygit2.Repository, ids: Iterable[str]) -> list[pygit2.Commit]:
    """Commits named one per line (``git rev-list`` output), in the order given."""
    return [_resolve_commit(repo, line.strip()) for line in ids if line.strip()]


def _resolve(repo: pygit2.Repository, spec: str) -> pygit2.Oid:
    return _resolve_commit(repo, spec).id


def _resolve_commit(repo: pygit2.Repository, spec: str) -> pygit2.Commit:
    try:
        found = repo.revparse_single(spec)
        commit = found.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as err:
        raise UsageError(
            f"unknown revision {quote_foreign(spec)}",
            code="invalid-revision",
            field="REV_RANGE",
            hint="name commits as git does: a branch, a tag, a commit id, HEAD~3",
        ) from err
    return commit


def _upstream(repo: pygit2.Repository) -> pygit2.Oid | None:
    if repo.head_is_detached or repo.head_is_unborn:
        return None
    branch = repo.branches.local.get(repo.head.shorthand)
    upstream = branch.upstream if branch is not None else None
    return upstream.target if upstream is not None else None  # type: ignore[return-value]


def walk_commits(
    repo: pygit2.Repository, tips: list[pygit2.Oid], hide: list[pygit2.Oid]
) -> list[pygit2.Commit]:
    walker = repo.walk(tips[0], pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    for oid in tips[1:]:
        walker.push(oid)
    for oid in hide:
        walker.hide(oid)
    return list(walker)


def _view(
    repo: pygit2.Repository, commit: pygit2.Commit, retirements: Retirements, lookup: Lookup
) -> CommitView:
    return replace(view_of_commit(repo, commit, lookup), retirements=retirements)


def iter_findings(
    repo: pygit2.Repository, commits: Iterable[pygit2.Commit], lookup: Lookup | None = None
) -> Iterator[Finding]:
    """Every check's problems with each commit; ``lookup`` is a tree walk unless given
    (memgit sync passes the derived store's, for commits it made or fetched)."""
    commits = list(commits)
    retirements = history_retirements(repo, [commit.id for commit in commits])
    # One walk for the whole range: each commit's parent is read as the diff from the
    # tree asked about before it (in topological order, mostly the commit before).
    if lookup is None:
        lookup = TreeWalk(repo)
    for commit in commits:
        for hook, problem in iter_all_problems(_view(repo, commit, retirements, lookup)):
            yield Finding(commit=str(commit.id), hook=hook, problem=problem)


def verify(repo: pygit2.Repository, commits: list[pygit2.Commit]) -> VerifyResult:
    ids = tuple(str(commit.id) for commit in commits)
    return VerifyResult(
        commits=ids,
        findings=tuple(iter_findings(repo, commits)),
        counts=count_range(repo, ids),
        contradictions=tuple(find_contradictions(repo, commits[-1].tree)) if commits else (),
        decided_apart=tuple(decided_apart_in(repo, commits)),
    )


ZERO = "0" * 40
# The name the ref-update problems report as their hook (in --json): no commit has them.
REFS_CHECK = "memgit-refs"
MAX_REF_UPDATES_BYTES = 16 * 1024 * 1024
# 16 MiB of `git rev-list` output: 400,000 commit ids.
MAX_COMMIT_LIST_BYTES = 16 * 1024 * 1024
_UPDATE = re.compile(r"(?P<old>[0-9a-f]{40}) (?P<new>[0-9a-f]{40}) (?P<name>refs/\S+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class RefUpdate:
    """One line of what git hands a pre-receive hook: ``old new refname``."""

    old: str
    new: str
    name: str


def parse_ref_updates(text: str, *, source: str = "ref updates") -> list[RefUpdate]:
    """``old new refname`` lines; anything else is refused, naming the line."""
    if len(text) > MAX_REF_UPDATES_BYTES:
        raise InvalidInputError(
            f"more than {MAX_REF_UPDATES_BYTES} bytes of ref updates",
            code="too-large",
            path=source,
        )
    updates = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _UPDATE.fullmatch(line.strip())
        if match is None:
            raise InvalidInputError(
                "not an 'old-id new-id refname' line",
                code="invalid-ref-update",
                path=source,
                field=f"line {number}",
                hint="pass what git gives a pre-receive hook on stdin",
            )
        updates.append(RefUpdate(old=match["old"], new=match["new"], name=match["name"]))
    return updates


def pushed_commits(repo: pygit2.Repository, updates: Iterable[RefUpdate]) -> list[pygit2.Commit]:
    """The commits the updates add: reachable from a new tip, not from any ref yet."""
    tips = [pygit2.Oid(hex=u.new) for u in updates if u.new != ZERO]
    tips = [tip for tip in tips if isinstance(repo.get(tip), pygit2.Commit)]
    if not tips:
        return []
    known = [ref.target for ref in repo.references.objects if isinstance(ref.target, pygit2.Oid)]
    return walk_commits(
        repo, tips, [oid for oid in known if isinstance(repo.get(oid), pygit2.Commit)]
    )


def iter_ref_update_findings(
    repo: pygit2.Repository, updates: Iterable[RefUpdate]
) -> Iterator[Finding]:
    """What a push does to refs that no commit check can see: a memory branch forced or
    deleted where the remote does not allow rewriting it, or rewound to before it
    retired a memory that is active again; a memgit ref deleted or moved (outside an
    allowed rewrite), or set at a commit that does not hold what it claims."""
    updates = list(updates)
    rewriting = False
    for update in updates:
        tip = memory_branch_tip(repo, update.name, update.old) if update.old != ZERO else None
        new = update.new if update.new != ZERO else None
        if tip is None or not is_rewrite(repo, update.name, tip, new):
            continue
        if allows_rewrite(repo, tip):
            rewriting = True
        else:
            lost = dropped(repo, tip, new)
            yield Finding(
                commit=update.old,
                hook=REFS_CHECK,
                problem=rewrite_problem(update.name, tip, new, lost),
            )
    targets = Targets(repo, _branches_after(repo, updates))
    for update in updates:
        if update.new == update.old:
            continue
        if update.name.startswith(MEMGIT_REFS):
            problem = None
            if update.old != ZERO and not rewriting:
                problem = rewritten(update.name)
            elif update.new != ZERO:
                problem = targets.problem(update.name, update.new)
            if problem is not None:
                commit = update.old if update.old != ZERO else update.new
                yield Finding(commit=commit, hook=REFS_CHECK, problem=problem)
        elif update.old != ZERO and update.new != ZERO:
            yield from _revived(repo, update)


def _branches_after(repo: pygit2.Repository, updates: list[RefUpdate]) -> list[pygit2.Oid]:
    """The tips of the repository's branches once ``updates`` are made."""
    tips = {
        name: repo.references[name].target for name in repo.references if name.startswith(BRANCHES)
    }
    for update in updates:
        if update.name.startswith(BRANCHES):
            tips[update.name] = pygit2.Oid(hex=update.new)
    return [
        oid
        for oid in tips.values()
        if isinstance(oid, pygit2.Oid) and isinstance(repo.get(oid), pygit2.Commit)
    ]


def _revived(repo: pygit2.Repository, update: RefUpdate) -> Iterator[Finding]:
    """Memories active at the new tip that the old tip's history retired, when the new
    tip does not descend from the old one (a force push)."""
    old, new = pygit2.Oid(hex=update.old), pygit2.Oid(hex=update.new)
    tip = repo.get(new)
    if not isinstance(tip, pygit2.Commit) or new == old or repo.descendant_of(new, old):
        return
    retirements = history_retirements(repo, [old])
    paths: dict[str, str] = {}
    for path, _ in iter_blobs(repo, tip.tree, MEMORIES_DIR):
        paths.setdefault(path.rsplit("/", 1)[-1].removesuffix(".md"), path)
    for memory_id in sorted(retirements.keys() & paths.keys()):
        if retired_in(repo, retirements, memory_id, new) is None:
            yield Finding(
                commit=str(new),
                hook="memgit-supersession",
                problem=Problem(
                    code="retired-id-active",
                    message=f"{update.name} is pushed back to before memory {memory_id} "
                    "was retired, and it is active again",
                    path=paths[memory_id],
                    field="id",
                    hint="push new commits on top instead of rewinding the branch",
                ),
            )


def verify_push(repo: pygit2.Repository, updates: list[RefUpdate]) -> VerifyResult:
    """Everything a pre-receive hook must refuse: the new commits' problems and the
    ref updates'."""
    commits = pushed_commits(repo, updates)
    findings = (*iter_findings(repo, commits), *iter_ref_update_findings(repo, updates))
    ids = tuple(str(c.id) for c in commits)
    return VerifyResult(commits=ids, findings=findings, counts=count_range(repo, ids))
