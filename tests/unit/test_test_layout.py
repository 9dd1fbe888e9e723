"""The suite's own layout: pytest imports each test file by its basename
(the test folders are not packages), so two files of one name in different
folders stop the whole run at collection with "import file mismatch"."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_files_share_a_basename() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if "fixtures" in path.relative_to(TESTS).parts:
            continue  # a user project's tests, run by its own pytest
        # Files inside a package are imported by their dotted path, which is unique.
        if (path.parent / "__init__.py").is_file():
            continue
        by_name[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, f"rename one of each: {shared}"
