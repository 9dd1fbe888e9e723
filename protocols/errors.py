"""The exceptions tlasim raises, under one root.

This module is stdlib-only and imports nothing from the project, so every
package (`protocols`, `faults`, `tracing`, `sim`) may import it without
breaking the one-way import rule of docs/architecture.md.

A message names the culprit, the value and what was allowed. `InternalError`
alone means "this is a bug in tlasim"; every other class is a problem with the
user's input, environment or protocol.
"""

from __future__ import annotations

import reprlib
from typing import Any


class TlasimError(Exception):
    """Root of every error tlasim raises on purpose."""


class ConfigError(TlasimError):
    """An option, a fault plan or a command-line argument is invalid."""


class TraceFormatError(TlasimError):
    """A trace file cannot be read: bad JSON or msgpack, a missing field, a bad value."""


class SpecError(TlasimError):
    """A spec, its config or the manifest is missing or malformed."""


class SpecParseError(SpecError):
    """SANY rejected a spec module: the spec is wrong, whatever trace or run
    needed it. `report` is SANY's own account, line by line."""

    def __init__(self, module: str, report: str) -> None:
        super().__init__(f"SANY cannot parse {module}:\n{report}")
        self.module = module
        self.report = report

    def __reduce__(self) -> tuple[type[SpecParseError], tuple[str, str]]:
        # So that it crosses to and from a pool or Dask worker whole.
        return (SpecParseError, (self.module, self.report))


class ToolNotFound(TlasimError):
    """Java or tla2tools.jar cannot be found."""


class TLCError(TlasimError):
    """TLC ran but failed in a way that is not a verdict (parse error, crash)."""


class ProtocolViolation(TlasimError):
    """A protocol core received an input it cannot handle in its current state."""


class InvariantViolation(TlasimError):
    """An oracle found a broken safety property."""


class InternalError(TlasimError):
    """A bug in tlasim itself, not in the user's input or protocol."""


class _ShortRepr(reprlib.Repr):
    """repr cut short: a few levels deep, long texts elided, huge integers sized."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = 60
        self.maxother = 60
        self.maxlong = 40

    def repr_int(self, x: int, level: int) -> str:
        if -(10**30) < x < 10**30:
            return str(x)
        # Python will not print an integer of more than 4300 digits at all.
        return f"<an integer of {x.bit_length()} bits>"


_SHORT_REPR = _ShortRepr()


def short_repr(value: Any) -> str:
    """A value from a file, for a message: escaped (repr), short, and never an
    exception of its own, however deep or large the value is."""
    try:
        return _SHORT_REPR.repr(value)
    except (RecursionError, ValueError):  # a container nested past Python's limit
        return f"<a {type(value).__name__} too large to show>"
