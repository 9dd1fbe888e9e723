"""Read the few declarations the validator needs from a TLA+ module's source.

Theory of operation. Before TLC runs, the validator needs a few facts from a
spec's source: its CONSTANTS and VARIABLES, the modules it EXTENDS, the names
it defines (a template's TraceActionNames is read by
protocols.trace_template.read_name_set, the one reader of it). This is
a reader of those declarations only, not a TLA+ parser, on the lexer that
protocols/trace_template.py holds (the project's one); SANY stays the
judge of what a module means.

This module only reads text; it never runs TLC or SANY.
"""

from __future__ import annotations

from dataclasses import dataclass

from tlasim.protocols.errors import SpecError
from tlasim.protocols.trace_template import module_tokens

__all__ = ["ModuleDecls", "read_module"]

@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "word", "string" or "op"
    text: str


@dataclass(frozen=True, slots=True)
class ModuleDecls:
    """What a module declares, as far as the validator needs to know."""

    name: str
    extends: tuple[str, ...]
    constants: tuple[tuple[str, int], ...]  # (name, arity); arity 0 for a plain constant
    variables: tuple[str, ...]  # in declaration order
    definitions: frozenset[str]  # every name that appears before `==` (a superset)


def _source_tokens(text: str, origin: str) -> tuple[str, list[_Token]]:
    name, tokens = module_tokens(text, origin)
    return name, [_Token(kind, token) for kind, token in tokens]


def _names_after(tokens: list[_Token], i: int, origin: str, what: str) -> tuple[list[str], int]:
    """Read `a, b, c` starting at tokens[i]; return the names and the next index."""
    names: list[str] = []
    while True:
        if i >= len(tokens) or tokens[i].kind != "word":
            raise SpecError(f"{origin}: cannot read the {what} list")
        names.append(tokens[i].text)
        i += 1
        if i < len(tokens) and tokens[i].text == ",":
            i += 1
            continue
        return names, i


def _constants_after(
    tokens: list[_Token], i: int, origin: str
) -> tuple[list[tuple[str, int]], int]:
    decls: list[tuple[str, int]] = []
    while True:
        if i >= len(tokens) or tokens[i].kind != "word":
            raise SpecError(
                f"{origin}: cannot read the CONSTANTS list (operator constants such as "
                "`_ + _` are not supported)"
            )
        name, arity = tokens[i].text, 0
        i += 1
        if i < len(tokens) and tokens[i].text == "(":
            i += 1
            while i < len(tokens) and tokens[i].text != ")":
                arity += tokens[i].text == "_"
                i += 1
            i += 1
        decls.append((name, arity))
        if i < len(tokens) and tokens[i].text == ",":
            i += 1
            continue
        return decls, i


def read_module(text: str, origin: str = "module") -> ModuleDecls:
    """Read the declarations of a TLA+ module's source text.

    Raises SpecError (naming `origin`) when the text is not a module or a
    declaration cannot be read.
    """
    name, tokens = _source_tokens(text, origin)
    extends: list[str] = []
    constants: list[tuple[str, int]] = []
    variables: list[str] = []
    definitions: set[str] = set()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.kind == "word" and tok.text == "EXTENDS":
            names, i = _names_after(tokens, i + 1, origin, "EXTENDS")
            extends.extend(names)
            continue
        if tok.kind == "word" and tok.text in ("CONSTANT", "CONSTANTS"):
            decls, i = _constants_after(tokens, i + 1, origin)
            constants.extend(decls)
            continue
        if tok.kind == "word" and tok.text in ("VARIABLE", "VARIABLES"):
            names, i = _names_after(tokens, i + 1, origin, "VARIABLES")
            variables.extend(names)
            continue
        if tok.text == "==" and i > 0:
            definitions.add(_defined_name(tokens, i))
        i += 1
    definitions.discard("")
    return ModuleDecls(
        name, tuple(extends), tuple(constants), tuple(variables), frozenset(definitions)
    )


def _defined_name(tokens: list[_Token], eq: int) -> str:
    """The name defined by the `==` at tokens[eq]: `F ==`, `F(a, b) ==` or `f[x \\in S] ==`."""
    j = eq - 1
    closing = {")": "(", "]": "["}
    if tokens[j].text in closing:
        opener, depth = closing[tokens[j].text], 0
        while j >= 0:
            if tokens[j].text in closing:
                depth += 1
            elif tokens[j].text in ("(", "["):
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        if j <= 0 or tokens[j].text != opener:
            return ""
        j -= 1
    return tokens[j].text if tokens[j].kind == "word" else ""
