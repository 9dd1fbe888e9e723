"""Every lock-free model config (specs/lockfree) gives the result the manifest records."""

from __future__ import annotations

import pytest
from spec_manifest_checks import assert_all_match, assert_wrong_specs_caught, run_checks

from tracing.tla.speccheck import SpecCheckResult

# TLC model checks: minutes.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results() -> list[SpecCheckResult]:
    # One TLC pass over the protocol's checks serves both tests.
    return run_checks("lockfree")


def test_every_manifest_check_matches_tlc(results: list[SpecCheckResult]) -> None:
    assert_all_match(results)


def test_the_deliberately_wrong_specs_are_caught_by_tlc(results: list[SpecCheckResult]) -> None:
    assert_wrong_specs_caught("lockfree", results)

