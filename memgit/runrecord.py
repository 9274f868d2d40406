"""The run record: what one processing run read, asked, got back and did."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memgit.constants import FORMAT_VERSION
from memgit.errors import InvalidInputError
from memgit.jsonio import json_data, parse_json, render_json
from memgit.layout import run_path
from memgit.schemas import iter_schema_problems


@dataclass(frozen=True, slots=True, kw_only=True)
class RunInput:
    """A capture the run read, pinned by blob id."""

    path: str
    blob: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    run_id: str
    created: str
    backend: str
    prompt_digest: str
    gate_output: dict[str, Any]
    model: str | None = None
    inputs: tuple[RunInput, ...] = ()
    decisions: tuple[dict[str, Any], ...] = ()
    diagnostics: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def path(self) -> str:
        return run_path(self.run_id)

    def to_dict(self) -> dict[str, Any]:
        """The run-record file's format: a version, the backend as an object, inputs by path
        and blob."""
        backend: dict[str, Any] = {"name": self.backend}
        if self.model is not None:
            backend["model"] = self.model
        return {
            "format_version": FORMAT_VERSION,
            "run_id": self.run_id,
            "created": self.created,
            "backend": backend,
            "inputs": [{"path": item.path, "blob": item.blob} for item in self.inputs],
            "prompt_digest": self.prompt_digest,
            "gate_output": self.gate_output,
            "decisions": list(self.decisions),
            "diagnostics": list(self.diagnostics),
        }


def render_run_record(record: RunRecord) -> str:
    return render_json(json_data(record))


def parse_run_record(text: str | bytes, *, path: str) -> RunRecord:
    data = parse_json(text, source=path)
    problems = list(iter_schema_problems(data, "run", path=path))
    if problems:
        raise InvalidInputError.from_problems(problems)
    return RunRecord(
        run_id=data["run_id"],
        created=data["created"],
        backend=data["backend"]["name"],
        model=data["backend"].get("model"),
        prompt_digest=data["prompt_digest"],
        gate_output=data["gate_output"],
        inputs=tuple(RunInput(**item) for item in data["inputs"]),
        decisions=tuple(data["decisions"]),
        diagnostics=tuple(data["diagnostics"]),
    )


def read_coverage(data: bytes, *, path: str) -> tuple[tuple[str, str], ...]:
    """The (unit id, decision) rows of a run record file: all the processing state reads
    of it. Only the rows' shape is checked; the whole record is memgit-schemas' to check
    when it is committed."""
    value = parse_json(data, source=path)
    gate = value.get("gate_output") if isinstance(value, dict) else None
    rows = gate.get("coverage") if isinstance(gate, dict) else None
    if not isinstance(rows, list):
        raise InvalidInputError(
            "a run record holds its Gate output's coverage rows",
            code="schema",
            path=path,
            field="gate_output.coverage",
        )
    found = []
    for i, row in enumerate(rows):
        unit = row.get("unit_id") if isinstance(row, dict) else None
        decision = row.get("decision") if isinstance(row, dict) else None
        if not isinstance(unit, str) or not isinstance(decision, str):
            raise InvalidInputError(
                "a coverage row names a unit_id and a decision",
                code="schema",
                path=path,
                field=f"gate_output.coverage[{i}]",
            )
        found.append((unit, decision))
    return tuple(found)
