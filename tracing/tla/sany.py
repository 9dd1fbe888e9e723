"""Read a spec's shape from SANY's XML export, and compare it with what a system emits.

Theory of operation. The drift checks need four facts about a spec that
only a real TLA+ parser can give reliably: its VARIABLES (with those of the
modules it EXTENDS), the operators it defines, the actions its `Next` is a
disjunction of, and the literal set `TraceActionNames` of its trace template.
SANY, the front end inside tla2tools.jar, parses and resolves a module and
`tla2sany.xml.XMLExporter` writes its semantic tree as XML: one `context`
of every symbol keyed by UID, and a `ModuleNode` per module that lists,
by UID, every constant, variable and definition visible in it. So nothing
here reads TLA+ text; it reads SANY's resolved answer. (The lexer in
`tracing/tla/source.py` serves the validator, which runs before TLC and
must stay cheap; SANY remains the judge, here as there.)

One SANY run per spec: the exporter is run on the trace template
`<Spec>Trace.tla`, which EXTENDS the spec, so one export holds the
template, the spec and every module the spec extends. Runs are cached by
the content of the folder's modules, so a process parses each spec once
(a JVM start costs about half a second) and an identical copy elsewhere
costs nothing.

What "the spec's actions" means. The action names a trace may carry are
the elements of the template's `TraceActionNames`: that is the set the
validator accepts. The spec side is consistent when every such name is an
operator the spec defines, every name but "Init" (the first line of every
trace) is one of the actions of `Next`, and every action of `Next` is such
a name, unless it changes no variable: an action that conjoins `UNCHANGED`
of every variable (the `Terminating` PlusCal adds for when every process is
done) is a stuttering step, which no system writes a trace line for. The
actions of `Next` are
read from its body: a disjunction (`\\/`, bulleted or infix), through any
`\\E` and `LET`, of applications of defined operators. An applied operator
whose own body is again such a disjunction of applications (`Next ==
TMNext \\/ RMNext`) is expanded; any other applied operator is an action.
A disjunct that applies no operator (an inline step) names no action and
is reported, since no trace line could name it.

`schema_drift` then compares a spec's shape with what a system says it
emits: the variables every trace line's `vars` carries and the action
names its code can write. It knows nothing about tlasim's protocols, so it
serves a trace from any system. This module runs SANY and reads XML; it
never runs TLC and never edits a spec.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
import threading
import xml.etree.ElementTree as ET
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tlasim.protocols.errors import SpecError, SpecParseError, ToolNotFound
from tlasim.tracing.tla.tlc import find_java, find_tla2tools, run_jar_class

__all__ = ["SpecShape", "export_xml", "read_spec_shape", "schema_drift", "spec_shape"]

# SANY's names for the built-in operators the walk of Next goes through.
_DISJUNCTIONS = frozenset({"$DisjList", "\\lor"})
_CONJUNCTIONS = frozenset({"$ConjList", "\\land"})
_UNCHANGED = "UNCHANGED"
_TUPLE = "$Tuple"
_EXISTS = frozenset({"$BoundedExists", "$UnboundedExists"})
_SET_ENUMERATE = "$SetEnumerate"
_VARIABLE_KIND = "3"  # OpDeclNode kind of a VARIABLE (2 is a CONSTANT)
_INIT = "Init"
_SANY_TIMEOUT_S = 120


@dataclass(frozen=True, slots=True)
class SpecShape:
    """What the drift checks need from a spec and its trace template."""

    module: str  # the spec module, e.g. TwoPhaseCommitMsg
    template: str  # its trace template, e.g. TwoPhaseCommitMsgTrace
    variables: tuple[str, ...]  # every VARIABLE, extended modules' first, in declaration order
    definitions: frozenset[str]  # every operator the spec defines or gets through EXTENDS
    next_actions: tuple[str, ...]  # the actions Next is a disjunction of, first use first
    unnamed_disjuncts: tuple[str, ...]  # where Next has a disjunct that names no action
    trace_action_names: tuple[str, ...]  # TraceActionNames of the template, in source order
    # Actions of Next that change no variable (PlusCal's Terminating): no
    # trace line names them, so TraceActionNames need not.
    stuttering_actions: frozenset[str] = frozenset()

    def problems(self) -> list[str]:
        """Where the template and the spec disagree with each other."""
        found = []
        for name in self.trace_action_names:
            if name not in self.definitions:
                found.append(
                    f"{self.template}'s TraceActionNames names {name}, "
                    f"which {self.module} does not define"
                )
        named = set(self.trace_action_names) - {_INIT}
        for name in self.next_actions:
            if name not in named and name not in self.stuttering_actions:
                found.append(
                    f"{self.module}'s Next has the action {name}, "
                    f"which {self.template}'s TraceActionNames lacks"
                )
        for name in sorted(named - set(self.next_actions)):
            if name in self.definitions:
                found.append(
                    f"{self.template}'s TraceActionNames names {name}, "
                    f"which is not an action of {self.module}'s Next"
                )
        for where in self.unnamed_disjuncts:
            found.append(
                f"{self.module}'s Next has a disjunct at {where} that applies no "
                "operator, so no trace line can name it"
            )
        return found


def schema_drift(
    shape: SpecShape, variables: Sequence[str], actions: Collection[str], emitter: str
) -> list[str]:
    """How a spec and an emitter differ, one sentence per difference.

    `variables` are the fields the emitter writes into every line's `vars`,
    in the order it declares them; `actions` are the action names its code
    can write (with "Init"); `emitter` names it in the sentences. The
    template's own inconsistencies (`SpecShape.problems`) come first.
    """
    found = shape.problems()
    spec_vars, emitted = set(shape.variables), set(variables)
    for name in shape.variables:
        if name not in emitted:
            found.append(f"{shape.module} has the variable {name}, which {emitter} does not write")
    for name in variables:
        if name not in spec_vars:
            found.append(f"{emitter} writes the variable {name}, which {shape.module} lacks")
    if spec_vars == emitted and tuple(variables) != shape.variables:
        found.append(
            f"{emitter} declares the variables in the order {', '.join(variables)}; "
            f"{shape.module} declares {', '.join(shape.variables)}"
        )
    spec_actions = set(shape.trace_action_names)
    for name in shape.trace_action_names:
        if name not in actions:
            found.append(
                f"{shape.template}'s TraceActionNames has {name}, which {emitter} never emits"
            )
    for name in sorted(actions):
        if name not in spec_actions:
            found.append(
                f"{emitter} can emit the action {name}, "
                f"which {shape.template}'s TraceActionNames lacks"
            )
    return found


# --- running SANY ------------------------------------------------------------


def export_xml(module: Path) -> bytes:
    """SANY's XML export of `module` and every module it uses.

    Raises SpecError when SANY cannot parse the module (with SANY's report)
    and ToolNotFound when Java or the jar is missing or does not work.
    """
    module = Path(module).resolve()
    if not module.is_file():
        # Given a missing file SANY prints a complaint and exits 0 with no XML.
        raise SpecError(f"TLA+ module {module} does not exist")
    java, jar = find_java(), find_tla2tools()
    with tempfile.TemporaryDirectory(prefix="tlasim-sany-") as java_tmp:
        try:
            proc = run_jar_class(
                java, jar, "tla2sany.xml.XMLExporter",
                # Offline: without -o the exporter validates its output against a
                # schema it downloads, which fails (slowly) without a network.
                ["-o", "-I", str(module.parent), module.name],
                cwd=module.parent,
                java_tmp=Path(java_tmp),
                # A parse is over in a second: the quick compiler alone starts sooner.
                jvm_args=["-XX:TieredStopAtLevel=1"],
                timeout_s=_SANY_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as exc:
            raise SpecError(
                f"SANY did not finish parsing {module} within {_SANY_TIMEOUT_S} s"
            ) from exc
    stderr = proc.stderr.decode("utf-8", errors="replace")
    if proc.returncode != 0 or not proc.stdout.strip():
        if "Could not find or load main class" in stderr or "module" not in stderr:
            # Not SANY talking: the Java or the jar is not what it should be.
            raise ToolNotFound(
                f"SANY did not start (exit code {proc.returncode}): is {jar} a TLA+ tools jar "
                f"(set TLA2TOOLS_JAR) and {java} a working Java (set JAVA)?\n{stderr[-2000:]}"
            )
        raise SpecParseError(str(module), _sany_report(stderr))
    return proc.stdout


def _sany_report(stderr: str) -> str:
    """SANY's own account of a failure, without the Java stack trace after it."""
    lines = []
    for line in stderr.splitlines():
        if line.startswith(("Exception in thread", "failed for node")):
            break
        if line.startswith("Semantic processing of module") or not line.strip():
            continue
        lines.append(line.rstrip())
    return "\n".join(lines)[:4000] or stderr.strip()[-4000:]


_cache: dict[tuple[str, ...], SpecShape] = {}
_cache_lock = threading.Lock()


def spec_shape(module: Path) -> SpecShape:
    """The shape of the spec `module` (`<dir>/<Spec>.tla`) and of its trace
    template `<dir>/<Spec>Trace.tla`, from one SANY run, cached per process.

    The cache key is the content of every module in the folder (SANY reads
    no other local file), so an edited spec is parsed again.
    """
    module = Path(module).resolve()
    template = module.with_name(f"{module.stem}Trace.tla")
    if not template.is_file():
        from tlasim.tracing.tla.derive_template import derived_template  # it imports this

        template = derived_template(module)
    digest = hashlib.sha256()
    for path in sorted(module.parent.glob("*.tla")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    key = (str(find_tla2tools()), module.stem, digest.hexdigest())
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    shape = read_spec_shape(export_xml(template), module.stem, template.stem)
    with _cache_lock:
        _cache[key] = shape
    return shape


# --- reading the XML ---------------------------------------------------------


class _Export:
    """SANY's export: symbols by UID and module nodes by name, in SANY's order."""

    def __init__(self, data: bytes, origin: str) -> None:
        self.origin = origin
        try:
            root = ET.fromstring(data)
        except ET.ParseError as exc:
            raise SpecError(f"{origin}: SANY's XML export is not well-formed: {exc}") from None
        context = root.find("context")
        if context is None:
            raise SpecError(f"{origin}: SANY's XML export has no symbol context")
        self.symbols: dict[str, ET.Element] = {}
        for entry in context.findall("entry"):
            # An entry is its UID, then the symbol itself.
            if len(entry) == 2 and entry[0].tag == "UID" and entry[0].text:
                self.symbols[entry[0].text] = entry[1]
        # The top-level module refs come in the order SANY processed the
        # modules, every module after those it uses: that orders EXTENDS.
        self.order: dict[str, int] = {}
        self.modules: dict[str, ET.Element] = {}
        for i, ref in enumerate(root.findall("ModuleNodeRef")):
            node = self.symbols.get(ref.findtext("UID") or "")
            if node is not None and node.tag == "ModuleNode":
                name = node.findtext("uniquename") or ""
                self.order[name], self.modules[name] = i, node

    def module(self, name: str) -> ET.Element:
        try:
            return self.modules[name]
        except KeyError:
            raise SpecError(f"{self.origin}: SANY's export has no module {name}") from None

    def refs(self, node: ET.Element, tag: str) -> Iterator[ET.Element]:
        """The symbols a node refers to by `<tag><UID>`, among its children."""
        for ref in node.findall(tag):
            target = self.symbols.get(ref.findtext("UID") or "")
            if target is not None:
                yield target

    def definition(self, module: str, name: str) -> ET.Element | None:
        for node in self.refs(self.module(module), "UserDefinedOpKindRef"):
            if node.findtext("uniquename") == name:
                return node
        return None

    def builtin(self, appl: ET.Element) -> str | None:
        """The built-in operator an OpApplNode applies, or None."""
        for target in self.refs(_child(appl, "operator"), "BuiltInKindRef"):
            return target.findtext("uniquename")
        return None

    def user_operator(self, appl: ET.Element) -> ET.Element | None:
        """The defined operator an OpApplNode applies, or None."""
        for target in self.refs(_child(appl, "operator"), "UserDefinedOpKindRef"):
            return target
        return None


def _child(node: ET.Element, tag: str) -> ET.Element:
    found = node.find(tag)
    return found if found is not None else ET.Element(tag)


def _where(node: ET.Element) -> str:
    loc = node.find("location")
    if loc is None:
        return "an unknown place"
    return (
        f"line {loc.findtext('line/begin')}, col {loc.findtext('column/begin')} "
        f"of module {loc.findtext('filename')}"
    )


def _body(definition: ET.Element) -> ET.Element | None:
    body = definition.find("body")
    return body[0] if body is not None and len(body) else None


def _disjuncts(export: _Export, expr: ET.Element) -> Iterator[ET.Element]:
    """The leaves of a disjunction, looking through \\E and LET."""
    if expr.tag == "LetInNode":
        inner = _child(expr, "body")
        for sub in inner:
            yield from _disjuncts(export, sub)
        return
    if expr.tag == "OpApplNode" and export.builtin(expr) in _DISJUNCTIONS | _EXISTS:
        for sub in _child(expr, "operands"):
            yield from _disjuncts(export, sub)
        return
    yield expr


def _expansion(
    export: _Export, definition: ET.Element, seen: frozenset[str]
) -> list[ET.Element] | None:
    """The operators a definition is a disjunction of, or None for an action."""
    body = _body(definition)
    if body is None:
        return None
    leaves = list(_disjuncts(export, body))
    if len(leaves) < 2:
        return None  # no disjunction: `\E x : A(x)` is the action itself
    applied = [export.user_operator(leaf) if leaf.tag == "OpApplNode" else None for leaf in leaves]
    if any(op is None for op in applied):
        return None  # an action with inline alternatives
    names = [op.findtext("uniquename") or "" for op in applied if op is not None]
    if any(name in seen for name in names):
        return None
    return [op for op in applied if op is not None]


def _unchanged_variables(export: _Export, expr: ET.Element, seen: frozenset[str]) -> set[str]:
    """The variables a tuple `<<v, ...>>` (or a defined name for one, like
    PlusCal's `vars`) names; any other expression names none."""
    if expr.tag != "OpApplNode":
        return set()
    for target in export.refs(_child(expr, "operator"), "OpDeclNodeRef"):
        if target.findtext("kind") == _VARIABLE_KIND:
            return {target.findtext("uniquename") or ""}
    if export.builtin(expr) == _TUPLE:
        found: set[str] = set()
        for part in _child(expr, "operands"):
            found |= _unchanged_variables(export, part, seen)
        return found
    op = export.user_operator(expr)
    if op is None or len(_child(expr, "operands")):
        return set()
    name = op.findtext("uniquename") or ""
    body = _body(op)
    if name in seen or body is None:
        return set()
    return _unchanged_variables(export, body, seen | {name})


def _stutters(export: _Export, action: ET.Element, variables: frozenset[str]) -> bool:
    """Whether the action's body conjoins UNCHANGED of every variable."""
    body = _body(action)
    if body is None or body.tag != "OpApplNode" or export.builtin(body) not in _CONJUNCTIONS:
        return False
    unchanged: set[str] = set()
    for conjunct in _child(body, "operands"):
        if conjunct.tag == "OpApplNode" and export.builtin(conjunct) == _UNCHANGED:
            for part in _child(conjunct, "operands"):
                unchanged |= _unchanged_variables(export, part, frozenset())
    return bool(variables) and variables <= unchanged


def _next_actions(export: _Export, module: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    nxt = export.definition(module, "Next")
    if nxt is None:
        raise SpecError(f"{export.origin}: {module} defines no Next")
    body = _body(nxt)
    if body is None:
        raise SpecError(f"{export.origin}: {module}'s Next has no body in SANY's export")
    actions: dict[str, None] = {}
    unnamed: list[str] = []

    def visit_operator(op: ET.Element, seen: frozenset[str]) -> None:
        name = op.findtext("uniquename") or ""
        parts = _expansion(export, op, seen | {name})
        if parts is None:
            actions[name] = None
            return
        for part in parts:
            visit_operator(part, seen | {name})

    for leaf in _disjuncts(export, body):
        op = export.user_operator(leaf) if leaf.tag == "OpApplNode" else None
        if op is None:
            unnamed.append(_where(leaf))
        else:
            visit_operator(op, frozenset())
    return tuple(actions), tuple(unnamed)


def _string_set(export: _Export, module: str, name: str) -> tuple[str, ...]:
    definition = export.definition(module, name)
    if definition is None:
        raise SpecError(f"{export.origin}: {module} defines no {name}")
    body = _body(definition)
    if body is None or body.tag != "OpApplNode" or export.builtin(body) != _SET_ENUMERATE:
        raise SpecError(f"{export.origin}: {name} in {module} is not a literal set {{...}}")
    values = []
    for element in _child(body, "operands"):
        if element.tag != "StringNode":
            raise SpecError(
                f"{export.origin}: {name} in {module} has an element at {_where(element)} "
                "that is not a string literal"
            )
        values.append(element.findtext("StringValue") or "")
    return tuple(dict.fromkeys(values))


def read_spec_shape(data: bytes, module: str, template: str) -> SpecShape:
    """Read the shape of `module` and its trace `template` from SANY's XML export."""
    export = _Export(data, f"{template}.tla")
    spec = export.module(module)
    variables = [
        node
        for node in export.refs(spec, "OpDeclNodeRef")
        if node.findtext("kind") == _VARIABLE_KIND
    ]

    def declared_at(node: ET.Element) -> tuple[int, int, int]:
        return (
            export.order.get(node.findtext("location/filename") or "", -1),
            int(node.findtext("location/line/begin") or 0),
            int(node.findtext("location/column/begin") or 0),
        )

    variables.sort(key=declared_at)
    definitions = frozenset(
        node.findtext("uniquename") or "" for node in export.refs(spec, "UserDefinedOpKindRef")
    )
    next_actions, unnamed = _next_actions(export, module)
    names = frozenset(node.findtext("uniquename") or "" for node in variables)
    stuttering = frozenset(
        name
        for name in next_actions
        if (action := export.definition(module, name)) is not None
        and _stutters(export, action, names)
    )
    return SpecShape(
        module=module,
        template=template,
        variables=tuple(node.findtext("uniquename") or "" for node in variables),
        definitions=definitions,
        next_actions=next_actions,
        unnamed_disjuncts=unnamed,
        trace_action_names=_string_set(export, template, "TraceActionNames"),
        stuttering_actions=stuttering,
    )
