"""Parse the values and states that TLC prints back into Python values.

Theory of operation: TLC prints a state as conjuncts `/\\ name = value` (or a
bare `name = value` when the spec has one variable), and a value in a small
fixed vocabulary: strings, integers, booleans, `<<...>>`, `{...}`, `a..b`,
`[f |-> v, ...]` and `(k :> v @@ ...)`, plus model values as bare identifiers.
TLC line-wraps long values, so the parser works on tokens and ignores layout.

The result uses the frozen forms of `tracing.values`, so a value read from
TLC compares equal to the same value read from a trace: a function whose
domain is all strings becomes a `Record` (TLC prints it with `:>` when a key
is not an identifier), every other function a `FnMap`. TLC prints any function
whose domain is `1..n` as a sequence, including the empty function, which
becomes `()`. `normalize` puts a trace value into that same shape, so the two
can be compared as TLC would compare them.

This module only reads text; it never runs TLC.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from protocols.errors import SpecError, TLCError
from tracing.values import FnMap, Record

__all__ = [
    "ModelValue",
    "ModuleDecls",
    "normalize",
    "parse_state",
    "parse_value",
    "read_module",
    "read_string_set",
]


@dataclass(frozen=True, slots=True, order=True)
class ModelValue:
    """A TLC model value, printed by TLC as a bare identifier."""

    name: str

    def __str__(self) -> str:
        return self.name


# One alternative per token kind. Strings come first so that nothing inside a
# string is ever read as punctuation; an unknown escape fails the whole match
# of the string and falls through to the error branch.
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\["\\ntrf])*")
  | (?P<word>[A-Za-z0-9_]+)
  | (?P<punct><<|>>|\|->|:>|@@|\.\.|/\\|[{}\[\](),=-])
    """,
    re.VERBOSE,
)
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "f": "\f"}
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ALL_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "string", "int", "ident" or "punct"
    text: str
    pos: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise TLCError(f"cannot read TLC value at offset {pos}: {text[pos : pos + 40]!r}")
        kind = m.lastgroup
        assert kind is not None
        if kind == "word":
            word = m.group()
            kind = "int" if _ALL_DIGITS.fullmatch(word) else "ident"
            if kind == "ident" and not any(c.isalpha() for c in word):
                raise TLCError(f"cannot read TLC value at offset {pos}: {word!r}")
        if kind != "ws":
            tokens.append(_Token(kind, m.group(), pos))
        pos = m.end()
    return tokens


def _unescape(literal: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(1)], literal[1:-1])


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> _Token | None:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else None

    def at(self, punct: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "punct" and tok.text == punct

    def fail(self, expected: str) -> TLCError:
        tok = self.peek()
        where = f"{tok.text!r} at offset {tok.pos}" if tok else "the end of the text"
        shown = self.text if len(self.text) <= 200 else self.text[:200] + "..."
        return TLCError(f"cannot read TLC value: expected {expected}, found {where} in {shown!r}")

    def next(self) -> _Token:
        tok = self.peek()
        if tok is None:
            raise self.fail("more input")
        self.i += 1
        return tok

    def expect(self, punct: str) -> None:
        if not self.at(punct):
            raise self.fail(repr(punct))
        self.i += 1

    def done(self) -> bool:
        return self.i >= len(self.tokens)

    def value(self) -> Any:
        tok = self.next()
        if tok.kind == "string":
            return _unescape(tok.text)
        if tok.kind == "int":
            return self.integer_or_interval(int(tok.text))
        if tok.kind == "ident":
            if tok.text == "TRUE":
                return True
            if tok.text == "FALSE":
                return False
            return ModelValue(tok.text)
        if tok.text == "-":
            digits = self.next()
            if digits.kind != "int":
                self.i -= 1
                raise self.fail("an integer after '-'")
            return self.integer_or_interval(-int(digits.text))
        if tok.text == "<<":
            return tuple(self.items(">>"))
        if tok.text == "{":
            return frozenset(self.items("}"))
        if tok.text == "[":
            return self.record()
        if tok.text == "(":
            return self.function()
        self.i -= 1
        raise self.fail("a value")

    def integer_or_interval(self, low: int) -> Any:
        if not self.at(".."):
            return low
        self.i += 1
        high = self.value()
        if not isinstance(high, int) or isinstance(high, bool):
            raise self.fail("an integer after '..'")
        return frozenset(range(low, high + 1))

    def items(self, close: str) -> Iterator[Any]:
        if self.at(close):
            self.i += 1
            return
        while True:
            yield self.value()
            if self.at(close):
                self.i += 1
                return
            self.expect(",")

    def record(self) -> Record:
        fields: dict[str, Any] = {}
        while True:
            name = self.next()
            if name.kind != "ident":
                self.i -= 1
                raise self.fail("a record field name")
            self.expect("|->")
            fields.setdefault(name.text, self.value())
            if self.at("]"):
                self.i += 1
                return _record(fields)
            self.expect(",")

    def function(self) -> Any:
        first = self.value()
        if self.at(")"):
            # A parenthesised value: values.to_tla writes negative numbers so.
            self.i += 1
            return first
        if self.at("-") and isinstance(first, int):
            # values.to_tla writes the least 32-bit integer as (-2147483647 - 1).
            self.i += 1
            subtrahend = self.next()
            if subtrahend.kind != "int":
                self.i -= 1
                raise self.fail("an integer after '-'")
            self.expect(")")
            return first - int(subtrahend.text)
        pairs: dict[Any, Any] = {}
        key = first
        while True:
            self.expect(":>")
            # `@@` is left-biased, so the first binding of a key is the one that counts.
            pairs.setdefault(key, self.value())
            if self.at(")"):
                self.i += 1
                break
            self.expect("@@")
            key = self.value()
        return _function(pairs)


def _has_model_value(value: Any) -> bool:
    if isinstance(value, ModelValue):
        return True
    if isinstance(value, tuple | frozenset):
        return any(_has_model_value(v) for v in value)
    if isinstance(value, Mapping):
        return any(_has_model_value(k) or _has_model_value(v) for k, v in value.items())
    return False


def _record(fields: dict[str, Any]) -> Record:
    if not any(_has_model_value(v) for v in fields.values()):
        return Record(fields)
    # values.freeze refuses model values, which only TLC has (a trace never
    # holds one), so such a record is built around freeze from parts that
    # are already frozen.
    return Record._trusted(dict(sorted(fields.items())))


def _function(pairs: dict[Any, Any]) -> Record | FnMap:
    if all(isinstance(k, str) for k in pairs):
        return _record(pairs)
    if not any(_has_model_value(k) or _has_model_value(v) for k, v in pairs.items()):
        return FnMap(pairs)
    # As in _record; the key order is repr order, since model values have no
    # canonical JSON text.
    return FnMap._trusted({k: pairs[k] for k in sorted(pairs, key=repr)})


def parse_value(text: str) -> Any:
    """Parse one value as TLC prints it (also accepts `values.to_tla` output).

    Raises TLCError, naming the offset, when the text is not a value.
    """
    parser = _Parser(text)
    value = parser.value()
    if not parser.done():
        raise parser.fail("the end of the value")
    return value


def parse_state(text: str) -> dict[str, Any]:
    """Parse a state block (`/\\ x = 1` lines) into {variable name: value}."""
    parser = _Parser(text)
    state: dict[str, Any] = {}
    while not parser.done():
        if parser.at("/\\"):
            parser.i += 1
        name = parser.next()
        if name.kind != "ident":
            parser.i -= 1
            raise parser.fail("a variable name")
        parser.expect("=")
        if name.text in state:
            raise TLCError(f"variable {name.text} appears twice in the state {text!r}")
        state[name.text] = parser.value()
    return state


def normalize(value: Any) -> Any:
    """Rewrite a value into the form TLC prints it in, so that equal TLA+
    values become equal Python values.

    TLC identifies a function with domain 1..n and the sequence of its
    values, and prints the empty function (whatever its type was) as `<<>>`.
    """
    if isinstance(value, tuple):
        return tuple(normalize(v) for v in value)
    if isinstance(value, frozenset):
        return frozenset(normalize(v) for v in value)
    if isinstance(value, Mapping):
        if not value:
            return ()
        keys = list(value.keys())
        if all(isinstance(k, int) and not isinstance(k, bool) for k in keys) and sorted(
            keys
        ) == list(range(1, len(keys) + 1)):
            return tuple(normalize(value[k]) for k in range(1, len(keys) + 1))
        return _function({normalize(k): normalize(v) for k, v in value.items()})
    return value


# --- TLA+ module source ---------------------------------------------------
#
# The validator needs a few facts from a spec's source before TLC runs: its
# CONSTANTS and VARIABLES, the modules it EXTENDS, the names it defines, and
# the literal set TraceActionNames of a trace template. This is a lexer and a
# reader of those declarations only, not a TLA+ parser; SANY stays the judge
# of what a module means.

_SRC_TOKEN = re.compile(
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


@dataclass(frozen=True, slots=True)
class ModuleDecls:
    """What a module declares, as far as the validator needs to know."""

    name: str
    extends: tuple[str, ...]
    constants: tuple[tuple[str, int], ...]  # (name, arity); arity 0 for a plain constant
    variables: tuple[str, ...]  # in declaration order
    definitions: frozenset[str]  # every name that appears before `==` (a superset)


def _source_tokens(text: str, origin: str) -> tuple[str, list[_Token]]:
    start = _MODULE_START.search(text)
    if start is None:
        raise SpecError(f"{origin}: no `---- MODULE Name ----` line")
    tokens: list[_Token] = []
    pos = start.end()
    while pos < len(text):
        m = _SRC_TOKEN.match(text, pos)
        assert m is not None  # the last alternative matches any character
        kind = m.lastgroup
        if kind == "block":
            pos = _skip_block_comment(text, m.end(), origin)
            continue
        if kind == "end":
            return start.group(1), tokens
        if kind in ("word", "string", "op"):
            tokens.append(_Token(kind, m.group(), m.start()))
        pos = m.end()
    raise SpecError(f"{origin}: the module has no closing `====` line")


def _skip_block_comment(text: str, pos: int, origin: str) -> int:
    depth = 1
    for m in _BLOCK_PART.finditer(text, pos):
        depth += 1 if m.group() == "(*" else -1
        if depth == 0:
            return m.end()
    raise SpecError(f"{origin}: a (* comment is never closed")


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


def read_string_set(text: str, definition: str, origin: str = "module") -> tuple[str, ...]:
    """Read `definition == {"a", "b", ...}`, a literal set of strings, from a module.

    Strict on purpose: anything else in that definition is a SpecError.
    """
    _, tokens = _source_tokens(text, origin)
    for i, tok in enumerate(tokens[:-2]):
        if tok.text == definition and tokens[i + 1].text == "==":
            break
    else:
        raise SpecError(f"{origin}: no definition `{definition} == {{...}}`")
    i += 2
    if tokens[i].text != "{":
        raise SpecError(f'{origin}: {definition} must be a literal set of strings {{"A", ...}}')
    names: list[str] = []
    i += 1
    while i < len(tokens) and tokens[i].text != "}":
        if tokens[i].kind != "string":
            raise SpecError(
                f"{origin}: {definition} must be a literal set of strings; found {tokens[i].text!r}"
            )
        names.append(_unescape(tokens[i].text))
        i += 1
        if i < len(tokens) and tokens[i].text == ",":
            i += 1
    if i >= len(tokens):
        raise SpecError(f"{origin}: {definition}'s set is never closed")
    return tuple(dict.fromkeys(names))
