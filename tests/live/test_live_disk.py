"""The live node's log file: what survives a SIGKILL, and a torn last record."""

from __future__ import annotations

from pathlib import Path

from tlasim.sim.live.disk import FileDisk, encode_record


def test_only_synced_records_reach_the_file(tmp_path: Path) -> None:
    path = tmp_path / "n.log"
    disk = FileDisk(path)
    disk.persist({"kind": "begin", "tx": "t1"}, sync=False)
    assert path.read_bytes() == b""
    disk.persist({"kind": "commit", "tx": "t1"}, sync=True)
    disk.persist({"kind": "begin", "tx": "t2"}, sync=False)
    disk.close()
    # A new process (a restart after SIGKILL) sees both synced records, in
    # order, and not the one that was only in memory.
    again = FileDisk(path)
    assert [dict(r) for r in again.synced()] == [
        {"kind": "begin", "tx": "t1"}, {"kind": "commit", "tx": "t1"}
    ]
    assert again.torn_bytes == 0
    again.close()


def test_a_torn_last_record_is_cut_and_appending_resumes_on_a_boundary(tmp_path: Path) -> None:
    path = tmp_path / "n.log"
    whole = encode_record({"kind": "prepared", "tx": "t1"})
    torn = encode_record({"kind": "committed", "tx": "t1"})[:-3]
    path.write_bytes(whole + torn)
    disk = FileDisk(path)
    assert [dict(r) for r in disk.synced()] == [{"kind": "prepared", "tx": "t1"}]
    assert disk.torn_bytes == len(torn)
    assert path.stat().st_size == len(whole)
    disk.persist({"kind": "aborted", "tx": "t2"}, sync=True)
    disk.close()
    assert [dict(r) for r in FileDisk(path).synced()] == [
        {"kind": "prepared", "tx": "t1"}, {"kind": "aborted", "tx": "t2"}
    ]


def test_a_record_whose_checksum_fails_ends_the_log(tmp_path: Path) -> None:
    path = tmp_path / "n.log"
    first = encode_record({"kind": "begin", "tx": "t1"})
    second = bytearray(encode_record({"kind": "commit", "tx": "t1"}))
    second[-1] ^= 0xFF
    path.write_bytes(first + bytes(second))
    disk = FileDisk(path)
    assert [dict(r) for r in disk.synced()] == [{"kind": "begin", "tx": "t1"}]
    assert disk.torn_bytes == len(second)
