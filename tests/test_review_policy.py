"""The review policy in memgit.yaml: its shape, and which decisions it covers."""

from __future__ import annotations

import pytest

from memgit.review.policy import ReviewPolicy
from memgit.settings import DEFAULT_CONFIG, parse_settings


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
