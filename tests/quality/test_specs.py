"""Every spec config gives the result specs/manifest.json records, with TLC."""

from __future__ import annotations

import pytest

from tracing.tla.speccheck import SpecCheckResult, check_specs, read_manifest

# TLC model checks of every spec config: minutes.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def manifest_results() -> list[SpecCheckResult]:
    # One TLC pass over the manifest serves both tests: the checks take minutes.
    return check_specs(jobs=2)


def test_every_manifest_check_matches_tlc(manifest_results: list[SpecCheckResult]) -> None:
    failed = [r.summary() for r in manifest_results if not r.passed]
    assert not failed, "\n".join(failed)


def test_the_deliberately_wrong_spec_is_caught_by_tlc(
    manifest_results: list[SpecCheckResult],
) -> None:
    wrong = {c.name for c in read_manifest() if c.expect != "ok"}
    assert wrong, "the manifest must hold at least one spec variant TLC rejects"
    results = [r for r in manifest_results if r.check.name in wrong]
    assert len(results) == len(wrong)
    assert all(r.passed and r.actual != "ok" for r in results), [r.summary() for r in results]
