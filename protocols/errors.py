"""The exceptions tlasim raises, under one root.

This module is stdlib-only and imports nothing from the project, so every
package (`protocols`, `faults`, `tracing`, `sim`) may import it without
breaking the one-way import rule of docs/architecture.md.

A message names the culprit, the value and what was allowed. `InternalError`
alone means "this is a bug in tlasim"; every other class is a problem with the
user's input, environment or protocol.
"""

from __future__ import annotations


class TlasimError(Exception):
    """Root of every error tlasim raises on purpose."""


class ConfigError(TlasimError):
    """An option, a fault plan or a command-line argument is invalid."""


class TraceFormatError(TlasimError):
    """A trace file cannot be read: bad JSON or msgpack, a missing field, a bad value."""


class SpecError(TlasimError):
    """A spec, its config or the manifest is missing or malformed."""


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
