"""MemoryRepo: the Python API, one method per command, nothing clever."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from memgit.capture.inbox import CapturedTurn, CaptureResult, capture_turns
from memgit.capture.read import parse_turn
from memgit.errors import InvalidInputError, UsageError
from memgit.init import InitResult, init_repository
from memgit.jsonio import json_data
from memgit.settings import Settings, parse_settings, read_config
from memgit.store.recovery import finish_dead_writer
from memgit.store.repository import open_repository
from memgit.turn import Turn

if TYPE_CHECKING:
    from memgit.derived.lexical import IndexStatus, LexicalIndex
    from memgit.derived.lookup import IndexLookup
    from memgit.derived.refresh import Progress
    from memgit.files import TrackedFile
    from memgit.forget import Forgotten
    from memgit.gate.backends import Backend
    from memgit.gate.prompt import GateRequest
    from memgit.governance.contradictions import Contradiction
    from memgit.governance.verify import VerifyResult
    from memgit.history.blame import Blame
    from memgit.history.diff import MemoryDiff
    from memgit.history.select import Snapshot
    from memgit.history.versions import MemoryHistory
    from memgit.map import RepoMap
    from memgit.pack import EvidencePack
    from memgit.process import ProcessResult
    from memgit.purge import Purged
    from memgit.recall import RecallOptions
    from memgit.remember import Remembered
    from memgit.replay import Replay
    from memgit.review.approve import Approval
    from memgit.review.contradictions import Resolution
    from memgit.review.push import Pushed
    from memgit.review.reject import Rejection
    from memgit.review.show import ProposalView
    from memgit.sharing.sync import SyncResult

TurnInput = Turn | Mapping[str, Any] | str | bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class CaptureOutcome:
    """The result of capturing one turn, as ``memgit capture --json`` prints it."""

    path: str
    seq: int
    commit: str | None
    redactions: dict[str, int]
    duplicate: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "seq": self.seq,
            "commit": self.commit,
            "redactions": self.redactions,
            "duplicate": self.duplicate,
        }


class MemoryRepo:
    """A memory repository: a Git repository with ``memgit.yaml`` at its top."""

    def __init__(self, git: pygit2.Repository, settings: Settings) -> None:
        self.git = git
        self.settings = settings

    @classmethod
    def open(cls, path: str | Path = ".") -> MemoryRepo:
        """Open the memory repository containing ``path`` (searched upward)."""
        git = open_repository(Path(path))
        return cls(git, parse_settings(read_config(Path(git.workdir))))

    @classmethod
    def init(cls, path: str | Path = ".", *, install_hooks: bool = False) -> InitResult:
        """Create or adopt a repository at ``path``, or set up a clone for sharing;
        running it again is safe. ``install_hooks`` also installs the Git hooks (the
        CLI does by default)."""
        return init_repository(Path(path), install_hooks=install_hooks)

    @classmethod
    def verify(
        cls,
        path: str | Path = ".",
        rev_range: str | None = None,
        *,
        all_history: bool = False,
        commit_ids: Iterable[str] | None = None,
        ref_updates: str | None = None,
    ) -> VerifyResult:
        """Run every governance check over the commits of one selection: ``rev_range``
        (``A..B``, ``A...B`` or one revision's whole history; by default the branch
        against its upstream), ``all_history``, ``commit_ids`` (as ``git rev-list``
        prints them) or ``ref_updates`` (a push, ``old new refname`` lines as git
        hands them to pre-receive). A class method like ``init``: it only reads
        objects, so it also runs in a bare repository on a server, where there is
        no memory repository to open."""
        from memgit.governance.verify import (
            commits_by_id,
            parse_ref_updates,
            resolve_commits,
            verify_push,
        )
        from memgit.governance.verify import verify as run_verify
        from memgit.store.repository import open_for_reading

        chosen = [
            name
            for name, given in (
                ("a range", rev_range is not None or all_history),
                ("commit ids", commit_ids is not None),
                ("ref updates", ref_updates is not None),
            )
            if given
        ]
        if len(chosen) > 1:
            raise UsageError(
                f"verify checks one selection of commits, not {' and '.join(chosen)}",
                code="usage",
                hint="pass a range (or --all), --commits-from or --ref-updates",
            )
        git = open_for_reading(Path(path))
        finish_dead_writer(git)
        if ref_updates is not None:
            return verify_push(git, parse_ref_updates(ref_updates, source="--ref-updates"))
        if commit_ids is not None:
            return run_verify(git, commits_by_id(git, commit_ids))
        return run_verify(git, resolve_commits(git, rev_range, all_history=all_history))

    def close(self) -> None:
        """Close the derived store's connection (a long-running program's repositories;
        a dropped MemoryRepo closes it too)."""
        index: LexicalIndex | None = getattr(self, "_lexical_index", None)
        if index is not None:
            index.close()

    def __enter__(self) -> MemoryRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def workdir(self) -> Path:
        return Path(self.git.workdir)

    @property
    def git_dir(self) -> Path:
        return Path(self.git.path)

    def capture(self, turn: TurnInput, *, source: str = "<api>") -> CapturedTurn:
        """Redact and commit one turn; the same turn again is a no-op. A turn without a
        ``seq`` gets the next one of its session (the outcome's ``seq``)."""
        return self.capture_many([turn], source=source).turns[0]

    def process(
        self,
        *,
        backend: str | None = None,
        gate_output: str | bytes | None = None,
        max_batches: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        include_rejected: bool = False,
    ) -> ProcessResult:
        """Turn pending captures into memories: one validated commit per batch.

        ``gate_output`` is the Gate's answer supplied by the caller (the host
        backend); otherwise ``backend`` (default: ``gate.backend`` in memgit.yaml)
        is asked. Runs the review policy covers are proposed on branches; units of
        rejected proposals are asked about again only with ``include_rejected``.
        """
        from memgit.gate.backends import make_backend
        from memgit.gate.backends.host import HostBackend
        from memgit.process import process_inbox

        name = backend or self.settings.gate.get("backend", "rules")
        if gate_output is not None:
            chosen: Backend = HostBackend(
                gate_output.decode("utf-8", "replace")
                if isinstance(gate_output, bytes)
                else gate_output
            )
        elif name == "host":
            raise UsageError(
                "the host backend needs the Gate's answer",
                code="usage",
                hint="pass it with --gate-output FILE (or - for stdin); "
                "--print-prompt shows what to answer",
            )
        else:
            chosen = make_backend(name, self.settings.gate)
        return process_inbox(
            self.git,
            self.settings,
            chosen,
            index=self._recall_index(),
            max_batches=max_batches,
            progress=progress,
            include_rejected=include_rejected,
        )

    def replay(
        self,
        run_ids: Iterable[str] = (),
        *,
        last: int | None = None,
        backend: str | Backend | None = None,
    ) -> tuple[Replay, ...]:
        """Ask ``backend`` (a name, a backend, or memgit.yaml's) again what each run (of
        ``run_ids``, then the ``last`` runs of the branch) was asked, and diff its answer
        against the run's commit; nothing is written (docs/gate.md#replaying-runs)."""
        from memgit.gate.backends import make_backend
        from memgit.replay import replay_runs

        if backend is None or isinstance(backend, str):
            name = backend or self.settings.gate.get("backend", "rules")
            if name == "host":
                raise UsageError(
                    "the host backend cannot be asked again: the agent answered it",
                    code="usage",
                    field="--backend",
                    hint="name a backend memgit can ask: rules, openai or command",
                )
            chosen: Backend = make_backend(name, self.settings.gate)
        else:
            chosen = backend
        return replay_runs(
            self.git, self.settings, self._recall_index(), chosen, run_ids, last=last
        )

    def gate_prompt(self, *, include_rejected: bool = False) -> GateRequest | None:
        """What the Gate is asked for the first pending batch; None when nothing is pending."""
        from memgit.process import first_request

        return first_request(
            self.git, self.settings, self._recall_index(), include_rejected=include_rejected
        )

    def capture_many(
        self,
        turns: Iterable[TurnInput],
        *,
        source: str = "<api>",
        origins: Sequence[str] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> CaptureResult:
        """Redact and commit many turns, one commit per 1,000 (``CAPTURE_BATCH``).

        Every turn is checked before the first commit, so bad input or a
        conflict writes nothing. ``origins`` optionally names where each turn
        came from (``file:line``), for error messages; otherwise every turn is
        named ``source``. ``progress(done, total)`` follows the commits.
        """
        items = list(turns)
        names = list(origins) if origins is not None else [source] * len(items)
        parsed = [
            parse_turn(_as_json(item), source=name) for item, name in zip(items, names, strict=True)
        ]
        from memgit.governance.checks import Governance

        lookup = self._lookup()
        return capture_turns(
            self.git,
            parsed,
            origins=names,
            guard=Governance(lookup),
            known_seq=lookup.highest_seq,
            author_fallback=self.settings.author,
            progress=progress,
        )

    # -- review (memgit/review/) ---------------------------------------------------

    def review_list(self, *, everything: bool = False) -> list[dict[str, Any]]:
        """Open proposals (``everything``: applied and rejected ones too), oldest first."""
        from memgit.review.show import list_proposals

        return list_proposals(self.git, self._branch_tip(), everything=everything)

    def review_contradictions(self) -> list[Contradiction]:
        """Open contradictions: active memories that replace the same one (two clones
        changed their mind about it differently), by the id they replace."""
        from memgit.governance.contradictions import find_contradictions

        return find_contradictions(self.git, self._branch_tip().tree)

    def review_contradiction(self, item: str) -> Contradiction:
        """One open contradiction, named by the id its memories replace."""
        from memgit.review.contradictions import find_contradiction

        return find_contradiction(self.git, self._branch_tip().tree, item)

    def review_resolve(self, item: str, *, keep: str) -> Resolution:
        """Close contradiction ``item``: ``keep`` stays, the others leave the tree as
        replaced by it, in one checked commit (docs/review.md#contradictions)."""
        from memgit.review.contradictions import resolve

        return resolve(self._lookup(), item, keep, author_fallback=self.settings.author)

    def review_show(self, run_id: str) -> ProposalView:
        """A proposal's decisions with their memories, quotes and turns, and its diff."""
        from memgit.review.show import show_proposal

        return show_proposal(self.git, self._branch_tip(), run_id)

    def review_approve(
        self, run_id: str, *, only: Sequence[str] = (), rebase: bool = False
    ) -> Approval:
        """Bring a proposal into the branch: fast-forward, merge, or with ``rebase``
        (or ``only``) a replay of its Gate answer on the tip (docs/review.md)."""
        from memgit.review.approve import approve

        return approve(self._lookup(), self.settings, run_id, only=only, rebase=rebase)

    def review_reject(self, run_id: str, *, reason: str) -> Rejection:
        """Move a proposal under refs/memgit/rejected/, recording ``reason``."""
        from memgit.review.reject import reject

        return reject(self._lookup(), self.settings, run_id, reason)

    def review_push(self, run_id: str, remote: str = "origin") -> Pushed:
        """Push a proposal's branch to ``remote`` (a pull request on a hosted service)."""
        from memgit.review.push import push_proposal

        return push_proposal(self.git, run_id, remote)

    def _branch_tip(self) -> pygit2.Commit:
        from memgit.store.repository import head_branch

        return self.git.references[head_branch(self.git)].peel(pygit2.Commit)

    # -- recall (memgit/recall.py, memgit/map.py, memgit/derived/) --------------

    def recall(
        self,
        query: str,
        options: RecallOptions | None = None,
        *,
        as_of: str | None = None,
        progress: Progress | None = None,
        **fields: Any,
    ) -> EvidencePack:
        """Ranked memories and captured turns for ``query``, misses explained (docs/recall.md).
        ``options`` (or its fields by name: ``k=3``) filters and bounds the answer; the
        recall vocabulary is memgit.yaml's."""
        from memgit.recall import RecallOptions, recall

        chosen = replace(
            options or RecallOptions(), **fields, vocabulary=self.settings.recall_vocabulary
        )
        finish_dead_writer(self.git)
        return recall(self._recall_index(), query, chosen, as_of=as_of, progress=progress)

    def map(
        self, *, recent: int = 10, terms: int = 20, progress: Progress | None = None
    ) -> RepoMap:
        """A bounded overview: scopes, types, the latest memories, distinctive terms."""
        from memgit.map import build_map

        finish_dead_writer(self.git)
        return build_map(self._recall_index(), recent=recent, terms=terms, progress=progress)

    def sync(self, remote: str | None = None, *, progress: Progress | None = None) -> SyncResult:
        """Fetch ``remote`` (the branch's upstream by default), join it with the branch
        (checked, as every commit is), and push the result (docs/sharing.md).
        ``progress(step, done, total)`` hears of each step."""
        from memgit.sharing.sync import sync

        finish_dead_writer(self.git)
        result = sync(self.git, self.settings, self._lookup(), remote=remote, progress=progress)
        self._recall_index().warm()
        return result

    def index_status(self) -> IndexStatus:
        """The recall index's state; changes nothing."""
        return self._recall_index().status()

    def rebuild_index(self, progress: Progress | None = None) -> IndexStatus:
        """Rebuild the recall index from HEAD and the retired refs.

        ``progress(phase, done, total)`` is called now and then during the build.
        """
        finish_dead_writer(self.git)
        index = self._recall_index()
        index.rebuild(progress)
        return index.status()

    # -- remember and forget (memgit/remember.py, memgit/forget.py) -----------

    def remember(
        self,
        text: str,
        *,
        title: str | None = None,
        scope: str | None = None,
        kind: str | None = None,
    ) -> Remembered:
        """Store ``text`` as a memory: captured as a user turn (redacted), then one run
        over that turn alone, checked and committed as every run (docs/commands.md)."""
        from memgit.remember import remember

        return remember(
            self.git,
            self.settings,
            text,
            index=self._recall_index(),
            capture=lambda turn: self.capture(turn).path,
            title=title,
            scope=scope,
            kind=kind,
        )

    def forget(self, memory_ids: Iterable[str], *, with_sources: bool = False) -> Forgotten:
        """Remove active memories from the branch in one commit (history keeps them);
        ``with_sources`` also removes the captures no other memory quotes."""
        from memgit.forget import forget_memories

        finish_dead_writer(self.git)
        return forget_memories(
            self.git,
            self._lookup(),
            memory_ids,
            with_sources=with_sources,
            author_fallback=self.settings.author,
        )

    def purge(
        self,
        memory_ids: Iterable[str],
        *,
        texts: Iterable[str] = (),
        with_sources: bool = False,
        push: bool = False,
    ) -> Purged:
        """Rewrite every local ref's history without the memories (and ``texts``), then
        expire the reflogs and prune (docs/history.md#purge); ``push`` force-pushes the
        rewrite, with leases, to every remote that holds the old history."""
        from memgit.purge import purge_history

        # The derived store holds the text too: the purge deletes it, so let go of it.
        self.close()
        vars(self).pop("_lexical_index", None)
        return purge_history(
            self.git, memory_ids, texts=texts, with_sources=with_sources, push=push
        )

    # -- history (memgit/history/, docs/history.md): read-only ----------------

    def log(self, memory_id: str, *, follow: bool = False) -> tuple[MemoryHistory, ...]:
        """Every version of a memory, newest first; with ``follow``, its successors'
        before it and the memories it superseded after it."""
        from memgit.history.versions import follow_chain, load_history

        if follow:
            return follow_chain(self.git, memory_id)
        return (load_history(self.git, memory_id),)

    def show(self, spec: str) -> Snapshot:
        """The memory file ``ID[@REV]`` names: REV is vN, a date or a commit."""
        from memgit.history.select import load_snapshot

        return load_snapshot(self.git, spec)[1]

    def blame(self, spec: str) -> Blame:
        """For each body line of ``ID[@REV]``, the version and run that last changed it."""
        from memgit.history.blame import blame_memory
        from memgit.history.select import load_snapshot

        history, snap = load_snapshot(self.git, spec)
        return blame_memory(self.git, history, snap)

    def read(self, *, id: str | None = None, path: str | None = None) -> TrackedFile:
        """One committed file as HEAD holds it: a memory by ``id`` (a retired one: its
        last version), a captured turn by its ``id`` ``source/session/seq``, or any
        tracked file by ``path``. Reads Git objects only, never the file system."""
        from memgit.files import TrackedFile, load_file, load_memory, turn_path

        if path is not None and id is None:
            return load_file(self.git, path)
        if id is None or path is not None:
            raise UsageError("name what to read by id or by path, not both", field="id")
        if "/" in id:
            captured = turn_path(id)
            if captured is None:
                raise InvalidInputError(
                    f"{id[:80]!r} is neither a memory id nor a turn id",
                    code="invalid-id",
                    field="id",
                    hint="a turn id is source/session/seq, as evidence units name it",
                )
            return load_file(self.git, captured)
        found = load_memory(self.git, id)
        if found is not None:
            return found
        snap = self.show(id)
        return TrackedFile(path=snap.path, commit=snap.commit, blob=snap.blob, text=snap.text)

    def memory_paths(self) -> Iterator[str]:
        """The path of every active memory in HEAD, in tree order."""
        from memgit.files import iter_memory_paths

        return iter_memory_paths(self.git)

    def diff(self, memory_id: str, old: str | None = None, new: str | None = None) -> MemoryDiff:
        """Two versions of a memory: by default the one before the latest and the latest;
        with ``old`` alone, that one and the latest."""
        from memgit.history.diff import diff_snapshots
        from memgit.history.select import previous, select
        from memgit.history.versions import load_history

        history = load_history(self.git, memory_id)
        after = select(self.git, history, new)
        before = (
            select(self.git, history, old)
            if old is not None
            else previous(self.git, history, after)
        )
        return diff_snapshots(before, after)

    def _lookup(self) -> IndexLookup:
        """What the checks and the flows that write ask the derived store."""
        from memgit.derived.lookup import IndexLookup

        return IndexLookup(self._recall_index())

    def _recall_index(self) -> LexicalIndex:
        """One index handle per MemoryRepo, so queries after the first are warm."""
        index: LexicalIndex | None = getattr(self, "_lexical_index", None)
        if index is None:
            from memgit.derived.lexical import LexicalIndex

            index = LexicalIndex(self.git)
            self._lexical_index = index
        return index


def _as_json(item: TurnInput) -> dict[str, Any] | str | bytes:
    """Every turn is checked, including Turn values built in Python."""
    if isinstance(item, Turn):
        return json_data(item)
    return dict(item) if isinstance(item, Mapping) else item
