"""TLA+ literals: Python values written as TLA+ text, and string literals read back.

Theory of operation. `to_tla` writes a value as TLA+ text that TLC 2.15 reads
back as the same value, and that cannot change the meaning of the module it
is pasted into: every part is a self-delimiting atom, strings are escaped,
and a record key that is not a plain identifier (a reserved word, say) is
written in the function form. Sets and function domains come out in the
canonical order of `tracing.values`, so equal values give equal text.

This module shares the path-naming errors and the canonical order of
`tracing.values`, so a refused value is named exactly as `freeze` names it.
It only builds text; it never runs TLC.
"""

from __future__ import annotations

import re
from typing import Any

from tlasim.tracing.values import (
    MAX_DEPTH,
    FnMap,
    Record,
    _canonical_order,
    _fail,
    _key_segment,
    _short_int,
    _too_deep,
    _Unsupported,
    freeze,
)

__all__ = ["is_field_name", "is_identifier", "to_tla", "unescape_string"]

_TLA_INT_MIN, _TLA_INT_MAX = -(2**31), 2**31 - 1
# SANY 2.15 reads a backtick inside a string as opening a `...' quote in which
# '"' no longer ends the string, so "a`b" would swallow the module text that
# follows up to the next apostrophe. No escape exists, so backticks are refused.
_TLA_STRING_BAD = re.compile(r"[^\x20-\x5f\x61-\x7e\n\t\r\f]")
_TLA_ESCAPES = str.maketrans(
    {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\f": "\\f"}
)
_UNESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "f": "\f"}
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_IDENT = re.compile(r"[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*")
# SANY accepts some of these as record fields, but not all, and not every
# version: a key that is one is written in the function form instead.
_RESERVED_WORDS = """
    ACTION ASSUME ASSUMPTION AXIOM BOOLEAN BY CASE CHOOSE CONSTANT CONSTANTS COROLLARY
    DEF DEFINE DEFS DOMAIN ELSE ENABLED EXCEPT EXTENDS FALSE HAVE HIDE IF IN INSTANCE
    LAMBDA LEMMA LET LOCAL MODULE NEW OBVIOUS OMITTED ONLY OTHER PICK PROOF PROPOSITION
    PROVE QED RECURSIVE STATE STRING SUBSET SUFFICES TAKE TEMPORAL THEN THEOREM TRUE
    UNCHANGED UNION USE VARIABLE VARIABLES WITH WITNESS
"""
_RESERVED = frozenset(_RESERVED_WORDS.split())


def is_identifier(name: str) -> bool:
    """Whether `name` has the shape of a TLA+ identifier (reserved words included)."""
    return _IDENT.fullmatch(name) is not None


def unescape_string(literal: str) -> str:
    """The string a TLA+ string literal, quotes included, stands for.

    Raises ValueError for an escape TLA+ does not have, such as `\\q`.
    """

    def unescape(match: re.Match[str]) -> str:
        try:
            return _UNESCAPES[match.group(1)]
        except KeyError:
            raise ValueError(f"unknown escape \\{match.group(1)} in {literal}") from None

    return _ESCAPE.sub(unescape, literal[1:-1])


def to_tla(value: Any) -> str:
    """Write a value as a TLA+ expression that TLC 2.15 evaluates to the same value.

    The module it goes into must EXTEND TLC (`:>` and `@@` spell functions
    whose keys are not identifiers) and Integers (negative numbers). Every
    part is a self-delimiting atom, so the text is safe as an operand of any
    operator. Raises TraceFormatError for what TLC cannot hold: strings with
    characters outside printable ASCII, \\n, \\t, \\r and \\f, strings with a
    backtick (SANY would misread the module), integers outside 32 bits, and
    values nested deeper than MAX_DEPTH.
    """
    out: list[str] = []
    try:
        _tla(freeze(value), out, 0)
    except _Unsupported as exc:
        _fail("value", exc)
    return "".join(out)


def _tla(v: Any, out: list[str], depth: int) -> None:
    t = type(v)
    if t is not str and t is not bool and t is not int:
        # freeze checks plain containers, but not Records built one inside another.
        if depth >= MAX_DEPTH:
            raise _too_deep()
        depth += 1
    if t is str:
        bad = _TLA_STRING_BAD.search(v)
        if bad is not None:
            raise _Unsupported(
                f"the string {v!r:.80} holds {bad.group()!r} at index {bad.start()}; "
                "TLA+ strings hold only printable ASCII but the backtick, \\n, \\t, \\r and \\f"
            )
        out.append('"' + v.translate(_TLA_ESCAPES) + '"')
    elif t is bool:
        out.append("TRUE" if v else "FALSE")
    elif t is int:
        out.append(_tla_int(v))
    elif t is tuple:
        out.append("<<")
        _tla_items([(f"[{i}]", None, x) for i, x in enumerate(v)], out, ", ", "", depth)
        out.append(">>")
    elif t is frozenset:
        out.append("{")
        _tla_items(
            [("{element}", None, x) for x in _canonical_order(v)], out, ", ", "", depth
        )
        out.append("}")
    else:  # Record or FnMap: freeze produced nothing else
        _tla_function(v, out, depth)


def _tla_int(n: int) -> str:
    if not _TLA_INT_MIN <= n <= _TLA_INT_MAX:
        raise _Unsupported(f"{_short_int(n)} does not fit TLC's 32-bit integers")
    if n >= 0:
        return str(n)
    if n == _TLA_INT_MIN:
        # SANY reads -2147483648 as -(2147483648), and 2147483648 overflows.
        return f"(-{_TLA_INT_MAX} - 1)"
    return f"({n})"


def _tla_function(m: Record | FnMap, out: list[str], depth: int) -> None:
    if not m:
        # TLC equates <<>> with every function on the empty domain.
        out.append("<<>>")
        return
    # Both classes iterate in canonical key order.
    pairs = [(_key_segment(k), k, x) for k, x in m.items()]
    if all(type(k) is str and _is_field(k) for k in m):
        out.append("[")
        _tla_items(pairs, out, ", ", " |-> ", depth)
        out.append("]")
    else:
        out.append("(")
        _tla_items(pairs, out, " @@ ", " :> ", depth)
        out.append(")")


def _tla_items(
    items: list[tuple[str, Any, Any]], out: list[str], sep: str, arrow: str, depth: int
) -> None:
    """Write `key arrow value` (or only the value when arrow is empty), separated by sep."""
    for i, (segment, key, x) in enumerate(items):
        if i:
            out.append(sep)
        try:
            if arrow == " |-> ":
                out.append(key)
            elif arrow:
                _tla(key, out, depth)
            out.append(arrow)
            _tla(x, out, depth)
        except _Unsupported as exc:
            exc.path.append(segment)
            raise


def _is_field(key: str) -> bool:
    return is_identifier(key) and key not in _RESERVED and not key.startswith(("WF_", "SF_"))


def is_field_name(key: Any) -> bool:
    """Whether `key` may be written as a record field (`[key |-> ...]`, `r.key`);
    other keys need the function form `(key :> ...)`."""
    return type(key) is str and _is_field(key)
