"""Names that other programs rely on: paths, refs, trailer keys, limits."""

from __future__ import annotations

FORMAT_VERSION = 1

CONFIG_FILE = "memgit.yaml"
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
INBOX_DIR = "inbox"
MEMORIES_DIR = "memories"
RUNS_DIR = "runs"

# Derived caches and the writer lock live here, inside the git directory.
CACHE_DIR = "memgit"
LOCK_FILE = "lock"
LAST_ERROR_LOG = "last-error.log"

REFS_RUNS = "refs/memgit/runs/"
REFS_RETIRED = "refs/memgit/retired/"
# Review: open proposals are branches (a host shows them as pull requests); approved
# and rejected ones are kept under refs/memgit/ so that nothing is lost.
REFS_PROPOSALS = "refs/heads/memgit/proposals/"
REFS_APPLIED = "refs/memgit/applied/"
REFS_REJECTED = "refs/memgit/rejected/"

TRAILER_RUN = "Memgit-Run"
TRAILER_BACKEND = "Memgit-Backend"
TRAILER_CREATED = "Memgit-Created"
TRAILER_UPDATED = "Memgit-Updated"
TRAILER_SUPERSEDED = "Memgit-Superseded"
TRAILER_RETRACTED = "Memgit-Retracted"
TRAILER_CAPTURED = "Memgit-Captured"
TRAILER_INIT = "Memgit-Init"
TRAILER_EXPIRED = "Memgit-Expired"
TRAILER_APPROVED = "Memgit-Approved"
TRAILER_REJECTED = "Memgit-Rejected"
TRAILER_FORGOTTEN = "Memgit-Forgotten"
TRAILER_CONTRADICTION = "Memgit-Contradiction"

# Input limits: generous for real conversations, small enough to refuse abuse.
MAX_INPUT_BYTES = 64 * 1024 * 1024
MAX_JSONL_BYTES = 1024 * 1024 * 1024
MAX_MESSAGE_BYTES = 1024 * 1024
MAX_MESSAGES_PER_TURN = 1000
MAX_JSON_DEPTH = 64
MAX_YAML_BYTES = 4 * 1024 * 1024
MAX_SEGMENT_LENGTH = 128
MAX_SCOPE_DEPTH = 8
# The largest seq of a turn (capture.schema.json says the same), so the largest --from-turn.
MAX_SEQ = 999_999_999

# Recall: the lexical index (a derived cache in .git/memgit/) and query limits.
INDEX_FILE = "index.sqlite"
OVERLAY_TTL_ENV = "MEMGIT_OVERLAY_TTL"
DEFAULT_OVERLAY_TTL = 1.0
MAX_QUERY_TERMS = 32
MAX_QUERY_CHARS = 1024 * 1024
DEFAULT_RECALL_K = 10
MAX_RECALL_K = 1000
