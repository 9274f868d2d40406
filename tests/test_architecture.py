"""The layout rules of STYLE.md, checked: dependencies point inward, one writer, lint clean."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "memgit"
ROOT = PACKAGE.parent

# pygit2 calls that create objects or move refs; only memgit/store/ may make them.
PYGIT2_WRITES = {
    "create_blob",
    "create_commit",
    "create_reference",
    "create_reference_direct",
    "TreeBuilder",
    "set_target",
    "init_repository",
    "checkout_tree",
}
OUTER_LAYERS = ("cli", "mcp")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _imports(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("module", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_does_not_import_interface_libraries(module: Path) -> None:
    layer = module.relative_to(PACKAGE).parts[0]
    if layer in OUTER_LAYERS:
        return
    imported = _imports(ast.parse(module.read_text("utf-8")))
    assert not imported & {"click", "rich", "mcp"}, f"{module} imports an interface library"


@pytest.mark.parametrize("module", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_store_writes_through_pygit2(module: Path) -> None:
    if module.relative_to(PACKAGE).parts[0] == "store":
        return
    tree = ast.parse(module.read_text("utf-8"))
    calls = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in PYGIT2_WRITES
    }
    assert not calls, f"{module} writes through pygit2 ({sorted(calls)}); go through store/"


@pytest.mark.parametrize("module", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_derived_store_uses_sqlite(module: Path) -> None:
    if module.relative_to(PACKAGE).parts[0] == "derived":
        return
    assert "sqlite3" not in _imports(ast.parse(module.read_text("utf-8")))


def test_version_starts_without_heavy_imports() -> None:
    """`memgit --version` must stay fast: no pygit2, jsonschema or yaml at start-up."""
    code = (
        "import sys\n"
        "from memgit.cli.main import main\n"
        "status = main(['--version'])\n"
        "heavy = sorted(m for m in ('pygit2', 'jsonschema', 'yaml', 'rich') if m in sys.modules)\n"
        "print(status, heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1] == "0 []"


def test_mypy_is_clean(tmp_path: Path) -> None:
    """Types are checked (pyproject's [tool.mypy]: strict on memgit/): a name shadowing a
    module once made `recall --as-of` exit 70, which a type checker reports at once."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_is_clean() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "memgit", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
