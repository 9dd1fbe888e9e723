"""Frames between live nodes: sealed ones of this run round-trip, anything else is a BadFrame."""

from __future__ import annotations

import msgpack
import pytest

from tlasim.sim.live.wire import (
    MAX_FRAME_BYTES,
    TAG_BYTES,
    BadFrame,
    RunKey,
    decode_frame,
    encode_frame,
)

KEY = RunKey(bytes(range(32)), "run-a")


def test_frame_round_trips() -> None:
    wire = {"type": "Prepare", "tx": "t1", "rm": "r1"}
    frame = decode_frame(KEY, encode_frame(KEY, "tm", 7, wire))
    assert (frame.src, frame.clock, frame.msg) == ("tm", 7, wire)


@pytest.mark.parametrize(
    "body",
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
    ],
)
def test_malformed_frames_are_refused_even_under_the_runs_tag(body: bytes) -> None:
    with pytest.raises(BadFrame) as refused:
        decode_frame(KEY, KEY.seal(body))
    assert refused.value.reason == "malformed"


def test_a_datagram_too_large_is_refused_before_its_tag_is_checked() -> None:
    with pytest.raises(BadFrame) as refused:
        decode_frame(KEY, b"\x00" * (MAX_FRAME_BYTES + 1))
    assert refused.value.reason == "oversized"


GOOD_BODY = msgpack.packb({"src": "tm", "clock": 1, "msg": {"type": "Prepare"}})


@pytest.mark.parametrize(
    "data",
    [
        GOOD_BODY,  # no tag at all
        b"",
        b"\x00" * (TAG_BYTES - 1),
        bytes(TAG_BYTES) + GOOD_BODY,  # a tag of zeros
        RunKey(bytes(32), "run-a").seal(GOOD_BODY),  # another run's key
        RunKey(bytes(range(32)), "run-b").seal(GOOD_BODY),  # the key, another run's identity
        KEY.seal(GOOD_BODY)[:-1] + b"\x00",  # the body changed under its tag
        KEY.seal(GOOD_BODY)[1:],  # the tag cut
    ],
)
def test_a_datagram_without_this_runs_tag_is_refused_unread(data: bytes) -> None:
    with pytest.raises(BadFrame) as refused:
        decode_frame(KEY, data)
    assert refused.value.reason == "bad-mac"


def test_a_frame_too_large_to_send_is_refused_when_encoded() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        encode_frame(KEY, "tm", 1, "x" * MAX_FRAME_BYTES)
