"""Shared fixtures: isolated git configuration, fixed identities and dates, real repos."""

from __future__ import annotations

import compileall
from collections.abc import Iterator
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

FIXED_DATE = "@1764495000 +0000"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile memgit's modules to bytecode once, before any test starts a memgit process.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (this machine's environment sets it), nothing
    writes ``__pycache__``, so each of the thousands of memgit processes the suite starts
    (CLI calls, hooks, servers) compiled the source it imports anew: about 0.08 of a 0.45
    CPU-second start. Python still reads bytecode that exists, and checks it against each
    source file's mtime and size, so an edited module is never run from a stale copy.
    """
    if not hasattr(session.config, "workerinput"):  # the xdist controller, or no xdist
        compileall.compile_dir(Path(__file__).parent.parent / "memgit", quiet=2)


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the machine's git config; every commit has a fixed author and time."""
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Person\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
        "utf-8",
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test Person")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.com")
        monkeypatch.setenv(f"GIT_{role}_DATE", FIXED_DATE)
    monkeypatch.setenv("MEMGIT_LOCK_TIMEOUT", "10")


@pytest.fixture
def repo_path(tmp_path: Path) -> Path:
    from memgit import MemoryRepo

    path = tmp_path / "memory"
    MemoryRepo.init(path)
    return path


@pytest.fixture
def memrepo(repo_path: Path) -> Iterator[object]:
    from memgit import MemoryRepo

    yield MemoryRepo.open(repo_path)


# Test files whose tests one xdist worker runs, one after another (by scope name).
ONE_WORKER = {
    "tests/test_concurrency.py": "process-storms",
    "tests/test_crash.py": "process-storms",
    "tests/test_process_crash.py": "process-storms",
    "tests/test_precommit_e2e.py": "pre-commit",
    "tests/test_mcp.py": "mcp-server",
}
# Files whose module-scoped fixture builds a repository worth seconds (a corpus captured
# and processed, a scripted server's answers): one worker runs each, so it is built once.
ONE_WORKER.update(
    (f"tests/{name}.py", f"tests/{name}.py")
    for name in (
        "test_gate_conversation",
        "test_gate_quality",
        "test_prose_credentials",
        "test_purge_push",
        "test_remote_refs",
        "test_rules_gate_forms",
        "test_rules_gate_quality",
        "test_secrets_corpus",
        "test_secrets_never_stored",
    )
)
# Files of single tests that take 10 to 40 CPU seconds each: handed out first, so that
# none of them starts last and keeps one worker busy while the other waits.
LONG_FIRST = (
    "tests/test_docs_run.py",
    "tests/test_sync_soak.py",
    "tests/test_sync_clones.py",
    "tests/test_sync_soak_repros.py",
    "tests/test_sync_apart.py",
    "tests/test_sharing_setup.py",
    "tests/test_clone_init.py",
    "tests/test_removals.py",
    "tests/test_review.py",
)


class OneWorkerScopes(LoadScopeScheduling):
    """xdist's ``load`` (every test a work unit of its own), except for ONE_WORKER's files;
    the groups and LONG_FIRST's tests go out first, the rest in collection order."""

    def _split_scope(self, nodeid: str) -> str:
        return ONE_WORKER.get(nodeid.split("::", 1)[0], nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not getattr(self, "_long_first", False):
            self._long_first = True
            groups = set(ONE_WORKER.values())
            for scope in [s for s in self.workqueue if s not in groups]:
                if not scope.startswith(LONG_FIRST):
                    self.workqueue.move_to_end(scope)
        super()._assign_work_unit(node)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LoadScopeScheduling | None:
    """Under ``-n 2`` the concurrency and SIGKILL tests share one worker, so two process
    storms never run at once on two cores and starve each other (the SIGKILL campaigns aim
    their kills by measured run times); the pre-commit tests share one too, so the hook
    environment and consumer repositories are built once, and so do the MCP tests, so
    their module's server starts once, and the files with an expensive module fixture.
    xdist's ``loadgroup`` would say this with marks, but on pytest 9.2 it silently groups
    nothing (it rewrites node ids, which pytest 9.2 ignores: pytest-xdist issue 1386)."""
    if config.getoption("dist") != "load":
        return None
    return OneWorkerScopes(config, log)
