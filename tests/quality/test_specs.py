"""Every spec config gives the result specs/manifest.json records, with TLC."""

from __future__ import annotations

from tracing.tla.speccheck import check_specs, read_manifest


def test_every_manifest_check_matches_tlc() -> None:
    results = check_specs(jobs=2)
    failed = [r.summary() for r in results if not r.passed]
    assert not failed, "\n".join(failed)


def test_the_deliberately_wrong_spec_is_caught_by_tlc() -> None:
    wrong = [c for c in read_manifest() if c.expect != "ok"]
    assert wrong, "the manifest must hold at least one spec variant TLC rejects"
    results = check_specs(names=[c.name for c in wrong], jobs=2)
    assert all(r.passed and r.actual != "ok" for r in results), [r.summary() for r in results]
