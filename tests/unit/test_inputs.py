"""tracing.inputs: a user's file is opened only if it is a regular file within its limit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tlasim.protocols.errors import ConfigError, TraceFormatError
from tlasim.tracing.inputs import check_regular_file, open_regular_file, read_regular_file


def test_read_regular_file_returns_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(b"{}")
    assert read_regular_file(path, "--plan", 10) == b"{}"


def test_a_fifo_is_refused_at_once_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="FIFO"):
        read_regular_file(fifo, "--plan", 10)


def test_dev_zero_is_refused_as_a_device() -> None:
    with pytest.raises(ConfigError, match="character device"):
        read_regular_file("/dev/zero", "--mapping", 10)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="folder"):
        open_regular_file(tmp_path, "trace", 10, error=TraceFormatError)


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 11)
    with pytest.raises(ConfigError, match="limit is 10 bytes"):
        read_regular_file(path, "--plan", 10)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.json"):
        read_regular_file(tmp_path / "missing.json", "--plan", 10)


def test_a_name_with_control_characters_is_printed_escaped(tmp_path: Path) -> None:
    fifo = tmp_path / "a\nACCEPTED: b"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError) as caught:
        read_regular_file(fifo, "--plan", 10)
    assert "\n" not in str(caught.value)


def test_check_regular_file_tells_missing_from_irregular(tmp_path: Path) -> None:
    assert check_regular_file(tmp_path / "new.db", "--db") is False
    (tmp_path / "old.db").write_bytes(b"")
    assert check_regular_file(tmp_path / "old.db", "--db") is True
    with pytest.raises(ConfigError, match="character device"):
        check_regular_file("/dev/zero", "--db")
