"""Next, split into one named operator per action, so TLC labels every step.

TLC labels a step of its state graph with the action it split the
next-state relation into. It splits a quantifier only over a set it can
compute before the search (`\\E t \\in Tx`); one over a set that depends on
the state (`\\E m \\in DOMAIN msgs : NetLose(m) \\/ ...`) stays one action,
labelled with the enclosing definition's name: `Next`. Rewritten as one
operator per action occurrence, `Tlasim_NetLose == \\E m \\in DOMAIN msgs :
NetLose(m)`, each is an action TLC labels with its own name, and their
disjunction is the same relation as Next (an existential distributes over a
disjunction).

The rewrite reads Next's shape from SANY's XML export (the walk of
tracing/tla/sany.py: disjunctions and bounded existentials, and operators
whose body is again such a disjunction) and copies each bound's set and
each action's application from the module text, by SANY's locations. A
Next it cannot rewrite exactly (a LET, an unbounded or tuple quantifier)
gives None: the caller keeps the spec's own Next and TLC's labels.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tlasim.tracing.tla.sany import _DISJUNCTIONS, _body, _child, _Export

PREFIX = "Tlasim_"
_SUFFIX = re.compile(r"__\d+$")
_BOUNDED_EXISTS = "$BoundedExists"


class _CannotSplit(Exception):
    pass


@dataclass(frozen=True, slots=True)
class SplitNext:
    definitions: str  # TLA+ text: one operator per action occurrence, and TlasimNext
    name: str  # the operator that is the whole relation


def action_of_label(label: str) -> str:
    """The spec action a label of the split relation names (others are kept)."""
    if not label.startswith(PREFIX):
        return label
    return _SUFFIX.sub("", label[len(PREFIX):])


def _text(sources: Mapping[str, list[str]], node: ET.Element) -> str:
    loc = node.find("location")
    if loc is None:
        raise _CannotSplit("a node without a location")
    module = loc.findtext("filename") or ""
    lines = sources.get(module)
    if lines is None:
        raise _CannotSplit(f"no source for module {module}")
    line_b, line_e = int(loc.findtext("line/begin") or 0), int(loc.findtext("line/end") or 0)
    col_b, col_e = int(loc.findtext("column/begin") or 0), int(loc.findtext("column/end") or 0)
    if line_b == line_e:
        return lines[line_b - 1][col_b - 1:col_e]
    parts = [lines[line_b - 1][col_b - 1:], *lines[line_b:line_e - 1], lines[line_e - 1][:col_e]]
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One action applied in Next, with the quantifiers around it."""

    action: str
    binders: tuple[str, ...]  # the enclosing `\\E v \\in (S) :`, as texts
    application: str  # `A(t, r)`, as the module writes it
    operator: ET.Element  # A's definition, in SANY's export
    appl: ET.Element  # the application, in SANY's export


def occurrences(export: _Export, sources: Mapping[str, list[str]], module: str,
                next_name: str = "Next") -> list[Occurrence] | None:
    """Every action occurrence of `module`'s `next_name`, or None when it is
    not a disjunction of actions under bounded existentials."""
    definition = export.definition(module, next_name)
    body = None if definition is None else _body(definition)
    if body is None:
        return None
    try:
        return list(_occurrences(export, sources, body, (), frozenset({next_name})))
    except _CannotSplit:
        return None


def module_sources(folder: Path) -> dict[str, list[str]]:
    """The lines of every module in `folder`, by module name, for `_text`."""
    return {path.stem: path.read_text(encoding="utf-8").splitlines()
            for path in folder.glob("*.tla")}


def _occurrences(export: _Export, sources: Mapping[str, list[str]], expr: ET.Element,
                 binders: tuple[str, ...], seen: frozenset[str]) -> Iterator[Occurrence]:
    if expr.tag != "OpApplNode":
        raise _CannotSplit(f"a disjunct that is a {expr.tag}")
    builtin = export.builtin(expr)
    if builtin in _DISJUNCTIONS:
        for sub in _child(expr, "operands"):
            yield from _occurrences(export, sources, sub, binders, seen)
        return
    if builtin == _BOUNDED_EXISTS:
        inner = binders
        for bound in _child(expr, "boundSymbols").findall("bound"):
            if len(bound) != 2 or bound[0].tag != "FormalParamNodeRef":
                raise _CannotSplit("a quantifier over a tuple")
            (param,) = export.refs(bound, "FormalParamNodeRef")
            var = param.findtext("uniquename") or ""
            inner = (*inner, f"\\E {var} \\in ({_text(sources, bound[1])}) :")
        (body,) = list(_child(expr, "operands"))
        yield from _occurrences(export, sources, body, inner, seen)
        return
    if builtin is not None:
        raise _CannotSplit(f"a disjunct applying {builtin}")
    op = export.user_operator(expr)
    if op is None:
        raise _CannotSplit("a disjunct applying no defined operator")
    name = op.findtext("uniquename") or ""
    op_body = _body(op)
    if (not len(_child(expr, "operands")) and op_body is not None and name not in seen
            and op_body.tag == "OpApplNode" and export.builtin(op_body) in _DISJUNCTIONS):
        # `Next == TMNext \/ RMNext`: the parts of TMNext are the actions.
        yield from _occurrences(export, sources, op_body, binders, seen | {name})
        return
    yield Occurrence(name, binders, _text(sources, expr), op, expr)


def split_next(xml: bytes, module: str, folder: Path, next_name: str = "Next"
               ) -> SplitNext | None:
    """Next of `module` (its modules' sources in `folder`) as one operator per
    action occurrence, or None when it is not a disjunction of actions
    under bounded existentials."""
    export = _Export(xml, f"{module}.tla")
    found = occurrences(export, module_sources(folder), module, next_name)
    if found is None or len(found) < 2:
        return None
    lines = []
    names: list[str] = []
    count: dict[str, int] = {}
    for occurrence in found:
        action, binders, application = (occurrence.action, occurrence.binders,
                                         occurrence.application)
        count[action] = count.get(action, 0) + 1
        name = PREFIX + action + ("" if count[action] == 1 else f"__{count[action]}")
        names.append(name)
        lines.append(f"{name} ==\n    " + " ".join(binders) + ("\n        " if binders else "")
                     + application)
    whole = "TlasimNext"
    lines.append(f"{whole} ==\n" + "\n".join(f"    \\/ {n}" for n in names))
    return SplitNext("\n".join(lines) + "\n", whole)
