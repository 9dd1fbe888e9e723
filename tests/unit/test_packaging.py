"""A non-editable install ships every protocol and every spec file.

The wheel's contents come from pyproject.toml: packages are found (with
`namespaces = false`, so only folders with an `__init__.py`), and the
specs' data files are matched by globs. A new protocol or spec file that
either rule misses works in the repository and is absent from the wheel,
so both are held here against the files themselves.
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
    patterns = setuptools_config()["package-data"]["specs"]  # type: ignore[index]
    shipped = {path for pattern in patterns for path in (ROOT / "specs").glob(pattern)}
    files = {
        path
        for path in (ROOT / "specs").rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc")
    }
    assert sorted(str(p.relative_to(ROOT)) for p in files - shipped) == []


def test_every_folder_of_protocol_code_is_a_package_the_wheel_finds() -> None:
    find = setuptools_config()["packages"]["find"]  # type: ignore[index]
    assert "protocols.*" in find["include"] and find["namespaces"] is False
    folders = {path.parent for path in (ROOT / "protocols").rglob("*.py")}
    assert sorted(
        str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()
    ) == []
