"""Every twopc spec config gives the result specs/manifest.json records, with TLC."""

from __future__ import annotations

import pytest
from spec_manifest_checks import assert_all_match, assert_wrong_specs_caught, run_checks

from tracing.tla.speccheck import SpecCheckResult

# TLC model checks: minutes.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results() -> list[SpecCheckResult]:
    # One TLC pass over the protocol's checks serves both tests.
    return run_checks("twopc")


def test_every_manifest_check_matches_tlc(results: list[SpecCheckResult]) -> None:
    assert_all_match(results)


def test_the_deliberately_wrong_specs_are_caught_by_tlc(results: list[SpecCheckResult]) -> None:
    assert_wrong_specs_caught("twopc", results)


def test_every_manifest_check_belongs_to_a_protocol_file() -> None:
    # A check no protocol's file runs would never be checked.
    from spec_manifest_checks import SPEC_FOLDERS, check_names

    from tracing.tla.speccheck import read_manifest

    covered = set().union(*map(check_names, SPEC_FOLDERS))
    assert {c.name for c in read_manifest()} == covered
