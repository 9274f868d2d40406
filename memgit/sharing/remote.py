"""The git commands that talk to a remote: fetch and push, through the git CLI.

They run git itself so that every transport, credential helper and remote
setting the user has works as it does for ``git fetch`` and ``git push``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pygit2

from memgit import git
from memgit.errors import BackendError, ChecksFailedError, MemgitError, quote_foreign
from memgit.store.refs import delete_refs

GIT_TIMEOUT = 300.0
SYNC_NAMESPACE = "refs/memgit-sync/"
"""Where sync fetches a remote's branch and ``refs/memgit/*`` to before merging them
(``refs/memgit-sync/<remote>/branch`` and ``.../memgit/...``): outside ``refs/memgit/``,
so a fetched ref is memgit's only once sync has chosen it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Fetched:
    """What a fetch brought: the remote branch's tip (None when the remote lacks the
    branch) and the remote's ``refs/memgit/*`` by name."""

    tip: pygit2.Oid | None
    refs: dict[str, pygit2.Oid]


def fetch(repo: pygit2.Repository, remote: str, branch: str) -> Fetched:
    """Fetch ``branch`` and every ``refs/memgit/*`` of ``remote`` into sync's namespace,
    pruning there what the remote no longer has; no other ref moves."""
    base = f"{SYNC_NAMESPACE}{remote}"
    memgit_refs = f"+refs/memgit/*:{base}/memgit/*"
    # --refmap= : only these refspecs. Without it git also moves the refs the remote's
    # configured fetch refspecs map (refs/remotes/*, and refs/memgit/* once init set them
    # up): those must change only when sync decides, and never on a refused sync.
    fetch_args = ("fetch", "--quiet", "--no-tags", "--prune", "--refmap=", remote)
    done = run_git(repo, *fetch_args, f"+{branch}:{base}/branch", memgit_refs)
    has_branch = done.ok
    if not has_branch:
        # Status 2 of `ls-remote --exit-code`: the remote has no such branch (yet).
        if run_git(repo, "ls-remote", "--exit-code", remote, branch).status != 2:
            raise remote_error("fetch", remote, done)
        done = run_git(repo, *fetch_args, memgit_refs)
        if not done.ok:
            raise remote_error("fetch", remote, done)
        delete_refs(repo, [f"{base}/branch"])
    tip = repo.references.get(f"{base}/branch")
    prefix = f"{base}/memgit/"
    refs = {
        "refs/memgit/" + name[len(prefix) :]: _target(repo, name)
        for name in repo.references
        if name.startswith(prefix)
    }
    return Fetched(tip=_target(repo, tip.name) if tip is not None else None, refs=refs)


def forget_fetched(repo: pygit2.Repository, remote: str) -> None:
    """Delete what :func:`fetch` put in sync's namespace for ``remote`` (its objects are
    then unreachable here, and the next ``git gc`` prunes them)."""
    delete_refs(repo, [n for n in repo.references if n.startswith(f"{SYNC_NAMESPACE}{remote}/")])


def _target(repo: pygit2.Repository, name: str) -> pygit2.Oid:
    target = repo.references[name].target
    if not isinstance(target, pygit2.Oid):  # a symbolic ref: sync never writes one there
        return repo.references[name].resolve().target  # type: ignore[return-value]
    return target


def push(
    repo: pygit2.Repository,
    remote: str,
    updates: Mapping[str, tuple[pygit2.Oid | None, pygit2.Oid | None]],
) -> bool:
    """Set each ref named in ``updates`` on ``remote`` to its new id (None: delete it),
    all or none (``--atomic``), each only if the remote still has the id it had at the
    fetch (``--force-with-lease``; None: the ref must not exist yet). False when the
    remote refused because it moved since the fetch (fetch again and retry)."""
    if not updates:
        return True
    args = ["push", "--porcelain", "--atomic", remote]
    for name, (new, expected) in sorted(updates.items()):
        args.append(f"--force-with-lease={name}:{expected if expected is not None else ''}")
        args.append(f"{new if new is not None else ''}:{name}")
    done = run_git(repo, *args)
    if done.ok:
        return True
    refused = [ref for ref in git.pushed_refs(done) if ref.flag == "!"]
    if refused and _moved(repo, remote, updates):
        return False
    declined = next((ref.line for ref in refused if ref.by_remote), None)
    if declined is not None and told_by_remote(done.err):
        raise ChecksFailedError(
            f"{remote} refused the push (its hook found problems): {quote_foreign(declined)}"
            + told_by_remote(done.err),
            code="remote-refused",
            path=remote,
            hint="the remote's lines say what it refused; fix those commits or refs "
            "(`memgit verify` shows them here), then sync again; nothing was pushed",
        )
    raise remote_error("push", remote, done, detail=refused[0].line if refused else None)


def _moved(
    repo: pygit2.Repository,
    remote: str,
    updates: Mapping[str, tuple[pygit2.Oid | None, pygit2.Oid | None]],
) -> bool:
    """Whether a ref of ``updates`` no longer holds, on the remote, the id it had at the
    fetch: a refused push then lost a race (fetch again and retry), known from the refs
    themselves rather than from the words of git's refusal."""
    done = run_git(repo, "ls-remote", remote, *updates)
    if not done.ok:
        raise remote_error("ls-remote", remote, done)
    held = {}
    for line in done.out.splitlines():
        oid, _, name = line.partition("\t")
        held[name] = oid
    return any(
        held.get(name) != (str(expected) if expected is not None else None)
        for name, (_new, expected) in updates.items()
    )


def run_git(repo: pygit2.Repository, *args: str) -> git.Ran:
    """``git ARGS`` in the repository, for a command that talks to a remote (fetch,
    push): its output, or BackendError when it cannot run or does not finish."""
    try:
        return git.run(Path(repo.workdir or repo.path), *args, timeout=GIT_TIMEOUT)
    except MemgitError as err:
        raise BackendError(
            f"git {args[0]} did not finish: {err.message}",
            code="remote-failed",
            path=args[-1],
            hint="check that git is installed and the remote answers, then retry",
        ) from None


def remote_error(
    what: str, remote: str, done: git.Ran, *, detail: str | None = None
) -> BackendError:
    """git's failure, told by its last line of output (or ``detail``, the line that says
    why), quoted as foreign text."""
    lines = [line for line in (done.said or done.out).strip().splitlines() if line]
    if detail is None and lines:
        detail = lines[-1]
    detail = quote_foreign(detail) if detail else f"exit status {done.status}"
    return BackendError(
        f"git {what} {remote} failed: {detail}" + told_by_remote(done.err),
        code="remote-failed",
        path=remote,
        hint="run the same git command yourself to see the whole error; nothing was changed",
    )


MAX_REMOTE_LINES = 20


def told_by_remote(stderr: str) -> str:
    """The lines the remote's hooks printed (git shows them as ``remote: ...``), one
    indented line each, quoted as foreign text: a pre-receive hook's
    ``error[...]`` lines say what it refused. Empty when it printed none."""
    said = [
        line.removeprefix("remote:").strip()
        for line in stderr.splitlines()
        if line.startswith("remote:") and line.removeprefix("remote:").strip()
    ]
    shown = [f"\n  remote: {quote_foreign(line)}" for line in said[:MAX_REMOTE_LINES]]
    if len(said) > MAX_REMOTE_LINES:
        shown.append(f"\n  remote: ... {len(said) - MAX_REMOTE_LINES} more line(s)")
    return "".join(shown)
