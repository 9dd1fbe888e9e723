"""Values from outside, checked once: JSON text and integers within limits.

Theory of operation. Every JSON text tlasim reads from a file, a database
row or a datagram goes through `load_json`, and every integer that came
from outside and will reach SQLite, msgpack, a range or an allocation goes
through `checked_int`. A hostile input then gets the caller's own error
class, one line long, and never a RecursionError, an OverflowError, a value
read as another type (`true` as 1, `1.0` as 1), a NaN, or two keys where the
last silently wins.

This module is stdlib-only and imports only `protocols.errors`, so every
package may use it, as it may use the errors (docs/architecture.md).
"""

from __future__ import annotations

import json
import math
from typing import Any

from tlasim.protocols.errors import ConfigError, TlasimError, short_repr

__all__ = [
    "JSON_MAX_BYTES",
    "JSON_MAX_DEPTH",
    "VALUE_MAX_DEPTH",
    "checked_finite",
    "checked_int",
    "clip",
    "load_json",
]

# How many containers deep a TLA+ value may nest (tracing.values.MAX_DEPTH):
# far above any protocol's state (a bag of records of sets is 3), far below
# Python's recursion limit.
VALUE_MAX_DEPTH = 100
# How deep a JSON text may nest: above any file tlasim writes (a value inside
# a line that adds a few levels), far below the depth at which Python's
# parser or a recursive reader of the result would exhaust the stack.
JSON_MAX_DEPTH = VALUE_MAX_DEPTH + 10
# The largest JSON text read whole when the caller names no limit (a file's
# own size limit, tracing/inputs.py, is checked before this).
JSON_MAX_BYTES = 64 * 2**20
# How much of an input an error message may echo.
ECHO_MAX_CHARS = 200


def clip(text: str, limit: int = ECHO_MAX_CHARS) -> str:
    """`text` cut to about `limit` characters, keeping both ends and saying how
    much was left out, so an error that echoes its input stays one short line."""
    if len(text) <= limit:
        return text
    keep = max(limit // 2, 1)
    return f"{text[:keep]}…({len(text) - 2 * keep:,} characters cut)…{text[-keep:]}"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {clip(repr(key), 80)} appears twice in one object")
            seen.add(key)
    return result


def _check_depth(value: Any, max_depth: int) -> None:
    """Walk the parsed value without recursion; refuse it past `max_depth` levels."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            raise ValueError(f"nested too deep (at most {max_depth} levels)")
        stack.extend((child, depth + 1) for child in children)


def load_json(
    data: bytes | str,
    where: str,
    *,
    error: type[TlasimError] = ConfigError,
    max_depth: int | None = JSON_MAX_DEPTH,
    max_bytes: int = JSON_MAX_BYTES,
    unique_keys: bool = True,
    problem: str = "not JSON",
) -> Any:
    """The one JSON text in `data`, or `error` naming `where` and the fault.

    Refused: more than `max_bytes`, text that is not UTF-8, bad JSON, NaN and
    Infinity (not JSON, though Python writes them), integers of thousands of
    digits, an object with a key twice (which value would count?), and
    nesting past `max_depth` (checked without recursion, so a reader that
    recurses over the result is safe too).

    The trace reader alone passes `max_depth=None` and `unique_keys=False`:
    it reads millions of lines, its values are depth-checked as they are
    decoded (tracing.values), and the two checks would double its time.
    """
    if len(data) > max_bytes:
        raise error(f"{where}: {len(data):,} bytes of JSON; the limit is {max_bytes:,}")
    try:
        value = json.loads(
            data,
            parse_constant=_refuse_constant,
            object_pairs_hook=_refuse_duplicates if unique_keys else None,
        )
        if max_depth is not None:
            _check_depth(value, max_depth)
    except RecursionError:
        limit = max_depth if max_depth is not None else f"{VALUE_MAX_DEPTH} for a value"
        raise error(f"{where}: {problem}: nested too deep (at most {limit} levels)") from None
    except ValueError as exc:  # also UnicodeDecodeError and the int-digits limit
        raise error(f"{where}: {problem}: {clip(str(exc))}") from None
    return value


def checked_int(
    value: Any,
    where: str,
    *,
    low: int,
    high: int,
    error: type[TlasimError] = ConfigError,
) -> int:
    """`value` if it is an integer (not a bool, not a float) in [low, high]."""
    if type(value) is not int:
        raise error(f"{where}: expected an integer, got {short_repr(value)}")
    if not low <= value <= high:
        raise error(f"{where}: {short_repr(value)} is out of range; allowed {low}..{high}")
    return value


def checked_finite(
    value: Any,
    where: str,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    error: type[TlasimError] = ConfigError,
) -> float:
    """`value` as a float if it is a finite number (not a bool) in [low, high]."""
    if type(value) not in (int, float):
        raise error(f"{where}: expected a number, got {short_repr(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise error(f"{where}: {short_repr(value)} is not a finite number")
    if not low <= number <= high:
        raise error(f"{where}: {short_repr(value)} is out of range; allowed {low:g}..{high:g}")
    return number
