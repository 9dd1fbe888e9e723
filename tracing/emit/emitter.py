"""The trace emitter: one structlog logger that writes a trace file.

Theory of operation. The simulator calls `header` once, then `step` for every
atomic step. Each call is a structlog event that runs through a private
processor chain, never the global structlog configuration, so other logging
cannot add timestamps, reorder keys or drop a line:

    _tag_values  Python values -> tagged JSON (values.to_json)
    _render      fixed field order -> bytes (codec.TraceWriter.encode)

and the wrapped "logger" only writes those bytes. Nothing reads a clock:
`ts` is virtual time from the caller and `seq` is counted here, so the same
run gives the same bytes in any process.

The emitter checks what it can cheaply: that `header` comes once and first,
and that every step's vars name exactly the variables the header declared.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, BinaryIO

import structlog
from structlog.typing import Processor

from tlasim.protocols.errors import InternalError, TraceFormatError
from tlasim.tracing.codec import (
    END_EVENT,
    HEADER_EVENT,
    SCHEMA_VERSION,
    STEP_EVENT,
    TraceFormat,
    TraceWriter,
)
from tlasim.tracing.values import to_json

__all__ = ["TraceEmitter"]

_FIELD_ORDER: dict[str, tuple[str, ...]] = {
    HEADER_EVENT: (
        "event",
        "schema",
        "protocol",
        "spec",
        "seed",
        "options",
        "tool_version",
        "source_revision",
        "constants",
        "variables",
        "reproduce",
    ),
    STEP_EVENT: ("event", "seq", "ts", "node", "action", "params", "timer", "faults", "vars"),
    END_EVENT: ("event", "outcome", "failure", "failing_step"),
}


class _Sink:
    """The logger structlog wraps: it writes the bytes the renderer made."""

    __slots__ = ("msg",)

    def __init__(self, writer: TraceWriter) -> None:
        self.msg = writer.write_encoded


class _TraceLogger(structlog.BoundLoggerBase):
    def trace(self, event: str, **fields: Any) -> None:
        self._proxy_to_logger("msg", event, **fields)


def _tag_values(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    if event_dict["event"] == STEP_EVENT:
        try:
            event_dict["params"] = to_json(event_dict["params"], "params")
            event_dict["vars"] = to_json(event_dict["vars"], "vars")
        except TraceFormatError as exc:
            where = f"step {event_dict['seq']} ({event_dict['action']})"
            raise TraceFormatError(f"{where}: {exc}") from None
    elif event_dict["event"] == HEADER_EVENT:
        event_dict["constants"] = to_json(event_dict["constants"], "constants")
        event_dict["options"] = _plain_json(event_dict["options"], "options")
    return event_dict


class _Render:
    __slots__ = ("_encode",)

    def __init__(self, writer: TraceWriter) -> None:
        self._encode = writer.encode

    def __call__(self, _logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> bytes:
        order = _FIELD_ORDER[event_dict["event"]]
        record = {k: event_dict[k] for k in order if k in event_dict}
        if len(record) != len(event_dict):
            extra = sorted(set(event_dict) - set(order))
            raise InternalError(f"trace record fields {extra} have no place in the format")
        return self._encode(record)


class TraceEmitter:
    """Writes a trace: `header` once, then `step` per atomic step.

    `stream=None` writes nothing and checks no values, but still counts steps
    (for runs whose trace nobody will read). `in_memory()` keeps the bytes
    for `getvalue()`.
    """

    def __init__(self, stream: BinaryIO | None, fmt: TraceFormat = "ndjson") -> None:
        self._stream = stream
        self._seq = 0
        self._header_written = False
        self._variables: frozenset[str] | None = None
        self._log: _TraceLogger | None = None
        self._writer: TraceWriter | None = None
        # A writer is made even to discard, so a bad format fails in every mode.
        writer = TraceWriter(stream if stream is not None else io.BytesIO(), fmt)
        if stream is not None:
            self._writer = writer
            processors: list[Processor] = [_tag_values, _Render(writer)]
            self._log = _TraceLogger(_Sink(writer), processors, {})

    @classmethod
    def in_memory(cls, fmt: TraceFormat = "ndjson") -> TraceEmitter:
        """An emitter writing to a buffer; read it with `getvalue()`."""
        return cls(io.BytesIO(), fmt)

    def getvalue(self) -> bytes:
        """The bytes written so far, for an emitter made by `in_memory()`."""
        if not isinstance(self._stream, io.BytesIO):
            raise InternalError("getvalue() needs an emitter made by TraceEmitter.in_memory()")
        return self._stream.getvalue()

    @property
    def steps_written(self) -> int:
        return self._seq

    def header(
        self,
        *,
        protocol: str,
        spec: str,
        seed: int,
        options: Mapping[str, Any],
        tool_version: str,
        source_revision: str,
        constants: Mapping[str, Any],
        variables: Mapping[str, str],
        reproduce: str | None = None,
    ) -> None:
        """Write the header. `variables` maps each spec variable to its TLA+
        type and is written in the given order, which should be the spec's.
        `reproduce` is the command that writes the trace again, if there is one."""
        if self._header_written or self._seq:
            raise InternalError("the trace header must be written once, before any step")
        for name, text in (
            ("protocol", protocol),
            ("spec", spec),
            ("tool_version", tool_version),
            ("source_revision", source_revision),
            ("reproduce", "" if reproduce is None else reproduce),
        ):
            if type(text) is not str:
                raise TraceFormatError(f"header {name} must be a str, not {text!r:.60}")
        if type(seed) is not int:
            raise TraceFormatError(f"header seed must be an int, not {seed!r:.60}")
        bad = [(k, t) for k, t in variables.items() if type(k) is not str or type(t) is not str]
        if bad:
            raise TraceFormatError(f"header variables must map names to TLA+ types: {bad!r:.80}")
        self._header_written = True
        self._variables = frozenset(variables)
        if self._log is not None:
            self._log.trace(
                HEADER_EVENT,
                schema=SCHEMA_VERSION,
                protocol=protocol,
                spec=spec,
                seed=seed,
                options=options,
                tool_version=tool_version,
                source_revision=source_revision,
                constants=constants,
                variables=dict(variables),
                **({} if reproduce is None else {"reproduce": reproduce}),
            )

    def step(
        self,
        *,
        ts: int,
        node: str | None,
        action: str,
        params: Mapping[str, Any],
        vars: Mapping[str, Any],
        faults: Sequence[str] = (),
        timer: str | None = None,
    ) -> None:
        """Write one step; `seq` counts from 0, the `Init` step. `faults` names
        the fault plan's entries that struck in this step (`windows/3`);
        `timer`, the node's timer whose expiry this step answers."""
        if type(ts) is not int or type(action) is not str or not action:
            raise TraceFormatError(
                f"a step needs an int ts and an action name, got ts={ts!r}, action={action!r}"
            )
        if self._variables is not None and vars.keys() != self._variables:
            raise InternalError(
                f"step {self._seq} ({action}) has vars {sorted(vars)}, but the header "
                f"declared {sorted(self._variables)}"
            )
        seq = self._seq
        if self._log is not None:
            # Optional fields are left out when empty, so a line of a run
            # without faults keeps the bytes it had before they were recorded.
            optional: dict[str, Any] = {}
            if node is not None:
                optional["node"] = node
            if timer is not None:
                optional["timer"] = timer
            if faults:
                optional["faults"] = list(faults)
            self._log.trace(
                STEP_EVENT, seq=seq, ts=ts, action=action, params=params, vars=vars, **optional
            )
        self._seq = seq + 1

    def end(self, *, outcome: str, failure: str | None, failing_step: int | None) -> None:
        """Write the run's end: how its oracles judged it, and the step that broke one.

        Readers that only want steps skip this record, so the validator and
        other systems' tools are unaffected; a viewer shows the failure
        beside the step it names without running the oracles again.
        """
        if self._log is not None:
            self._log.trace(END_EVENT, outcome=outcome, failure=failure, failing_step=failing_step)

    def close(self) -> None:
        """Flush the stream (which stays open: the caller owns it)."""
        if self._writer is not None:
            self._writer.close()


def _plain_json(value: Any, path: str) -> Any:
    """Untagged JSON for options: keys sorted, floats allowed if finite."""
    if isinstance(value, Mapping):
        bad = [k for k in value if type(k) is not str]
        if bad:
            raise TraceFormatError(f"{path}: option keys must be strings, not {bad!r:.60}")
        return {k: _plain_json(value[k], f"{path}.{k}") for k in sorted(value)}
    if isinstance(value, list | tuple):
        return [_plain_json(x, f"{path}[{i}]") for i, x in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise TraceFormatError(f"{path}: {value!r} is not a finite number")
    if value is None or isinstance(value, str | int | float):
        return value
    raise TraceFormatError(
        f"{path}: a {type(value).__name__} ({value!r:.60}) cannot be written as an option"
    )
