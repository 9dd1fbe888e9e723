"""Every twopc spec config gives the result specs/manifest.json records, with TLC
(the configs the manifest marks slow: `make check-specs`)."""

from __future__ import annotations

from spec_manifest_checks import SPEC_FOLDERS, check_names, folder_tests

from tlasim.tracing.tla.speccheck import read_manifest

(
    results,
    test_every_manifest_check_matches_tlc,
    test_the_deliberately_wrong_specs_are_caught_by_tlc,
) = folder_tests("twopc")


def test_every_manifest_check_belongs_to_a_spec_folders_file() -> None:
    # A check no folder's file runs would never be checked.
    covered = set().union(*map(check_names, SPEC_FOLDERS))
    assert {c.name for c in read_manifest()} == covered
