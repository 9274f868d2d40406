"""The offline default backend: keeps what a user plainly states, and nothing else.

Explicit requests ("remember that ...", "don't forget ...", "make a note: ...", 记住,
recuerda, merk dir), first-person preferences and habits ("I prefer ...", "I always
..."), who the user is ("I'm Dana, the tech lead"), team decisions ("we decided ...",
"let's go with ..."), facts about people ("Dana owns billing"), procedures ("before
every commit, run ...") and facts about the project said plainly ("The API is served
from api.example.com"), in English, Chinese, Spanish and German. The forms are data
(:mod:`memgit.gate.forms`), and so are the forms that are never a memory: questions,
hypotheticals, someone else's words, jokes, states of the moment, one-off
instructions, code and pasted output. A user's short agreement ("yes, do that") to the
assistant's proposal in the turn just before keeps that proposal, quoting both.

It needs no model, answers in the same JSON contract as any other backend, and its
answer passes the same validation. A statement is one sentence
(:mod:`memgit.gate.sentences`) or one clause of it, so its quote, title and body never
end inside a number, a domain, a path or a code span. A change of mind or a correction
of a related memory memgit showed it replaces that memory (:mod:`memgit.gate.changes`).
When a statement cannot be read with confidence, nothing is stored: a wrong memory is
worse than a missing one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memgit.evidence import MIN_QUOTE_WEIGHT, EvidenceUnit, previous_turn, quote_weight
from memgit.gate.changes import (
    Change,
    change_kind,
    find_target,
    near_subject,
    opens_rule,
    read_change,
    strip_lead_in,
    topic_of,
)
from memgit.gate.forms import Form, load_forms
from memgit.gate.prompt import GateRequest
from memgit.gate.scoping import choose_scope
from memgit.gate.sentences import LIST_MARKER, shorten, split_sentences
from memgit.gate.subjects import related_text
from memgit.memory import Memory
from memgit.secrets.redact import find_credentials

_TITLE_LIMIT = 80
_TITLE_MAX = 200  # the schema's bound: a title that cannot be cut within it is not stored
# A statement longer than this is quoted and kept only in part (its body too): the
# Gate contract bounds quotes (4,000 characters) and bodies (20,000).
_QUOTE_LIMIT = 1000
_TRAILING_STOPS = " \t.!。！；;"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a title holds none (the schema says so)
# Capture put this where a secret stood (memgit/secrets/redact.py): a statement built
# around a credential keeps nothing worth recalling once the credential is gone.
_REDACTED = "[REDACTED"
# Where one sentence holds several statements: "I use fish; my editor is Helix",
# "..., and the read replica is ...". After "Two things:" a plain comma parts them too.
_PARTS = re.compile(r";\s+|；|,\s+(?:and|but|plus)\s+|，\s*(?:另外|还有|而且)\s*")
_LISTED_PARTS = re.compile(r";\s+|；|,\s+(?:and\s+)?|，")
# The proposal a reply agrees to is among the last sentences of the assistant's message
# ("... I'd go with RQ. Postgres fits better. Which one?"), not anywhere in a long one.
_PROPOSAL_WINDOW = 3
_POINTED_AT = "pointed-at"
# A reply longer than this is no short agreement, whatever it opens with.
_AGREEMENT_LIMIT = 160
# A proposal that speaks of the user ("keep your answers short") is about the user.
_ABOUT_USER = re.compile(
    r"\b(?:you|your)\b.*\b(?:answers?|replies|responses|explanations?|summar(?:y|ies)|messages)\b"
    r"|\bfor you\b|^(?:show|answer|reply|respond|explain|summari[sz]e|format)\b|你的(?:回答|回复)"
    # How the assistant works with the user: "... before I show you code", "keep replies
    # under 10 lines", "dir ... schreiben", "te responda".
    r"|\b(?:show|send|give|tell|ask|answer|reply to|write to)\s+you\b|\bunless you\b"
    r"|^(?:\w+\s+){0,3}(?:replies|answers|responses)\b|\b(?:dir|dich)\b|\bte\s+\w+[ae]\b|\ba ti\b",
    re.IGNORECASE,
)
# What a proposal must say more than: "do it", "use that".
_EMPTY_PROPOSAL = re.compile(
    r"^\W*(?:\w+\s+)?(?:it|this|that|them|so|one)\W*$|^(?:it|this|that)\b", re.IGNORECASE
)
# What a "yes, but ..." changes in the proposal it agrees to.
_AMENDMENT = re.compile(r"^(?:but|aber|pero|但是?)\s*(\S.*)$", re.IGNORECASE)
_CHOICE = re.compile(r"\s(?:or|o|oder)\s|还是|或者|或", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Statement:
    """One sentence (or clause) worth keeping: ``quote`` is exact text of the unit at
    ``start``; ``scope`` is the scope its form says, if it says one."""

    quote: str
    start: int
    what: str
    kind: str | None  # None: no explicit form; it counts only as a change of a memory
    change: str | None  # "SUPERSEDE", "UPDATE" or None
    scope: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Reading:
    """What the forms make of one piece of a sentence."""

    what: str
    kind: str
    scope: str | None


def _first(forms: tuple[Form, ...], text: str) -> tuple[Form, re.Match[str]] | None:
    for form in forms:
        found = form.search(text)
        if found is not None:
            return form, found
    return None


# An explicit request may be asked as a question ("Could you remember that ...?"): these
# never-forms do not refuse it.
_ASKING = frozenset({"question", "polite-one-off", "one-off"})


# A change already made, dated by the moment it was made ("Staging got bumped to
# Kubernetes 1.29 this morning", "bumped the API rate limit to 300/min today"), is no
# instruction for this turn alone; a change said to hold only for a while still is.
_DONE = re.compile(
    r"\b(?:switched|moved|migrated|upgraded|bumped|changed|went|replaced|swapped|ditched"
    r"|dropped|raised|lowered|increased|renamed|rolled out|killed|retired|shortened"
    r"|cambiamos|migramos|subimos|actualizamos|umgestellt|gewechselt|migriert|aktualisiert)\b"
    r"|->|→|=>|升级到|升到|换成|改成|切到|迁到|开始就是",
    re.IGNORECASE,
)
_DONE_WHEN = re.compile(
    r"\b(?:today|tonight|yesterday|this (?:morning|afternoon|evening|week)|hoy|ayer"
    r"|esta (?:mañana|tarde|semana)|heute|gestern|heute (?:morgen|früh))\b|今天|今早|昨天|今晚",
    re.IGNORECASE,
)
_FOR_A_WHILE = re.compile(
    r"\b(?:for now|for the moment|for the time being|temporarily|until|just this once"
    r"|this time|for today|por ahora|de momento|vorerst|erstmal)\b|暂时|这次",
    re.IGNORECASE,
)
# Never-forms a completed change passes: its date, and its reason ("the egress fees
# were insane") are not what the sentence is.
_DATED = frozenset({"this-turn", "today"})


def _done(text: str) -> bool:
    """Whether ``text`` tells of a change already made, dated ("... today")."""
    return bool(
        _DONE.search(text)
        and _DONE_WHEN.search(text)
        and not _FOR_A_WHILE.search(text)
        and change_kind(text)
    )


def _changes_value(text: str) -> bool:
    """Whether ``text`` names the value a change replaced or the one it brought."""
    change = read_change(text)
    return change is not None and bool(change.old or change.new)


# Where a sentence's first clause ends: "releases are weekly now, every Tuesday, the
# two-week train was way too slow" says its change first and its reason after.
_FIRST_CLAUSE = re.compile(r"[,;:]\s|，|；|：")


def _reason_after_change(text: str) -> bool:
    """Whether ``text``'s first clause says a change and an opinion comes only after it
    (the reason), not in it ("the build is way too slow now" is an opinion)."""
    cut = _FIRST_CLAUSE.search(text)
    if cut is None or change_kind(text[: cut.start()]) is None:
        return False
    return not any(
        form.name == "opinion" and form.search(text[: cut.start()]) for form in load_forms().never
    )


def refused(text: str, *, asking: bool = False) -> str | None:
    """The name of the never-form ``text`` holds (a question, a joke, ...), if any;
    ``asking``: ``text`` is an explicit request, which may be put as a question."""
    for form in load_forms().never:
        if asking and form.name in _ASKING:
            continue
        if form.search(text) is None:
            continue
        if form.name in _DATED and _done(text):
            continue
        if form.name == "opinion" and (_changes_value(text) or _reason_after_change(text)):
            continue
        return form.name
    return None


def find_statements(text: str) -> list[_Statement]:
    """The statements worth keeping in ``text`` and its changes of mind."""
    if _first(load_forms().never_message, text) is not None:
        return []
    found: list[_Statement] = []
    sentences = split_sentences(text)
    merged = -1
    introduced = -2  # the sentence of the last statement that says who the user is
    for number, sentence in enumerate(sentences):
        if number == merged:
            continue
        marker = LIST_MARKER.match(sentence.text)
        skip = marker.end() if marker else 0
        quote = shorten(sentence.text[skip:], _QUOTE_LIMIT)
        if quote is None or quote_weight(quote) < MIN_QUOTE_WEIGHT:
            continue  # the evidence check would refuse it, and the whole answer with it
        if find_credentials(quote):  # the contract refuses it, and the whole answer with it
            continue
        plain = strip_lead_in(quote)
        asking = _first(load_forms().requests, plain) is not None
        if quote.endswith(("?", "？")) and not asking:
            continue
        start = sentence.start + skip
        if _REDACTED in quote or refused(quote, asking=asking) == "credential":
            # "The webhook endpoint is /hooks/stripe and its signing secret is [REDACTED]":
            # the statement beside the credential still holds.
            found += _beside_credential(quote, start)
            continue
        if refused(quote, asking=asking) is not None:
            continue
        change = change_kind(quote)
        lead = len(quote) - len(plain)
        parts = _parts(plain) if change is None else []
        if parts:
            found += [
                _Statement(
                    quote=part,
                    start=start + lead + at,
                    what=piece.what,
                    kind=piece.kind,
                    change=None,
                    scope=piece.scope,
                )
                for at, part, piece in parts
            ]
            continue
        reading = _read(plain)
        if reading is not None and quote.endswith(("?", "？")) and _thin(reading.what):
            continue  # "Can you remember that file I sent?" asks; it states nothing
        if reading is None and change is None:
            continue
        if change is None and number > 0 and _only_corrects(sentences[number - 1].text):
            change = "UPDATE"  # "wait no, I mixed them up. prod is on 5432, ..."
        statement = _Statement(
            quote=quote,
            start=start,
            what=reading.what if reading is not None else plain,
            kind=reading.kind if reading is not None else None,
            change=change,
            scope=reading.scope if reading is not None else None,
        )
        after = sentences[number + 1] if number + 1 < len(sentences) else None
        if reading is not None and after is not None and _continues(after.text):
            # "I'm not a fan of ORMs. Write raw SQL for me instead.": one statement.
            statement = _joined(text, statement, after.end)
            merged = number + 1
        elif reading is None and after is not None and _announces(quote, after.text):
            # "I've changed my mind on the long answers. Give me the short version
            # first.": the change is what the next sentence says.
            statement = _joined(text, statement, after.end)
            merged = number + 1
        if found and introduced == number - 1 and _introduces(statement):
            # "I'm Maya, I do the backend. I'm in Lisbon.": one introduction, one memory.
            found[-1] = _joined(text, found[-1], sentence.end)
            introduced = number
            continue
        introduced = number if _introduces(statement) else -2
        found.append(statement)
    return found


# Where a statement and the credential beside it part: "..., and its token is ...".
_BESIDE = re.compile(r"[,;]?\s+(?:and|but|plus|while)\s+|;\s+|，|；")
_COMMA = re.compile(r",\s+")
_NETWORK = re.compile(r"\b(?:wi-?fi|wlan|ssid)\b", re.IGNORECASE)


def _beside_credential(quote: str, start: int) -> list[_Statement]:
    """The statements of ``quote`` (at ``start`` in its unit) in the parts of it that
    hold no credential, no redaction marker and no other never-form. When "and" or a
    semicolon parts none, the part before the first comma may: "the staging db is
    db.stg.internal, user admin, password [REDACTED:...]"."""
    kept = _apart(_split(_BESIDE, quote), quote, start)
    if kept or _NETWORK.search(quote):
        return kept  # a wifi's name beside its key is half of the credential
    parts = _split(_COMMA, quote)
    held = [n for n, part in enumerate(parts) if _REDACTED in part or find_credentials(part)]
    if not held or held[0] == 0:
        return []
    # Every part before the credential's: "Der Mailserver ist mail.kassenwerk.de, SMTP
    # über Port 587, Absender ... mit Kennwort [REDACTED:...]".
    last = parts[held[0] - 1]
    return _apart([quote[: quote.index(last) + len(last)]], quote, start)


def _apart(parts: list[str], quote: str, start: int) -> list[_Statement]:
    """The statements among ``parts`` of ``quote`` that stand apart from its credential."""
    kept = []
    for part in parts:
        piece = part.strip().rstrip(_TRAILING_STOPS.replace(" ", ""))
        if not piece or _REDACTED in piece or find_credentials(piece) or refused(piece):
            continue
        if quote_weight(piece) < MIN_QUOTE_WEIGHT or quote.count(piece) != 1:
            continue
        reading = _read(strip_lead_in(piece))
        if reading is None or change_kind(piece) is not None:
            continue
        kept.append(
            _Statement(
                quote=piece,
                start=start + quote.index(piece),
                what=reading.what,
                kind=reading.kind,
                change=None,
                scope=reading.scope,
            )
        )
    return kept


def _only_corrects(sentence: str) -> bool:
    """Whether ``sentence`` only says that what follows corrects ("wait no, I mixed them
    up."): a correction with nothing of its own to keep."""
    return change_kind(sentence) == "UPDATE" and _read(strip_lead_in(sentence)) is None


# What the sentence after an announced change may be and still say the change: a
# request for the answers to come ("Give me the short version first") is one.
_SAYS_THE_CHANGE = frozenset({"polite-one-off"})


def _announces(sentence: str, after: str) -> bool:
    """Whether ``sentence`` only announces a change ("Honestly I've changed my mind on
    the long answers.") that ``after`` then states."""
    change = read_change(sentence)
    if change is None or change.old or change.new or change.wording:
        return False
    if after.endswith(("?", "？")) or _REDACTED in after or find_credentials(after):
        return False
    if read_change(after) is not None or _read(strip_lead_in(after)) is not None:
        return False  # a statement of its own: the announcement only marks it a change
    return refused(after) in (None, *_SAYS_THE_CHANGE)


def _introduces(statement: _Statement) -> bool:
    """Whether ``statement`` says who the user is (a fact about the user, no change)."""
    return statement.kind == "fact" and statement.scope == "user" and statement.change is None


def _continues(sentence: str) -> bool:
    """Whether ``sentence`` only finishes the statement before it ("... instead.")."""
    return (
        _first(load_forms().continuations, sentence) is not None
        and not sentence.endswith(("?", "？"))
        and _REDACTED not in sentence
        and refused(sentence) is None
        and _read(strip_lead_in(sentence)) is None
    )


def _joined(text: str, statement: _Statement, end: int) -> _Statement:
    quote = shorten(text[statement.start : end], _QUOTE_LIMIT)
    if quote is None or len(quote) <= len(statement.quote):
        return statement
    what = statement.what + quote[len(statement.quote) :]
    return _Statement(
        quote=quote,
        start=statement.start,
        what=what,
        kind=statement.kind,
        change=statement.change,
        scope=statement.scope,
    )


def _read(text: str) -> _Reading | None:
    """What ``text`` states, by its form: an explicit request keeps what follows it as
    said; otherwise what follows its openers must have a statement form."""
    forms = load_forms()
    request = _first(forms.requests, text)
    if request is not None:
        what = text[request[1].end() :].strip().rstrip("?？ ")
        if not what:
            return None
        kind = request[0].type or "fact"
        inner = _statement(what)
        if inner is None:
            return _Reading(what=what, kind=kind, scope=_whose(what))
        # "Remember that I prefer X" is a preference; "Decision made: ..." stays a decision.
        return _Reading(what=what, kind=inner.kind if kind == "fact" else kind, scope=inner.scope)
    rest, opened = _without_openers(text)
    reading = _statement(rest)
    if reading is None and rest is not text:
        # What looked like an opener was the statement's own start ("I always want
        # conventional commits from you: feat:, fix: ...").
        rest, opened, reading = text, None, _statement(text)
    if reading is None:
        return None
    return _Reading(what=rest, kind=opened or reading.kind, scope=reading.scope)


def _thin(what: str) -> bool:
    """Whether ``what`` is too little to be a statement without a form of its own."""
    return _statement(what) is None and len(what.split()) < 5 and quote_weight(what) < 24


def _without_openers(text: str) -> tuple[str, str | None]:
    """``text`` without its openers ("Two things:", "Decision made:"), and the type the
    openers say, if one does."""
    kind = None
    for _ in range(3):
        opener = _first(load_forms().openers, text)
        if opener is None or not text[opener[1].end() :].strip():
            break
        kind = opener[0].type or kind
        text = text[opener[1].end() :].strip()
    return text, kind


def _statement(text: str) -> _Reading | None:
    hit = _first(load_forms().statements, text)
    if hit is None:
        return None
    return _Reading(what=text, kind=hit[0].type or "fact", scope=hit[0].scope or _whose(text))


def _whose(text: str) -> str | None:
    """``user`` when ``text`` speaks of the speaker ("I", "my", 我, mi, mein), else
    ``project`` when it speaks of the team or the project ("we", "our", 我们, unser);
    None when it says neither (its words then decide: :mod:`memgit.gate.scoping`)."""
    forms = load_forms()
    if _first(forms.speaker, text) is not None:
        return "user"
    if _first(forms.team, text) is not None:
        return "project"
    return None


def _parts(text: str) -> list[tuple[int, str, _Reading]]:
    """The statements of a sentence that holds several ("I use fish, and my editor is
    Helix"), each with its offset in ``text``; empty when it holds one or none.

    The sentence is parted only when each part is a statement of its own and none is a
    procedure (which often finishes the sentence before it: "I hate X; never leave
    any"), or when the whole sentence is no statement and some parts are."""
    rest, _ = _without_openers(text)
    offset = len(text) - len(rest)
    listed = rest is not text and offset > 0
    cuts = _split(_LISTED_PARTS if listed else _PARTS, rest)
    if len(cuts) < 2:
        return []
    pieces = []
    at = 0
    for cut in cuts:
        at = rest.index(cut, at)
        piece = cut.strip().rstrip(_TRAILING_STOPS.replace(" ", ""))
        if piece:
            pieces.append((offset + at + cut.index(piece), piece))
        at += len(cut)
    readings = [(at, piece, _read(piece)) for at, piece in pieces]
    kept = [
        (at, piece, reading)
        for at, piece, reading in readings
        if reading is not None and quote_weight(piece) >= MIN_QUOTE_WEIGHT
    ]
    every = len(kept) == len(readings) and all(r.kind != "procedure" for _, _, r in kept)
    # After "so you know who to bug:" the parts are a list: the items that read are kept.
    if every or (kept and _read(text) is None) or (listed and len(kept) > 1):
        return kept
    return []


def _split(pattern: re.Pattern[str], text: str) -> list[str]:
    """``text`` cut where ``pattern`` matches outside parentheses ("farah builds the
    dashboard (she's in Karachi, so ...)" is one part)."""
    cuts, at = [], 0
    for found in pattern.finditer(text):
        if text.count("(", 0, found.start()) > text.count(")", 0, found.start()):
            continue
        cuts.append(text[at : found.start()])
        at = found.end()
    cuts.append(text[at:])
    return cuts


def _title(what: str) -> str | None:
    flat = " ".join(_CONTROL.sub(" ", what).split()).rstrip(_TRAILING_STOPS)
    title = shorten(flat, _TITLE_LIMIT) or shorten(flat, _TITLE_MAX - len("..."))
    if not title:
        return None
    if len(title) < len(flat):
        title += "..."
    return _sentence_case(title)


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


def _normal(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


class RulesBackend:
    name = "rules"
    model: str | None = None
    can_correct = True

    def answer(self, request: GateRequest) -> str:
        answer = _Answer(request)
        for unit in request.units:
            if unit.can_support:
                answer.cover(unit)
        return json.dumps(answer.result(), ensure_ascii=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Proposal:
    """What the assistant proposed: a sentence of its unit, and what it proposes."""

    unit: EvidenceUnit
    quote: str
    start: int
    what: str


def find_proposal(unit: EvidenceUnit) -> _Proposal | None:
    """The assistant's proposal in ``unit``: the last of its last three sentences that
    proposes something ("Shall I switch the tests to pytest?"), passing over one that
    only points back at an earlier one ("Want me to do that going forward?")."""
    forms = load_forms()
    pointed = False  # a later question pointed back here: a plain suggestion will do
    for sentence in reversed(split_sentences(unit.text)[-_PROPOSAL_WINDOW:]):
        hit = next(
            (
                (form, found)
                for form in forms.proposals
                if (pointed or form.name != _POINTED_AT)
                and (found := form.search(sentence.text)) is not None
            ),
            None,
        )
        if hit is None:
            continue
        what = hit[1].group("what").strip()
        for reason in forms.reasons:
            what = reason.pattern.sub("", what)
        what = what.strip().rstrip(" ?？.!。！,，")
        if _first(forms.anaphora, what) is not None:
            pointed = True
            continue
        if not what or _EMPTY_PROPOSAL.search(what) or _first(forms.errands, what):
            return None
        if quote_weight(sentence.text) < MIN_QUOTE_WEIGHT:
            return None
        return _Proposal(unit=unit, quote=sentence.text, start=sentence.start, what=what)
    return None


def agreement(text: str) -> str | None:
    """What a user's short agreement adds to the proposal it agrees to ("go with
    Postgres" in "sounds good, go with Postgres"; "" when nothing); None when ``text``
    is no plain agreement (a question, a "no", a "but", or a long message)."""
    text = text.strip()
    if len(text) > _AGREEMENT_LIMIT:
        return None
    forms = load_forms()
    hit = _first(forms.agreements, text)
    if hit is None or _first(forms.hesitations, text) is not None:
        return None
    if _first(forms.never_message, text) is not None:
        return None
    rest = text[hit[1].end() :].strip(" ,.!;:，。！、-")
    while True:
        again = _first(forms.agreements, rest)
        if again is None or again[1].end() == 0:
            return rest
        rest = rest[again[1].end() :].strip(" ,.!;:，。！、-")


class _Answer:
    """The Gate JSON for one request, built unit by unit."""

    def __init__(self, request: GateRequest) -> None:
        self.units = request.units
        self.related = {m.id: m for m in request.related}
        self.related_text = {m.id: f"{m.title} {m.body}" for m in request.related}
        # What this answer creates, by candidate id: a change of mind about one of them
        # waits for the next run, where it is a memory that can be superseded.
        self.created: dict[str, str] = {}
        self.types = request.settings.memory_types
        self.scopes = request.settings.scopes
        self.known = {_normal(m.title) for m in request.related} | {
            _normal(m.body) for m in request.related
        }
        self.taken: set[str] = set()
        # A removal whose memory a later statement of the same unit replaces.
        self.handoff: tuple[Memory, _Statement] | None = None
        self.candidates: list[dict[str, Any]] = []
        self.coverage: list[dict[str, Any]] = []
        self.bindings: list[dict[str, Any]] = []

    def cover(self, unit: EvidenceUnit) -> None:
        agreed = self._agreed(unit) if unit.role == "user" else None
        statements = find_statements(unit.text) if unit.role == "user" else []
        if agreed is not None:
            # "yes please. the local dev db is ...": the sentences after the agreeing one
            # may state facts of their own; a change of mind among them waits for none.
            said = split_sentences(unit.text)[0].end
            statements = [s for s in statements if s.start >= said and s.change is None]
        if agreed is None and any(self._changes_this_run(s) for s in statements):
            self.coverage.append(
                {"unit_id": unit.id, "decision": "DEFERRED", "reason": "needs-context"}
            )
            return
        ids = [] if agreed is None else [agreed]
        reason = "no-durable-content"
        changed = False  # a statement before said what holds now ("we moved to bun")
        gone: set[str] = set()  # the old values the unit's changes so far named
        self.handoff = None
        for number, statement in enumerate(statements):
            if changed and _only_removes(statement):
                continue  # "pnpm-lock.yaml is gone" after "we moved to bun": the same change
            if statement.change is not None and _names_any(statement.quote, gone):
                continue  # "we ditched Poetry for uv. poetry.lock is deleted ...": the same
            changed = changed or _says_new(statement)
            gone |= _old_values(statement)
            if _only_removes(statement) and self._hands_off(statement, statements[number + 1 :]):
                continue  # "No more LaunchDarkly. Flags live in Unleash now.": one change
            title, body = _title(statement.what), _sentence_case(statement.what)
            if title is None:
                reason = "ambiguous"
                continue
            if _normal(title) in self.known or _normal(statement.what) in self.known:
                reason = "already-known"
                continue
            candidate = self._candidate(unit, statement, title, body)
            if candidate is None:
                continue
            claims = [_claim(unit, statement)]
            if self.handoff is not None and candidate.get("target") == self.handoff[0].id:
                claims.insert(0, _claim(unit, self.handoff[1]))
                self.handoff = None
            if candidate["action"] == "CREATE" and statement.scope in self.scopes:
                candidate["scope"] = statement.scope  # the form says whose it is
            if (
                candidate["action"] == "CREATE"
                and "project" in self.scopes
                and _projects_way(statement)
            ):
                # "I run `make migrate` against prod before every release": how the
                # project is worked, said in the first person, is the project's.
                candidate["scope"] = "project"
                candidate["type"] = self._type("procedure" if "`" in statement.what else "fact")
            self.known.add(_normal(title))
            cid = f"c{len(self.candidates) + 1}"
            ids.append(cid)
            self.candidates.append({"candidate_id": cid, **candidate})
            if candidate["action"] == "CREATE":
                self.created[cid] = f"{title} {body}"
            self.bindings.append({"candidate_id": cid, "claims": claims})
        if ids:
            self.coverage.append(
                {"unit_id": unit.id, "decision": "CANDIDATE", "candidate_ids": ids}
            )
        else:
            self.coverage.append({"unit_id": unit.id, "decision": "NO_CHANGE", "reason": reason})

    def _changes_this_run(self, statement: _Statement) -> bool:
        """Whether ``statement`` changes no memory yet, but one this answer creates."""
        if statement.change is None:
            return False
        if find_target(statement.quote, self.related_text, taken=self.taken) is not None:
            return False
        return find_target(statement.quote, self.created, taken=frozenset()) is not None

    def _hands_off(self, removal: _Statement, after: list[_Statement]) -> bool:
        """Whether ``removal`` (a change that names only what no longer holds) finds its
        memory and a later statement of the unit says what holds now: that statement
        then replaces the memory, quoting both."""
        found = find_target(removal.quote, self.related_text, taken=self.taken)
        if found is None:
            return False
        content = self.related_text[found]
        if not any(
            (s.change is not None and (s.kind is not None or _says_new(s)))
            or (s.kind is not None and related_text(s.quote, content))
            for s in after
        ):
            return False
        self.handoff = (self.related[found], removal)
        return True

    def _recent(self, unit: EvidenceUnit, statement: _Statement) -> Memory | None:
        """The memory the user's latest earlier turn of this session made, when it is the
        one such memory and ``statement`` speaks of its subject: "sorry, typo: it's
        stage.shopfront.io" right after "The staging URL is staging.shopfront.io"."""
        session = unit.id.rsplit("/", 1)[0] + "/"
        made: list[tuple[int, Memory]] = []
        for memory in self.related.values():
            turns = [_turn_number(s.unit) for s in memory.sources if s.unit.startswith(session)]
            if memory.id not in self.taken and turns:
                made.append((max(turns), memory))
        latest = [m for turn, m in made if made and turn == max(t for t, _ in made)]
        if len(latest) != 1:
            return None
        memory = latest[0]
        return memory if near_subject(statement.quote, f"{memory.title} {memory.body}") else None

    def _candidate(
        self, unit: EvidenceUnit, statement: _Statement, title: str, body: str
    ) -> dict[str, Any] | None:
        target: Memory | None = None
        change = read_change(statement.quote) if statement.change is not None else None
        if change is None and statement.change is not None:  # the sentence before said so
            change = Change(action=statement.change, old=(), new=(), wording=None, alone=False)
        if change is None and self.handoff is not None:
            memory = self.handoff[0]
            if related_text(statement.quote, f"{memory.title} {memory.body}"):
                # "Yarn classic is out. We're on pnpm 9 since Monday.": the new state.
                return self._replacing(memory, "SUPERSEDE", statement, title, body)
        if change is not None:
            found = find_target(statement.quote, self.related_text, taken=self.taken)
            target = self.related[found] if found is not None else None
            if target is None and self.handoff is not None:
                target = self.handoff[0]
            if target is None and (change.action == "UPDATE" or not change.old):
                # A correction, or a change that names no old value (which the memory
                # would have to hold), of what the user said just before.
                target = self._recent(unit, statement)
            # "We switched from npm to pnpm" is said as an event: the memory says the state.
            title = (
                _title(change.wording) if statement.kind is None and change.wording else None
            ) or title
        elif statement.kind is not None and opens_rule(statement.quote):
            # "From now on one approval is enough" beside "Code review needs two
            # approvals": a rule from now on, of a subject a memory holds, replaces it.
            found = find_target(statement.quote, self.related_text, taken=self.taken)
            target = self.related[found] if found is not None else self._recent(unit, statement)
        if target is None:
            kind = statement.kind
            scope = choose_scope(statement.what, self.scopes, kind)
            if kind is None and change is not None and change.alone:
                # A change of mind with no earlier memory still says what holds now, and
                # whose: "I no longer use pnpm, we moved to bun" is the project's.
                scope = choose_scope(change.wording or statement.what, self.scopes)
                kind = "preference" if scope == "user" else "fact"
            if kind is None:
                return None  # "actually ..." about nothing memgit knows: not a statement
            return {
                "action": "CREATE",
                "type": self._type(kind),
                "scope": scope,
                "title": title,
                "body": body,
            }
        if (
            statement.kind is None
            and change is not None
            and _says_only_gone(change, statement)
            and related_text(statement.quote, f"{target.title} {target.body}")
        ):
            # "flyway's gone." says what no longer holds and nothing worth keeping of its
            # own: the memory leaves, and no memory of the old value takes its place.
            self.taken.add(target.id)
            return {"action": "RETRACT", "target": target.id}
        return self._replacing(target, statement.change or "SUPERSEDE", statement, title, body)

    def _replacing(
        self, target: Memory, action: str, statement: _Statement, title: str, body: str
    ) -> dict[str, Any]:
        """The candidate that replaces ``target``: a correction keeps the scope of what it
        corrects, and its type unless it says one. A change that quotes nothing of its
        target ("it's been moved, it's the 15th" right after the memory of the 14th)
        corrects that memory: the contract holds a SUPERSEDE to quoting its subject."""
        if action == "SUPERSEDE" and not related_text(
            statement.quote, f"{target.title} {target.body}"
        ):
            action = "UPDATE"
        self.taken.add(target.id)
        return {
            "action": action,
            "target": target.id,
            "type": self._type(statement.kind or target.type),
            "scope": target.scope,
            "title": title,
            "body": body,
        }

    def _agreed(self, unit: EvidenceUnit) -> str | None:
        """The candidate for ``unit`` as a short agreement to the proposal of the turn
        just before, if it is one: the memory states the proposal and quotes both."""
        added = agreement(unit.text)
        proposal = self._proposal_before(unit) if added is not None else None
        if added is None or proposal is None:
            return None
        what = proposal.what
        amendment = _AMENDMENT.match(added)
        if amendment:  # "yes, do it, but cap the backoff at 60s"
            what = f"{what}, {amendment.group(1).rstrip(' .!')}"
        elif _CHOICE.search(what) or quote_weight(what) < MIN_QUOTE_WEIGHT:
            if len(added.split()) < 2 and quote_weight(added) < 2 * MIN_QUOTE_WEIGHT:
                return None  # "yes" to "Postgres or MySQL?" (or to "RQ") says too little
            what = f"{added} ({what})"
        title = _title(what)
        if title is None or _normal(title) in self.known or find_credentials(what):
            return None  # the contract refuses a memory that states a credential
        self.known.add(_normal(title))
        scope = "user" if _ABOUT_USER.search(proposal.what) else "project"
        cid = f"c{len(self.candidates) + 1}"
        self.candidates.append(
            {
                "candidate_id": cid,
                "action": "CREATE",
                "type": self._type("decision"),
                "scope": scope if scope in self.scopes else self.scopes[0],
                "title": title,
                "body": _sentence_case(what) + ".",
            }
        )
        reply = unit.text.strip()
        self.bindings.append(
            {
                "candidate_id": cid,
                "claims": [
                    _claim_at(unit, reply, unit.text.index(reply), "user_confirmation"),
                    _claim_at(proposal.unit, proposal.quote, proposal.start, "source_excerpt"),
                ],
            }
        )
        return cid

    def _proposal_before(self, unit: EvidenceUnit) -> _Proposal | None:
        """The proposal of the assistant's last message in the turn just before ``unit``'s."""
        before = previous_turn(unit.id)
        said = [u for u in self.units if u.role == "assistant" and u.id.startswith(f"{before}#")]
        return find_proposal(said[-1]) if said else None

    def _type(self, kind: str) -> str:
        return kind if kind in self.types else self.types[0]

    def result(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "coverage": self.coverage,
            "evidence_bindings": self.bindings,
        }


def _turn_number(unit: str) -> int:
    """The turn number of a unit id ``source/session/seq#n`` (-1 for another shape)."""
    seq = unit.rsplit("#", 1)[0].rsplit("/", 1)[-1]
    return int(seq) if seq.isdigit() else -1


def _only_removes(statement: _Statement) -> bool:
    """Whether ``statement`` is a change that names only what no longer holds."""
    change = read_change(statement.quote) if statement.change is not None else None
    return change is not None and bool(change.old) and not change.new


# A habit said in the first person that is the project's way of working: it names the
# project itself, or a release or an environment beside a command in backticks.
_THE_PROJECT = re.compile(
    r"\b(?:f(?:ü|ue)r das projekt|im projekt|para el proyecto|en (?:este|el) proyecto"
    r"|(?:for|in) (?:this|the) (?:project|repo|codebase))\b|这个项目|项目里|项目中",
    re.IGNORECASE,
)
_RELEASE_WORK = re.compile(
    r"\b(?:prod|production|staging|releases?|deploy(?:s|ing|ments?)?|despliegue|produktion)\b"
    r"|发版|上线|部署|生产",
    re.IGNORECASE,
)


def _projects_way(statement: _Statement) -> bool:
    """Whether ``statement``, a preference by its form, is how the project is worked."""
    if statement.kind != "preference" or statement.scope != "user":
        return False
    what = statement.what
    return bool(_THE_PROJECT.search(what) or (_RELEASE_WORK.search(what) and "`" in what))


def _says_only_gone(change: Change, statement: _Statement) -> bool:
    """Whether ``change`` names only old values, with no new state in words, and its
    ``statement`` says nothing else ("flyway's gone.", not "bullseye is gone,
    everything's on bookworm now")."""
    if not change.old or change.new or change.wording is not None:
        return False
    rest = statement.quote
    for value in change.old:
        rest = rest.replace(value, " ")
    return not topic_of(rest)


def _old_values(statement: _Statement) -> set[str]:
    """The old values ``statement``'s change names, lower-cased ("poetry")."""
    change = read_change(statement.quote) if statement.change is not None else None
    return {value.lower() for value in change.old} if change is not None else set()


def _names_any(text: str, values: set[str]) -> bool:
    """Whether ``text`` names one of ``values`` as a word of its own."""
    return any(
        re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE) for value in values
    )


def _says_new(statement: _Statement) -> bool:
    """Whether ``statement`` is a change that names what holds now."""
    change = read_change(statement.quote) if statement.change is not None else None
    return change is not None and bool(change.new)


def _claim(unit: EvidenceUnit, statement: _Statement) -> dict[str, Any]:
    claim: dict[str, Any] = {"unit_id": unit.id, "quote": statement.quote, "role": "assertion"}
    if unit.text.count(statement.quote) > 1:
        claim["start"] = statement.start
        claim["end"] = statement.start + len(statement.quote)
    return claim


def _claim_at(unit: EvidenceUnit, quote: str, start: int, role: str) -> dict[str, Any]:
    claim: dict[str, Any] = {"unit_id": unit.id, "quote": quote, "role": role}
    if unit.text.count(quote) > 1:
        claim["start"] = start
        claim["end"] = start + len(quote)
    return claim
