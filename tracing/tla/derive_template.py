"""A trace template derived from the spec, for a spec that has none.

Theory of operation: the trace template `<Spec>Trace.tla` says which step of
the spec each action a trace line names is (`TraceAction(e)`), and which
names a line may carry (`TraceActionNames`). Written by hand it restates
the spec's Next: every action's name, the quantifiers around it, and how a
line's params bind its arguments. So when a spec has no template beside it,
tlasim derives one from Next, as SANY parses it:

- `TraceActionNames` is "Init" and every action of Next except those that
  only stutter (a terminal `Done == UNCHANGED vars`, which no code logs);
- `TraceAction(e)` takes each occurrence of an action in Next under the
  bounded `\\E` Next puts around it, and requires each parameter the line
  logs to be the argument the step gives the action's formal parameter of
  that name: the code logs `A(t, r)` with params named as A's formals.

A Next that is not a disjunction of actions under bounded existentials (a
LET, an unbounded quantifier) cannot be derived; the error says to write the
template by hand. The derived template is written to a cache folder beside
copies of the spec folder's modules, so SANY and TLC given that folder find
everything, under a key of their content: an edited spec derives anew.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from tlasim.protocols.errors import SpecError
from tlasim.tracing.tla.next_split import Occurrence, _text, module_sources, occurrences
from tlasim.tracing.tla.sany import _VARIABLE_KIND, _child, _Export, _stutters, export_xml

__all__ = ["derive_template_text", "derived_template"]

# Bumped whenever the derived text changes, so old cache entries are not reused.
_FORMAT = b"tlasim derived trace template 1"
_LINE = "tlasimLine"
_PARAM = "TlasimParam"


def _formals(export: _Export, operator: ET.Element) -> list[str]:
    names = []
    for param in _child(operator, "params").findall("leibnizparam"):
        (formal,) = export.refs(param, "FormalParamNodeRef")
        names.append(formal.findtext("uniquename") or "")
    return names


def _step(export: _Export, sources: dict[str, list[str]], occurrence: Occurrence) -> str:
    """One occurrence as a step a line may claim: its binders, the params the
    line logs bound to the arguments, and the action itself."""
    arguments = [_text(sources, operand) for operand in _child(occurrence.appl, "operands")]
    formals = _formals(export, occurrence.operator)
    checks = [f'{_PARAM}({_LINE}, "{formal}", {argument})'
              for formal, argument in zip(formals, arguments, strict=True)]
    body = " /\\ ".join([*checks, occurrence.application])
    return " ".join([*occurrence.binders, body])


def derive_template_text(module: Path) -> str:
    """The text of `<Spec>Trace.tla` for the spec `module`, derived from its Next."""
    module = Path(module).resolve()
    name = module.stem
    export = _Export(export_xml(module), module.name)
    sources = module_sources(module.parent)
    found = occurrences(export, sources, name)
    if not found:
        raise SpecError(
            f"{module}: cannot derive a trace template, as {name}'s Next is not a "
            f"disjunction of actions under bounded \\E; write {name}Trace.tla beside it "
            "(TraceActionNames and TraceAction(e); README, How to add a protocol)")
    variables = frozenset(
        node.findtext("uniquename") or "" for node in export.refs(export.module(name),
                                                                  "OpDeclNodeRef")
        if node.findtext("kind") == _VARIABLE_KIND)
    steps: dict[str, list[str]] = {}
    for occurrence in found:
        if _stutters(export, occurrence.operator, variables):
            continue
        steps.setdefault(occurrence.action, []).append(_step(export, sources, occurrence))
    names = ", ".join(f'"{action}"' for action in ["Init", *steps])
    arms = []
    for action, alternatives in steps.items():
        either = " \\/ ".join(f"({alternative})" for alternative in alternatives)
        arms.append(f'       [] {_LINE}.action = "{action}" ->\n            {either}')
    arms[0] = "    CASE" + arms[0][len("       []"):]
    header = f" MODULE {name}Trace "
    return "\n".join([
        f"{header:-^77}",
        f"\\* Derived by tlasim from {name}'s Next; a {name}Trace.tla written",
        "\\* beside the spec replaces it (README, How to add a protocol).",
        f"EXTENDS {name}, TLC",
        "",
        f"TraceActionNames == {{ {names} }}",
        "",
        f"{_PARAM}(l, key, value) == key \\in DOMAIN l.params => l.params[key] = value",
        "",
        f"TraceAction({_LINE}) ==",
        *arms,
        "       [] OTHER -> FALSE",
        "=" * 77,
        "",
    ])


def _cache_root() -> Path:
    configured = os.environ.get("TLASIM_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tlasim"


def derived_template(module: Path) -> Path:
    """The derived `<Spec>Trace.tla` of the spec `module`, in a cache folder that
    also holds copies of the spec's folder's modules; derived once per content."""
    module = Path(module).resolve()
    modules = sorted(module.parent.glob("*.tla"))
    digest = hashlib.sha256(_FORMAT)
    for path in modules:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    root = _cache_root() / "templates"
    target = root / f"{module.stem}-{digest.hexdigest()[:20]}"
    template = target / f"{module.stem}Trace.tla"
    if template.is_file():
        return template
    text = derive_template_text(module)
    try:
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
    except OSError as exc:
        raise SpecError(f"cannot write the derived trace template of {module} under {root}: "
                        f"{exc.strerror or exc} (set TLASIM_CACHE_DIR to a writable folder)"
                        ) from None
    for path in modules:
        shutil.copyfile(path, staging / path.name)
    (staging / template.name).write_text(text, encoding="utf-8")
    try:
        staging.rename(target)
    except OSError:  # another process derived it first: same content
        shutil.rmtree(staging, ignore_errors=True)
    return template
