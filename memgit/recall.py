"""The recall flow: a query in, an evidence pack out, misses explained.

The index (memgit/derived/) ranks; this module decides what to show: filters,
``--exclude-thread``, provenance (the commit that last changed each memory,
its sources and, on request, the captured turns behind them) and the trace
that says why a query found nothing: terms found nowhere, matches hidden by
``--scope``/``--type``, memories that matched but were retired (with the
memory that superseded them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import pygit2

from memgit.constants import MAX_RECALL_K, MAX_SEQ
from memgit.derived import search, vocabulary
from memgit.derived.lexical import LexicalIndex, Snapshot
from memgit.derived.refresh import Progress
from memgit.derived.snippets import Highlighter
from memgit.errors import InvalidInputError, UsageError
from memgit.layout import check_scope
from memgit.memory import Source, memory_body
from memgit.pack import (
    EvidencePack,
    FileProblem,
    HiddenMatch,
    MemoryHit,
    Ranked,
    RetiredMatch,
    SourceEvidence,
    Successor,
    Trace,
    TurnHit,
    source_evidence,
)
from memgit.revisions import last_change, resolve_as_of
from memgit.store.tree import read_commit
from memgit.tokens import CJK_RUN, Query, parse_query
from memgit.turn import Turn, read_capture

MAX_PROBLEMS_SHOWN = 20
# --exclude-thread pages through ranked memories at most this many times.
MAX_EXCLUDE_PAGES = 50
MAX_EXCLUDED_SHOWN = 100
# A memory and its source turns rank among the other turns by the better of the
# best source turn's score and the memory's own score times this weight: the two
# are BM25 over different tables, and a memory found by its words alone must still
# find its place. Chosen on LoCoMo conversations 0-4 (docs/performance.md).
MEMORY_RANK_WEIGHT = 0.25
_TYPE = re.compile(r"[a-z][a-z0-9-]{0,31}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallOptions:
    """What a recall is bounded and filtered by: the CLI's and MCP's options, passed whole."""

    k: int = 10
    scope: str | None = None
    type: str | None = None
    exclude_thread: str | None = None
    from_turn: int | None = None
    evidence: bool = False
    include_retired: bool = False
    # Add the recall vocabulary's related terms (memgit.yaml recall.vocabulary).
    vocabulary: bool = True

    def check(self) -> None:
        if not isinstance(self.k, int) or not 1 <= self.k <= MAX_RECALL_K:
            raise InvalidInputError(
                f"k must be a whole number from 1 to {MAX_RECALL_K}, not {self.k!r}",
                code="invalid-option",
                field="k",
            )
        if self.scope is not None:
            check_scope(self.scope.strip("/"), field="--scope")
        if self.type is not None and not _TYPE.fullmatch(self.type):
            raise InvalidInputError(
                f"{self.type!r} is not a memory type",
                code="invalid-option",
                field="--type",
                hint="types are lower-case words such as fact, preference, decision",
            )
        if self.from_turn is not None:
            if self.exclude_thread is None:
                raise UsageError(
                    "--from-turn needs --exclude-thread",
                    code="usage",
                    hint="--exclude-thread THREAD --from-turn N leaves out turns N and later",
                )
            if not 0 <= self.from_turn <= MAX_SEQ:
                raise InvalidInputError(
                    f"--from-turn must be a seq from 0 to {MAX_SEQ:,}",
                    code="invalid-option",
                    field="--from-turn",
                )
        if self.exclude_thread is not None and not self.exclude_thread.strip():
            raise InvalidInputError(
                "--exclude-thread needs a thread id",
                code="invalid-option",
                field="--exclude-thread",
            )

    def filters_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "type": self.type,
            "exclude_thread": self.exclude_thread,
            "from_turn": self.from_turn,
            "include_retired": self.include_retired,
            "evidence": self.evidence,
        }


def recall(
    index: LexicalIndex,
    text: str,
    options: RecallOptions | None = None,
    *,
    as_of: str | None = None,
    progress: Progress | None = None,
) -> EvidencePack:
    """Answer ``text`` from the index: see the module docstring."""
    options = options or RecallOptions()
    options.check()
    query = parse_query(text)
    if options.vocabulary:
        query = vocabulary.expand(query)
    commit = resolve_as_of(index.repo, as_of) if as_of is not None else None

    def collect(snap: Snapshot) -> EvidencePack:
        return _Collector(index, snap, query, options).pack()

    return index.read(collect, as_of=commit, progress=progress)


class _Collector:
    """Builds one pack from one snapshot."""

    def __init__(
        self, index: LexicalIndex, snap: Snapshot, query: Query, options: RecallOptions
    ) -> None:
        self.index = index
        self.snap = snap
        self.conn = snap.conn
        self.query = query
        self.options = options
        self.match = query.fts()  # captured messages
        # Memories: an added term is looked for in the text, not in type or scope
        # (the type "preference" is no reason for "like" to find a memory).
        self.memory_match = query.fts(search.MEMORY_TEXT_COLUMNS)
        self.scale = query.score_scale
        self.filters = search.Filters(scope=options.scope, type=options.type)
        added = [word for expansion in query.expansions for word in expansion.phrase.split()]
        self.highlighter = Highlighter([*query.terms, *added])
        # Terms known to occur in each table because a hit matched them.
        self._seen: dict[str, set[str]] = {"memory": set(), "message": set(), "retired": set()}
        self._absent: set[str] = set()  # tables known to be empty
        self._positions: dict[str, tuple[str | None, str, int] | None] = {}

    def pack(self) -> EvidencePack:
        rows, excluded = self._memory_rows()
        retired_rows = self._retired_rows()
        terms = self._matched("memory", rows)
        retired_terms = self._matched("retired", retired_rows)
        for table, found in (("memory", terms), ("retired", retired_terms)):
            self._seen[table].update(term for hit in found.values() for term in hit)
        memories = [self._memory_hit(row, terms.get(row.rowid, [])) for row in rows]
        if self.options.include_retired:
            memories += [
                self._memory_hit(row, retired_terms.get(row.rowid, []), retired=True)
                for row in retired_rows
            ]
            memories.sort(key=lambda hit: -hit.score)
            memories = memories[: self.options.k]
        memories = self._with_source_turns(memories)
        grouped = {(t.capture, t.index) for hit in memories for t in hit.source_turns}
        turns = self._turn_hits(grouped)
        trace = self._trace(excluded, retired_rows, retired_terms)
        shown = {(t.capture, t.index): t for hit in memories for t in hit.source_turns}
        shown.update(((t.capture, t.index), t) for t in turns)
        return EvidencePack(
            query=self.query.text,
            k=self.options.k,
            as_of=self.snap.as_of,
            memories=tuple(memories),
            turns=tuple(turns),
            trace=replace(trace, archived_turns=sum(t.archived for t in shown.values())),
            filters=self.options.filters_dict(),
            ranked=_rank(memories, turns),
        )

    # -- memories ------------------------------------------------------------

    def _memory_rows(self) -> tuple[list[search.MemoryRow], list[str]]:
        k = self.options.k
        if self.options.exclude_thread is None:
            rows = search.search_memories(
                self.conn, self.memory_match, limit=k, filters=self.filters
            )
            return rows, []
        kept: list[search.MemoryRow] = []
        excluded: list[str] = []
        batch, offset = k * 2 + 10, 0
        for _ in range(MAX_EXCLUDE_PAGES):
            if len(kept) >= k:
                break
            rows = search.search_memories(
                self.conn, self.memory_match, limit=batch, offset=offset, filters=self.filters
            )
            for row in rows:
                if self._only_from_excluded(row):
                    if len(excluded) < MAX_EXCLUDED_SHOWN:
                        excluded.append(row.memory.id)
                elif len(kept) < k:
                    kept.append(row)
            if len(rows) < batch:
                break
            offset += batch
        return kept, excluded

    def _only_from_excluded(self, row: search.MemoryRow) -> bool:
        if not row.memory.sources:
            return False
        thread = self.options.exclude_thread
        first = self.options.from_turn or 0
        for source in row.memory.sources:
            position = self._position(source.capture, source.blob)
            if position is None or thread not in position[:2] or position[2] < first:
                return False
        return True

    def _position(self, capture: str, blob: str) -> tuple[str | None, str, int] | None:
        """(thread, session, seq) of a source's capture: from the index, else from Git."""
        if capture not in self._positions:
            found = search.capture_position(self.conn, capture)
            if found is None:
                turn = self._turn_from_blob(capture, blob)
                found = (turn.thread, turn.session, turn.number) if turn else None
            self._positions[capture] = found
        return self._positions[capture]

    def _turn_from_blob(self, capture: str, blob: str) -> Turn | None:
        obj = self.snap.repo.get(blob)
        if not isinstance(obj, pygit2.Blob):
            return None
        try:
            return read_capture(obj.data, path=capture, blob=blob, check=False)
        except InvalidInputError:
            return None

    def _memory_hit(
        self, row: search.MemoryRow, terms: list[str], *, retired: bool = False
    ) -> MemoryHit:
        memory = row.memory
        uncommitted = not retired and memory.path in self.snap.files
        data = self._blob(row.blob) if retired else self.snap.data(memory.path, row.blob)
        body = memory_body(data) if data is not None else None
        snippet = self.highlighter.snippet(body.strip() or memory.title) if body else ""
        if retired:
            commit = row.target
        elif uncommitted:
            commit = None
        else:
            commit = self._last_change(memory.path, row.blob)
        return MemoryHit(
            memory=memory,
            snippet=snippet,
            score=row.score / self.scale,
            matched_terms=tuple(terms),
            expanded_terms=self._added_in(memory.title, *memory.tags, body or ""),
            commit=commit,
            uncommitted=uncommitted,
            retired=retired,
            sources=tuple(self._source(source) for source in memory.sources),
            superseded_by=self._successor(memory.id) if retired else None,
            chain=self._chain(memory.id) if retired else (),
        )

    def _blob(self, blob: str) -> bytes | None:
        obj = self.snap.repo.get(blob)
        return obj.data if isinstance(obj, pygit2.Blob) else None

    def _last_change(self, path: str, blob: str) -> str | None:
        start_id = self.snap.as_of or self.snap.state.commit
        if start_id is None:
            return None
        key = (start_id, path, blob)
        cache = self.index.commit_cache
        if key not in cache:
            if len(cache) > 10_000:
                cache.clear()
            start = read_commit(self.snap.repo, start_id)
            cache[key] = last_change(self.snap.repo, start, path, blob)
        return cache[key]

    def _source(self, source: Source) -> SourceEvidence:
        if not self.options.evidence:
            return SourceEvidence(source=source)
        return source_evidence(self.snap.repo, source)

    # -- retired -------------------------------------------------------------

    def _retired_rows(self) -> list[search.MemoryRow]:
        if not search.has_retired(self.conn):
            self._absent.add("retired")
            return []
        rows = search.search_retired(self.conn, self.memory_match, limit=self.options.k)
        return [row for row in rows if not self.filters.reasons(row.memory)]

    def _successor(self, memory_id: str) -> Successor | None:
        """The memory that superseded ``memory_id``: the active end of the chain if any,
        else the first successor."""
        chain = self._chain(memory_id)
        if not chain:
            return None
        return chain[-1] if chain[-1].active else chain[0]

    def _chain(self, memory_id: str) -> tuple[Successor, ...]:
        """Every memory that superseded ``memory_id`` in turn (A -> B -> C gives B, C),
        up to the first active one: at most 32 steps, a loop ends it."""
        seen = {memory_id}
        current = memory_id
        chain: list[Successor] = []
        for _ in range(32):
            found = search.successors(self.conn, current)
            if not found:
                break
            active = [item for item in found if item[3]]
            new_id, title, path, is_active = (active or found)[0]
            chain.append(Successor(id=new_id, title=title, path=path, active=is_active))
            if is_active or new_id in seen:
                break
            seen.add(new_id)
            current = new_id
        return tuple(chain)

    # -- turns ---------------------------------------------------------------

    def _with_source_turns(self, hits: list[MemoryHit]) -> list[MemoryHit]:
        """Each memory with the captured turns its sources quote, live or archived."""
        keys = [(s.capture, _message_index(s.unit)) for hit in hits for s in hit.memory.sources]
        rows = {
            key: row
            for key, row in search.messages_at(self.conn, self.match, keys).items()
            if not self._excluded(row.turn)
        }
        turns = {key: hit for key, hit in zip(rows, self._hits(list(rows.values())), strict=True)}
        return [
            replace(
                hit,
                source_turns=tuple(
                    turns[key]
                    for key in dict.fromkeys(
                        (s.capture, _message_index(s.unit)) for s in hit.memory.sources
                    )
                    if key in turns
                ),
            )
            for hit in hits
        ]

    def _excluded(self, turn: Turn) -> bool:
        """Whether --exclude-thread (and --from-turn) leave this turn out."""
        thread = self.options.exclude_thread
        if thread is None or thread not in (turn.thread, turn.session):
            return False
        return turn.number >= (self.options.from_turn or 0)

    def _turn_hits(self, grouped: set[tuple[str, int]]) -> list[TurnHit]:
        """The best k turns that are no returned memory's source (those go with it)."""
        rows = search.search_messages(
            self.conn,
            self.match,
            limit=self.options.k + len(grouped),
            exclude_thread=self.options.exclude_thread,
            from_turn=self.options.from_turn,
        )
        rows = [row for row in rows if (row.turn.path, row.index) not in grouped][: self.options.k]
        return self._hits(rows)

    def _hits(self, rows: list[search.MessageRow]) -> list[TurnHit]:
        ids = [row.rowid for row in rows]
        terms = search.matched_terms(
            self.conn, "message", self.query.terms, ids, columns=("content", "name")
        )
        around = search.matched_terms(
            self.conn, "message", self.query.terms, ids, columns=("before", "after")
        )
        for found in (terms, around):
            self._seen["message"].update(term for hit in found.values() for term in hit)
        texts = search.message_texts(self.conn, ids)
        hits = []
        for row in rows:
            text = texts.get(row.rowid)
            if text is None or CJK_RUN.search(text):
                text = self._message_text(row)  # segmented in the index: read the file
            snippet = self.highlighter.snippet(text) if text else ""
            hits.append(
                TurnHit(
                    turn=row.turn,
                    index=row.index,
                    message=row.message,
                    snippet=snippet,
                    score=row.score / self.scale,
                    matched_terms=tuple(terms[row.rowid]),
                    context_terms=tuple(t for t in around[row.rowid] if t not in terms[row.rowid]),
                    expanded_terms=self._added_in(text or "", row.message.name or ""),
                    uncommitted=row.turn.path in self.snap.files,
                    removed_in=row.archived,
                )
            )
        return hits

    def _message_text(self, row: search.MessageRow) -> str | None:
        turn = row.turn
        data = self.snap.data(turn.path, row.blob)
        if data is None:
            return None
        try:
            return (
                read_capture(data, path=turn.path, blob=row.blob, check=False)
                .messages[row.index]
                .content
            )
        except (InvalidInputError, IndexError):
            return None

    # -- trace ---------------------------------------------------------------

    def _matched(self, table: str, rows: list[Any]) -> dict[int, list[str]]:
        return search.matched_terms(self.conn, table, self.query.terms, [r.rowid for r in rows])

    def _added_in(self, *texts: str) -> tuple[str, ...]:
        """The terms the vocabulary added that ``texts`` (a hit's columns) hold. Read from
        the text recall already has, through the index's tokenizer: asking FTS5 costs a
        scan of each added term's whole posting list, and added terms are common words."""
        if not self.query.expansions:
            return ()
        return vocabulary.found_in(self.query.expansions, texts)

    def _trace(
        self,
        excluded: list[str],
        retired_rows: list[search.MemoryRow],
        retired_terms: dict[int, list[str]],
    ) -> Trace:
        locations: dict[str, tuple[str, ...]] = {}
        names = {"memory": "memories", "message": "turns", "retired": "retired"}
        for term in self.query.terms:
            locations[term] = tuple(
                names[table]
                for table in names
                if term in self._seen[table]
                or (table not in self._absent and search.term_found(self.conn, table, term))
            )
        hidden: list[HiddenMatch] = []
        hidden_total = 0
        if self.filters.active:
            rows = search.search_memories(
                self.conn,
                self.memory_match,
                limit=self.options.k,
                filters=self.filters,
                hidden=True,
            )
            hidden = [
                HiddenMatch(
                    memory=row.memory,
                    score=row.score / self.scale,
                    hidden_by=tuple(self.filters.reasons(row.memory)),
                )
                for row in rows
            ]
            hidden_total = search.count_hidden(self.conn, self.memory_match, self.filters)
        retired = tuple(
            RetiredMatch(
                memory=row.memory,
                score=row.score / self.scale,
                matched_terms=tuple(retired_terms.get(row.rowid, ())),
                ref=row.ref or "",
                commit=row.target or "",
                superseded_by=self._successor(row.memory.id),
                chain=self._chain(row.memory.id),
            )
            for row in retired_rows
        )
        excluded_turns = 0
        if self.options.exclude_thread is not None:
            excluded_turns = search.count_excluded_messages(
                self.conn, self.match, self.options.exclude_thread, self.options.from_turn
            )
        listed, total = search.list_problems(self.conn, MAX_PROBLEMS_SHOWN)
        problems = [FileProblem(path=p, code=c, message=m) for p, c, m in self.snap.problems]
        problems += [FileProblem(path=p, code=c, message=m) for p, c, m in listed]
        return Trace(
            terms=self.query.terms,
            stop_words=self.query.stop_words,
            dropped_terms=self.query.dropped,
            unknown_terms=tuple(term for term, where in locations.items() if not where),
            term_locations=locations,
            expansions=self._expansions(),
            hidden=tuple(hidden),
            hidden_total=hidden_total,
            retired=retired,
            excluded_memories=tuple(excluded),
            excluded_turns=excluded_turns,
            problems=tuple(problems[:MAX_PROBLEMS_SHOWN]),
            problems_total=total + len(self.snap.problems),
            index=self._index_info(),
        )

    def _expansions(self) -> dict[str, tuple[str, ...]]:
        """The terms the vocabulary added, by the entry of the query that brought them."""
        found: dict[str, list[str]] = {}
        for expansion in self.query.expansions:
            found.setdefault(expansion.source, []).append(expansion.term)
        return {source: tuple(terms) for source, terms in found.items()}

    def _index_info(self) -> dict[str, Any]:
        snap = self.snap
        refreshed = None
        if snap.refreshed is not None:
            refreshed = {
                "full": snap.refreshed.full,
                "paths": snap.refreshed.paths,
                "retired": snap.refreshed.retired,
            }
        return {
            "tree": snap.state.tree,
            "commit": snap.state.commit,
            "as_of": snap.as_of,
            "refreshed": refreshed,
            "rebuilt_because": snap.rebuilt_reason,
            "overlay_paths": len(snap.overlay_paths),
            "in_memory": self.index.in_memory,
        }


def _message_index(unit: str) -> int:
    """The message a unit id (``source/session/seq#index``) names; 0 if it names none."""
    _, _, index = unit.rpartition("#")
    return int(index) if index.isdigit() and len(index) < 7 else 0


def _rank(memories: list[MemoryHit], turns: list[TurnHit]) -> tuple[Ranked, ...]:
    """Memories (each with its source turns) and the other turns in one order, by score;
    a memory goes first on a tie."""
    places = [
        Ranked(
            kind="memory",
            index=number,
            score=max([hit.score * MEMORY_RANK_WEIGHT, *(turn.score for turn in hit.source_turns)]),
        )
        for number, hit in enumerate(memories)
    ]
    places += [Ranked(kind="turn", index=number, score=t.score) for number, t in enumerate(turns)]
    order = {"memory": 0, "turn": 1}
    return tuple(sorted(places, key=lambda p: (-p.score, order[p.kind], p.index)))
