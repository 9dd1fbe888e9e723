"""Files a user names for tlasim to write: replaced whole, or written as a stream.

Theory of operation. An output path on the command line may name anything,
as an input path may (tracing/inputs.py): a regular file, a FIFO, a device
such as `/dev/null`, a folder, a socket. Every writer of a user-named path
opens it here, by one rule:

- a new path or a regular file is written to a temporary file in the same
  folder and renamed over the path when complete, so no reader ever sees
  half a file, and a write that fails leaves what was there as it was. A
  symlink is resolved first, so the file it points to is replaced and the
  link stays a link; an existing file keeps its permission bits;
- a FIFO or a character device is opened for writing as it is (no create,
  no truncate, no rename) and written straight into. The open never blocks:
  a FIFO no process reads is refused at once;
- a folder, a socket or a block device, or a path whose folder cannot be
  made or written in, is refused with a one-line error before a byte is
  written, and nothing is lost. A missing folder is made.

The rule is documented in docs/trace-format.md.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import BinaryIO

from tlasim.protocols.errors import ConfigError, TlasimError
from tlasim.tracing.inputs import file_kind

__all__ = ["is_stream", "open_output", "write_output"]

# What is written as it is, never replaced: a FIFO or a character device.
_STREAMS = (stat.S_ISFIFO, stat.S_ISCHR)
_ALLOWED = "tlasim writes only regular files, FIFOs and character devices"
_NEW_FILE_MODE = 0o666  # narrowed by the umask, as for any file a program creates
_TEMPORARY_TRIES = 8  # random temporary names tried before giving up
_BASE_KEPT = 200  # characters of the file's name kept in its temporary file's name


def _is_stream(mode: int) -> bool:
    return any(test(mode) for test in _STREAMS)


def _refuse(mode: int, what: str, path: str, error: type[TlasimError]) -> None:
    if not (stat.S_ISREG(mode) or _is_stream(mode)):
        raise error(f"{what} {path!r} is {file_kind(mode)}; {_ALLOWED}")


@contextmanager
def open_output(
    path: str | os.PathLike[str], what: str, *, error: type[TlasimError] = ConfigError
) -> Iterator[BinaryIO]:
    """A binary stream that writes `path` by the module's rule.

    Raises `error` naming `what` (the option, say `--trace`) and the path
    when the path cannot be written, before the block runs. For a regular
    file, an exception leaving the block removes the temporary file and
    leaves the old file as it was; for a FIFO or a device, what the block
    wrote has gone.
    """
    name = os.fspath(path)
    if not name or name.endswith(("/", os.sep)):
        raise error(f"{what} {name!r} is not a file name; {_ALLOWED}")
    try:
        mode: int | None = os.stat(name).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise error(f"{what} {name!r}: cannot write it: {exc.strerror}") from None
    if mode is not None:
        _refuse(mode, what, name, error)
    if mode is not None and _is_stream(mode):
        with _open_stream(name, what, error) as stream:
            yield stream
        return
    # The folder of the file the path names (through any symlinks) holds the
    # temporary file, so the rename never crosses a filesystem.
    target = os.path.realpath(name)
    fd, temporary = _create_beside(target, name, what, error)
    try:
        if mode is not None:
            os.fchmod(fd, stat.S_IMODE(mode))
        with os.fdopen(fd, "wb") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        _replace(temporary, target, name, what, error)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a FIFO or a character device: written as it is, and
    so never to be read back."""
    try:
        return _is_stream(os.stat(path).st_mode)
    except OSError:
        return False


def write_output(
    path: str | os.PathLike[str],
    what: str,
    data: bytes,
    *,
    error: type[TlasimError] = ConfigError,
) -> None:
    """Write `data` to `path` by the module's rule (see `open_output`)."""
    with open_output(path, what, error=error) as stream:
        stream.write(data)


@contextmanager
def _open_stream(name: str, what: str, error: type[TlasimError]) -> Iterator[BinaryIO]:
    """A FIFO or a character device, opened for writing as it is."""
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise error(f"{what} {name!r}: no process reads the FIFO") from None
        raise error(f"{what} {name!r}: cannot write it: {exc.strerror}") from None
    try:
        # The path may have changed since it was looked at: the file opened
        # is the one that counts. It was opened without O_CREAT or O_TRUNC,
        # so whatever it is has not been touched.
        mode = os.fstat(fd).st_mode
        if not _is_stream(mode):
            raise error(f"{what} {name!r} changed while tlasim opened it; give it again")
        os.set_blocking(fd, True)
        stream = os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise
    with stream:
        yield stream


def _create_beside(
    target: str, name: str, what: str, error: type[TlasimError]
) -> tuple[int, str]:
    """A new temporary file in `target`'s folder, open for writing."""
    folder, base = os.path.split(target)
    try:
        # A missing folder is made, as `--trace out/1.ndjson` in a new
        # checkout expects; a file in the way is refused below.
        os.makedirs(folder, exist_ok=True)
        folder_mode = os.stat(folder).st_mode
    except OSError as exc:
        raise error(f"{what} {name!r}: cannot use the folder {folder!r}: {exc.strerror}") from None
    if not stat.S_ISDIR(folder_mode):
        raise error(f"{what} {name!r}: {folder!r} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise error(f"{what} {name!r}: cannot write in the folder {folder!r}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(_TEMPORARY_TRIES):
        # The name is cut so that the temporary name stays within NAME_MAX.
        temporary = os.path.join(folder, f".{base[:_BASE_KEPT]}.{secrets.token_hex(6)}.partial")
        try:
            return os.open(temporary, flags, _NEW_FILE_MODE), temporary
        except FileExistsError:
            continue
        except OSError as exc:
            raise error(f"{what} {name!r}: cannot write it: {exc.strerror}") from None
    raise error(f"{what} {name!r}: cannot make a temporary file in {folder!r}")


def _replace(
    temporary: str, target: str, name: str, what: str, error: type[TlasimError]
) -> None:
    """Move the finished file over `target`, unless `target` became what may not be replaced."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise error(f"{what} {name!r}: cannot write it: {exc.strerror}") from None
    if mode is not None and not stat.S_ISREG(mode):
        # The rule was applied when the write began; a rename now would
        # replace a FIFO, a device or a link put there since.
        raise error(f"{what} {name!r} changed while tlasim wrote it: it is now {file_kind(mode)}")
    try:
        os.replace(temporary, target)
    except OSError as exc:
        raise error(f"{what} {name!r}: cannot write it: {exc.strerror}") from None
