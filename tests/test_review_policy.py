"""The review policy in memgit.yaml, and the reason a rejection records."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memgit.proposals import parse_rejection, render_rejection
from memgit.review.reject import check_reason
from memgit.settings import DEFAULT_CONFIG, ReviewPolicy, parse_settings

# Control characters a reason may not hold (tab and newline it may).
REFUSED = "".join(chr(c) for c in range(32) if chr(c) not in "\n\t")


def settings_with(review: str) -> str:
    return DEFAULT_CONFIG + "\nreview:\n" + review


def test_no_review_section_means_off() -> None:
    assert parse_settings(DEFAULT_CONFIG).review == ReviewPolicy()
    assert not ReviewPolicy().covers("SUPERSEDE", types={"decision"}, scopes={"project"})


@pytest.mark.parametrize("review", ["  enabled: false\n", "  required: false\n"])
def test_off_as_old_and_new_repositories_say_it(review: str) -> None:
    policy = parse_settings(settings_with(review)).review
    assert policy == ReviewPolicy()


def test_required_true_covers_every_memory_change() -> None:
    policy = parse_settings(settings_with("  required: true\n")).review
    assert policy == ReviewPolicy(always=True)
    assert policy.covers("CREATE", types={"fact"}, scopes={"user"})


def test_actions_types_and_scopes_each_bring_a_decision_under_review() -> None:
    policy = parse_settings(
        settings_with("  actions: [SUPERSEDE, RETRACT]\n  types: [decision]\n  scopes: [project]\n")
    ).review
    assert policy == ReviewPolicy(
        actions=("SUPERSEDE", "RETRACT"), types=("decision",), scopes=("project",)
    )
    assert policy.covers("RETRACT", types={"fact"}, scopes={"user"})
    assert policy.covers("CREATE", types={"decision"}, scopes={"user"})
    assert policy.covers("UPDATE", types={"fact"}, scopes={"project/memgit"})
    assert not policy.covers("CREATE", types={"fact"}, scopes={"user/projection"})
    assert not policy.covers("UPDATE", types={"preference"}, scopes={"user"})


def test_a_sub_scope_covers_only_itself_and_below() -> None:
    policy = parse_settings(settings_with("  scopes: [project/billing]\n")).review
    assert policy.covers("CREATE", types={"fact"}, scopes={"project/billing/eu"})
    assert not policy.covers("CREATE", types={"fact"}, scopes={"project"})
    assert not policy.covers("CREATE", types={"fact"}, scopes={"project/billing-old"})


# ---------------------------------------------------------------- a rejection's reason

REASONS = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters=REFUSED), min_size=1
).filter(lambda text: text.strip())


@given(REASONS)
@settings(max_examples=300, deadline=None)
def test_a_reason_reads_back_as_recorded(reason: str) -> None:
    """render then parse gives back the reason, whatever its paragraphs or lines."""
    text = check_reason(reason)
    assert parse_rejection(render_rejection("20261130T103602Z-k3v9x2", text)) == text


@given(st.text())
@settings(max_examples=300, deadline=None)
def test_any_commit_message_parses_without_error(message: str) -> None:
    parse_rejection(message)
