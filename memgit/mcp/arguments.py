"""Tool arguments checked against the tool's own schema, as memgit checks any input.

The schema a host is shown is the one the server enforces, so a wrong type, a
missing field or an oversized string is one ``error[invalid-argument]`` line per
problem, naming the tool and the field, and never the value (it may hold a
secret, and tool results end up in the host's logs).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import relevance

from memgit.errors import InvalidInputError, Problem
from memgit.jsonio import json_path
from memgit.mcp.tools import TOOLS_BY_NAME, Tool
from memgit.schemas import describe_error


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(TOOLS_BY_NAME[name].schema)


def check_arguments(tool: Tool, arguments: Any) -> dict[str, Any]:
    """``arguments`` as a dict that satisfies ``tool.schema``; ``invalid-argument`` else."""
    if arguments is None:
        arguments = {}
    problems = []
    for error in sorted(_validator(tool.name).iter_errors(arguments), key=relevance):
        parts = list(error.absolute_path)
        if error.validator == "required":
            parts.append(str(error.message).split("'")[1])
        problems.append(
            Problem(
                code="invalid-argument",
                message=describe_error(error),
                path=tool.name,
                field=json_path(parts) or None,
                hint=f"see the input schema of {tool.name} (tools/list) and docs/mcp.md",
            )
        )
    if problems:
        raise InvalidInputError.from_problems(problems)
    return dict(arguments)
