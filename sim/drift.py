"""Drift checks: hold each spec to the code it models, and the code to the spec.

Theory of operation. Two kinds of drift, checked per protocol:

Schema drift. A spec and the code must agree on the state and the steps a
trace carries. The spec side is read by SANY (`tracing/sany.py`): its
VARIABLES, and the action names of its trace template's `TraceActionNames`
(checked there against the spec's definitions and its `Next`). The code
side is the protocol definition: `variable_types`, the fields the emitter
writes into every line's `vars` (the emitter refuses a line with any
other), and `trace_actions`, the action names the protocol declares it can
emit. The declaration is held to the code by a static scan of the
protocol's package: every `Trace(...)` effect and every `StepList.step`
call, and every helper its module calls that forwards its `action`
argument to one (found to a fixpoint), must name its action with a string
literal (or a conditional between literals), and so must `crash_step`'s
returns; with the two network actions and the kernel's "Init", that is the
set the code can emit. (The unit tests also hold it to the actions seen in
simulated runs.)

Spec drift. Every spec folder holds `modelled.json`, the record of the
Python code its spec models and a hash of each piece as it was when a
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

This module reads the protocols' source and the records, and writes a
record only when asked to update it; it never edits a spec or the code.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.definition import ProtocolDefinition
from protocols.errors import SpecError
from tracing.sany import schema_drift, spec_shape
from tracing.speccheck import find_spec

__all__ = [
    "KERNEL_ACTIONS",
    "RECORD_NAME",
    "ROOT",
    "ActionScan",
    "ModelledRecord",
    "ProtocolDrift",
    "SpecDrift",
    "check_drift",
    "check_record",
    "declaration_problems",
    "hash_item",
    "read_record",
    "record_path",
    "scan_actions",
    "schema_problems",
    "update_record",
]

ROOT = Path(__file__).resolve().parent.parent  # the records' paths are relative to it
RECORD_NAME = "modelled.json"
KERNEL_ACTIONS = frozenset({"Init"})  # sim/kernel.py writes it first in every trace
_RECORD_KEYS = frozenset({"spec", "about", "modelled", "hashes", "revision"})
_HASH_HEX = 16  # as sim/revision.py: enough to tell revisions apart, short to read


# --- the static scan of the action names the code can emit -------------------


@dataclass(frozen=True, slots=True)
class ActionScan:
    """The action names a protocol package's code can emit, and where."""

    actions: Mapping[str, tuple[str, ...]]  # name -> "path:line" of each emit
    unresolved: tuple[str, ...]  # emits whose action name is not a literal


_Key = tuple[str | None, str]  # (class or None, function name)


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    return names[1:] if method and not static and names else names


def _literals(expr: ast.expr) -> list[str] | None:
    """The strings an action expression can be, or None if it is not literal."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.IfExp):
        body, orelse = _literals(expr.body), _literals(expr.orelse)
        return body + orelse if body is not None and orelse is not None else None
    return None


class _FileScan:
    """One module: its functions, and which of them emit an action argument."""

    def __init__(self, path: Path, rel: str) -> None:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        self.functions: dict[_Key, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[(None, node.name)] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        self.functions[(node.name, item.name)] = item
        # The emitters: (position, parameter name) of the action argument.
        self.sinks: dict[_Key, tuple[int, str]] = {}
        self._find_forwarders()

    def sink(self, call: ast.Call, cls: str | None) -> tuple[_Key | None, tuple[int, str]] | None:
        """The emitter a call goes to (None for `Trace` and `.step` themselves)
        and where its action argument is; None if it emits nothing."""
        f = call.func
        key: _Key | None = None
        if isinstance(f, ast.Name):
            if f.id == "Trace":
                return None, (0, "action")
            key = (None, f.id)
        elif isinstance(f, ast.Attribute):
            if f.attr == "step":
                return None, (0, "action")
            if isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"):
                key = (cls, f.attr)
        if key is None or key not in self.sinks:
            return None
        return key, self.sinks[key]

    @staticmethod
    def argument(call: ast.Call, sink: tuple[int, str]) -> ast.expr | None:
        index, name = sink
        for keyword in call.keywords:
            if keyword.arg == name:
                return keyword.value
        positional = call.args[: index + 1]
        if len(positional) > index and not any(isinstance(a, ast.Starred) for a in positional):
            return call.args[index]
        return None

    def calls(self) -> Iterable[tuple[_Key, _Key | None, ast.Call, tuple[int, str]]]:
        """Every emitting call: the function it is in, its emitter, the call, the argument."""
        for key, fn in self.functions.items():
            for node in ast.walk(fn):
                if isinstance(node, ast.Call):
                    found = self.sink(node, key[0])
                    if found is not None:
                        yield key, found[0], node, found[1]

    def _find_forwarders(self) -> None:
        # A helper that passes one of its parameters on as an action is an
        # emitter too; helpers of helpers are found on later rounds.
        changed = True
        while changed:
            changed = False
            for key, _callee, call, sink in list(self.calls()):
                arg = self.argument(call, sink)
                params = _params(self.functions[key], method=key[0] is not None)
                if key not in self.sinks and isinstance(arg, ast.Name) and arg.id in params:
                    self.sinks[key] = (params.index(arg.id), arg.id)
                    changed = True

    def forwarded(self, key: _Key, arg: ast.expr | None, called: set[_Key | None]) -> bool:
        """Whether `arg` is the action parameter of a helper this file calls, so
        that its callers' arguments are the names. (A function no call here
        reaches, such as a core's `handle`, must name its actions itself.)"""
        return (
            isinstance(arg, ast.Name)
            and key in called
            and self.sinks.get(key, (0, ""))[1] == arg.id
        )

    def crash_returns(self) -> Iterable[tuple[int, ast.expr | None]]:
        for (cls, name), fn in self.functions.items():
            if cls is not None and name == "crash_step":
                for node in ast.walk(fn):
                    if isinstance(node, ast.Return):
                        value = node.value
                        first = value.elts[0] if isinstance(value, ast.Tuple) else None
                        yield node.lineno, first


def scan_actions(definition: ProtocolDefinition, root: Path = ROOT) -> ActionScan:
    """Every action name the package of `definition` can emit, by a static scan."""
    package = Path(inspect.getfile(type(definition))).resolve().parent
    actions: dict[str, list[str]] = {}
    unresolved: list[str] = []

    def found(expr: ast.expr | None, where: str) -> None:
        names = _literals(expr) if expr is not None else None
        if names is None:
            shown = ast.unparse(expr) if expr is not None else "no action argument"
            unresolved.append(f"{where}: the action name is not a string literal: {shown}")
            return
        for name in names:
            actions.setdefault(name, []).append(where)

    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        scan = _FileScan(path, rel)
        emits = list(scan.calls())
        called = {callee for _key, callee, _call, _sink in emits}
        for key, _callee, call, sink in emits:
            arg = scan.argument(call, sink)
            if not scan.forwarded(key, arg, called):
                found(arg, f"{rel}:{call.lineno}")
        for line, first in scan.crash_returns():
            found(first, f"{rel}:{line} (crash_step)")
    net = {"net_lose_action": definition.net_lose_action}
    net["net_duplicate_action"] = definition.net_duplicate_action
    for attribute, name in net.items():
        actions.setdefault(name, []).append(f"the kernel ({attribute})")
    for name in KERNEL_ACTIONS:
        actions.setdefault(name, []).append("the kernel (first line)")
    return ActionScan({k: tuple(v) for k, v in actions.items()}, tuple(unresolved))


def declaration_problems(definition: ProtocolDefinition, root: Path = ROOT) -> list[str]:
    """Where `trace_actions` differs from what the code can emit."""
    scan = scan_actions(definition, root)
    found = list(scan.unresolved)
    declared = definition.trace_actions
    for name in sorted(set(scan.actions) - declared):
        found.append(
            f"{name} is emitted at {', '.join(scan.actions[name])}, "
            f"but {definition.name}'s trace_actions does not declare it"
        )
    for name in sorted(declared - set(scan.actions)):
        found.append(f"{definition.name}'s trace_actions declares {name}, which no code emits")
    return found


def schema_problems(
    definition: ProtocolDefinition, spec_dirs: Sequence[Path] | None = None, root: Path = ROOT
) -> list[str]:
    """Every schema difference between `definition`'s code and its spec (runs SANY once)."""
    module, _template = find_spec(definition.spec_module, spec_dirs)
    shape = spec_shape(module)
    found = schema_drift(
        shape, list(definition.variable_types), definition.trace_actions, definition.name
    )
    return found + declaration_problems(definition, root)


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
    module, _template = find_spec(definition.spec_module, spec_dirs)
    return module.with_name(RECORD_NAME)


def read_record(path: Path) -> ModelledRecord:
    """Read and check a record; SpecError names what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(
            f"{path}: no record of the code the spec models; write one (docs/drift.md)"
        ) from None
    except (OSError, UnicodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the record: {exc}") from None
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


# --- both checks, for `tlasim drift` -----------------------------------------


@dataclass(frozen=True, slots=True)
class ProtocolDrift:
    protocol: str
    spec: SpecDrift
    schema: tuple[str, ...]  # schema differences, one sentence each

    @property
    def drifted(self) -> bool:
        return self.spec.drifted or bool(self.schema)


def check_drift(
    definitions: Sequence[ProtocolDefinition],
    spec_dirs: Sequence[Path] | None = None,
    root: Path = ROOT,
) -> list[ProtocolDrift]:
    """Both checks for every protocol; the SANY runs go side by side."""
    records = [read_record(record_path(d, spec_dirs)) for d in definitions]
    for definition, record in zip(definitions, records, strict=True):
        if record.spec != definition.spec_module:
            raise SpecError(
                f"{record.path}: records the spec {record.spec}, but {definition.name} "
                f"traces are steps of {definition.spec_module}"
            )
    spec_drifts = [check_record(r, root) for r in records]
    # Only the SANY runs go to threads, to fill spec_shape's cache: ast.parse,
    # which the scan uses, is not thread-safe in CPython 3.11 (it fails with
    # "AST constructor recursion depth mismatch").
    modules = [find_spec(d.spec_module, spec_dirs)[0] for d in definitions]
    with ThreadPoolExecutor(max_workers=max(1, len(modules))) as pool:
        list(pool.map(spec_shape, modules))
    schemas = [schema_problems(d, spec_dirs, root) for d in definitions]
    return [
        ProtocolDrift(d.name, s, tuple(p))
        for d, s, p in zip(definitions, spec_drifts, schemas, strict=True)
    ]
