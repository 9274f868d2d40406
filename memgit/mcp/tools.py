"""The MCP tools: each a name, a description an agent reads, a JSON Schema for its
arguments, and a function over :class:`MemoryRepo` that returns a JSON value.

Nothing here knows the protocol (``server.py`` does): a tool gets arguments that
already passed its schema and raises :class:`MemgitError` like any API call.
Every schema is closed (``additionalProperties: false``) and bounds every string,
so a misspelt argument or a megabyte of text is refused by name before memgit
does any work.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memgit.errors import InvalidInputError, UsageError
from memgit.gate.backends import REGISTRY
from memgit.gate.backends.command import MAX_ANSWER_BYTES
from memgit.jsonio import json_data
from memgit.recall import RecallOptions
from memgit.repo import MemoryRepo

MAX_READ_CHARS = 100_000
DEFAULT_READ_CHARS = 20_000
MAX_QUERY_CHARS = 4_096
MAX_NAME_CHARS = 256

Arguments = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """One MCP tool; ``read_only`` is announced to the host as a hint."""

    name: str
    description: str
    schema: dict[str, Any]
    run: Callable[[MemoryRepo, Arguments], dict[str, Any]]
    read_only: bool


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


def _text(description: str, max_length: int = MAX_NAME_CHARS) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length, "description": description}


def _integer(
    description: str, minimum: int, maximum: int | None = None, default: int | None = None
) -> dict[str, Any]:
    bounds = {"minimum": minimum, "maximum": maximum, "default": default}
    given = {key: value for key, value in bounds.items() if value is not None}
    return {"type": "integer", **given, "description": description}


def _flag(description: str) -> dict[str, Any]:
    return {"type": "boolean", "default": False, "description": description}


_MEMORY_ID = {
    "type": "string",
    "pattern": "^[a-z0-9][a-z0-9_-]{1,63}$",
    "description": "A memory id, as memory_map and memory_recall name it.",
}
_INCLUDE_REJECTED = _flag("Ask again about the units of rejected review proposals.")


def _map(repo: MemoryRepo, args: Arguments) -> dict[str, Any]:
    return json_data(repo.map(recent=args.get("recent", 10), terms=args.get("terms", 20)))


def _recall(repo: MemoryRepo, args: Arguments) -> dict[str, Any]:
    # The schema's other properties are RecallOptions' fields, by the same names.
    options = {name: value for name, value in args.items() if name not in ("query", "as_of")}
    return json_data(repo.recall(args["query"], RecallOptions(**options), as_of=args.get("as_of")))


def _read(repo: MemoryRepo, args: Arguments) -> dict[str, Any]:
    found = repo.read(id=args.get("id"), path=args.get("path"))
    return found.page(args.get("offset", 0), args.get("limit", DEFAULT_READ_CHARS))


def _capture(repo: MemoryRepo, args: Arguments) -> dict[str, Any]:
    return json_data(repo.capture(args["turn"], source="memory_capture"))


def _gate_prompt(repo: MemoryRepo, args: Arguments) -> dict[str, Any]:
    request = repo.gate_prompt(include_rejected=args.get("include_rejected", False))
    return {"pending": False} if request is None else {"pending": True, **json_data(request)}


def _propose(repo: MemoryRepo, args: Arguments) -> dict[str, Any]:
    answer = json.dumps(args["gate_output"], ensure_ascii=False)
    if len(answer.encode("utf-8")) > MAX_ANSWER_BYTES:
        raise InvalidInputError(
            f"the Gate answer is over {MAX_ANSWER_BYTES:,} bytes",
            code="too-large",
            field="gate_output",
            hint="a Gate answer is one JSON object for the units memory_gate_prompt showed",
        )
    return json_data(
        repo.process(gate_output=answer, include_rejected=args.get("include_rejected", False))
    )


def _process(repo: MemoryRepo, args: Arguments) -> dict[str, Any]:
    backend = args.get("backend") or repo.settings.gate.get("backend", "rules")
    if backend == "host":
        raise UsageError(
            "the configured Gate backend is host: the agent answers the Gate itself",
            code="usage",
            field="backend",
            hint="call memory_gate_prompt, then memory_propose with your answer",
        )
    return json_data(
        repo.process(
            backend=backend,
            max_batches=args.get("max_batches"),
            include_rejected=args.get("include_rejected", False),
        )
    )


def _remember(repo: MemoryRepo, args: Arguments) -> dict[str, Any]:
    return json_data(
        repo.remember(
            args["text"], title=args.get("title"), scope=args.get("scope"), kind=args.get("type")
        )
    )


def _forget(repo: MemoryRepo, args: Arguments) -> dict[str, Any]:
    return json_data(repo.forget(args["ids"], with_sources=args.get("with_sources", False)))


def _history(repo: MemoryRepo, args: Arguments) -> dict[str, Any]:
    memory_id = args["id"]
    rev = args.get("rev")
    histories = repo.log(memory_id, follow=args.get("follow", False))
    blame = repo.blame(f"{memory_id}@{rev}" if rev else memory_id)
    return {"memories": json_data(histories), "blame": json_data(blame)}


TOOLS = (
    Tool(
        name="memory_map",
        description=(
            "Start here, before memory_recall: an overview of the long-term memory "
            "(how many memories in which scopes and types, the latest ones, the terms "
            "that say most about it). Use its scopes, types and terms to word recalls."
        ),
        schema=_object(
            {
                "recent": _integer("How many of the latest memories to list.", 0, 100, 10),
                "terms": _integer("How many distinctive terms to list.", 0, 100, 20),
            }
        ),
        run=_map,
        read_only=True,
    ),
    Tool(
        name="memory_recall",
        description=(
            "Search the long-term memory: ranked memories with their sources (exact "
            "quotes of captured turns) and ranked captured turns. Read memory_map first. "
            "An empty or weak result is not 'nothing is known': it is a signal to retry "
            "with other words (synonyms, the map's terms, fewer filters); the trace names "
            "query words found nowhere and matches hidden by scope or type. Pass your own "
            "thread as exclude_thread so you do not recall what you just said."
        ),
        schema=_object(
            {
                "query": _text("Words to look for (English is stemmed).", MAX_QUERY_CHARS),
                "k": _integer("How many memories and how many turns to return.", 1, 100, 10),
                "scope": _text("Only memories in this scope or below it, e.g. project."),
                "type": _text("Only memories of this type, e.g. preference or fact."),
                "exclude_thread": _text(
                    "Leave out captured turns of this thread (or session), and memories "
                    "whose only sources are such turns: the calling thread."
                ),
                "from_turn": _integer(
                    "With exclude_thread: leave out only turns from this seq on.", 0
                ),
                "evidence": _flag("Include the captured turns behind each memory's sources."),
                "as_of": _text("Recall as of a commit or an ISO 8601 date."),
                "include_retired": _flag("Rank superseded and retracted memories too."),
            },
            ("query",),
        ),
        run=_recall,
        read_only=True,
    ),
    Tool(
        name="memory_read",
        description=(
            "Read one committed file of the memory, paged: a memory by id (its Markdown "
            "file, front matter and body), a captured turn by id source/session/seq, or "
            "any file the repository tracks by path (memories/..., inbox/..., runs/...). "
            "Continue from next_offset while it is not null."
        ),
        # One of id and path; the API says so when both or neither come (hosts refuse a
        # oneOf at the top of a tool's schema).
        schema=_object(
            {
                "id": _text("A memory id, or a turn id source/session/seq."),
                "path": _text("A path as git ls-files shows it.", 1024),
                "offset": _integer("The first character to return.", 0, default=0),
                "limit": _integer(
                    "How many characters to return.", 1, MAX_READ_CHARS, DEFAULT_READ_CHARS
                ),
            }
        ),
        run=_read,
        read_only=True,
    ),
    Tool(
        name="memory_capture",
        description=(
            "Capture one conversation turn into the memory's inbox (committed, secrets "
            "redacted first). Capturing the same turn again changes nothing. The turn is "
            '{"source", "session", "seq", "timestamp", "thread"?, "messages": [{"role": '
            '"user"|"assistant"|"tool", "content", "name"?, "complete"?}]} '
            "(docs/formats.md). Captured turns become memories through memory_process, "
            "or memory_gate_prompt and memory_propose."
        ),
        schema=_object(
            {
                "turn": {
                    "type": "object",
                    "description": "The turn, as memgit capture reads it on stdin.",
                }
            },
            ("turn",),
        ),
        run=_capture,
        read_only=False,
    ),
    Tool(
        name="memory_gate_prompt",
        description=(
            "The Gate question for the first batch of pending captured turns: the "
            "instructions, the evidence units (only units with can_support true can "
            "support a memory) and related memories. Answer it with memory_propose."
        ),
        schema=_object({"include_rejected": _INCLUDE_REJECTED}),
        run=_gate_prompt,
        read_only=True,
    ),
    Tool(
        name="memory_propose",
        description=(
            "Answer the Gate yourself (the host backend): submit the JSON object "
            "{candidates, coverage, evidence_bindings} for the units memory_gate_prompt "
            'showed, with its "prompt_digest": the digest memory_gate_prompt gave (an '
            "answer to an older prompt is refused with prompt-changed: ask for the prompt "
            "again). It is checked like any Gate's answer; a refused answer writes "
            "nothing and returns every problem, so correct it and propose again."
        ),
        schema=_object(
            {
                "gate_output": {
                    "type": "object",
                    "description": "The Gate answer, as docs/gate.md describes it.",
                },
                "include_rejected": _INCLUDE_REJECTED,
            },
            ("gate_output",),
        ),
        run=_propose,
        read_only=False,
    ),
    Tool(
        name="memory_process",
        description=(
            "Turn pending captured turns into memories with the configured Gate backend "
            "(or the one named), one validated commit per run."
        ),
        schema=_object(
            {
                "backend": {
                    "type": "string",
                    "enum": sorted(REGISTRY),
                    "description": "A Gate backend instead of gate.backend in memgit.yaml.",
                },
                "max_batches": _integer("Stop after this many runs.", 1, 10_000),
                "include_rejected": _INCLUDE_REJECTED,
            }
        ),
        run=_process,
        read_only=False,
    ),
    Tool(
        name="memory_remember",
        description=(
            "Store a statement the user asked you to remember, as it is: it is captured "
            "as a user turn (secrets redacted) and made a memory quoting it, checked and "
            "committed like any Gate run. Use it for what the user explicitly wants kept; "
            "let memory_process judge ordinary conversation."
        ),
        schema=_object(
            {
                "text": _text("What to remember, 8 to 4,000 characters.", 4_000),
                "title": _text("A title (default: the first line, cut at a word).", 200),
                "scope": _text("A scope of memgit.yaml (default: its first)."),
                "type": _text("A memory type of memgit.yaml (default: fact)."),
            },
            ("text",),
        ),
        run=_remember,
        read_only=False,
    ),
    Tool(
        name="memory_forget",
        description=(
            "Remove memories the user no longer wants from the branch, in one checked "
            "commit (Git history keeps them; `memgit forget --purge` is for people). "
            "with_sources also removes the captured turns only they quote."
        ),
        schema=_object(
            {
                "ids": {
                    "type": "array",
                    "items": _MEMORY_ID,
                    "minItems": 1,
                    "maxItems": 100,
                    "uniqueItems": True,
                    "description": "The ids of the memories to remove.",
                },
                "with_sources": _flag("Also remove the captures only these memories quote."),
            },
            ("ids",),
        ),
        run=_forget,
        read_only=False,
    ),
    Tool(
        name="memory_history",
        description=(
            "The history of one memory: every version (who changed it, from which run) "
            "and, for each line of its body, the version and source quotes behind it."
        ),
        schema=_object(
            {
                "id": _MEMORY_ID,
                "rev": _text("Blame this version instead of the latest: vN, a date or a commit."),
                "follow": _flag("Also list its successors and the memories it superseded."),
            },
            ("id",),
        ),
        run=_history,
        read_only=True,
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
