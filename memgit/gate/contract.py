"""The Gate contract: parse a backend's answer, then check it against the evidence.

The schema (``gate-output.schema.json``) checks shape; the code here checks
what a schema cannot: that every supporting unit is covered exactly once, that
every quote stands exactly once in the unit it names, that only units which
can support a memory are used as evidence, and that targets are active
memories. Each failure carries an allowlisted ``evidence_check`` code, so that
diagnostics and correction requests never repeat raw model text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from memgit.errors import ExitStatus, MemgitError, Problem
from memgit.evidence import EvidenceUnit, agrees_to, locate_quote
from memgit.gate.subjects import related_text
from memgit.jsonio import parse_json
from memgit.schemas import iter_schema_problems
from memgit.secrets.redact import find_credentials
from memgit.settings import Settings

SOURCE = "gate output"

# The allowlist: every code a Gate answer can fail with (docs/gate.md).
EVIDENCE_CHECKS: dict[str, str] = {
    "not-json": "the answer is not one JSON object (Markdown fences and prose are refused)",
    "schema": "the answer breaks gate-output.schema.json",
    "duplicate-candidate": "two candidates share a candidate_id",
    "unknown-type": "a candidate's type is not in memgit.yaml's memory_types",
    "unknown-scope": "a candidate's scope does not start with one of memgit.yaml's scopes",
    "unknown-target": "a target names no active memory",
    "retired-target": "a target names a memory that was superseded or retracted",
    "duplicate-target": "two candidates change the same memory",
    "unknown-unit": "a coverage row or claim names a unit that is not in this run",
    "unit-cannot-support": "a coverage row or claim uses a unit that cannot support a memory",
    "unit-already-covered": "a coverage row or claim uses a unit an earlier run already decided",
    "unit-stuck": "a coverage row or claim uses a unit deferred too often, which is skipped",
    "duplicate-coverage": "a unit has more than one coverage row",
    "incomplete-coverage": "a supporting unit has no coverage row",
    "unknown-candidate": "a coverage row or binding names a candidate that does not exist",
    "duplicate-binding": "a candidate has more than one evidence binding",
    "quote-too-short": "a quote is too short to carry a claim (under 8 characters)",
    "quote-not-found": "a quote does not occur in its unit's text",
    "quote-ambiguous": "a quote occurs more than once in its unit and has no offsets",
    "quote-offsets-mismatch": "a quote's start/end offsets do not select exactly the quote",
    "confirmation-not-from-user": "a user_confirmation claim quotes a unit the user did not write",
    "proposal-without-agreement": "a claim quotes the assistant, and its candidate quotes no "
    "user unit of the turn right after",
    "no-evidence": "a candidate has no evidence binding",
    "coverage-contradicts-bindings": "coverage and evidence bindings disagree about a unit",
    "evidence-unrelated-to-target": "a SUPERSEDE or RETRACT quotes nothing about its target",
    "credential-in-memory": "a candidate's title or body states a credential (a password, "
    "a PIN, a code, a key) or a random-looking token beside a credential word or a "
    "generated-looking one",
}


class GateOutputError(MemgitError):
    """The Gate's answer failed validation; ``problems`` carry evidence_check codes."""

    code = "gate-rejected"
    exit_status = ExitStatus.INVALID_INPUT


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    unit_id: str
    quote: str
    role: str
    start: int
    end: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    candidate_id: str
    action: str
    target: str | None
    type: str | None
    scope: str | None
    title: str | None
    body: str | None
    tags: tuple[str, ...]
    claims: tuple[Claim, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GateOutput:
    """A validated answer: candidates with resolved claims, and the raw object to record."""

    candidates: tuple[Candidate, ...]
    decisions: dict[str, str]
    raw: dict[str, Any]


TargetState = Callable[[str], str]  # memory id -> "active" | "retired" | "unknown"
TargetText = Callable[[str], str | None]  # memory id -> its title and body, if active


def check_gate_output(
    answer: str | bytes | dict[str, Any],
    *,
    units: Mapping[str, EvidenceUnit],
    settings: Settings,
    target_state: TargetState,
    closed: Mapping[str, str] | None = None,
    target_text: TargetText | None = None,
) -> GateOutput:
    """Validate ``answer`` for a run over ``units``; raise GateOutputError with every problem.

    ``closed`` maps the units that are not this run's to decide (an earlier run did,
    or they were deferred too often: ``ProcessingState.closed``) to the code that
    refuses a row or claim on them; every other supporting unit needs its row.
    ``target_text`` (when the targets' content is known) lets a SUPERSEDE or RETRACT
    be held to evidence about the memory it replaces."""
    raw = _parse(answer)
    problems = list(iter_schema_problems(raw, "gate-output", path=SOURCE))
    if problems:
        raise _rejected(problems)
    checker = _Checker(raw, units, settings, target_state, closed or {}, target_text)
    problems = checker.run()
    if problems:
        raise _rejected(problems)
    return checker.result()


def _parse(answer: str | bytes | dict[str, Any]) -> dict[str, Any]:
    if isinstance(answer, dict):
        return answer
    text = answer.decode("utf-8", "replace") if isinstance(answer, bytes) else answer
    fenced = text.lstrip().startswith("```")
    try:
        value = parse_json(text, source=SOURCE)
    except MemgitError as err:
        raise _rejected([_not_json(fenced)]) from err
    if not isinstance(value, dict):
        raise _rejected([_not_json(fenced)])
    return value


def _not_json(fenced: bool) -> Problem:
    hint = "answer with the JSON object alone, without Markdown fences or prose"
    reason = "a Markdown code fence" if fenced else "not one JSON object"
    return Problem(code="not-json", message=f"the answer is {reason}", path=SOURCE, hint=hint)


def _rejected(problems: list[Problem]) -> GateOutputError:
    first = problems[0]
    summary = ", ".join(f"{code} x{n}" for code, n in Counter(p.code for p in problems).items())
    return GateOutputError(
        f"the Gate's answer was refused ({summary}): {first.message}",
        path=SOURCE,
        field=first.field,
        hint="nothing was written; the captures stay pending (docs/gate.md lists the checks)",
        problems=tuple(problems),
    )


class _Checker:
    """Collects every problem of one answer; see EVIDENCE_CHECKS for the codes."""

    def __init__(
        self,
        raw: dict[str, Any],
        units: Mapping[str, EvidenceUnit],
        settings: Settings,
        target_state: TargetState,
        closed: Mapping[str, str],
        target_text: TargetText | None,
    ) -> None:
        self.raw = raw
        self.units = units
        self.closed = closed
        self.target_text = target_text
        self.settings = settings
        self.target_state = target_state
        self.problems: list[Problem] = []
        self.claims: dict[str, list[Claim]] = {}
        self.rows: dict[str, dict[str, Any]] = {}

    def add(self, code: str, field: str, message: str | None = None) -> None:
        self.problems.append(
            Problem(
                code=code,
                message=message or EVIDENCE_CHECKS[code],
                path=SOURCE,
                field=field,
            )
        )

    def run(self) -> list[Problem]:
        candidate_ids = self._check_candidates()
        self._check_coverage(candidate_ids)
        self._check_bindings(candidate_ids)
        self._check_agreement(candidate_ids)
        self._check_relation()
        self.problems += iter_credential_problems(self.raw["candidates"])
        return self.problems

    def _check_candidates(self) -> set[str]:
        seen: set[str] = set()
        targets: set[str] = set()
        scopes = set(self.settings.scopes)
        for i, candidate in enumerate(self.raw["candidates"]):
            field = f"candidates[{i}]"
            cid = candidate["candidate_id"]
            if cid in seen:
                self.add("duplicate-candidate", f"{field}.candidate_id")
            seen.add(cid)
            kind = candidate.get("type")
            if kind is not None and kind not in self.settings.memory_types:
                self.add("unknown-type", f"{field}.type")
            scope = candidate.get("scope")
            if scope is not None and scope.split("/")[0] not in scopes:
                self.add("unknown-scope", f"{field}.scope")
            target = candidate.get("target")
            if target is None:
                continue
            state = self.target_state(target)
            if state == "retired":
                self.add("retired-target", f"{field}.target")
            elif state != "active":
                self.add("unknown-target", f"{field}.target")
            if target in targets:
                self.add("duplicate-target", f"{field}.target")
            targets.add(target)
        return seen

    def _unit(self, unit_id: str, field: str, *, proposal: bool = False) -> EvidenceUnit | None:
        """The unit a row or claim names, if it may; ``proposal``: a claim, which may
        also quote the assistant (held to an agreement by :meth:`_check_proposals`)."""
        unit = self.units.get(unit_id)
        if unit is None:
            self.add("unknown-unit", field)
            return None
        if unit_id in self.closed:
            self.add(self.closed[unit_id], field)
            return None
        if not unit.can_support and not (proposal and unit.role == "assistant"):
            self.add("unit-cannot-support", field)
            return None
        return unit

    def _check_coverage(self, candidate_ids: set[str]) -> None:
        for i, row in enumerate(self.raw["coverage"]):
            field = f"coverage[{i}]"
            unit = self._unit(row["unit_id"], f"{field}.unit_id")
            if unit is None:
                continue
            if unit.id in self.rows:
                self.add("duplicate-coverage", f"{field}.unit_id")
                continue
            self.rows[unit.id] = row
            for j, cid in enumerate(row.get("candidate_ids", ())):
                if cid not in candidate_ids:
                    self.add("unknown-candidate", f"{field}.candidate_ids[{j}]")
        missing = [
            u
            for u in self.units.values()
            if u.can_support and u.id not in self.rows and u.id not in self.closed
        ]
        for unit in missing:
            self.add(
                "incomplete-coverage",
                "coverage",
                f"supporting unit {unit.id} has no coverage row",
            )

    def _check_bindings(self, candidate_ids: set[str]) -> None:
        for i, binding in enumerate(self.raw["evidence_bindings"]):
            field = f"evidence_bindings[{i}]"
            cid = binding["candidate_id"]
            if cid not in candidate_ids:
                self.add("unknown-candidate", f"{field}.candidate_id")
                continue
            if cid in self.claims:
                self.add("duplicate-binding", f"{field}.candidate_id")
                continue
            resolved = self.claims.setdefault(cid, [])
            proposals: list[tuple[str, str]] = []  # (assistant unit, the claim's field)
            # Beside the assistant's proposal, the user's whole reply may be a bare "yes".
            proposed = any(
                (u := self.units.get(claim["unit_id"])) is not None and u.role == "assistant"
                for claim in binding["claims"]
            )
            for j, claim in enumerate(binding["claims"]):
                claim_field = f"{field}.claims[{j}]"
                unit = self._unit(claim["unit_id"], f"{claim_field}.unit_id", proposal=True)
                if unit is None:
                    continue
                if claim["role"] == "user_confirmation" and unit.role != "user":
                    self.add("confirmation-not-from-user", f"{claim_field}.role")
                where = locate_quote(
                    unit.text,
                    claim["quote"],
                    claim.get("start"),
                    claim.get("end"),
                    whole=proposed and unit.role == "user",
                )
                if isinstance(where, str):
                    self.add(where, f"{claim_field}.quote")
                    continue
                if unit.role == "assistant":
                    proposals.append((unit.id, claim_field))
                resolved.append(
                    Claim(
                        unit_id=unit.id,
                        quote=claim["quote"],
                        role=claim["role"],
                        start=where[0],
                        end=where[1],
                    )
                )
            self._check_proposals(resolved, proposals)

    def _check_proposals(self, claims: list[Claim], proposals: list[tuple[str, str]]) -> None:
        """An assistant's words support a memory only as the proposal a user agreed to:
        the same candidate quotes a user unit of the turn right after (docs/gate.md)."""
        users = [c.unit_id for c in claims if self.units[c.unit_id].role == "user"]
        for unit_id, field in proposals:
            if not any(agrees_to(user, unit_id) for user in users):
                self.add("proposal-without-agreement", f"{field}.unit_id")

    def _check_agreement(self, candidate_ids: set[str]) -> None:
        for i, candidate in enumerate(self.raw["candidates"]):
            if not self.claims.get(candidate["candidate_id"]):
                self.add("no-evidence", f"candidates[{i}]")
        for cid, claims in self.claims.items():
            for claim in claims:
                row = self.rows.get(claim.unit_id)
                if row is None:
                    continue
                if row["decision"] != "CANDIDATE" or cid not in row.get("candidate_ids", ()):
                    self.add(
                        "coverage-contradicts-bindings",
                        "coverage",
                        f"unit {claim.unit_id} supports candidate {cid} "
                        "but its coverage row does not say so",
                    )
        for unit_id, row in self.rows.items():
            for cid in row.get("candidate_ids", ()):
                if cid in candidate_ids and not any(
                    c.unit_id == unit_id for c in self.claims.get(cid, ())
                ):
                    self.add(
                        "coverage-contradicts-bindings",
                        "coverage",
                        f"coverage of unit {unit_id} names candidate {cid}, "
                        "which quotes nothing from it",
                    )

    def _check_relation(self) -> None:
        """A memory is replaced or retracted only on evidence that speaks of it: a
        quote of "I" must not retract every memory there is."""
        if self.target_text is None:
            return
        for i, candidate in enumerate(self.raw["candidates"]):
            target = candidate.get("target")
            claims = self.claims.get(candidate["candidate_id"])
            if candidate["action"] not in {"SUPERSEDE", "RETRACT"} or not target or not claims:
                continue
            text = self.target_text(target)
            quoted = " ".join(claim.quote for claim in claims)
            if text is not None and not related_text(quoted, text):
                self.add("evidence-unrelated-to-target", f"candidates[{i}].target")

    def result(self) -> GateOutput:
        candidates = tuple(
            Candidate(
                candidate_id=item["candidate_id"],
                action=item["action"],
                target=item.get("target"),
                type=item.get("type"),
                scope=item.get("scope"),
                title=item.get("title"),
                body=item.get("body"),
                tags=tuple(item.get("tags", ())),
                claims=tuple(self.claims[item["candidate_id"]]),
            )
            for item in self.raw["candidates"]
        )
        decisions = {unit_id: row["decision"] for unit_id, row in self.rows.items()}
        return GateOutput(candidates=candidates, decisions=decisions, raw=self.raw)


def iter_credential_problems(candidates: list[dict[str, Any]]) -> list[Problem]:
    """The second fence behind capture's redaction: a memory must not state a credential.

    Capture redacts what it recognises, so the Gate should never see one; a value it
    missed (a form no rule knows, a model inventing one) is refused here, whoever the
    backend is. The problem names the field and the kind, never the value."""
    problems = []
    for i, candidate in enumerate(candidates):
        for name in ("title", "body"):
            text = candidate.get(name)
            found = find_credentials(text) if isinstance(text, str) else []
            if found:
                kinds = ", ".join(sorted({match.kind for match in found}))
                problems.append(
                    Problem(
                        code="credential-in-memory",
                        message=f"the candidate's {name} looks like a credential ({kinds})",
                        path=SOURCE,
                        field=f"candidates[{i}].{name}",
                        hint="a memory may say where a credential is kept, never the credential",
                    )
                )
    return problems


def narrow_answer(raw: dict[str, Any], closed: Mapping[str, str]) -> tuple[dict[str, Any], int]:
    """A checked answer cut to the units not in ``closed``, and how many rows were cut.

    Another run decided some of the answer's units while it was being made. Their
    rows go, and so does every candidate that quotes one of them (the other run
    decided what that evidence says); a unit left with no candidate is DEFERRED,
    so it is asked again with its context. What stays is consistent by construction
    and is checked again by the caller."""
    dropped = {
        binding["candidate_id"]
        for binding in raw["evidence_bindings"]
        if any(claim["unit_id"] in closed for claim in binding["claims"])
    }
    return _without(raw, closed, dropped)


def keep_candidates(raw: dict[str, Any], kept: Collection[str]) -> dict[str, Any]:
    """A checked answer cut to the candidates ``kept`` (``review approve --only``): the
    others go with their bindings, and a unit left with no candidate is DEFERRED, so
    the Gate is asked about it again. Checked again by the caller."""
    dropped = {item["candidate_id"] for item in raw["candidates"]} - set(kept)
    return _without(raw, {}, dropped)[0]


def _without(
    raw: dict[str, Any], closed: Mapping[str, str], dropped: set[str]
) -> tuple[dict[str, Any], int]:
    coverage = []
    for row in raw["coverage"]:
        if row["unit_id"] in closed:
            continue
        kept = [cid for cid in row.get("candidate_ids", ()) if cid not in dropped]
        if row["decision"] == "CANDIDATE" and not kept:
            row = {"unit_id": row["unit_id"], "decision": "DEFERRED", "reason": "needs-context"}
        elif kept != row.get("candidate_ids", kept):
            row = {**row, "candidate_ids": kept}
        coverage.append(row)
    narrowed = {
        **raw,
        "candidates": [c for c in raw["candidates"] if c["candidate_id"] not in dropped],
        "coverage": coverage,
        "evidence_bindings": [
            b for b in raw["evidence_bindings"] if b["candidate_id"] not in dropped
        ],
    }
    return narrowed, len(raw["coverage"]) - len(coverage)
