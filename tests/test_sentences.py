"""The sentence and clause splitter of the rules Gate: a table of cases, and properties.

A wrong cut is a wrong memory that passes every check (its quote is exact text), so
the table covers what once went wrong (``3.11``, ``api.example.com``, ``e.g.``) and its
neighbours; the properties hold for any text: spans are exact text at their offsets,
they cover every non-space character in order, and no cut falls inside a token.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memgit.gate.sentences import Span, shorten, split_clauses, split_sentences, token_spans

SENTENCES: list[tuple[str, list[str]]] = [
    ("CI must run on Python 3.11 and 3.12.", ["CI must run on Python 3.11 and 3.12."]),
    ("We pin v2.4.1. It works.", ["We pin v2.4.1.", "It works."]),
    ("The build is 1.5x faster. Good.", ["The build is 1.5x faster.", "Good."]),
    ("The API lives at api.example.com. Use it.", ["The API lives at api.example.com.", "Use it."]),
    (
        "See https://x.example.org/a.b?c=1. Then go.",
        ["See https://x.example.org/a.b?c=1.", "Then go."],
    ),
    ("Mail sam.lee@example.com. Now.", ["Mail sam.lee@example.com.", "Now."]),
    ("Edit src/app.py and ./run.sh first. Done.", ["Edit src/app.py and ./run.sh first.", "Done."]),
    ("Open C:\\work\\x.txt now. Ok.", ["Open C:\\work\\x.txt now.", "Ok."]),
    ("Slow hosts, e.g. staging, hurt. Yes.", ["Slow hosts, e.g. staging, hurt.", "Yes."]),
    ("One host, i.e. prod. Fine.", ["One host, i.e. prod.", "Fine."]),
    ("Tabs vs. spaces again. Sigh.", ["Tabs vs. spaces again.", "Sigh."]),
    ("Ask Dr. Smith or Mr. Lee. Then wait.", ["Ask Dr. Smith or Mr. Lee.", "Then wait."]),
    ("Issue No. 42 blocks us. No. I refuse.", ["Issue No. 42 blocks us.", "No.", "I refuse."]),
    ("Logs, caches, etc. are rotated.", ["Logs, caches, etc. are rotated."]),
    ("Apples, pears, etc. The rest waits.", ["Apples, pears, etc.", "The rest waits."]),
    ("Keep them all, etc.", ["Keep them all, etc."]),
    ("Run `a.b()` first. Then `x. y`.", ["Run `a.b()` first.", "Then `x. y`."]),
    ("Code:\n```\nx = 1. y\n\nz.\n```\nafter", ["Code:", "```\nx = 1. y\n\nz.\n```", "after"]),
    ('He said "stop. now" and left. Ok.', ['He said "stop. now" and left.', "Ok."]),
    ('She said "Go home." Then left.', ['She said "Go home."', "Then left."]),
    ("It ran (see the log. it is long) fine.", ["It ran (see the log. it is long) fine."]),
    ("(See the docs.) Then go.", ["(See the docs.)", "Then go."]),
    ("Really?! Yes!!! Ok...", ["Really?!", "Yes!!!", "Ok..."]),
    ("Rules:\n1. Rebase first.\n2. Never push.", ["Rules:", "1. Rebase first.", "2. Never push."]),
    ("- one thing.\n- another", ["- one thing.", "- another"]),
    ("a) first\nb) second", ["a) first", "b) second"]),
    ("Line one\nline two", ["Line one", "line two"]),
    ("记住：项目代号是青鸟。好的", ["记住：项目代号是青鸟。", "好的"]),
    ("我不再用pytest，改用unittest！谢谢？对", ["我不再用pytest，改用unittest！", "谢谢？", "对"]),
    ("第一条；第二条。", ["第一条；", "第二条。"]),
    ("“好。”他说。然后", ["“好。”他说。", "然后"]),
    ("持续集成必须在 Python 3.11 上运行。", ["持续集成必须在 Python 3.11 上运行。"]),
    ("", []),
    ("   \n  ", []),
]


@pytest.mark.parametrize(("text", "expected"), SENTENCES, ids=range(len(SENTENCES)))
def test_sentences(text: str, expected: list[str]) -> None:
    spans = split_sentences(text)
    assert [span.text for span in spans] == expected
    assert all(text[span.start : span.end] == span.text for span in spans)


CLAUSES: list[tuple[str, list[str]]] = [
    ("I prefer unittest now, not pytest.", ["I prefer unittest now,", "not pytest."]),
    ("We have 1,000 users; most are happy.", ["We have 1,000 users;", "most are happy."]),
    ("Hosts, e.g. staging, are slow.", ["Hosts,", "e.g. staging,", "are slow."]),
    ("Call `f(a, b)` then stop.", ["Call `f(a, b)` then stop."]),
    ("Note: see (a, b) — or not.", ["Note:", "see (a, b)", "— or not."]),
    ("我不再用pytest，改用unittest。", ["我不再用pytest，", "改用unittest。"]),
    ("苹果、香蕉：都要。", ["苹果、", "香蕉：", "都要。"]),
]


@pytest.mark.parametrize(("text", "expected"), CLAUSES, ids=range(len(CLAUSES)))
def test_clauses(text: str, expected: list[str]) -> None:
    source = "Intro. " + text
    spans = split_clauses(Span(7, 7 + len(text), text))
    assert [span.text for span in spans] == expected
    assert all(source[span.start : span.end] == span.text for span in spans)


SHORTEN: list[tuple[str, int, str | None]] = [
    ("short enough", 80, "short enough"),
    ("The API lives at api.example.com and the docs are elsewhere today", 40, None),
    ("CI must run on Python 3.11 and 3.12 and nothing else", 30, "CI must run on Python 3.11"),
    ("Use https://example.com/a/very/long/path/x.html always", 30, "Use"),
    ("Run `make lint.all && make test.all` before you push", 30, "Run"),
    ("Hosts are slow, e.g. staging is, and prod too", 25, "Hosts are slow"),
    (
        "我们的项目使用非常复杂的持续集成流程，每次提交都要运行全部测试",
        20,
        "我们的项目使用非常复杂的持续集成流程",
    ),
    ("https://example.com/a/very/long/path", 10, None),
]


@pytest.mark.parametrize(("text", "limit", "expected"), SHORTEN, ids=range(len(SHORTEN)))
def test_shorten_never_cuts_a_token(text: str, limit: int, expected: str | None) -> None:
    got = shorten(text, limit)
    if expected is None and got is not None:
        # Cut, then: at a clause or word end, never inside a token, never on "and".
        assert len(got) <= limit and text.startswith(got)
        assert not got.endswith(" and") and text[len(got)] in " ,;:"
        assert all(not start < len(got) < end for start, end in token_spans(text))
        return
    assert got == expected


PIECES = [
    "a",
    "Bb",
    "word",
    "I",
    "3",
    "3.11",
    "v2.4.1",
    "1.5x",
    "api.example.com",
    "src/app.py",
    "./run.sh",
    "sam@example.com",
    "https://x.org/a.b",
    "e.g.",
    "i.e.",
    "etc.",
    "vs.",
    "Dr.",
    "No.",
    "`a.b()`",
    "```",
    "(",
    ")",
    '"',
    "“",
    "”",
    ".",
    ",",
    ";",
    ":",
    "!",
    "?",
    "...",
    "1.",
    "-",
    "*",
    "。",
    "，",
    "！",
    "？",
    "；",
    "、",
    "我",
    "喜欢",
    "项目",
    " ",
    " ",
    "\n",
    "\t",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join) | st.text(max_size=80))
def test_sentences_are_exact_cover_the_text_and_keep_tokens_whole(text: str) -> None:
    spans = split_sentences(text)
    at = 0
    for span in spans:
        assert span.text and span.text == text[span.start : span.end]
        assert span.text == span.text.strip()
        assert span.start >= at
        at = span.end
    assert "".join("".join(s.text for s in spans).split()) == "".join(text.split())
    # No cut inside a protected token: each token lies within one sentence.
    for start, end in token_spans(text):
        if text[start:end].strip():
            assert any(s.start <= start and end <= s.end for s in spans), (start, end)
    for sentence in spans:
        clauses = split_clauses(sentence)
        assert "".join("".join(c.text for c in clauses).split()) == "".join(sentence.text.split())
        assert all(text[c.start : c.end] == c.text for c in clauses)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
    st.integers(min_value=1, max_value=60),
)
def test_shorten_gives_a_clean_prefix(text: str, limit: int) -> None:
    got = shorten(text, limit)
    if got is None:
        return
    stripped = text.strip()
    assert stripped.startswith(got) and len(got) <= limit
    if len(got) < len(stripped):
        assert all(not start < len(got) < end for start, end in token_spans(stripped))


@pytest.mark.parametrize(
    "text",
    [
        "a" * 50_000,
        "a." * 25_000,
        "a-" * 25_000,
        "`a " * 15_000,
        "(a. " * 12_000,
        "Remember that CI runs on 3.11, e.g. on api.example.com. " * 900,
        "我喜欢用pytest，好。" * 4_000,
        "Remember that " + "not " * 12_000,
    ],
    ids=["letters", "dots", "hyphens", "backticks", "parens", "prose", "cjk", "nots"],
)
def test_long_runs_take_linear_time(text: str) -> None:
    """A 50,000-character unit is read within 5 CPU seconds: CPU time, which a busy
    machine does not stretch (the wall-clock bound failed at 12 s under a load of 12);
    cjk takes about 2 CPU s, the others under half a second. (Regression: a URL pattern
    tried at every letter of a long word took 140 s on 100,000 letters; the scope's
    domain pattern 238 s on ``a.a.a...``; token look-ups were quadratic.)"""
    import time

    from memgit.gate.backends.rules import find_statements
    from memgit.gate.changes import change_kind
    from memgit.gate.scoping import choose_scope

    started = time.process_time()
    split_sentences(text)
    find_statements(text)
    choose_scope(text, ("user", "project"))
    change_kind(text)
    assert time.process_time() - started < 5
