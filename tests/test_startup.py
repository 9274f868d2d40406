"""What a new ``memgit`` process loads: a command pays only for what its path uses.

Every agent-host hook, pre-commit hook and CLI call is a new process, so what is imported
or compiled at start is paid on each. These tests pin what must stay out of a read-only
command's start: jsonschema (memgit.yaml as ``memgit init`` writes it needs no
validator) and the secret detectors' compiled regexes (recall scans no text).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from memgit.schemas import iter_schema_problems
from memgit.settings import DEFAULT_CONFIG
from memgit.yamlio import parse_yaml

from support import git

# Runs a command with memgit's real entry point, then reports, on stderr's last line,
# the modules loaded and how many secret-detector regexes were compiled.
PROBE = """
import json, sys
from memgit.cli.main import main
status = main(sys.argv[1:])
from memgit.lazyre import LazyPattern
import gc
compiled = sum(
    1 for o in gc.get_objects() if isinstance(o, LazyPattern) and "_compiled" in o.__dict__
)
print(json.dumps({"status": status, "modules": sorted(sys.modules), "compiled": compiled}),
      file=sys.stderr)
"""


def _probe(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, check=False, timeout=120
    )
    report: dict[str, object] = json.loads(done.stderr.decode("utf-8").splitlines()[-1])
    assert report["status"] == 0, done.stderr
    return report


def test_the_template_memgit_init_writes_fits_the_schema() -> None:
    """Settings trust the template without validating it; this is what earns the trust."""
    assert (
        list(iter_schema_problems(parse_yaml(DEFAULT_CONFIG, source="t"), "config", path=None))
        == []
    )


def test_recall_loads_no_validator_and_compiles_no_secret_rule(repo_path: Path) -> None:
    report = _probe("-C", str(repo_path), "recall", "which test framework")
    modules = report["modules"]
    assert isinstance(modules, list)
    assert not [name for name in modules if name.split(".")[0] in ("jsonschema", "referencing")]
    assert report["compiled"] == 0


def test_capture_compiles_the_secret_rules_it_scans_with(repo_path: Path) -> None:
    """The counterpart: laziness must not mean the scan is skipped."""
    turn = json.dumps(
        {
            "source": "test-agent",
            "session": "s1",
            "seq": 0,
            "timestamp": "2026-11-30T10:00:00Z",
            "messages": [{"role": "user", "content": "my password is hunter22"}],
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "-C", str(repo_path), "capture"],
        input=turn.encode("utf-8"),
        capture_output=True,
        check=False,
        timeout=120,
    )
    report = json.loads(done.stderr.decode("utf-8").splitlines()[-1])
    assert report["status"] == 0, done.stderr
    assert report["compiled"] > 0
    assert git(repo_path, "grep", "-c", "hunter22", "HEAD", check=False) == ""
    assert "[REDACTED:password-prose]" in git(repo_path, "grep", "-h", "REDACTED", "HEAD")


def test_the_detectors_compile_through_lazy() -> None:
    """A pattern added with ``re.compile`` would be compiled at import again, by every
    process that imports the detectors (decision 0015): they use ``lazy()``."""
    secrets = Path(__file__).parents[1] / "memgit" / "secrets"
    for name in ("prose.py", "rules.py", "redact.py"):
        tree = ast.parse((secrets / name).read_text("utf-8"))
        eager = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "compile"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re"
        ]
        assert eager == [], f"memgit/secrets/{name}: re.compile on lines {eager}"
