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
from collections.abc import Callable, Sequence
from pathlib import Path

from tlasim.protocols.errors import SpecError

__all__ = [
    "add_spec_dirs",
    "find_template",
    "known_spec_dirs",
    "module_tokens",
    "read_action_names",
    "read_name_set",
    "set_template_deriver",
    "shipped_spec_dirs",
]

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
# `\cup` and `\union` between two literal sets, as the lexer splits them.
_UNIONS = (["\\", "cup", "{"], ["\\", "union", "{"])
_ACTION = re.compile(r"[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*")


def shipped_spec_dirs() -> tuple[Path, ...]:
    """The folder of the specs shipped with tlasim (the `specs` package's data)."""
    return (Path(str(importlib.resources.files("tlasim.specs"))),)


# The spec folders of the user's protocols loaded so far (protocols/__init__.py
# adds each plugin's), searched after the shipped ones wherever no folder is named.
_PLUGIN_SPEC_DIRS: list[Path] = []


def add_spec_dirs(dirs: Sequence[Path]) -> None:
    for folder in dirs:
        folder = Path(folder).resolve()
        if folder not in _PLUGIN_SPEC_DIRS and folder not in shipped_spec_dirs():
            _PLUGIN_SPEC_DIRS.append(folder)


def known_spec_dirs() -> tuple[Path, ...]:
    """The shipped specs, then every plugin protocol's own spec folder."""
    from tlasim.protocols import load_plugins  # here: the registry imports this module

    load_plugins()
    return (*shipped_spec_dirs(), *_PLUGIN_SPEC_DIRS)


# Derives the trace template of a spec that has none (tracing.tla.derive_template,
# which needs SANY: tracing registers it, as protocols may not import tracing).
_deriver: Callable[[Path], Path] | None = None


def set_template_deriver(deriver: Callable[[Path], Path]) -> None:
    global _deriver
    _deriver = deriver


def find_template(spec_module: str, spec_dirs: Sequence[Path]) -> Path:
    """`<spec_module>Trace.tla` under the first folder (searched recursively)
    holding it, or else the template derived from `<spec_module>.tla`."""
    for wanted in (f"{spec_module}Trace.tla", f"{spec_module}.tla"):
        for folder in spec_dirs:
            found = sorted(Path(folder).rglob(wanted))
            if len(found) > 1:
                raise SpecError(f"{wanted} is in more than one place under {folder}: {found}")
            if found and wanted.endswith("Trace.tla"):
                return found[0]
            if found and _deriver is not None:
                return _deriver(found[0])
    raise SpecError(f"trace template {spec_module}Trace.tla not found under "
                    f"{', '.join(map(str, spec_dirs))}")


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
    return frozenset(read_name_set(text, DEFINITION, origin))


def read_name_set(text: str, definition: str, origin: str = "module") -> tuple[str, ...]:
    """The names of `definition == {"A", "B"}` in the module `text`, in source
    order: the one reader of a template's set of action names, for
    `protocols` and for the validator (`tracing.tla.speccheck`) alike.

    The definition may be a union of literal sets (`{...} \\cup {...}`, or
    `\\union`) of identifiers. Anything else is a SpecError; in particular a
    set followed by more (a difference, an operator, another name) is
    refused, never read as the set before it.
    """
    _, tokens = module_tokens(text, origin)
    starts = [
        i for i in range(len(tokens) - 1)
        if tokens[i] == ("word", definition) and tokens[i + 1][1] == "=="
    ]  # fmt: skip
    if not starts:
        raise SpecError(f'{origin}: no definition `{definition} == {{"Init", ...}}`')
    if len(starts) > 1:
        raise SpecError(f"{origin}: {definition} is defined more than once")
    pos = starts[0] + 2
    if pos >= len(tokens) or tokens[pos][1] != "{":
        raise SpecError(f'{origin}: {definition} must be a literal set of names {{"A", ...}}')
    names: list[str] = []
    while True:
        pos = _read_set(tokens, pos + 1, names, definition, origin)
        if [token for _, token in tokens[pos : pos + 3]] in _UNIONS:
            pos += 2
            continue
        if pos < len(tokens) and not _starts_a_unit(tokens, pos):
            raise SpecError(
                f"{origin}: {definition} must be a literal set of names, or a union "
                f"(\\cup) of such sets; found {tokens[pos][1]!r} after a set"
            )
        return tuple(dict.fromkeys(names))


def _read_set(
    tokens: list[tuple[str, str]], pos: int, names: list[str], definition: str, origin: str
) -> int:
    """Add the names of the literal set whose `{` came just before `pos`;
    the position after its `}`."""
    for at in range(pos, len(tokens)):
        kind, token = tokens[at]
        if token == "}":
            return at + 1
        if token == ",":
            continue
        name = token[1:-1]
        if kind != "string" or _ACTION.fullmatch(name) is None:
            raise SpecError(
                f"{origin}: {definition} must be a literal set of names; found {token}"
            )
        names.append(name)
    raise SpecError(f"{origin}: {definition}'s set is never closed")


def _starts_a_unit(tokens: list[tuple[str, str]], pos: int) -> bool:
    """Whether the token at `pos` can only begin the module's next unit, so the definition
    before it has ended: a name (the next definition or a keyword such as
    VARIABLE or THEOREM) or a `----` separator. TLA+ writes every infix
    operator with symbols or a backslash, so a name never continues an
    expression that ends in `}`."""
    return tokens[pos][0] == "word" or [t for _, t in tokens[pos : pos + 4]] == ["-"] * 4
