"""``memgit verify``: run every check over every commit of a range (pull requests, CI).

People can skip client hooks (``--no-verify``, ``SKIP=``); verify, run in CI
or by the server's pre-receive hook, is where that is caught. Each commit is
checked against its first parent; a merge commit only for what differs from
every parent, since the rest was checked in the history it came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pygit2

from memgit.errors import Problem, UsageError
from memgit.governance.checks import iter_all_problems
from memgit.governance.view import CommitView, diff_paths, view_of_commit


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    commit: str
    hook: str
    problem: Problem

    def render(self) -> str:
        rendered = self.problem.render()
        return rendered.replace("]: ", f"]: {self.commit[:12]}: ", 1)

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "hook": self.hook, **self.problem.to_dict()}


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyResult:
    commits: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "commits": list(self.commits),
            "problems": [finding.to_dict() for finding in self.findings],
        }


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
        return _walk(repo, [_resolve(repo, "HEAD")], [])
    if revisions is None:
        upstream = _upstream(repo)
        if upstream is None:
            raise UsageError(
                "the current branch has no upstream to verify against",
                code="usage",
                hint="pass a range such as origin/main..HEAD, or --all for all history",
            )
        return _walk(repo, [_resolve(repo, "HEAD")], [upstream])
    if "..." in revisions:
        # As git reads A...B: what either side has that their merge base lacks.
        left, _, right = revisions.partition("...")
        a, b = _resolve(repo, left or "HEAD"), _resolve(repo, right or "HEAD")
        base = repo.merge_base(a, b)
        return _walk(repo, [a, b], [base] if base is not None else [])
    if ".." in revisions:
        start, _, end = revisions.partition("..")
        hide = [_resolve(repo, start or "HEAD")]
        return _walk(repo, [_resolve(repo, end or "HEAD")], hide)
    return _walk(repo, [_resolve(repo, revisions)], [])


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
            f"unknown revision {spec!r}",
            code="invalid-revision",
            field="REV_RANGE",
            hint="name commits as git does: a branch, a tag, a commit id, HEAD~3",
        ) from err
    assert isinstance(commit, pygit2.Commit)
    return commit


def _upstream(repo: pygit2.Repository) -> pygit2.Oid | None:
    if repo.head_is_detached or repo.head_is_unborn:
        return None
    branch = repo.branches.local.get(repo.head.shorthand)
    upstream = branch.upstream if branch is not None else None
    return upstream.target if upstream is not None else None  # type: ignore[return-value]


def _walk(
    repo: pygit2.Repository, tips: list[pygit2.Oid], hide: list[pygit2.Oid]
) -> list[pygit2.Commit]:
    walker = repo.walk(tips[0], pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    for oid in tips[1:]:
        walker.push(oid)
    for oid in hide:
        walker.hide(oid)
    return list(walker)


def _view(repo: pygit2.Repository, commit: pygit2.Commit) -> CommitView:
    view = view_of_commit(repo, commit)
    if len(commit.parents) < 2:
        return view
    changed = set(view.changed)
    for parent in commit.parents[1:]:
        changed &= diff_paths(repo, parent.tree, commit.tree)[0]
    return replace(view, changed=frozenset(changed))


def iter_findings(repo: pygit2.Repository, commits: Iterable[pygit2.Commit]) -> Iterator[Finding]:
    for commit in commits:
        for hook, problem in iter_all_problems(_view(repo, commit)):
            yield Finding(commit=str(commit.id), hook=hook, problem=problem)


def verify(repo: pygit2.Repository, commits: list[pygit2.Commit]) -> VerifyResult:
    return VerifyResult(
        commits=tuple(str(commit.id) for commit in commits),
        findings=tuple(iter_findings(repo, commits)),
    )
