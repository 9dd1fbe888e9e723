"""Spec drift: the record of the Python code a spec models, and its hashes.

Theory of operation. Every spec folder holds `modelled.json`, the record of
the Python code its spec models and a hash of each piece as it was when a
human last reviewed the spec against it:

    {"spec": "TwoPhaseCommitMsg",
     "modelled": ["protocols/twopc/tm.py:TransactionManager", ...],
     "hashes": {"protocols/twopc/tm.py:TransactionManager": "sha256:...", ...},
     "revision": "sha256:..."}

A modelled item is `path` (a whole module) or `path:Name.Inner`: a class,
a function or method, or a module or class variable (its whole
assignment). Its hash is of its syntax tree with docstrings, comments,
layout and line numbers left out, so a reformat or a new comment is not a
change and any change to the code is. `revision` hashes the hashes: the
source revision the spec records. Humans edit `modelled`; `tlasim drift
--update` writes `hashes` and `revision`.

`read_record` reads and checks a record, `check_record` hashes its items
now and says what changed (`SpecDrift`), and `update_record` writes the
new hashes. This module reads the modelled source and the records, and
writes a record only when asked to update it; it never edits a spec or the
code. The schema checks, and `check_drift`, which runs both, are
sim/drift/check.py's.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlasim.protocols.checked import load_json
from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import SpecError
from tlasim.tracing.tla.speccheck import find_spec

__all__ = [
    "RECORD_NAME",
    "ROOT",
    "ModelledRecord",
    "SpecDrift",
    "check_record",
    "hash_item",
    "read_record",
    "record_path",
    "update_record",
]

ROOT = Path(__file__).resolve().parents[2]  # the records' paths are relative to it
RECORD_NAME = "modelled.json"
_RECORD_KEYS = frozenset({"spec", "about", "modelled", "hashes", "revision"})
_HASH_HEX = 16  # as sim/drift/revision.py: enough to tell revisions apart, short to read


# --- hashing modelled code ---------------------------------------------------

_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _canonical(value: Any, out: list[str]) -> None:
    """Write a syntax tree without positions, docstrings or empty fields.

    Empty fields are left out so that a field a newer Python adds (as 3.12
    added `type_params`) does not change the hash of unchanged code.
    """
    if isinstance(value, ast.AST):
        out.append(type(value).__name__ + "(")
        for field in value._fields:
            item = getattr(value, field, None)
            if field == "body" and isinstance(value, _DOCUMENTED) and item:
                first = item[0]
                if (
                    isinstance(first, ast.Expr)
                    and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)
                ):
                    item = item[1:]
            if item is None or (isinstance(item, list) and not item):
                continue
            out.append(field + "=")
            _canonical(item, out)
            out.append(",")
        out.append(")")
    elif isinstance(value, list):
        out.append("[")
        for item in value:
            _canonical(item, out)
            out.append(",")
        out.append("]")
    else:
        out.append(repr(value))


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:_HASH_HEX]


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    while targets:
        target = targets.pop()
        if isinstance(target, ast.Name) and target.id == name:
            return True
        if isinstance(target, ast.Tuple | ast.List):
            targets.extend(target.elts)
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
    return False


def _parse(rel: str, root: Path, where: str, trees: dict[str, ast.Module]) -> ast.Module:
    if rel not in trees:
        path = root / rel
        if not path.is_file():
            raise SpecError(f"{where}: the modelled file {rel} does not exist")
        try:
            trees[rel] = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        except SyntaxError as exc:
            raise SpecError(f"{where}: cannot parse {rel}: {exc}") from None
    return trees[rel]


def hash_item(
    item: str, root: Path = ROOT, where: str = "", trees: dict[str, ast.Module] | None = None
) -> str:
    """The hash of one modelled item, `path` or `path:Name.Inner` (SpecError if gone)."""
    rel, _, qualname = item.partition(":")
    where = where or item
    tree = _parse(rel, root, where, trees if trees is not None else {})
    nodes: list[ast.AST] = [tree]
    if qualname:
        body: list[ast.stmt] = tree.body
        parts = qualname.split(".")
        for i, part in enumerate(parts):
            nodes = [node for node in body if _binds(node, part)]
            if not nodes:
                scope = rel if i == 0 else f"{rel}:{'.'.join(parts[:i])}"
                raise SpecError(
                    f"{where}: {scope} defines no {part} (renamed or removed?); "
                    f"fix the record's modelled list, review the spec, then run "
                    f"`tlasim drift --update`"
                )
            if i + 1 < len(parts):
                classes = [n for n in nodes if isinstance(n, ast.ClassDef)]
                if not classes:
                    raise SpecError(f"{where}: {part} in {rel} is not a class")
                body = classes[-1].body
    out: list[str] = []
    _canonical(nodes, out)
    return _digest("".join(out))


def _revision(hashes: Mapping[str, str]) -> str:
    return _digest("".join(f"{item}\0{h}\n" for item, h in sorted(hashes.items())))


# --- records -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelledRecord:
    """A spec's `modelled.json`: what it models, and the hashes a human reviewed."""

    path: Path
    spec: str
    modelled: tuple[str, ...]
    hashes: Mapping[str, str]  # empty until the first `tlasim drift --update`
    revision: str | None
    about: str | None  # free text for the human who opens the file


def record_path(definition: ProtocolDefinition, spec_dirs: Sequence[Path] | None = None) -> Path:
    """The spec's record: `<Spec>.modelled.json` in a folder of several specs
    (specs/lockfree), else the folder's `modelled.json`."""
    module, _template = find_spec(definition.spec_module, spec_dirs)
    own = module.with_name(f"{module.stem}.{RECORD_NAME}")
    return own if own.is_file() else module.with_name(RECORD_NAME)


def read_record(path: Path) -> ModelledRecord:
    """Read and check a record; SpecError names what is wrong with it."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise SpecError(
            f"{path}: no record of the code the spec models; write one (docs/drift.md)"
        ) from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the record: {exc}") from None
    data = load_json(text, str(path), error=SpecError, problem="cannot read the record")
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object, not {type(data).__name__}")
    unknown = sorted(set(data) - _RECORD_KEYS)
    if unknown:
        raise SpecError(
            f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_RECORD_KEYS))}"
        )
    spec, modelled = data.get("spec"), data.get("modelled")
    hashes, revision, about = data.get("hashes", {}), data.get("revision"), data.get("about")
    if not isinstance(spec, str) or not spec:
        raise SpecError(f"{path}: 'spec' must name the spec module, not {spec!r}")
    if (
        not isinstance(modelled, list)
        or not modelled
        or not all(isinstance(m, str) and m for m in modelled)
    ):
        raise SpecError(f"{path}: 'modelled' must be a non-empty list of 'path[:Name]' strings")
    duplicates = sorted({m for m in modelled if modelled.count(m) > 1})
    if duplicates:
        raise SpecError(f"{path}: 'modelled' lists {', '.join(duplicates)} more than once")
    if not isinstance(hashes, dict) or not all(isinstance(v, str) for v in hashes.values()):
        raise SpecError(f"{path}: 'hashes' must map each modelled item to its hash")
    if revision is not None and not isinstance(revision, str):
        raise SpecError(f"{path}: 'revision' must be a string, not {revision!r}")
    if about is not None and not isinstance(about, str):
        raise SpecError(f"{path}: 'about' must be a string, not {about!r}")
    module = path.with_name(f"{spec}.tla")
    if not module.is_file():
        raise SpecError(f"{path}: records the spec {spec}, but {module.name} is not beside it")
    return ModelledRecord(path, spec, tuple(modelled), dict(hashes), revision, about)


@dataclass(frozen=True, slots=True)
class SpecDrift:
    """A spec's record beside the modelled code as it is now."""

    record: ModelledRecord
    current: Mapping[str, str]  # item -> hash now
    revision: str  # the revision now

    @property
    def changed(self) -> tuple[str, ...]:
        old = self.record.hashes
        return tuple(i for i in self.record.modelled if i in old and old[i] != self.current[i])

    @property
    def unrecorded(self) -> tuple[str, ...]:
        return tuple(i for i in self.record.modelled if i not in self.record.hashes)

    @property
    def dropped(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.record.hashes) - set(self.record.modelled)))

    @property
    def drifted(self) -> bool:
        changes = self.changed or self.unrecorded or self.dropped
        return bool(changes) or self.record.revision != self.revision

    def describe(self) -> list[str]:
        """One sentence per change since the record (empty when none)."""
        found = [f"{item} changed" for item in self.changed]
        found += [f"{item} is modelled but has no recorded hash" for item in self.unrecorded]
        found += [f"{item} has a recorded hash but is no longer modelled" for item in self.dropped]
        if self.drifted and not found:
            found.append(
                f"the recorded revision {self.record.revision} is not the hash of the "
                f"recorded hashes ({self.revision}); was the record edited by hand?"
            )
        return found


def check_record(record: ModelledRecord, root: Path = ROOT) -> SpecDrift:
    """Hash the record's modelled items now (SpecError if one is gone)."""
    trees: dict[str, ast.Module] = {}
    current = {
        item: hash_item(item, root, f"{record.path}: {item}", trees) for item in record.modelled
    }
    return SpecDrift(record, current, _revision(current))


def update_record(record: ModelledRecord, root: Path = ROOT) -> SpecDrift:
    """Record the hashes of the modelled code now; return what changed since the
    old record. A record with nothing to change is left as it is."""
    drift = check_record(record, root)
    if not drift.drifted:
        return drift
    data: dict[str, Any] = {"spec": record.spec}
    if record.about is not None:
        data["about"] = record.about
    data["modelled"] = list(record.modelled)
    data["hashes"] = dict(drift.current)
    data["revision"] = drift.revision
    record.path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return drift
