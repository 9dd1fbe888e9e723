"""A node's log as an append-only file: synced records survive SIGKILL, others do not.

Theory of operation: `FileDisk` is the simulator's `Disk` (the same
`persist`, `synced` and `contents`) backed by a real file. A record persisted
without sync stays in process memory only; a sync writes every record not yet
in the file with one `os.write` and then calls `os.fsync`, so a SIGKILL loses
exactly the unsynced records, as a power cut would.

Each record on disk is `length (4 bytes) | crc32 (4 bytes) | msgpack`. A
node killed in the middle of a write leaves a torn last record: `open` keeps
every whole record before it and cuts the file there, so the next append
starts on a record boundary.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgpack

from tlasim.sim.kernel.disk import Disk
from tlasim.sim.live.files import open_node_file
from tlasim.tracing.values import Record, from_json, to_json

_HEADER = struct.Struct(">II")  # payload length, crc32 of the payload
# One record of a shipped protocol is some tens of bytes; a length beyond this
# can only be a torn or corrupt header, never a record to allocate for.
MAX_RECORD_BYTES = 1 << 20


def encode_record(record: Mapping[str, Any]) -> bytes:
    payload: bytes = msgpack.packb(to_json(record, "log record"), use_bin_type=True)
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def decode_records(data: bytes) -> tuple[list[Record], int]:
    """The whole records at the start of `data`, and how many bytes they take.

    Reading stops at the first record that is cut short or whose checksum
    fails: that and everything after it is a write the node did not finish.
    """
    records: list[Record] = []
    offset = 0
    while offset + _HEADER.size <= len(data):
        length, crc = _HEADER.unpack_from(data, offset)
        start = offset + _HEADER.size
        payload = data[start : start + length]
        if length > MAX_RECORD_BYTES or len(payload) < length or zlib.crc32(payload) != crc:
            break
        try:
            value = from_json(
                msgpack.unpackb(payload, raw=False, strict_map_key=True),
                "log record",
            )
        except Exception:  # a checksummed record that does not decode is torn too
            break
        if not isinstance(value, Record):
            break
        records.append(value)
        offset = start + length
    return records, offset


class FileDisk(Disk):
    """The simulator's disk, with every sync written and fsynced to `path`."""

    __slots__ = ("_fd", "_in_file", "path", "torn_bytes")

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        # A regular file within NODE_FILE_MAX_BYTES, or a ConfigError.
        self._fd = open_node_file(path, "log", os.O_RDWR)
        data = b""
        while chunk := os.read(self._fd, 1 << 16):
            data += chunk
        records, whole = decode_records(data)
        # A torn tail is cut off (and the cut made durable) before anything is
        # appended, so a record never follows garbage.
        self.torn_bytes = len(data) - whole
        if self.torn_bytes:
            os.ftruncate(self._fd, whole)
            os.fsync(self._fd)
        os.lseek(self._fd, whole, os.SEEK_SET)
        for record in records:
            super().persist(record, sync=False)
        self._synced = len(self._records)
        self._synced_records = tuple(self._records)
        self._in_file = len(self._records)  # how many records the file holds

    def persist(self, record: Mapping[str, Any], sync: bool) -> None:
        if sync:
            pending = [*self._records[self._in_file :], Record(record)]
            data = b"".join(encode_record(r) for r in pending)
            # One write, then fsync: the durable point of `Persist(sync=True)`.
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes")
            os.fsync(self._fd)
            self._in_file += len(pending)
        super().persist(record, sync)

    def close(self) -> None:
        os.close(self._fd)
