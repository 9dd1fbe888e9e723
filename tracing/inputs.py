"""Files a user names, opened safely: regular files only, within a size limit.

Theory of operation. A path on the command line may name anything: a FIFO
(whose open blocks until a writer comes), `/dev/zero` (endless), a folder.
Every reader of a user's file opens it here. The open never blocks
(O_NONBLOCK, cleared once the file is known to be regular), and the size is
checked before a byte is read, so no input hangs tlasim or fills its memory.
The limits are documented in docs/trace-format.md.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from tlasim.protocols.errors import ConfigError, TlasimError

__all__ = [
    "MAPPING_MAX_BYTES",
    "PLAN_MAX_BYTES",
    "TRACE_MAX_BYTES",
    "check_regular_file",
    "file_kind",
    "open_regular_file",
    "read_regular_file",
]

TRACE_MAX_BYTES = 4 * 2**30  # a trace file: far above any campaign's, below what fits in memory
PLAN_MAX_BYTES = 16 * 2**20  # a fault plan, or a trace read for its header's plan
MAPPING_MAX_BYTES = 2**20  # a foreign log's mapping file

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a file of this `st_mode` is, in words: "a FIFO (named pipe)", "a folder"..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse_irregular(mode: int, what: str, path: str, error: type[TlasimError]) -> None:
    if not stat.S_ISREG(mode):
        raise error(f"{what} {path!r} is {file_kind(mode)}; tlasim reads only regular files")


def check_regular_file(
    path: str | os.PathLike[str], what: str, *, error: type[TlasimError] = ConfigError
) -> bool:
    """Whether `path` exists; raise `error` if it exists but is not a regular file.

    For files another library opens (SQLite opens a results database itself).
    """
    name = os.fspath(path)
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise error(f"{what} {name!r}: cannot use it: {exc.strerror}") from None
    _refuse_irregular(mode, what, name, error)
    return True


def open_regular_file(
    path: str | os.PathLike[str],
    what: str,
    limit: int,
    *,
    error: type[TlasimError] = ConfigError,
) -> BinaryIO:
    """Open a regular file of at most `limit` bytes for binary reading.

    Raises `error` naming the file when it is missing, unreadable, not a
    regular file or too large. The open never blocks, even on a FIFO.
    """
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise error(f"{what} {name!r}: cannot read it: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        _refuse_irregular(info.st_mode, what, name, error)
        if info.st_size > limit:
            raise error(
                f"{what} {name!r} is {info.st_size:,} bytes; the limit is {limit:,} bytes"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_file(
    path: str | os.PathLike[str],
    what: str,
    limit: int,
    *,
    error: type[TlasimError] = ConfigError,
) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (see `open_regular_file`)."""
    with open_regular_file(path, what, limit, error=error) as stream:
        # A file that grows after the check still cannot exceed the limit.
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise error(f"{what} {os.fspath(path)!r} grew past the limit of {limit:,} bytes")
    return data
