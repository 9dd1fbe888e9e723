"""Every lockfree spec config gives the result specs/manifest.json records, with TLC
(the configs the manifest marks slow: `make check-specs`)."""

from __future__ import annotations

from spec_manifest_checks import folder_tests

(
    results,
    test_every_manifest_check_matches_tlc,
    test_the_deliberately_wrong_specs_are_caught_by_tlc,
) = folder_tests("lockfree")
