"""The manifest's TLC checks of one protocol's specs, for the test file of
that protocol: a file per protocol, so that pytest-xdist (a file per
worker) spreads minutes of TLC over the cores instead of leaving them to
one worker at the end of the suite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tlasim.tracing.tla.speccheck import SpecCheckResult, check_specs, read_manifest

SPEC_FOLDERS = ("twopc", "shardsplit", "snapshot", "lockfree")


def check_names(protocol: str) -> set[str]:
    """The manifest's checks of `protocol`: those its name starts."""
    return {c.name for c in read_manifest() if c.name.startswith(f"{protocol}-")}


def run_checks(protocol: str) -> list[SpecCheckResult]:
    """The protocol's checks but those the manifest marks slow (the larger
    models, 15-45 s of TLC each): `make check-specs` runs every check, and
    CI (.ci/run) runs it after `make test`."""
    names = check_names(protocol)
    assert names, f"the manifest holds no check of {protocol}"
    return check_specs(names=sorted(names), include_slow=False)


def assert_all_match(results: list[SpecCheckResult]) -> None:
    failed = [r.summary() for r in results if not r.passed]
    assert not failed, "\n".join(failed)


def assert_wrong_specs_caught(protocol: str, results: list[SpecCheckResult]) -> None:
    """Each deliberately wrong spec variant of `protocol` (a check whose
    expected outcome is not "ok") is rejected by TLC as the manifest says."""
    wrong = {c.name for c in read_manifest() if c.expect != "ok"} & check_names(protocol)
    assert wrong, f"the manifest must hold a spec variant of {protocol} that TLC rejects"
    caught = [r for r in results if r.check.name in wrong]
    assert len(caught) == len(wrong)
    assert all(r.passed and r.actual != "ok" for r in caught), [r.summary() for r in caught]


def folder_tests(folder: str) -> tuple[Callable[..., Any], ...]:
    """The fixture `results` (one TLC pass over the folder's checks, which
    both tests read) and the two tests, for a test module to bind at its top
    level, where pytest finds them. Both tests are TLC model checks: slow."""

    @pytest.fixture(scope="module", name="results")
    def results() -> list[SpecCheckResult]:
        return run_checks(folder)

    @pytest.mark.slow
    def test_every_manifest_check_matches_tlc(results: list[SpecCheckResult]) -> None:
        assert_all_match(results)

    @pytest.mark.slow
    def test_the_deliberately_wrong_specs_are_caught_by_tlc(
        results: list[SpecCheckResult],
    ) -> None:
        assert_wrong_specs_caught(folder, results)

    return (
        results,
        test_every_manifest_check_matches_tlc,
        test_the_deliberately_wrong_specs_are_caught_by_tlc,
    )
