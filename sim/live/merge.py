"""One trace from every node's own lines: a causal order, the global state, the oracle.

Theory of operation: every node logged its steps with a Lamport clock
(sim/live/nodelog.py). If step a happened before step b (same node, or a
message from a's step consumed by b), a's clock is smaller, so sorting every
line by (clock, node, line number) gives a sequence that respects causality:
one of the orders the run could have taken, not necessarily the one real
time took. Steps of different nodes that no message connects commute (each
changes only its own node's variables and adds or consumes its own
messages), so that sequence is a behaviour of the implementation, and the
spec's state after each line is the refinement mapping of every node's
latest view, log and liveness, with the messages sent and not yet consumed.

The merged lines carry every spec variable, the network's too: no node sees
the messages in flight, but every line says what its step put in flight
and consumed, so the bag is rebuilt here from the sends, receipts, losses
and duplicates in merged order. A datagram that never arrived (dropped by
a full socket buffer, or read by a node killed before it logged the
receipt) stays in the bag, as a message the spec's network has not yet
delivered. So TLC checks the network as it checks every node, and a viewer
can match each delivery to its send.

Lines that cannot be put in such an order (a clock that goes back within a
node, a receipt or loss of a message no earlier line sent) are not a bug of
the merge but a run whose files do not fit together: a datagram from
outside the run that a node took, or a file edited under it. They are a
`LiveRunError` naming the line, reported as such, never an internal error.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, BinaryIO

from tlasim.protocols.definition import ProtocolDefinition, StepInfo
from tlasim.protocols.errors import InvariantViolation
from tlasim.sim.kernel.simulation import OUTCOME_LIVENESS, OUTCOME_OK, OUTCOME_SAFETY
from tlasim.sim.live.files import LiveRunError
from tlasim.sim.live.nodelog import NodeLine, read_node_log
from tlasim.tracing.codec import (
    END_EVENT,
    HEADER_EVENT,
    SCHEMA_VERSION,
    STEP_EVENT,
    TraceFormat,
    TraceWriter,
)
from tlasim.tracing.values import to_json


@dataclass(slots=True)
class MergedRun:
    steps: int  # trace lines after Init
    failure: str | None  # the first safety property the oracle found broken
    failing_step: int | None  # the seq of the line after which it broke
    unfinished: str | None  # the liveness oracle's view of the last state
    last_tick: int  # the latest tick of any line: how long the nodes worked
    last_vars: Mapping[str, Any]


def read_node_logs(run_dir: Path, node_ids: Sequence[str]) -> dict[str, list[NodeLine]]:
    """Each node's lines, from `NODE.trace` in `run_dir` (a node that never ran has none)."""
    logs: dict[str, list[NodeLine]] = {}
    for node in node_ids:
        path = run_dir / f"{node}.trace"
        logs[node] = read_node_log(path) if os.path.lexists(path) else []
    return logs


def causal_order(logs: Mapping[str, Sequence[NodeLine]]) -> list[NodeLine]:
    """Every line, ordered by Lamport clock, then node, then position in its file."""
    for node, lines in logs.items():
        for before, after in pairwise(lines):
            if after.clock <= before.clock:
                raise LiveRunError(
                    f"{node}'s trace line {after.number} has clock {after.clock}, not after "
                    f"line {before.number}'s {before.clock}: its Lamport clock went back, "
                    "so the lines cannot be ordered (was the trace edited during the run?)"
                )
    merged = [line for lines in logs.values() for line in lines]
    merged.sort(key=lambda line: (line.clock, line.owner, line.number))
    return merged


class Merger:
    """Replays merged lines through the refinement mapping and the oracle."""

    def __init__(self, protocol: ProtocolDefinition, config: Any) -> None:
        self.protocol = protocol
        self.config = config
        self.oracle = protocol.make_oracle(config)
        node_ids = protocol.node_ids(config)
        self.views: dict[str, Mapping[str, Any]] = {
            node: protocol.make_core(config, node).view() for node in node_ids
        }
        self.logs: dict[str, tuple[Any, ...]] = {node: () for node in node_ids}
        self.up: dict[str, bool] = dict.fromkeys(node_ids, True)
        self.in_flight: Counter[Hashable] = Counter()
        self._bag: dict[Hashable, int] = {}
        self.init_vars = self._vars()

    def _vars(self) -> dict[str, Any]:
        return self.protocol.spec_vars(self.config, self.views, self.logs, self.up, self._bag)

    def _move(self, record: Hashable, by: int, line: NodeLine) -> None:
        count = self.in_flight[record] + by
        if count < 0:
            raise LiveRunError(
                f"{line.owner}'s trace line {line.number} ({line.action}) consumes a message "
                "that no line of the run sent before it, so the nodes' traces do not fit "
                "together (a datagram from outside the run, or a trace edited during it)"
            )
        if count:
            self.in_flight[record] = count
        else:
            del self.in_flight[record]

    @staticmethod
    def _net_msg(line: NodeLine) -> Hashable:
        """The message a network step (a loss or a duplicate) names."""
        if "msg" not in line.params:
            raise LiveRunError(f"{line.owner}'s trace line {line.number} ({line.action}) "
                               "names no message")
        msg: Hashable = line.params["msg"]
        return msg

    def step(self, line: NodeLine) -> dict[str, Any]:
        """The spec variables after `line`."""
        owner = line.owner
        if line.log is not None:
            self.logs[owner] = line.log
        self.views[owner] = line.view
        self.up[owner] = line.up
        moved = bool(line.sent) or line.recv is not None
        for record in line.sent:
            self._move(record, 1, line)
        if line.recv is not None:
            self._move(line.recv, -1, line)
        if line.action == self.protocol.net_duplicate_action:
            self._move(self._net_msg(line), 1, line)
            moved = True
        elif line.action == self.protocol.net_lose_action:
            self._move(self._net_msg(line), -1, line)
            moved = True
        if moved:
            self._bag = dict(self.in_flight)
        return self._vars()


def write_merged(
    protocol: ProtocolDefinition,
    config: Any,
    lines: Sequence[NodeLine],
    stream: BinaryIO,
    header: Mapping[str, Any],
    fmt: TraceFormat = "ndjson",
) -> MergedRun:
    """Write the merged trace to `stream` and hold the oracle to every line.

    `header` holds the header's fields but the schema, spec, variables and
    constants, which come from the protocol.
    """
    merger = Merger(protocol, config)
    writer = TraceWriter(stream, fmt)
    writer.write({
        "event": HEADER_EVENT,
        "schema": SCHEMA_VERSION,
        **header,
        "spec": protocol.spec_module,
        "constants": to_json(protocol.spec_constants(config), "constants"),
        "variables": dict(protocol.variable_types),
    })
    result = MergedRun(0, None, None, None, 0, merger.init_vars)

    def emit(seq: int, ts: int, node: str | None, action: str, params: Mapping[str, Any],
             spec_vars: Mapping[str, Any], line: NodeLine | None = None) -> None:
        record: dict[str, Any] = {"event": STEP_EVENT, "seq": seq, "ts": ts}
        if node is not None:
            record["node"] = node
        record["action"] = action
        record["params"] = to_json(params, "params")
        # As a simulated run's lines: the timer a step answers, and the plan's
        # faults that struck in it (docs/trace-format.md).
        if line is not None and line.timer is not None:
            record["timer"] = line.timer
        if line is not None and line.faults:
            record["faults"] = list(line.faults)
        record["vars"] = to_json(dict(spec_vars), "vars")
        writer.write(record)
        if result.failure is None:
            try:
                merger.oracle.check_step(spec_vars, StepInfo(ts, node, action, params))
            except InvariantViolation as violation:
                result.failure = str(violation)
                result.failing_step = seq

    emit(0, 0, None, "Init", {}, merger.init_vars)
    spec_vars: Mapping[str, Any] = merger.init_vars
    for seq, line in enumerate(lines, 1):
        spec_vars = merger.step(line)
        emit(seq, line.ts, line.node, line.action, line.params, spec_vars, line)
    result.steps = len(lines)
    result.last_tick = max((line.ts for line in lines), default=0)
    result.last_vars = spec_vars
    result.unfinished = merger.oracle.check_liveness(spec_vars)
    # How the oracles judged the run, as a simulated trace ends.
    if result.failure is not None:
        end = {"outcome": OUTCOME_SAFETY, "failure": result.failure,
               "failing_step": result.failing_step}
    elif result.unfinished is not None:
        end = {"outcome": OUTCOME_LIVENESS, "failure": result.unfinished, "failing_step": None}
    else:
        end = {"outcome": OUTCOME_OK, "failure": None, "failing_step": None}
    writer.write({"event": END_EVENT, **end})
    writer.close()
    return result
