"""TLA+ type expressions, read for what they say about a value's JSON form.

Theory of operation. A trace header notes each variable's type, and a
mapping file (tracing/interchange/log_mapping.py) declares the type of a logged variable
whose JSON alone is ambiguous, both as TLA+ type expressions such as
`[Tx -> SUBSET RM]`. `parse_type` reads one into a `Shape`, which keeps only
what decides the value's JSON form: set, sequence, tuple, record, function,
bag, or a scalar kind. A constant's name (`RM`, `Msg`) and anything else
that does not fix a form (a union of unlike types) is the shape-less `ANY`.

Two readers share one parser. `parse_type` is strict, for a type a person
wrote for tlasim to read: an error quotes the type and the token it stopped
at. `type_hint` is lenient, for a trace header's note, which may end in a
comment: it reads as much as is a type, and gives ANY when it cannot read
even that.

tracing/interchange/itf.py writes a string-keyed function as a `#map` where its shape
says function, and tracing/interchange/foreign.py decodes a log's plain JSON by its
variable's shape. This module only reads types; it never sees a value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tlasim.protocols.errors import ConfigError

__all__ = ["ANY", "Shape", "parse_type", "type_hint"]

ShapeKind = Literal["any", "int", "str", "bool", "set", "seq", "bag", "tuple", "record", "fn"]


@dataclass(frozen=True, slots=True)
class Shape:
    """The form of a TLA+ value, as far as a type expression tells it.

    `parts` holds the element shape (set, seq, bag), the domain and range
    (fn), the items (tuple) or the field shapes (record, named by `names`).
    A bag is a function from its elements to their counts.
    """

    kind: ShapeKind
    parts: tuple[Shape, ...] = ()
    names: tuple[str, ...] = ()

    def element(self) -> Shape:
        return self.parts[0] if self.kind in ("set", "seq", "bag") else ANY

    def item(self, index: int) -> Shape:
        """The shape of the index-th item of the array this value is logged as."""
        if self.kind in ("set", "seq", "bag"):
            return self.parts[0]
        if self.kind == "tuple" and index < len(self.parts):
            return self.parts[index]
        return ANY

    def domain(self) -> Shape:
        return self.parts[0] if self.kind in ("fn", "bag") else ANY

    def range(self) -> Shape:
        return self.parts[1] if self.kind == "fn" else INT if self.kind == "bag" else ANY

    def field(self, name: str) -> Shape:
        if self.kind == "record" and name in self.names:
            return self.parts[self.names.index(name)]
        return self.range()

    def is_function(self) -> bool:
        return self.kind in ("fn", "bag")


ANY, INT, STR, BOOL = Shape("any"), Shape("int"), Shape("str"), Shape("bool")
# The parser is recursive; a type nests at most this deep, as values do
# (tracing.values.MAX_DEPTH), so no type text reaches Python's recursion limit.
MAX_TYPE_DEPTH = 100
_NAMED = {"Int": INT, "Nat": INT, "STRING": STR, "BOOLEAN": BOOL}
_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?[0-9]+)'
    r"|(?P<op>\\[A-Za-z]+|->|<<|>>|\.\.|[][(){}:,\\])|(?P<id>[A-Za-z_][A-Za-z0-9_]*))"
)


class _Syntax(Exception):
    """A type expression this reader does not understand."""


def parse_type(text: str) -> Shape:
    """Read a TLA+ type expression (see docs/interchange.md for what it may use).

    Raises ConfigError quoting `text` and the token the reader stopped at.
    """
    parser = _TypeParser(text)
    try:
        shape = parser.expr()
        if parser.pos < len(parser.tokens):
            raise _Syntax(f"unexpected {parser.tokens[parser.pos][1]!r}")
    except _Syntax as exc:
        raise ConfigError(f"type {text!r}: {exc}") from None
    return shape


def type_hint(text: str) -> Shape:
    """The shape of a header's type note, which may end in a comment ("(a bag)"),
    or ANY when it is not a type this reader understands."""
    try:
        return _TypeParser(text).expr()
    except _Syntax:
        return ANY


class _TypeParser:
    """Recursive descent over: union (\\cup), difference (\\), product (\\X),
    SUBSET, Seq(T), Bag(T), [D -> R], [f: T, ...], {literals}, a..b, names."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text.rstrip()):
            m = _TOKEN.match(text, pos)
            if m is None or m.lastgroup is None:
                self.tokens.append(("bad", text[pos:].strip()[:20]))
                break
            self.tokens.append((m.lastgroup, m.group(m.lastgroup)))
            pos = m.end()
        self.pos = 0
        self.depth = 0

    def peek(self, ahead: int = 0) -> str | None:
        i = self.pos + ahead
        return self.tokens[i][1] if i < len(self.tokens) else None

    def take(self, *texts: str) -> bool:
        if self.pos < len(self.tokens) and self.tokens[self.pos][0] != "str" and (
            self.tokens[self.pos][1] in texts
        ):
            self.pos += 1
            return True
        return False

    def next(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise _Syntax("the type ends too early")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def expect(self, text: str) -> None:
        if not self.take(text):
            found = self.peek()
            raise _Syntax(f"expected {text!r}, found {'the end' if found is None else repr(found)}")

    def expr(self) -> Shape:
        shape = self.difference()
        while self.take("\\cup", "\\union"):
            other = self.difference()
            shape = shape if shape == other else ANY
        return shape

    def difference(self) -> Shape:
        shape = self.product()
        while self.take("\\"):
            self.product()
        return shape

    def product(self) -> Shape:
        items = [self.unary()]
        while self.take("\\X", "\\times"):
            items.append(self.unary())
        return items[0] if len(items) == 1 else Shape("tuple", tuple(items))

    def unary(self) -> Shape:
        # Every nesting passes through here, so one counter bounds them all.
        if self.depth >= MAX_TYPE_DEPTH:
            raise _Syntax(f"nests deeper than {MAX_TYPE_DEPTH} levels, the limit")
        self.depth += 1
        try:
            return self._unary()
        finally:
            self.depth -= 1

    def _unary(self) -> Shape:
        if self.take("SUBSET"):
            return Shape("set", (self.unary(),))
        kind, text = self.next()
        if kind == "op" and text == "(":
            shape = self.expr()
            self.expect(")")
            return shape
        if kind == "op" and text == "[":
            return self.bracket()
        if kind == "op" and text == "{":
            return self.enumeration()
        if kind == "id" and text in ("Seq", "Bag") and self.take("("):
            element = self.expr()
            self.expect(")")
            return Shape("seq" if text == "Seq" else "bag", (element,))
        if kind == "num" and self.take(".."):
            if self.next()[0] != "num":
                raise _Syntax(f"{text}.. must be followed by a number")
            return INT
        if kind == "id":
            return _NAMED.get(text, ANY)
        if kind == "bad":
            raise _Syntax(f"cannot read on from {text!r}")
        raise _Syntax(f"unexpected {text!r}")

    def bracket(self) -> Shape:
        if self.peek(1) == ":":
            names: list[str] = []
            parts: list[Shape] = []
            while True:
                kind, name = self.next()
                if kind != "id" or name in names:
                    raise _Syntax(f"{name!r} is not a new field name")
                self.expect(":")
                names.append(name)
                parts.append(self.expr())
                if not self.take(","):
                    break
            self.expect("]")
            return Shape("record", tuple(parts), tuple(names))
        domain = self.expr()
        self.expect("->")
        value = self.expr()
        self.expect("]")
        return Shape("fn", (domain, value))

    def enumeration(self) -> Shape:
        kinds = set()
        while not self.take("}"):
            kind, text = self.next()
            if kind == "id" and text in ("TRUE", "FALSE"):
                kind = "bool"
            if kind not in ("str", "num", "bool"):
                raise _Syntax(f"{{...}} may list only literals, not {text!r}")
            kinds.add(kind)
            if not self.take(","):
                self.expect("}")
                break
        only = kinds.pop() if len(kinds) == 1 else None
        return {"str": STR, "num": INT, "bool": BOOL}.get(only or "", ANY)
