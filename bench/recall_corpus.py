"""A seeded synthetic memory repository for the recall benchmark, built fast and cached.

N memories (one in ten written in Chinese, with some English terms mixed in)
and N/10 captured turns, in the files and paths memgit writes
(:func:`memgit.memory.render_memory`, :func:`memgit.turn.render_capture`),
committed as one commit with ``git fast-import`` on top of ``memgit init``'s
commit, then checked out. Text follows a Zipf law over a 20,000-word
vocabulary grouped into 500 topics, so that query terms have realistic document
frequencies. Cached under ``bench/.cache/recall-n<N>-s<seed>-v<version>/``.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pygit2

from memgit.memory import Memory, Source, new_memory_id, render_memory
from memgit.repo import MemoryRepo
from memgit.turn import Message, Turn, render_capture

CORPUS_VERSION = 3
DEFAULT_CACHE = Path(__file__).resolve().parent / ".cache"
EPOCH = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)

_ENGLISH = """
postgres database migration schema index query cache redis queue worker deploy staging
production release rollback docker kubernetes cluster node pod service ingress config
secret token login password session cookie browser frontend backend api endpoint route
handler request response latency timeout retry backoff error exception trace log metric
alert dashboard oncall incident review test fixture mock coverage lint format type
python rust golang typescript javascript react vue django flask fastapi celery kafka
billing invoice payment customer account user team project meeting standup sprint
roadmap deadline budget report email calendar weekend holiday coffee tea lunch office
remote laptop monitor keyboard editor vim emacs terminal shell git branch merge rebase
commit tag pull push fetch clone fork issue ticket label milestone priority owner
""".split()
_CHINESE_CHARS = (
    "数据库迁移索引缓存队列部署生产发布回滚集群服务配置密钥登录会话请求响应延迟超时重试错误"
    "日志指标告警测试覆盖类型项目会议进度预算报告邮件日历周末假期咖啡茶午饭办公室远程电脑"
    "编辑器终端分支合并提交标签问题优先级负责人用户团队客户账户支付发票喜欢每天早上下午晚上"
)
_TYPES = ("fact", "preference", "decision", "procedure")
_SCOPES = ("user", "project/billing", "project/search", "project/infra", "team/platform")
_SYLLABLES = "ka ro mi tu sel var no pex qua lin dor fen gri hol jas mup nor pil tav zen".split()


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallCorpus:
    repo: Path
    size: int
    seed: int
    queries: tuple[str, ...]
    memory_paths: tuple[str, ...]
    build_seconds: float
    cached: bool


# The most frequent words of English text are function words: they head the
# Zipf ranking, so content words get realistic document frequencies (and the
# query parser drops them, as it does in real queries).
_FUNCTION = """
the of and to a in is it that for was on are as with be at this have from or by not but
what all were we when your can said there use an each which she do how their if will up
other about out many then them these so some her would make like him into time has look
two more go see no way could people my than first been call who its now find long down
day did get come made may part
""".split()


class _Text:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        words = [*_FUNCTION, *_ENGLISH]
        while len(words) < 20_000:
            parts = rng.randint(2, 4)
            words.append("".join(rng.choice(_SYLLABLES) for _ in range(parts)))
        self.words = list(dict.fromkeys(words))
        # Zipf weights over the vocabulary, and 500 topics of 40 words each.
        self.weights = [1.0 / (rank + 1) for rank in range(len(self.words))]
        self.topics = [rng.choices(self.words[:8000], k=40) for _ in range(500)]
        pairs = [_CHINESE_CHARS[i : i + 2] for i in range(0, len(_CHINESE_CHARS) - 1, 2)]
        self.chinese = pairs

    def english(self, topic: list[str], count: int) -> list[str]:
        own = self.rng.choices(topic, k=count)
        general = self.rng.choices(self.words, weights=self.weights, k=count)
        return [own[i] if self.rng.random() < 0.6 else general[i] for i in range(count)]

    def chinese_words(self, count: int) -> list[str]:
        return self.rng.choices(self.chinese, k=count)


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


def build_corpus(size: int, seed: int = 42, cache: Path = DEFAULT_CACHE) -> RecallCorpus:
    """The corpus of ``size`` memories, from the cache when it is there."""
    folder = cache / f"recall-n{size}-s{seed}-v{CORPUS_VERSION}"
    manifest = folder / "manifest.json"
    if manifest.exists():
        data = json.loads(manifest.read_text("utf-8"))
        return RecallCorpus(
            repo=folder / "repo",
            size=size,
            seed=seed,
            queries=tuple(data["queries"]),
            memory_paths=tuple(data["memory_paths"]),
            build_seconds=data["build_seconds"],
            cached=True,
        )
    started = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    repo = folder / "repo"
    MemoryRepo.init(repo)
    rng = random.Random(seed)
    text = _Text(rng)
    files: dict[str, bytes] = {}
    captures: list[tuple[str, str, str]] = []  # path, blob, first user text
    sessions = max(10, size // 100)
    for number in range(max(1, size // 10)):
        session = f"bench-{number % sessions:05d}"
        seq = number // sessions
        topic = text.topics[rng.randrange(500)]
        user = " ".join(text.english(topic, rng.randint(8, 30))).capitalize() + "."
        answer = " ".join(text.english(topic, rng.randint(10, 50))).capitalize() + "."
        when = EPOCH + timedelta(minutes=number)
        turn = Turn(
            source="bench",
            session=session,
            seq=seq,
            timestamp=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            messages=(
                Message(role="user", content=user),
                Message(role="assistant", content=answer),
            ),
        )
        data = render_capture(turn).encode("utf-8")
        files[turn.path] = data
        captures.append((turn.path, str(pygit2.hash(data)), user))
    queries: list[str] = []
    memory_paths: list[str] = []
    for number in range(size):
        topic = text.topics[rng.randrange(500)]
        memory_id = new_memory_id(f"{seed}-{number}".encode())
        chinese = rng.random() < 0.1
        if chinese:
            title_words = text.chinese_words(rng.randint(3, 6))
            title = "".join(title_words)
            body_words = text.chinese_words(rng.randint(15, 50)) + text.english(topic, 3)
            body = "".join(body_words[:-3]) + "，" + " ".join(body_words[-3:]) + "。\n"
        else:
            title_words = text.english(topic, rng.randint(3, 7))
            title = " ".join(title_words).capitalize()
            body_words = text.english(topic, rng.randint(25, 80))
            body = " ".join(body_words).capitalize() + ".\n"
        stamp = (EPOCH + timedelta(minutes=7 * number)).strftime("%Y-%m-%dT%H:%M:%SZ")
        sources: tuple[Source, ...] = ()
        if captures and rng.random() < 0.5:
            path, blob, user = rng.choice(captures)
            sources = (Source(capture=path, unit=f"{path}#0", quote=user[:60], blob=blob),)
        value = Memory(
            id=memory_id,
            type=rng.choice(_TYPES),
            scope=rng.choice(_SCOPES),
            title=title[:200],
            body=body,
            created=stamp,
            updated=stamp,
            origin="memgit" if sources else "human",
            author=None if sources else "Bench Person",
            tags=tuple(dict.fromkeys(rng.choices(topic, k=2))) if not chinese else (),
            sources=sources,
        )
        files[value.path] = render_memory(value).encode("utf-8")
        memory_paths.append(value.path)
        if len(queries) < 400 and rng.random() < 400 / size * 1.5:
            if chinese:
                queries.append(" ".join(rng.sample(title_words, 2)))
            else:
                picked = rng.sample(title_words, min(3, len(title_words)))
                prefix = rng.choice(("", "", "what is the ", "how do we "))
                queries.append(prefix + " ".join(picked))
    _fast_import(repo, files)
    _git(repo, "reset", "-q", "--hard", "main")
    seconds = time.perf_counter() - started
    manifest.write_text(
        json.dumps(
            {"queries": queries, "memory_paths": memory_paths, "build_seconds": seconds},
            ensure_ascii=False,
        ),
        "utf-8",
    )
    return build_corpus(size, seed, cache)


def _fast_import(repo: Path, files: dict[str, bytes]) -> None:
    parent = _git(repo, "rev-parse", "refs/heads/main").strip()
    proc = subprocess.Popen(
        ["git", "-C", str(repo), "fast-import", "--quiet", "--done"], stdin=subprocess.PIPE
    )
    assert proc.stdin is not None
    out = proc.stdin
    message = b"bench: synthetic memories and captures"
    out.write(b"commit refs/heads/main\n")
    out.write(b"committer memgit bench <bench@localhost> 1767600000 +0000\n")
    out.write(b"data %d\n%s\nfrom %s\n" % (len(message), message, parent.encode()))
    for path, data in files.items():
        out.write(b"M 100644 inline %s\ndata %d\n" % (path.encode(), len(data)))
        out.write(data + b"\n")
    out.write(b"\ndone\n")
    out.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
