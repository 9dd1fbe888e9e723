"""A node's own files, opened safely, and the error of a run whose files do not fit.

Theory of operation: a node keeps its log, trace and events in the run's
folder, and the supervisor reads them. Whatever sits at those paths (a
folder, a FIFO, a device, a file grown past reason) must give a one-line
error, never a hang or a traceback: every open here is non-blocking until
the file is known to be regular, and every read is bounded. What a run's
files hold that tlasim cannot make sense of is a `LiveRunError`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tlasim.protocols.errors import ConfigError, TlasimError

# The largest node trace or log file read whole: far above any run's (a line
# is some hundred bytes, a record some tens), below what fits in memory.
NODE_FILE_MAX_BYTES = 1 << 30


class LiveRunError(TlasimError):
    """A live run that cannot go on or be judged because of something outside
    tlasim: a node killed from elsewhere, a datagram or an edit that left the
    nodes' files inconsistent. Bad input (exit 2, one line), never a bug."""


def open_node_file(
    path: Path, what: str, flags: int, *, limit: int = NODE_FILE_MAX_BYTES,
    error: type[TlasimError] = ConfigError,
) -> int:
    """A descriptor of the regular file at `path` (made, mode 0600, if missing),
    opened with `flags`; `error` naming it if it is anything else or too large."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY, 0o600)
    except OSError as exc:
        raise error(f"cannot open the node's {what} {str(path)!r}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"the node's {what} {str(path)!r} is not a regular file")
        if info.st_size > limit:
            raise error(f"the node's {what} {str(path)!r} is {info.st_size:,} bytes; "
                        f"the limit is {limit:,}")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
