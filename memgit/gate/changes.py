"""Corrections and changes of mind, and the related memory each one replaces.

"I prefer unittest now, not pytest" after "I prefer pytest" must replace that memory,
not sit beside it. A statement is a *change* when it carries a change-of-mind marker
("now", "instead", "no longer", "switched to", "rather than", "not X but Y", 不再,
改用, 现在, 换成, ...) and a *correction* when it carries only a correction marker
("actually", "I meant", 其实, 实际上, ...). Its target is the related memory memgit
showed the Gate that shares the most of its topic words, once the words that say how
something is held ("prefer", "always", "now", 喜欢, 不再) and the parts every address has
(``com``, ``www``) are set aside: a target must share two such words, or one that is at
least half of what the memory is about and half of what the statement is about.
Retiring the wrong memory loses a true one, so a weaker match has no target, and "from
now on" / 以后 alone is no change: it opens a new rule ("From now on, tag release 8 ...")
as often as it replaces one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set

from memgit.evidence import topic_terms

__all__ = ["change_kind", "find_target", "strip_lead_in"]

_CHANGE = re.compile(
    r"(?<!from )\bnow\b|\b(?:instead|no longer|not any ?more|any ?more|"
    r"switch(?:ed|ing)? (?:to|over)|mov(?:ed|ing) to|chang(?:ed|ing) to|rather than|"
    r"these days)\b|\bnot\b[^.;]{0,200}?\bbut\b|[,;]\s*not\b"
    r"|不再|改用|改成|改为|换成|换用|现在|而不是|已经不|不用了",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"\b(?:actually|in fact|correction|I meant|to be precise|sorry|oops|my mistake)\b"
    r"|其实|实际上|更正|纠正|我是说|说错了|不对",
    re.IGNORECASE,
)
# A correction often opens with its marker: "Actually, I prefer ...", "其实，...".
_LEAD_IN = re.compile(
    r"^(?:(?:actually|in fact|correction|sorry|oops|wait|update|ok(?:ay)?|well)\b[,:!]?\s*"
    r"|no[,!]\s*)+"
    r"|^(?:其实|实际上|更正|纠正|不对|现在)[，,：:]?\s*",
    re.IGNORECASE,
)
# How a statement is held, not what it is about: never enough to pick a target.
_HOW = re.compile(
    r"\b(?:prefer(?:s|red|ence|ences)?|likes?|liked|love[sd]?|hate[sd]?|dislike[sd]?|"
    r"use[sd]?|using|always|never|remember|note|keep|mind|now|actually|instead|longer|"
    r"rather|switch(?:ed|es|ing)?|chang(?:e|ed|es|ing)|mov(?:e|ed|es|ing)|any ?more|"
    r"please|wants?|wanted|going|forward|future|fact|correction|meant|sorry|must|also|"
    r"really|from|these|days)\b"
    r"|我(?!们)|你|请|记住|记得|以后|喜欢|偏好|习惯|讨厌|更|很|最|不再|改用|改成|改为|换成|"
    r"换用|其实|实际上|现在|不要|别|总是|一定要|使用|用|了|而不是|不是|的|是|改|换",
    re.IGNORECASE,
)
# Parts of an address every address has: "api.example.com" and "docs.example.com" are
# not one topic.
_NOISE = frozenset({"com", "org", "net", "io", "www", "http", "https", "html"})
_MIN_SHARED = 2
# What a statement is about, when it opens with a name and a number ("Server 14 ...",
# "Release 8 ..."): two statements whose openings name different numbers speak of two
# things, however many other words they share ("Server 14 now runs Debian 5" leaves
# "Server 7 runs Debian 3" alone). "Python 3.12 is required now" leaves "Python 3.11 is
# required" alone too: a memory kept beside another is worse than none, but retiring a
# true one loses it.
_NUMBERED_SUBJECT = re.compile(
    r"^\W*(?:(?:please\s+)?(?:remember|note)(?:\s+that)?[:,]?\s+)?(?:the\s+)?"
    r"([^\W\d_][\w-]*)\s*#?\s*(\d[\w.]*)",
    re.IGNORECASE,
)


def change_kind(text: str) -> str | None:
    """SUPERSEDE for a change of mind, UPDATE for a correction, None for neither.

    A change of mind retires the old memory (it held until now, and its history shows
    that); a correction says the old memory was wrong, so the same memory is fixed."""
    if _CHANGE.search(text):
        return "SUPERSEDE"
    if _CORRECTION.search(text):
        return "UPDATE"
    return None


def strip_lead_in(text: str) -> str:
    """``text`` without an opening "Actually," or "其实，"."""
    lead = _LEAD_IN.match(text)
    return text[lead.end() :] if lead else text


def _numbered_subject(text: str) -> tuple[str, str] | None:
    """The name and number a statement opens with, if it opens with them."""
    found = _NUMBERED_SUBJECT.match(text)
    return (found[1].lower(), found[2].lower().rstrip(".")) if found else None


def _about(text: str) -> frozenset[str]:
    return topic_terms(_HOW.sub(" ", text)) - _NOISE


def find_target(text: str, known: Mapping[str, str], *, taken: Set[str]) -> str | None:
    """The id of the memory in ``known`` (id -> its title and body) that ``text`` speaks
    of, or None when none is clear enough; ``taken`` ids are passed over (another
    candidate of the answer already changes them)."""
    words = _about(text)
    subject = _numbered_subject(strip_lead_in(text))
    best: tuple[int, float] | None = None
    found = None
    for memory_id, content in known.items():
        if memory_id in taken:
            continue
        other = _numbered_subject(content)
        if subject and other and subject[0] == other[0] and subject[1] != other[1]:
            continue
        about = _about(content)
        shared = len(words & about)
        if shared == 0:
            continue
        share = min(shared / len(about), shared / len(words))
        if shared < _MIN_SHARED and share < 0.5:
            continue
        if best is None or (shared, share) > best:
            best, found = (shared, share), memory_id
    return found
