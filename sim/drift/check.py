"""Drift checks: hold each spec to the code it models, and the code to the spec.

Theory of operation. Two kinds of drift, checked per protocol:

Schema drift. A spec and the code must agree on the state and the steps a
trace carries. The spec side is read by SANY (`tracing/tla/sany.py`): its
VARIABLES, and the action names of its trace template's `TraceActionNames`
(checked there against the spec's definitions and its `Next`). The code
side is the protocol definition: `variable_types`, the fields the emitter
writes into every line's `vars` (the emitter refuses a line with any
other), and `trace_actions`, the action names the protocol declares it can
emit. A definition built on `protocols.defaults.ProtocolBase` does not
write that set: it reads the template's `TraceActionNames` with a small
reader of its own (`protocols/` may not import `tracing`), so comparing it
with SANY's reading checks that reader, and the scan below holds the code
to the template. The declaration is held to the code by a static scan of
the protocol's package: every `Trace(...)` effect and every `StepList.step`
call, and every helper its module calls that forwards its `action`
argument to one (found to a fixpoint), must name its action with a string
literal (or a conditional between literals), and so must `crash_step`'s
returns; with the two network actions and the kernel's "Init", that is the
set the code can emit. (The unit tests also hold it to the actions seen in
simulated runs.)

Spec drift. Every protocol's spec folder holds `modelled.json`, the record
of the Python code its spec models (a folder of several specs, such as
specs/lockfree, holds one `<Spec>.modelled.json` per spec),
with a hash of each piece as a human last reviewed it; sim/drift/modelled.py
reads, checks and updates these records.

`check_drift` runs both checks for `tlasim drift`. This module only reads
the protocols' source and the specs; it never edits a spec, the code or a
record.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import SpecError
from tlasim.sim.drift.modelled import ROOT, SpecDrift, check_record, read_record, record_path
from tlasim.tracing.tla.sany import schema_drift, spec_shape
from tlasim.tracing.tla.speccheck import find_spec

__all__ = [
    "KERNEL_ACTIONS",
    "ActionScan",
    "ProtocolDrift",
    "check_drift",
    "declaration_problems",
    "scan_actions",
    "schema_problems",
]

KERNEL_ACTIONS = frozenset({"Init"})  # sim/kernel/simulation.py writes it first in every trace


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
        # None: the protocol sends no messages, so the kernel never writes it.
        if name is not None:
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
    declared = list(getattr(definition, "SPEC_VARS", {}))
    if declared and declared != list(shape.variables):
        found.append(f"{definition.name}'s SPEC_VARS declares {', '.join(declared)}; "
                     f"the spec declares {', '.join(shape.variables)} (the same names, "
                     "in its order)")
    return found + declaration_problems(definition, root)


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
    # Each protocol's code is read from its own root (a user's package); `root`
    # stands for tlasim's, which a test may move.
    roots = [root if d.source_root == ROOT else d.source_root for d in definitions]
    spec_drifts = [check_record(r, at) for r, at in zip(records, roots, strict=True)]
    # Only the SANY runs go to threads, to fill spec_shape's cache: ast.parse,
    # which the scan uses, is not thread-safe in CPython 3.11 (it fails with
    # "AST constructor recursion depth mismatch").
    modules = [find_spec(d.spec_module, spec_dirs)[0] for d in definitions]
    with ThreadPoolExecutor(max_workers=max(1, len(modules))) as pool:
        list(pool.map(spec_shape, modules))
    schemas = [schema_problems(d, spec_dirs, at) for d, at in zip(definitions, roots, strict=True)]
    return [
        ProtocolDrift(d.name, s, tuple(p))
        for d, s, p in zip(definitions, spec_drifts, schemas, strict=True)
    ]
