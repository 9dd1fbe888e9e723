"""Frames between live nodes: one msgpack map per UDP datagram, read with limits.

Theory of operation: a frame is `{"src": node, "clock": lamport, "msg": wire
form}`, packed with msgpack, one frame per datagram, so a datagram is a whole
frame or nothing and no framing state can be desynchronised by a bad packet.
Unpacking is bounded (sizes of strings, arrays, maps and the whole buffer),
refuses ext types and non-string map keys, and never unpickles anything.
Whatever fails any check is a `BadFrame`, which the node counts and drops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgpack

# The largest datagram a node reads or sends: far above any message of the
# shipped protocols (a snapshot chunk of a few keys is some hundred bytes),
# and below the 65,507 bytes a UDP datagram over IPv4 can carry.
MAX_FRAME_BYTES = 60_000
# Lamport clocks are kept to what msgpack and the trace's 64-bit integers hold.
MAX_CLOCK = 2**62
_FRAME_KEYS = frozenset({"src", "clock", "msg"})


class BadFrame(Exception):
    """A datagram that is not a well-formed frame from a known peer."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Frame:
    src: str
    clock: int
    msg: Any  # the message's wire form, for the protocol's decode_message


def _refuse_ext(code: int, data: bytes) -> Any:
    raise BadFrame(f"msgpack ext type {code} is not allowed")


def encode_frame(src: str, clock: int, wire_msg: Any) -> bytes:
    data: bytes = msgpack.packb({"src": src, "clock": clock, "msg": wire_msg}, use_bin_type=True)
    if len(data) > MAX_FRAME_BYTES:
        raise ValueError(f"a frame of {len(data)} bytes exceeds {MAX_FRAME_BYTES}")
    return data


def decode_frame(data: bytes) -> Frame:
    """The frame in `data`, or BadFrame naming what was wrong with it."""
    if len(data) > MAX_FRAME_BYTES:
        raise BadFrame("oversized")
    try:
        obj = msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=True,
            ext_hook=_refuse_ext,
            max_str_len=4096,
            max_bin_len=0,
            max_array_len=4096,
            max_map_len=1024,
            max_ext_len=0,
            use_list=True,
        )
    except BadFrame:
        raise
    except (ValueError, TypeError, RecursionError, msgpack.UnpackException) as exc:
        # ExtraData, FormatError, StackError and the size limits are all
        # ValueErrors; a bad UTF-8 string is a UnicodeDecodeError, one too.
        raise BadFrame(f"not msgpack: {type(exc).__name__}") from None
    if type(obj) is not dict or obj.keys() != _FRAME_KEYS:
        raise BadFrame("not a frame map")
    src, clock = obj["src"], obj["clock"]
    if type(src) is not str or type(clock) is not int or not 0 <= clock <= MAX_CLOCK:
        raise BadFrame("bad src or clock")
    return Frame(src, clock, obj["msg"])
