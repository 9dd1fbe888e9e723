"""A non-editable install ships every protocol and every spec file.

The wheel's contents come from pyproject.toml: the packages are listed
under the one import name `tlasim` (each top-level folder mapped to its
subpackage by `package-dir`), and the specs' data files are matched by
globs. A new package or spec file that either list misses works in the
repository and is absent from the wheel, so both are held here against
the files themselves.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def setuptools_config() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        tool: dict[str, object] = tomllib.load(f)["tool"]["setuptools"]
    return tool


def test_every_spec_file_is_package_data() -> None:
    patterns = setuptools_config()["package-data"]["tlasim.specs"]  # type: ignore[index]
    shipped = {path for pattern in patterns for path in (ROOT / "specs").glob(pattern)}
    files = {
        path
        for path in (ROOT / "specs").rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc")
    }
    assert sorted(str(p.relative_to(ROOT)) for p in files - shipped) == []


FOLDERS = ("sim", "protocols", "faults", "tracing", "specs")


def test_every_package_folder_is_listed_and_every_listed_package_is_a_folder() -> None:
    config = setuptools_config()
    package_dir = config["package-dir"]
    assert package_dir == {f"tlasim.{folder}": folder for folder in FOLDERS}
    folders = {
        "tlasim." + ".".join(path.parent.relative_to(ROOT).parts)
        for folder in FOLDERS for path in (ROOT / folder).rglob("__init__.py")
    }
    assert sorted(folders) == sorted(config["packages"])  # type: ignore[arg-type]


def test_every_folder_of_python_code_is_a_package() -> None:
    # A folder of modules without an __init__.py would be left out of the wheel.
    folders = {path.parent for folder in FOLDERS for path in (ROOT / folder).rglob("*.py")}
    assert sorted(
        str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()
    ) == []
