"""Fixtures shared across the suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(params=["fifo", "device", "folder"])
def irregular_path(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A path that is no regular file: a FIFO with no writer (a plain open()
    of it would block forever), /dev/zero (endless) or a folder."""
    if request.param == "fifo":
        path = tmp_path / "pipe.ndjson"
        os.mkfifo(path)
        return path
    if request.param == "device":
        return Path("/dev/zero")
    return tmp_path
