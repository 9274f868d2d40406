"""The layout rules of STYLE.md, checked: the layers hold, dependencies point inward,
one writer, lint clean."""

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


# The layers of memgit/, from the bottom up (docs/architecture.md is this map in words).
# A module imports only from its own layer or below, lazy (function-level) and
# TYPE_CHECKING imports included, and no modules import each other in a circle. An
# entry is a file or a folder (ending in "/") under memgit/; the longest entry that
# holds a module names its layer.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # errors, names, paths, the JSON and YAML readers, trailers, revisions, lazy regexes, schemas
    (
        "base",
        (
            "errors.py",
            "constants.py",
            "layout.py",
            "jsonio.py",
            "yamlio.py",
            "trailers.py",
            "revisions.py",
            "lazyre.py",
            "schemas/",
        ),
    ),
    # values beside their readers and renderers; pure functions over text
    (
        "values",
        (
            "memory.py",
            "turn.py",
            "runrecord.py",
            "evidence.py",
            "pack.py",
            "merge.py",
            "tokens.py",
            "secrets/",
        ),
    ),
    # the commit engine, refs, locks, the work tree; what a tree or a ref holds
    ("git", ("git.py", "store/", "catalog.py", "files.py", "proposals.py")),
    # the one SQLite store stamped by a tree, and the processing state it answers
    ("derived", ("derived/", "state/")),
    # memgit.yaml, the Gate contract and backends, the checks (they write nothing)
    ("rules", ("settings.py", "gate/", "governance/", "apply.py", "propose.py")),
    # one module or package per verb
    (
        "flows",
        (
            "capture/",
            "process.py",
            "recall.py",
            "map.py",
            "review/",
            "sharing/",
            "history/",
            "forget.py",
            "purge.py",
            "retention.py",
            "replay.py",
            "remember.py",
            "duplicates.py",
            "related.py",
            "init.py",
            "governance/verify.py",
            "governance/summary.py",
            "hosts/",
        ),
    ),
    # MemoryRepo: one method per command
    ("api", ("repo.py", "__init__.py")),
    # the CLI (and the demo's bundled conversation), the MCP server, the agent hosts'
    # hook program, git's merge driver
    ("doors", ("cli/", "demo/", "mcp/", "hosts/hook.py", "sharing/merge_driver.py")),
]


def _layer_of(module: str) -> int | None:
    """The index in LAYERS of ``module`` (a path under memgit/), None if no entry holds it."""
    best: tuple[int, int] | None = None
    for index, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            holds = module.startswith(entry) if entry.endswith("/") else module == entry
            if holds and (best is None or len(entry) > best[0]):
                best = (len(entry), index)
    return None if best is None else best[1]


def _module_file(dotted: str) -> str | None:
    """memgit.x.y as a path under memgit/ (x/y.py or x/y/__init__.py), None if none is."""
    parts = dotted.split(".")[1:]
    for candidate in ("/".join(parts) + ".py", "/".join([*parts, "__init__.py"])):
        if (PACKAGE / candidate).is_file():
            return candidate
    return None


def _memgit_imports(module: str) -> dict[str, int]:
    """The modules of memgit/ that ``module`` imports anywhere in it, with a line each."""
    tree = ast.parse((PACKAGE / module).read_text("utf-8"))
    package = ["memgit", *module.split("/")[:-1]]
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *filter(None, [base])])
            # "from memgit import git" imports memgit/git.py; "from memgit import
            # MemoryRepo" imports memgit/__init__.py.
            names = [
                f"{base}.{alias.name}" if _module_file(f"{base}.{alias.name}") else base
                for alias in node.names
            ]
        for name in names:
            if name != "memgit" and not name.startswith("memgit."):
                continue
            target = _module_file(name)
            if target is not None and target != module:
                found.setdefault(target, node.lineno)
    return found


def _graph() -> dict[str, dict[str, int]]:
    return {
        str(path.relative_to(PACKAGE)): _memgit_imports(str(path.relative_to(PACKAGE)))
        for path in _modules()
    }


def test_every_module_has_a_layer() -> None:
    unplaced = [str(p.relative_to(PACKAGE)) for p in _modules()]
    assert [m for m in unplaced if _layer_of(m) is None] == [], "add it to LAYERS"


def test_no_module_imports_a_higher_layer() -> None:
    """An import up the layers is how the structure erodes: the module below then
    changes whenever the one above does, and circles follow."""
    found = []
    for module, imports in _graph().items():
        own = _layer_of(module)
        for target, line in imports.items():
            theirs = _layer_of(target)
            if own is not None and theirs is not None and theirs > own:
                found.append(
                    f"memgit/{module}:{line} ({LAYERS[own][0]}) imports "
                    f"memgit/{target} ({LAYERS[theirs][0]})"
                )
    assert found == []


def _circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph.get(module, {}):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


# What MemoryRepo (the api layer) never imports although it sits below: an agent host's
# configuration is the doors' business, not a verb on a memory repository (decision
# 0014). The demo's data is a door itself, so the layer test keeps it out.
NOT_THE_API = ("hosts/",)


def test_the_api_imports_no_door_business() -> None:
    """repo.py once imported demo and hosts/install for methods only the CLI called,
    which put an import back up a floor when a folder counts as one unit."""
    graph = _graph()
    found = [
        f"memgit/{module} imports memgit/{target}"
        for module in ("repo.py", "__init__.py")
        for target in graph[module]
        if target.startswith(NOT_THE_API)
    ]
    assert found == []


def test_no_import_circle() -> None:
    """Modules that import each other (lazily or not) are one module in two files."""
    assert _circles(_graph()) == []


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
        timeout=900,  # a cold strict run is 30-40 CPU s: minutes on a loaded machine
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


# Modules that start a program other than git, and which one (issue 26, item 3).
STARTS_OTHER_PROGRAMS = {
    "hosts/hook.py": "memgit itself, in the background",
    "gate/backends/command.py": "the user's Gate command",
}
# Words of git's messages that code once matched to recognise an error.
GIT_MESSAGE_TEXT = (
    "index.lock",
    "Unable to create",
    "non-fast-forward",
    "couldn't find remote ref",
    "hook declined",
    "stale info",
    "fetch first",
    "atomic push failed",
    "cannot lock ref",
    "would be overwritten",
    "not uptodate",
    "File exists",
)
GIT_OUTPUT_NAMES = ("stderr", "stdout", "said", "err", "out")


def _starts_git(tree: ast.AST) -> bool:
    """A list or tuple literal that begins with "git" (a command line), or
    ``shutil.which("git")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "which"
            and any(isinstance(a, ast.Constant) and a.value == "git" for a in node.args)
        ):
            return True
    return False


@pytest.mark.parametrize("module", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_git_runner_starts_git(module: Path) -> None:
    """memgit/git.py is the one place that starts git (one environment, one error
    mapping); a few modules start other programs, and never git."""
    name = str(module.relative_to(PACKAGE))
    if name == "git.py":
        return
    tree = ast.parse(module.read_text("utf-8"))
    if "subprocess" in _imports(tree) or "os.system" in ast.unparse(tree):
        assert name in STARTS_OTHER_PROGRAMS, f"{name} starts a program: go through memgit.git"
    assert not _starts_git(tree), f"{name} builds a git command line: use memgit.git.run"


MATCHERS = ("startswith", "endswith", "find", "index", "count", "search", "match", "fullmatch")


def _matched_strings(tree: ast.AST) -> list[ast.Constant]:
    """String literals code matches text against: ``"x" in y``, ``y.startswith("x")``,
    ``re.search("x", y)``, and the members of a tuple, list or set of them."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.In | ast.NotIn) for op in node.ops
        ):
            found += [n for n in (node.left, *node.comparators) if isinstance(n, ast.Constant)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in MATCHERS:
                found += [n for n in node.args if isinstance(n, ast.Constant)]
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            found += [n for n in node.elts if isinstance(n, ast.Constant)]
    return [n for n in found if isinstance(n.value, str)]


@pytest.mark.parametrize("module", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_error_is_recognised_by_gits_message_text(module: Path) -> None:
    """git's errors are told by exit status, porcelain output and the files it leaves:
    its messages change with versions and languages."""
    tree = ast.parse(module.read_text("utf-8"))
    for node in _matched_strings(tree):
        words = [text for text in GIT_MESSAGE_TEXT if text in node.value]
        assert not words, f"{module.name}:{node.lineno} matches git's words {words}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
        ):
            against = ast.unparse(node.comparators[0]).replace(".", " ").replace("(", " ")
            assert not set(against.split()) & set(GIT_OUTPUT_NAMES), (
                f"{module.name}:{node.lineno}: {ast.unparse(node)} reads git's output"
            )


def test_memgit_never_reads_proc() -> None:
    """Nothing may depend on Linux's /proc (the index lock once did)."""
    users = [
        str(module.relative_to(PACKAGE))
        for module in _modules()
        if '"/proc' in module.read_text("utf-8") or "'/proc" in module.read_text("utf-8")
    ]
    assert users == []


def test_an_error_code_has_one_exit_status() -> None:
    """A code names one kind of error, so one exit status wherever it is raised
    (``index-busy`` once exited 70 from one module and 4 from another)."""
    classes: dict[str, set[str]] = {}
    for module in _modules():
        for node in ast.walk(ast.parse(module.read_text("utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if not node.func.id.endswith("Error"):
                continue
            for keyword in node.keywords:
                if keyword.arg == "code" and isinstance(keyword.value, ast.Constant):
                    classes.setdefault(str(keyword.value.value), set()).add(node.func.id)
    assert classes["index-busy"] == {"ConflictError"}
    mixed = {code: sorted(names) for code, names in classes.items() if len(names) > 1}
    assert mixed == {}
