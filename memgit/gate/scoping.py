"""Which of memgit.yaml's scopes a statement belongs to, judged by its words.

Two kinds of memory need telling apart without a model: what the *user* is like
("I prefer pytest", "call me Sam", 我喜欢...) and what the *project* is like ("CI must
run on Python 3.11", "The API lives at api.example.com"). A statement in the first
person singular is the user's; otherwise one that names a part of a software project
(CI, the repository, a branch, an API, a host, a port, a path or domain, a
library or version, build, deploy, release, merge, push, 项目, 部署, ...) is the
project's; anything else goes to the default scope, the first one memgit.yaml
lists. A scope memgit.yaml does not declare is never chosen: the default stands
in for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["choose_scope"]

USER = "user"
PROJECT = "project"

_FIRST_PERSON = re.compile(r"\bI\b(?!\.)|(?<![\w.])i(?= )|(?i:\b(?:me|my|mine|myself)\b)|我(?!们)")
_PROJECT = re.compile(
    r"\b(?:ci|cd|pipelines?|workflows?|repo|repos|repository|repositories|branch(?:es)?|"
    r"commits?|pull requests?|prs?|builds?|deploy(?:s|ed|ing|ments?)?|releases?|"
    r"apis?|endpoints?|servers?|hosts?|hostnames?|domains?|urls?|ports?|databases?|dbs?|"
    r"staging|production|prod|docker|kubernetes|k8s|containers?|codebase|"
    r"project|services?|clusters?|test suite|linters?|lint|dependenc(?:y|ies)|packages?|"
    r"modules?|migrations?|schemas?|config(?:uration)?|environments?|env|librar(?:y|ies)|"
    r"versions?|makefiles?|rebas(?:e|es|ed|ing)|merg(?:e|es|ed|ing)|push(?:es|ed|ing)?)\b"
    # A domain or a file name, found by its ending alone, so that no run of letters,
    # dots or hyphens is scanned again from each of its characters.
    r"|(?<=[A-Za-z0-9_-])\.(?:com|org|net|io|dev|app|internal|local)\b"
    r"|(?<=\w)\.(?:py|js|ts|toml|ya?ml|json|md|sh|cfg|ini)\b"
    r"|(?:^|\s)\.{0,2}/?[\w.-]+/[\w./-]+"
    r"|项目|仓库|代码|部署|构建|发布|服务器|接口|数据库|分支|测试环境|生产环境|持续集成|域名|端口|配置",
    re.IGNORECASE,
)


def choose_scope(text: str, scopes: Sequence[str]) -> str:
    """The scope for a statement ``text`` among ``scopes`` (memgit.yaml's, default first)."""
    if _FIRST_PERSON.search(text):
        wanted = USER
    elif _PROJECT.search(text):
        wanted = PROJECT
    else:
        return scopes[0]
    return wanted if wanted in scopes else scopes[0]
