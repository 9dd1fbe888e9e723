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
becomes `()`. `normalize` puts a trace value into that same shape, and
`tlc_key` keeps apart what Python equates but TLC does not (1 and TRUE), so
the two can be compared as TLC would compare them.

This module only reads text; it never runs TLC.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tlasim.protocols.errors import InternalError, TLCError
from tlasim.tracing.tla.literal import unescape_string
from tlasim.tracing.values import MAX_DEPTH, FnMap, Record

__all__ = ["ModelValue", "normalize", "parse_state", "parse_value", "tlc_key"]


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
_ALL_DIGITS = re.compile(r"[0-9]+")
# TLC's integers have 32 bits; 20 digits hold 64. A longer one is not TLC's,
# and Python cannot even parse one of more than 4300 digits.
_MAX_INT_DIGITS = 20
# `a..b` becomes the set of its integers; a larger interval is not a state
# TLC printed for a trace (and would fill memory).
MAX_INTERVAL = 1_000_000


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


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0

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
        # Values nest MAX_DEPTH deep at most (tracing.values), and a container
        # is one more call here, so this bounds the recursion; the one level
        # more is the parentheses around a negative number.
        if self.depth > MAX_DEPTH + 1:
            raise self.fail(f"a value nested at most {MAX_DEPTH} levels deep")
        self.depth += 1
        try:
            return self._value()
        finally:
            self.depth -= 1

    def integer(self, tok: _Token) -> int:
        if len(tok.text) > _MAX_INT_DIGITS:
            raise TLCError(
                f"cannot read TLC value: the integer at offset {tok.pos} has {len(tok.text)} "
                f"digits; TLC's have at most {_MAX_INT_DIGITS}"
            )
        return int(tok.text)

    def _value(self) -> Any:
        tok = self.next()
        if tok.kind == "string":
            try:
                return unescape_string(tok.text)
            except ValueError as exc:
                raise TLCError(f"cannot read TLC's output: {exc}") from None
        if tok.kind == "int":
            return self.integer_or_interval(self.integer(tok))
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
            return self.integer_or_interval(-self.integer(digits))
        if tok.text == "<<":
            return tuple(self.items(">>"))
        if tok.text == "{":
            return _strict_set(list(self.items("}")))
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
        if high - low + 1 > MAX_INTERVAL:
            raise TLCError(
                f"cannot read TLC value: {low}..{high} holds more than {MAX_INTERVAL:,} integers"
            )
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
            # A parenthesised value: tla_literal.to_tla writes negative numbers so.
            self.i += 1
            return first
        if self.at("-") and isinstance(first, int):
            # tla_literal.to_tla writes the least 32-bit integer as (-2147483647 - 1).
            self.i += 1
            subtrahend = self.next()
            if subtrahend.kind != "int":
                self.i -= 1
                raise self.fail("an integer after '-'")
            self.expect(")")
            return first - self.integer(subtrahend)
        pairs: dict[Any, Any] = {}
        key = first
        while True:
            self.expect(":>")
            # `@@` is left-biased, so the first binding of a key is the one that counts.
            value = self.value()
            if key in pairs:
                _check_same_key(key, pairs)
            pairs.setdefault(key, value)
            if self.at(")"):
                self.i += 1
                break
            self.expect("@@")
            key = self.value()
        return _function(pairs)


def _strict_set(items: list[Any]) -> frozenset[Any]:
    """The set of `items`, refusing two that only Python equates (0 and FALSE):
    keeping one would make a value TLC did not print."""
    out = frozenset(items)
    if len(out) < len(items) and len({tlc_key(x) for x in items}) != len(out):
        raise TLCError(
            "cannot read TLC value: a set holds values that differ only by a boolean where "
            "the other has an integer (0 and FALSE), which Python cannot tell apart"
        )
    return out


def _check_same_key(key: Any, pairs: dict[Any, Any]) -> None:
    first = next(k for k in pairs if k == key)
    if tlc_key(first) != tlc_key(key):
        raise TLCError(
            f"cannot read TLC value: a function maps both {first!r:.60} and {key!r:.60}, "
            "which Python cannot tell apart"
        )


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
    """Parse one value as TLC prints it (also accepts `tla_literal.to_tla` output).

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


def tlc_key(value: Any) -> Any:
    """A key equal for two values exactly when TLC holds them equal.

    Python holds True == 1; TLC does not, so every atom carries its type.
    """
    v = normalize(value)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return ("i", v)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, ModelValue):
        return ("m", v.name)
    if isinstance(v, tuple):
        return ("t", tuple(tlc_key(x) for x in v))
    if isinstance(v, frozenset):
        return ("S", tuple(sorted((tlc_key(x) for x in v), key=repr)))
    if isinstance(v, Mapping):
        return ("f", tuple(sorted(((tlc_key(k), tlc_key(x)) for k, x in v.items()), key=repr)))
    raise InternalError(f"not a TLA+ value: {v!r}")
