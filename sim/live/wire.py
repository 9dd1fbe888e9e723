"""Frames between live nodes: one sealed msgpack map per UDP datagram, read with limits.

Theory of operation: a datagram is `tag | body`. The body is the frame
`{"src": node, "clock": lamport, "msg": wire form}`, packed with msgpack; the
tag is HMAC-SHA256 over the run's identity and the body, keyed with the run's
secret key (`RunKey`), which the supervisor draws for each run and gives only
to the run's nodes. One frame per datagram, so a datagram is a whole frame
or nothing and no framing state can be desynchronised by a bad packet.

The tag is checked first, in constant time, before a byte of the body is
unpacked: a datagram from anyone without the key (a spoofed source port,
another run, a stray packet) is refused whatever it holds. Unpacking an
authenticated body is still bounded (sizes of strings, arrays, maps and the
whole buffer), refuses ext types and non-string map keys, and never
unpickles anything. Whatever fails a check is a `BadFrame`, whose `reason`
is what the node counts the drop as.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

import msgpack

# The largest datagram a node reads or sends, tag included: far above any
# message of the shipped protocols (a snapshot chunk of a few keys is some
# hundred bytes), and below the 65,507 bytes a UDP datagram over IPv4 can carry.
MAX_FRAME_BYTES = 60_000
# Lamport clocks are kept to what msgpack and the trace's 64-bit integers hold.
MAX_CLOCK = 2**62
# How far ahead of its receiver's clock a frame's clock may be. A Lamport
# clock never exceeds the number of lines the whole run has written (each
# line is one more than the largest clock before it), so an honest frame is
# never further ahead than that: 2**32 lines is days of a run at a million
# lines a second, where a live run writes some thousand. A frame further
# ahead is dropped (`clock-jump`): one frame can then not push its receiver's
# clock near MAX_CLOCK, which would make every later frame of that node one
# the peers must refuse; even a peer holding the key needs 2**30 frames.
CLOCK_WINDOW = 2**32
KEY_BYTES = 32  # the run's HMAC-SHA256 key
TAG_BYTES = 32  # an HMAC-SHA256 tag
_DOMAIN = b"tlasim live frame v1\x00"
_FRAME_KEYS = frozenset({"src", "clock", "msg"})


class BadFrame(Exception):
    """A datagram that is not a well-formed frame of this run.

    `reason` is the drop's name in the node's counts (`oversized`, `bad-mac`,
    `malformed`); the message says more.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Frame:
    src: str
    clock: int
    msg: Any  # the message's wire form, for the protocol's decode_message


class RunKey:
    """One run's secret key and identity: seals frames, and checks their seals."""

    __slots__ = ("_mac", "run_id")

    def __init__(self, key: bytes, run_id: str) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"a run key is {KEY_BYTES} bytes, not {len(key)}")
        self.run_id = run_id
        ident = run_id.encode("utf-8", "surrogatepass")
        # The run's identity goes under every tag, length first, so that a
        # frame of another run is refused even if the two shared a key.
        self._mac = hmac.new(key, _DOMAIN + len(ident).to_bytes(4, "big") + ident,
                             hashlib.sha256)

    def tag(self, body: bytes) -> bytes:
        mac = self._mac.copy()
        mac.update(body)
        return mac.digest()

    def seal(self, body: bytes) -> bytes:
        return self.tag(body) + body

    def open(self, data: bytes) -> bytes:
        """The body of a datagram whose tag is right, or BadFrame("bad-mac")."""
        if len(data) < TAG_BYTES:
            raise BadFrame("bad-mac", "too short to carry a tag")
        body = data[TAG_BYTES:]
        if not hmac.compare_digest(data[:TAG_BYTES], self.tag(body)):
            raise BadFrame("bad-mac", "the tag is not this run's")
        return body


def _refuse_ext(code: int, data: bytes) -> Any:
    raise BadFrame("malformed", f"msgpack ext type {code} is not allowed")


def encode_frame(key: RunKey, src: str, clock: int, wire_msg: Any) -> bytes:
    body: bytes = msgpack.packb({"src": src, "clock": clock, "msg": wire_msg}, use_bin_type=True)
    if len(body) + TAG_BYTES > MAX_FRAME_BYTES:
        raise ValueError(f"a frame of {len(body) + TAG_BYTES} bytes exceeds {MAX_FRAME_BYTES}")
    return key.seal(body)


def decode_frame(key: RunKey, data: bytes) -> Frame:
    """The frame in `data`, or BadFrame naming what was wrong with it."""
    if len(data) > MAX_FRAME_BYTES:
        raise BadFrame("oversized")
    body = key.open(data)
    try:
        obj = msgpack.unpackb(
            body,
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
        raise BadFrame("malformed", f"not msgpack: {type(exc).__name__}") from None
    if type(obj) is not dict or obj.keys() != _FRAME_KEYS:
        raise BadFrame("malformed", "not a frame map")
    src, clock = obj["src"], obj["clock"]
    if type(src) is not str or type(clock) is not int or not 0 <= clock <= MAX_CLOCK:
        raise BadFrame("malformed", "bad src or clock")
    return Frame(src, clock, obj["msg"])
