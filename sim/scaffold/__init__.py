"""`tlasim new NAME`: a working protocol project to change into your own.

Theory of operation: the project is a folder of templates (`templates/`,
shipped as package data) that is copied with three names put in:

- `{{name}}`, the protocol's name as commands take it (`tlasim run NAME`);
- `{{package}}`, the Python package it lives in (the name with `-` as `_`);
- `{{Module}}`, the stem of its TLA+ modules (the name in CamelCase).

A path segment `PACKAGE` or `MODULE` in the template tree is renamed the
same way, a leading `dot_` becomes `.`, and a template file's `.tmpl`
suffix is dropped (so that tlasim's
own linters and test collection never read a template as code). The
protocol is a primary that replicates values to backups with messages, a
synced log on each node, crashes of any node, and one bug variant; its
specs, configs, TLC manifest and tests come with it, so every command works
on it the moment it is written. The record of the modelled code's hashes
(`modelled.json`, read by `tlasim drift`) is written last, from the files as
written, so drift starts clean.

Nothing existing is overwritten: a target folder that holds anything is an
error, and nothing is written.
"""

from __future__ import annotations

import importlib.util
import keyword
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from tlasim.protocols.errors import ConfigError

__all__ = ["ProjectNames", "names_for", "write_project"]

_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
_SUFFIX = ".tmpl"


@dataclass(frozen=True, slots=True)
class ProjectNames:
    name: str  # the protocol's name: `tlasim run NAME`
    package: str  # its Python package
    module: str  # the stem of its TLA+ modules

    def fill(self, text: str) -> str:
        return (text.replace("{{name}}", self.name)
                .replace("{{package}}", self.package)
                .replace("{{Module}}", self.module))

    def path(self, part: str) -> str:
        # Package data leaves dotfiles out, so `.gitignore` is kept as `dot_gitignore`.
        if part.startswith("dot_"):
            part = "." + part.removeprefix("dot_")
        return part.replace("PACKAGE", self.package).replace("MODULE", self.module)


def names_for(name: str) -> ProjectNames:
    """The names a project called `name` uses; a ConfigError says what a name may be."""
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"{name!r} cannot name a protocol: use lower-case letters and digits, "
            "starting with a letter, words joined by '-' or '_' (say, 'kv-replica')")
    package = name.replace("-", "_")
    if keyword.iskeyword(package) or package in {"tlasim", "sim", "protocols", "tests"}:
        raise ConfigError(f"{name!r} cannot name a protocol: its package {package!r} "
                          "would shadow a Python keyword or a package a project needs")
    taken = _importable(package)
    if taken is not None:
        raise ConfigError(f"{name!r} cannot name a protocol: a module {package!r} is already "
                          f"importable here ({taken}), so one of the two would shadow the "
                          "other: choose another name")
    module = "".join(word.capitalize() for word in re.split(r"[-_]", name))
    return ProjectNames(name, package, module)


def _importable(package: str) -> str | None:
    """Where an importable top-level module of this name comes from, or None.

    A namespace package (a bare folder on the path, say an empty one in the
    current folder) is no module of anyone's, so it does not count."""
    if package in sys.stdlib_module_names:
        return "the standard library"
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    return spec.origin


def _templates() -> Traversable:
    return resources.files(__name__).joinpath("templates")


def _walk(folder: Traversable, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    files = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            files += _walk(entry, (*prefix, entry.name))
        else:
            files.append(((*prefix, entry.name), entry.read_text(encoding="utf-8")))
    return files


def planned_files(names: ProjectNames) -> dict[str, str]:
    """Every file the project holds, by path relative to its folder, filled in."""
    planned = {}
    for parts, text in _walk(_templates()):
        relative = "/".join(names.path(part) for part in parts)
        planned[relative.removesuffix(_SUFFIX)] = names.fill(text)
    return planned


def write_project(name: str, folder: Path) -> tuple[ProjectNames, list[Path]]:
    """Write the project `name` into `folder` (made if missing; must be empty).

    The files are written into a fresh folder beside it, which then takes
    its name, so a failure half-way leaves nothing behind.
    """
    names = names_for(name)
    folder = folder.absolute()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ConfigError(f"{folder} already exists and is not an empty folder; "
                          "nothing was written (choose another with --dir)")
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for relative, text in planned_files(names).items():
            target = scratch / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        _record_modelled(scratch, names)
        # mkdtemp made it private; the project is an ordinary folder.
        umask = os.umask(0)
        os.umask(umask)
        scratch.chmod(0o777 & ~umask)
        if folder.exists():
            folder.rmdir()  # empty, as checked above
        scratch.rename(folder)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return names, sorted(p for p in folder.rglob("*") if p.is_file())


def _record_modelled(folder: Path, names: ProjectNames) -> None:
    """Write the modelled code's hashes as `tlasim drift --update` would."""
    # Imported here: drift reads the tracing side, which a name check needs not.
    from tlasim.sim.drift.modelled import read_record, update_record

    update_record(read_record(folder / names.package / "specs" / "modelled.json"), folder)
