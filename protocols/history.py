"""The clients' history of a key-value protocol, read from its trace steps.

Key-value protocols (shard split, snapshot transfer) trace each client
operation as a `ClientInvoke` step (params `client`, `kind`, `key`) and a
`ClientReturn` step (params `client`, `msg`; a read's answer carries `val`).
A write's value is its id `[c |-> client, n |-> seq]`, shown here as
"client.seq", and the initial value `[c |-> "-", n |-> 0]` as None.
`ClientHistory` turns those steps into `linearizability.Op`s and checks the
key's history whenever an operation on it completes, so a violation is
reported at the step that reveals it. A write counts from its invocation:
it may take effect before its answer, or never, if it is never answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.protocols.definition import StepInfo
from tlasim.protocols.errors import InvariantViolation
from tlasim.protocols.linearizability import Op, check_linearizable

_INITIAL_CLIENT = "-"


def value_label(value: Mapping[str, Any]) -> str | None:
    """A write id as the history shows it ("c1.3"); None for the initial value."""
    if value["c"] == _INITIAL_CLIENT:
        return None
    return f"{value['c']}.{value['n']}"


def unfinished_clients(
    client_op: Mapping[str, Mapping[str, Any]], op_counts: Mapping[str, int]
) -> str | None:
    """For a liveness report: the clients that have not finished their operations."""
    busy = []
    for client, op in client_op.items():
        done = op["id"]["n"] - (op["kind"] != "idle")
        if done < op_counts[client]:
            busy.append(f"{client} ({done}/{op_counts[client]} done)")
    return "client(s) not finished: " + ", ".join(sorted(busy)) if busy else None


class ClientHistory:
    def __init__(self) -> None:
        self.ops: list[Op] = []
        self._open: dict[
            str, tuple[int, str, str, int, int]
        ] = {}  # client -> (n, kind, key, tick, index)
        self._invoked: dict[str, int] = {}
        self.acked_writes: dict[str, Op] = {}  # label -> the completed write
        # key -> (the latest invocation tick among acknowledged writes, that write's label)
        self.acked_floor: dict[str, tuple[int, str]] = {}
        # How many writes were acknowledged: it changes whenever `acked_writes`
        # or `acked_floor` does, so an oracle can tell that they did not.
        self.writes_acked = 0

    def observe(self, step: StepInfo) -> None:
        if step.action == "ClientInvoke":
            self._invoke(step)
        elif step.action == "ClientReturn":
            self._return(step)

    def _invoke(self, step: StepInfo) -> None:
        client, kind, key = step.params["client"], step.params["kind"], step.params["key"]
        n = self._invoked.get(client, 0) + 1
        self._invoked[client] = n
        index = -1
        if kind == "put":
            index = len(self.ops)
            self.ops.append(Op(client, "write", key, f"{client}.{n}", step.tick, None, (client, n)))
        self._open[client] = (n, kind, key, step.tick, index)

    def _return(self, step: StepInfo) -> None:
        client = step.params["client"]
        n, kind, key, invoke, index = self._open.pop(client)
        if kind == "get":
            label = value_label(step.params["msg"]["val"])
            self.ops.append(Op(client, "read", key, label, invoke, step.tick, (client, n)))
        else:
            op = Op(client, "write", key, f"{client}.{n}", invoke, step.tick, (client, n))
            self.ops[index] = op
            self.acked_writes[op.value] = op
            self.writes_acked += 1
            floor = self.acked_floor.get(key)
            if floor is None or invoke > floor[0]:
                self.acked_floor[key] = (invoke, op.value)
        result = check_linearizable([op for op in self.ops if op.key == key])
        if not result.ok:
            raise InvariantViolation(f"linearizability: {result.explanation}")

    def check_no_lost_write(self, values: Mapping[str, Mapping[str, Any]]) -> None:
        """`values` is the store's current value of each key; raise if it lost an acked write.

        A key must not hold the initial value once a write of it was
        acknowledged, nor a write that completed before an acknowledged write
        of it was invoked (that write must have overwritten it).
        """
        for key, (invoked, acked) in self.acked_floor.items():
            current = value_label(values[key])
            if current == acked:
                continue
            if current is None:
                raise InvariantViolation(
                    f"no lost write: write {acked} of key {key} was acknowledged, but the key "
                    "holds the initial value"
                )
            earlier = self.acked_writes.get(current)
            if earlier is not None and earlier.respond is not None and earlier.respond < invoked:
                raise InvariantViolation(
                    f"no lost write: write {acked} of key {key} was acknowledged, but the key "
                    f"holds {current}, a write that completed at tick {earlier.respond}, before "
                    f"{acked} was invoked at tick {invoked}"
                )
