"""A recorded run's trace for TLC as Python's pickle of its lines.

Theory of operation. `binary.TraceBlobWriter` walks every value in Python,
about 17 µs per twopc step; that was half of what a campaign that checks
every run spent. Python's C pickler does the same walk at C speed (about
3 µs per step) and its memo writes each object once, naming it after (a
message in flight, a variable the step left alone): the writer's sharing by
identity, for free. tlasim's TLC side (`tlasim.PickledTrace`, in
`tracing/tla/java`) reads such a trace into the values the other encoder's
bytes give, by the same rules (`tracing.values.freeze`).

A trace's element of `TraceLogs` is then the tag `K`, a u32 byte count and
the pickle of the list of lines, each the tuple (action, params, vars).
Only what the C pickler writes natively for str, int, bool, tuple, list,
dict, set and frozenset reaches the pickle, and the types that are TLA+
values by the writer's rules but not by pickle's (Record, FnMap, a str or
int subclass, another mapping) come as `builtins.X(plain value)`, which the
reader takes as the plain value. Any other object (a namedtuple too, which
the writer refuses) stops the pickle (`Unpicklable`), and the caller
encodes the trace as it did before, which names the value it refuses.

The values a trace may hold (32-bit integers, printable ASCII strings,
`MAX_DEPTH` levels of nesting) are checked by the reader, not here: a
trace that breaks them is read as one TLC rejects, and tlasim checks that
run from its log, which gives the refusal its message. The values must not
change until `pickled_trace` is called: the caller's promise (`persistent`).
"""

from __future__ import annotations

import io
import pickle
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from tlasim.tracing.values import FnMap, Record

__all__ = ["PICKLED_TAG", "Unpicklable", "pickled_trace"]

PICKLED_TAG = b"K"
_U32 = struct.Struct(">I")
# The classes the reader accepts as `builtins.X(plain)`.
_CONVERSIONS = frozenset({str, int, dict})


class Unpicklable(Exception):
    """A value in a line that is no TLA+ value the pickle can carry."""


class _LinePickler(pickle.Pickler):
    """Pickles TLA+ values only. The C pickler calls `reducer_override` for
    every object that is not of an exact builtin type it writes itself (or
    a class, which `builtins.X` names)."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is type and obj in _CONVERSIONS:
            return NotImplemented  # the class itself, as builtins.X
        if isinstance(obj, Record | FnMap):
            return dict, (dict(obj.items()),)
        if isinstance(obj, str):
            return str, (str.__str__(obj),)
        if isinstance(obj, int):
            return int, (int.__int__(obj),)
        if isinstance(obj, Mapping):
            return dict, (dict(obj.items()),)
        raise Unpicklable(f"a {type(obj).__name__} is not a TLA+ value")


def pickled_trace(lines: Sequence[tuple[str, Any, Mapping[str, Any]]]) -> bytes:
    """A trace's element of `TraceLogs`: tag, length, pickle of `lines`.
    Raises Unpicklable for a value the pickle cannot carry."""
    out = io.BytesIO()
    out.write(PICKLED_TAG + b"\x00\x00\x00\x00")
    try:
        _LinePickler(out, protocol=5).dump(list(lines))
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
        raise Unpicklable(str(exc)) from None
    data = out.getbuffer()
    data[1:5] = _U32.pack(len(data) - 5)
    del data
    return out.getvalue()
