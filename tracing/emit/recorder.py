"""An emitter that records a run for TLC instead of writing its log.

A campaign that validates every run used to write each trace as a log and
read it back, which cost several times the run itself. `TLCRecorder` takes
the same calls as `TraceEmitter` and encodes each step straight into the
binary form TLC reads (`tracing.tla.binary`), from the simulator's own
values, by the same rules the log's writer and reader apply (`freeze`), so
TLC checks the values the log would have held. A run whose log is needed
(a failure to keep, a rejection to report) is replayed with a real emitter:
the simulator is deterministic.

A value the generated modules cannot hold stops the recording (`refused`
says why): such a run gets its verdict, or its error, from the validator on
its log.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from tlasim.protocols.errors import InternalError, TraceFormatError
from tlasim.tracing.emit.emitter import TraceEmitter
from tlasim.tracing.tla.binary import PreparedTrace, TraceBlobWriter
from tlasim.tracing.tla.pickled import Unpicklable, pickled_trace
from tlasim.tracing.tla.trace_module import WriteCheckMemo, check_writable
from tlasim.tracing.values import FnMap, Record, freeze

__all__ = ["TLCRecorder"]

_FROZEN = frozenset({str, int, bool, Record, FnMap, frozenset})


class TLCRecorder(TraceEmitter):
    """Records a run's steps for TLC; `prepared()` gives the result."""

    def __init__(self, *, persistent: bool = False) -> None:
        """`persistent`: the caller never changes a value it passed (see
        `TraceBlobWriter`), so a variable a step left alone costs nothing."""
        super().__init__(None)
        self._persistent = persistent
        # Under `persistent` the lines are kept and pickled whole at the end
        # (`tracing.tla.pickled`, C speed); otherwise each is encoded as it
        # comes, since the caller may change its values after.
        self._lines: list[tuple[str, Any, Mapping[str, Any]]] = []
        self._blob = TraceBlobWriter(persistent=persistent)
        self._prepared: PreparedTrace | None = None
        self._spec: str | None = None
        self._constants: Mapping[str, Any] = {}
        self._declared: frozenset[str] = frozenset()
        self._first_action = ""
        self._later: set[str] = set()
        self._logged: set[str] = set()
        self._full = True
        self.refused: str | None = None

    def header(self, *, spec: str, constants: Mapping[str, Any],
               variables: Mapping[str, str], **_rest: Any) -> None:
        if self._spec is not None or self.steps_written:
            raise InternalError("the trace header must be written once, before any step")
        self._spec = spec
        self._declared = frozenset(variables)
        try:
            self._constants = freeze(dict(constants), "constants")
            memo = WriteCheckMemo()
            for name, value in self._constants.items():
                check_writable(value, f"constant {name}", memo)
        except TraceFormatError as exc:
            self.refused = str(exc)

    def step(self, *, ts: int, node: str | None, action: str,
             params: Mapping[str, Any], vars: Mapping[str, Any],
             faults: Sequence[str] = (), timer: str | None = None) -> None:
        seq = self.steps_written
        self._seq = seq + 1
        if self.refused is not None:
            return
        if vars.keys() != self._declared:
            raise InternalError(
                f"step {seq} ({action}) has vars {sorted(vars)}, but the header "
                f"declared {sorted(self._declared)}"
            )
        if self._persistent:
            # The promise covers the spec variables (the kernel's snapshots),
            # not a step's params, which a core may build and change again:
            # kept until the run ends, they are copied. Mostly a few values
            # that cannot change (a Record's are frozen when it is built),
            # whose dict a shallow copy freezes.
            if type(params) is dict and _FROZEN.issuperset(map(type, params.values())):
                params = dict(params)
            else:
                params = copy.deepcopy(params)
            self._lines.append((action, params, vars))
        else:
            try:
                self._blob.step(action, params, vars)
            except TraceFormatError as exc:
                self.refused = f"step {seq} ({action}): {exc}"
                return
        if seq == 0:
            self._first_action = action
        else:
            self._later.add(action)

    def prepared(self) -> PreparedTrace | None:
        """The run, ready for TLC; None when a value stopped the recording
        (`refused` says why)."""
        if self._prepared is not None:
            return self._prepared
        if self.refused is not None or self._spec is None:
            return None
        blob = self._pickled() if self._persistent else self._blob.blob()
        if blob is None:
            return None
        self._prepared = PreparedTrace(
            spec=self._spec,
            constants=self._constants,
            blob=blob,
            steps=self.steps_written,
            first_action=self._first_action,
            later_actions=frozenset(self._later),
            variables=self._declared,
            full_logs=True,
        )
        return self._prepared

    def _pickled(self) -> bytes | None:
        """The kept lines as a pickled trace; or, for a value the pickle
        does not carry, as `TraceBlobWriter` encodes them, which names a
        value the modules cannot hold (then `refused` says which, and None)."""
        try:
            return pickled_trace(self._lines)
        except Unpicklable:
            pass
        for seq, (action, params, vars) in enumerate(self._lines):
            try:
                self._blob.step(action, params, vars)
            except TraceFormatError as exc:
                self.refused = f"step {seq} ({action}): {exc}"
                return None
        return self._blob.blob()
