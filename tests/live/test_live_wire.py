"""Frames between live nodes: well-formed ones round-trip, anything else is a BadFrame."""

from __future__ import annotations

import msgpack
import pytest

from sim.live.wire import MAX_FRAME_BYTES, BadFrame, decode_frame, encode_frame


def test_frame_round_trips() -> None:
    wire = {"type": "Prepare", "tx": "t1", "rm": "r1"}
    frame = decode_frame(encode_frame("tm", 7, wire))
    assert (frame.src, frame.clock, frame.msg) == ("tm", 7, wire)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xc1",  # a byte msgpack never uses
        b"\x93\x01\x02",  # an array cut short
        msgpack.packb([1, 2, 3]),
        msgpack.packb({"src": "tm", "clock": 1}),
        msgpack.packb({"src": "tm", "clock": 1, "msg": {}, "extra": 0}),
        msgpack.packb({"src": 5, "clock": 1, "msg": {}}),
        msgpack.packb({"src": "tm", "clock": -1, "msg": {}}),
        msgpack.packb({"src": "tm", "clock": True, "msg": {}}),
        msgpack.packb({"src": "tm", "clock": 2**63, "msg": {}}),
        msgpack.packb({"src": "tm", "clock": 1.5, "msg": {}}),
        msgpack.packb({1: "tm", "clock": 1, "msg": {}}),  # a non-string key
        msgpack.packb({"src": "tm", "clock": 1, "msg": msgpack.ExtType(5, b"x")}),
        msgpack.packb({"src": "tm", "clock": 1, "msg": b"bytes"}),
        msgpack.packb({"src": "tm", "clock": 1, "msg": "x" * 5000}),
        msgpack.packb({"src": "tm", "clock": 1, "msg": list(range(5000))}),
        b"\x91" * 2000 + b"\x00",  # arrays nested past the unpacker's stack
        msgpack.packb({"src": "tm", "clock": 1, "msg": {}}) + b"\x00",  # trailing bytes
        b"\xa3\xff\xfe\xfd",  # a string that is not UTF-8
        b"\x00" * (MAX_FRAME_BYTES + 1),
    ],
)
def test_malformed_frames_are_refused(data: bytes) -> None:
    with pytest.raises(BadFrame):
        decode_frame(data)


def test_a_frame_too_large_to_send_is_refused_when_encoded() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        encode_frame("tm", 1, "x" * MAX_FRAME_BYTES)
