"""The action names a protocol may trace, read from its spec's trace template.

Theory of operation: the trace template `<Spec>Trace.tla` defines
`TraceActionNames`, the literal set of action names the validator accepts,
and that set is the one list of a protocol's trace actions. A definition
(`protocols.defaults.ProtocolBase`) reads it here instead of repeating it,
and `tlasim drift` holds both sides to it: SANY reads the same set from the
template and checks it against the spec's `Next`, and a scan of the
protocol's code checks that the code emits exactly these names.

This is a reader of that one definition, not of TLA+: a lexer that knows
strings and comments (`module_tokens`), and a set of string literals each
of which must be an identifier (an action name is an operator name).
Anything else is a SpecError. The lexer is the project's one TLA+ lexer:
the validator's reader of declarations (`tracing.tla.source`) uses it too,
since `protocols/` may import nothing outside itself and `tracing/` may
import this stdlib-only module. It reads files, and nothing else.
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Sequence
from pathlib import Path

from protocols.errors import SpecError

__all__ = ["find_template", "module_tokens", "read_action_names", "shipped_spec_dirs"]

DEFINITION = "TraceActionNames"

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>\\\*[^\n]*)
  | (?P<block>\(\*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<end>={4,})
  | (?P<word>[A-Za-z0-9_]+)
  | (?P<op>==|.)
    """,
    re.VERBOSE | re.DOTALL,
)
_MODULE_START = re.compile(r"^\s*-{4,}\s*MODULE\s+([A-Za-z0-9_]+)\s*-{4,}", re.MULTILINE)
_BLOCK_PART = re.compile(r"\(\*|\*\)")
_ACTION = re.compile(r"[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*")


def shipped_spec_dirs() -> tuple[Path, ...]:
    """The folder of the specs shipped with tlasim (the `specs` package's data)."""
    return (Path(str(importlib.resources.files("specs"))),)


def find_template(spec_module: str, spec_dirs: Sequence[Path]) -> Path:
    """`<spec_module>Trace.tla` under the first folder (searched recursively) holding it."""
    name = f"{spec_module}Trace.tla"
    for folder in spec_dirs:
        found = sorted(Path(folder).rglob(name))
        if len(found) > 1:
            raise SpecError(f"{name} is in more than one place under {folder}: {found}")
        if found:
            return found[0]
    raise SpecError(f"trace template {name} not found under {', '.join(map(str, spec_dirs))}")


def module_tokens(text: str, origin: str) -> tuple[str, list[tuple[str, str]]]:
    """The module's name, and its (kind, text) tokens up to its closing `====`.

    A token's kind is "word", "string" or "op" (`==` or any other single
    character); comments and white space are left out."""
    start = _MODULE_START.search(text)
    if start is None:
        raise SpecError(f"{origin}: no `---- MODULE Name ----` line")
    tokens: list[tuple[str, str]] = []
    pos = start.end()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m is not None  # the last alternative matches any character
        kind = m.lastgroup or "op"
        if kind == "end":
            return start.group(1), tokens
        pos = m.end()
        if kind == "block":
            pos = _after_block_comment(text, pos, origin)
        elif kind not in ("ws", "comment"):
            tokens.append((kind, m.group()))
    raise SpecError(f"{origin}: the module has no closing `====` line")


def _after_block_comment(text: str, pos: int, origin: str) -> int:
    depth = 1
    for m in _BLOCK_PART.finditer(text, pos):
        depth += 1 if m.group() == "(*" else -1
        if depth == 0:
            return m.end()
    raise SpecError(f"{origin}: a (* comment is never closed")


def read_action_names(path: Path) -> frozenset[str]:
    """The set `TraceActionNames == {"Init", ...}` of the template at `path`."""
    origin = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise SpecError(f"{origin}: cannot read the trace template: {exc}") from None
    _, tokens = module_tokens(text, origin)
    starts = [
        i for i in range(len(tokens) - 2)
        if tokens[i][1] == DEFINITION and tokens[i + 1][1] == "==" and tokens[i + 2][1] == "{"
    ]  # fmt: skip
    if len(starts) != 1:
        raise SpecError(f'{origin}: expected one definition `{DEFINITION} == {{"Init", ...}}`')
    names: list[str] = []
    for kind, token in tokens[starts[0] + 3 :]:
        if token == "}":
            return frozenset(names)
        if token == ",":
            continue
        name = token[1:-1]
        if kind != "string" or _ACTION.fullmatch(name) is None:
            raise SpecError(
                f"{origin}: {DEFINITION} must be a literal set of action names; found {token}"
            )
        names.append(name)
    raise SpecError(f"{origin}: {DEFINITION}'s set is never closed")
