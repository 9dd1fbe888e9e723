"""Protocol cores (sans-IO) and their definitions, by name.

Theory of operation: a protocol is a `ProtocolDefinition`, found in one of
four places, and known by its `name` from then on:

- shipped with tlasim: any subpackage here, at any depth (`protocols/twopc`,
  `protocols/lockfree/queue`), whose `definition` module exposes
  `DEFINITION`. The folders are listed, so adding one needs no edit
  outside its own package and its specs;
- installed by the user's own package, as an entry point of the group
  `tlasim.protocols` (`paxos = "mypkg.definition:DEFINITION"`);
- named in `TLASIM_PROTOCOLS`, a list (separated by `os.pathsep`) of
  `module:ATTR` references and of folders: every package in a folder
  whose `definition` module exposes `DEFINITION`, as for the shipped ones
  (the folder goes on `sys.path`, for an uninstalled checkout);
- named where a protocol's name goes, as `module:ATTR`, found from the
  current folder as `python -m` would. It is added to `TLASIM_PROTOCOLS`
  so that the processes a command starts (pool workers, live nodes) find
  it too.

`ATTR` may be a definition or a class to instantiate with no arguments.
The plugins are loaded on the first lookup, in a fixed order (entry
points by name, then the environment in its order), so the result is the
same on every machine; two protocols with one name are a ConfigError that
names both origins. Each plugin's `reference()` is kept, so a results
database can name it again (`tlasim repro`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import pkgutil
import re
import sys
from collections.abc import Iterator, Sequence

from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError
from tlasim.protocols.trace_template import add_spec_dirs

__all__ = ["ENTRY_POINT_GROUP", "ENV_VAR", "PROTOCOLS", "command_name", "definition_modules",
           "find_definitions", "get_protocol", "load_plugins", "origin", "protocol_names",
           "reference"]

DEFINITION_MODULE = "definition"
ENTRY_POINT_GROUP = "tlasim.protocols"
ENV_VAR = "TLASIM_PROTOCOLS"


def definition_modules(package: str, paths: Sequence[str]) -> Iterator[str]:
    """The `definition` module of every subpackage under `paths`, at any depth,
    by dotted name; the folders are listed, nothing is imported."""
    subpackages = sorted({m.name for m in pkgutil.iter_modules(paths) if m.ispkg})
    for name in subpackages:
        sub_paths = [os.path.join(p, name) for p in paths if os.path.isdir(os.path.join(p, name))]
        if any(m.name == DEFINITION_MODULE for m in pkgutil.iter_modules(sub_paths)):
            yield f"{package}.{name}.{DEFINITION_MODULE}"
        yield from definition_modules(f"{package}.{name}", sub_paths)


def _top_level_definition_modules(folder: str) -> Iterator[str]:
    """As `definition_modules`, for the top-level packages of a folder on sys.path."""
    for name in sorted({m.name for m in pkgutil.iter_modules([folder]) if m.ispkg}):
        sub = os.path.join(folder, name)
        if any(m.name == DEFINITION_MODULE for m in pkgutil.iter_modules([sub])):
            yield f"{name}.{DEFINITION_MODULE}"
        yield from definition_modules(name, [sub])


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


# The registry: the shipped protocols now, the plugins once looked up.
PROTOCOLS: dict[str, ProtocolDefinition] = find_definitions(__name__, __path__)
_ORIGINS: dict[str, str] = {name: "shipped with tlasim" for name in PROTOCOLS}
_REFERENCES: dict[str, str] = {}  # plugin name -> the module:ATTR that loads it
_NAMED_BY_REFERENCE: set[str] = set()  # loaded from a module:ATTR given where a name goes
_loaded = False


def _as_definition(obj: object, ref: str) -> ProtocolDefinition:
    if isinstance(obj, type):
        try:
            obj = obj()
        except TypeError as exc:
            raise ConfigError(f"{ref}: cannot make a protocol definition of it: {exc}") from None
    missing = [a for a in ("name", "spec_module", "make_core", "spec_vars") if not hasattr(obj, a)]
    if missing:
        raise ConfigError(f"{ref} is not a protocol definition: it has no {', '.join(missing)} "
                          "(subclass tlasim.protocols.defaults.ProtocolBase)")
    if not isinstance(obj.name, str) or not obj.name or ":" in obj.name:  # type: ignore[attr-defined]
        raise ConfigError(f"{ref}: a protocol's name must be a non-empty string without ':'")
    return obj  # type: ignore[return-value]


def _import_reference(ref: str) -> ProtocolDefinition:
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{ref!r} is not a protocol reference: write module:ATTR "
                          "(mypkg.definition:DEFINITION)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{ref}: cannot import {module_name}: {exc}") from None
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{ref}: {module_name} has no {attr}")
        obj = getattr(obj, part)
    return _as_definition(obj, ref)


def _canonical_reference(definition: ProtocolDefinition, ref: str) -> str:
    """One reference per protocol however it was named (an entry point, a folder,
    `module:ATTR` from another folder), so that a results database records the
    same campaign identity each time: the attribute of the definition's own
    module that holds it, when there is one."""
    module_name = type(definition).__module__
    module = sys.modules.get(module_name)
    for attr in sorted(vars(module)) if module is not None else ():
        if vars(module)[attr] is definition:
            return f"{module_name}:{attr}"
    return ref


def _register(definition: ProtocolDefinition, origin: str, ref: str | None) -> None:
    name = definition.name
    known = PROTOCOLS.get(name)
    if known is definition:
        return
    if known is not None:
        raise ConfigError(f"two protocols are named {name!r}: {_ORIGINS[name]} and {origin}")
    PROTOCOLS[name] = definition
    _ORIGINS[name] = origin
    if ref is not None:
        _REFERENCES[name] = _canonical_reference(definition, ref)
    add_spec_dirs(getattr(definition, "spec_dirs", ()))


_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _entries(value: str) -> list[str]:
    """TLASIM_PROTOCOLS's entries. They are separated by os.pathsep, as PATH's
    are, which on POSIX is also the ':' of `module:ATTR`: a dotted name that is
    not a folder, followed by another, is the reference `module:ATTR`."""
    pieces = [piece.strip() for piece in value.split(os.pathsep)]
    entries: list[str] = []
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        following = pieces[i + 1] if i + 1 < len(pieces) else ""
        if (os.pathsep == ":" and _DOTTED.fullmatch(piece) and _DOTTED.fullmatch(following)
                and not os.path.isdir(piece)):
            entries.append(f"{piece}:{following}")
            i += 2
            continue
        if piece:
            entries.append(piece)
        i += 1
    return entries


def _is_reference(entry: str) -> bool:
    return ":" in entry and not os.path.isdir(entry)


def load_plugins() -> None:
    """Load the entry points and TLASIM_PROTOCOLS once (see the module's docstring)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for point in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP),
                        key=lambda p: (p.name, p.value)):
        try:
            obj = point.load()
        except Exception as exc:  # a user's package that fails to import
            raise ConfigError(f"entry point {point.name} = {point.value} "
                              f"({ENTRY_POINT_GROUP}) failed to load: {exc}") from None
        _register(_as_definition(obj, point.value), f"entry point {point.value}", point.value)
    for entry in _entries(os.environ.get(ENV_VAR, "")):
        if _is_reference(entry):
            _register(_import_reference(entry), f"{ENV_VAR} {entry}", entry)
            continue
        folder = os.path.abspath(entry)
        if not os.path.isdir(folder):
            raise ConfigError(f"{ENV_VAR}: {entry} is neither module:ATTR nor a folder")
        if folder not in sys.path:
            sys.path.insert(0, folder)
        for module_name in _top_level_definition_modules(folder):
            definition = getattr(importlib.import_module(module_name), "DEFINITION", None)
            if definition is not None:
                ref = f"{module_name}:DEFINITION"
                _register(_as_definition(definition, ref), f"{ENV_VAR} {folder}: {ref}", ref)


def _load_reference(ref: str) -> ProtocolDefinition:
    """A `module:ATTR` given where a name goes, found from the current folder."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    definition = _import_reference(ref)
    _register(definition, ref, ref)
    if reference(definition.name) is not None:
        _NAMED_BY_REFERENCE.add(definition.name)
    # The processes this one starts find it the same way.
    entries = _entries(os.environ.get(ENV_VAR, ""))
    if ref not in entries:
        os.environ[ENV_VAR] = os.pathsep.join([*entries, ref])
    path = os.environ.get("PYTHONPATH", "")
    if cwd not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (cwd, path) if p)
    return definition


def protocol_names() -> list[str]:
    load_plugins()
    return sorted(PROTOCOLS)


def get_protocol(name: str) -> ProtocolDefinition:
    """The protocol called `name`, or the one a `module:ATTR` reference names."""
    load_plugins()
    if ":" in name:
        return _load_reference(name)
    try:
        return PROTOCOLS[name]
    except KeyError:
        # A project's package spells the name with '_' where the protocol has '-'.
        dashed = name.replace("_", "-")
        hint = f"did you mean {dashed!r}? " if dashed != name and dashed in PROTOCOLS else ""
        raise ConfigError(
            f"unknown protocol {name!r}; {hint}known: {', '.join(sorted(PROTOCOLS))} "
            f"(a protocol of your own: module:ATTR, the {ENTRY_POINT_GROUP} entry point "
            f"group or {ENV_VAR})"
        ) from None


def origin(name: str) -> str:
    """Where the protocol called `name` was found, in words."""
    get_protocol(name)
    return _ORIGINS[name]


def command_name(name: str) -> str:
    """How a printed command names the protocol: its name, or the `module:ATTR`
    it was given as when only that finds it (no entry point, no TLASIM_PROTOCOLS)."""
    ref = _REFERENCES.get(name)
    return ref if ref is not None and name in _NAMED_BY_REFERENCE else name


def reference(name: str) -> str | None:
    """The `module:ATTR` that loads a plugin again; None for tlasim's own protocols."""
    return _REFERENCES.get(name)
