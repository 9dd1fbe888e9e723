"""Protocol cores (sans-IO) and their definitions, by name.

A protocol is any subpackage, at any depth (`protocols/twopc`,
`protocols/lockfree/queue`), whose `definition` module exposes
`DEFINITION`. They are found here by listing the package's folders, so
adding a protocol needs no edit outside its own package and its specs.
Only the `definition` modules (and the packages that hold them) are
imported, in the order of their dotted names, so the result is the same on
every machine.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Iterator, Sequence

from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError

__all__ = ["PROTOCOLS", "definition_modules", "find_definitions", "get_protocol"]

DEFINITION_MODULE = "definition"


def definition_modules(package: str, paths: Sequence[str]) -> Iterator[str]:
    """The `definition` module of every subpackage under `paths`, at any depth,
    by dotted name; the folders are listed, nothing is imported."""
    subpackages = sorted({m.name for m in pkgutil.iter_modules(paths) if m.ispkg})
    for name in subpackages:
        sub_paths = [os.path.join(p, name) for p in paths if os.path.isdir(os.path.join(p, name))]
        if any(m.name == DEFINITION_MODULE for m in pkgutil.iter_modules(sub_paths)):
            yield f"{package}.{name}.{DEFINITION_MODULE}"
        yield from definition_modules(f"{package}.{name}", sub_paths)


def find_definitions(package: str, paths: Sequence[str]) -> dict[str, ProtocolDefinition]:
    """Every `DEFINITION` under `paths`, by protocol name, in name order.

    A `definition` module without `DEFINITION` (one that holds what a family
    of protocols shares, say) is not a protocol. Two definitions with one
    name are a ConfigError naming both modules.
    """
    found: dict[str, tuple[str, ProtocolDefinition]] = {}
    for module_name in sorted(definition_modules(package, paths)):
        definition = getattr(importlib.import_module(module_name), "DEFINITION", None)
        if definition is None:
            continue
        if definition.name in found:
            raise ConfigError(
                f"two protocols are named {definition.name!r}: "
                f"{found[definition.name][0]}.DEFINITION and {module_name}.DEFINITION"
            )
        found[definition.name] = (module_name, definition)
    return {name: found[name][1] for name in sorted(found)}


PROTOCOLS: dict[str, ProtocolDefinition] = find_definitions(__name__, __path__)


def get_protocol(name: str) -> ProtocolDefinition:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ConfigError(
            f"unknown protocol {name!r}; known: {', '.join(sorted(PROTOCOLS))}"
        ) from None
