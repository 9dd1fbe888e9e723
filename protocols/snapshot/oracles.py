"""Snapshot transfer oracles: the seed's invariants, the replica's data, linearizability.

Safety, after every step, from the spec variables and the step:
- ReadSafe: the receiver serves a read (a `GetOk` it sends) only while ready,
  and for a key whose chunk it has;
- SnapshotComplete: a replaying or ready receiver has every chunk;
- ReplicaMatchesSource: once every chunk is in, the receiver's data equals
  the source's data at the receiver's position; while receiving, every chunk
  it has holds the source's data at its snapshot position. So every write is
  captured exactly once, in the snapshot or in the replay;
- AckedIsDurable: every chunk the receiver ever acknowledged is still in its
  durable state (the receiver keeps it across crashes), and the chunks the
  source counts as acknowledged for the receiver's snapshot are among them;
- the clients' history is linearizable (writes at the source, reads at the
  receiver; protocols/history.py).

Liveness, once faults have healed and the bound has passed: the receiver is
ready and every client has finished all its operations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tlasim.protocols.definition import StepInfo
from tlasim.protocols.errors import InvariantViolation
from tlasim.protocols.history import ClientHistory, unfinished_clients, value_label
from tlasim.protocols.snapshot.config import NO_POSITION, NO_VALUE, SnapshotConfig


def kv_at(keys: Sequence[str], log: Sequence[Mapping[str, Any]], position: int) -> dict[str, Any]:
    data: dict[str, Any] = dict.fromkeys(keys, NO_VALUE)
    for write in log[: max(position, 0)]:
        data[write["key"]] = write["val"]
    return data


def _show(data: Mapping[str, Any], keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={value_label(data[k])}" for k in keys)


class SnapshotOracle:
    def __init__(self, config: SnapshotConfig) -> None:
        self.config = config
        self.history = ClientHistory()
        self.acknowledged: set[tuple[int, str]] = set()  # (snapshot, chunk) the receiver acked
        self._previous: Mapping[str, Any] | None = None
        # Each invariant below is a function of the values it reads (and of
        # `acknowledged`): the inputs with which it last passed are kept, and
        # an invariant whose inputs equal them passes again without running.
        # Most steps change none of an invariant's inputs.
        self._passed: dict[str, tuple[Any, ...]] = {}

    def check_step(self, spec_vars: Mapping[str, Any], step: StepInfo) -> None:
        state = spec_vars["rcvState"]
        chunks = spec_vars["rcvChunks"]
        passed = self._passed
        self._check_reads(step, spec_vars)
        inputs: tuple[Any, ...] = (state, chunks)
        if passed.get("SnapshotComplete") != inputs:
            if state in ("replaying", "ready") and set(chunks) != set(self.config.chunks):
                missing = sorted(set(self.config.chunks) - set(chunks))
                raise InvariantViolation(
                    f"SnapshotComplete: the receiver is {state} without chunk(s) "
                    f"{', '.join(missing)}"
                )
            passed["SnapshotComplete"] = inputs
        log, data = spec_vars["srcLog"], spec_vars["rcvKv"]
        inputs = (log, data, state, spec_vars["rcvPos"], spec_vars["rcvSnap"], chunks)
        if passed.get("ReplicaMatchesSource") != inputs:
            self._check_data(spec_vars)
            passed["ReplicaMatchesSource"] = inputs
        self._check_acks(spec_vars)
        self.history.observe(step)
        self._previous = spec_vars

    def _check_reads(self, step: StepInfo, spec_vars: Mapping[str, Any]) -> None:
        """ReadSafe: a read the receiver serves in this step is served while ready,
        for a key whose chunk it has."""
        previous = self._previous
        if previous is None or step.node != "rcv":
            return
        before, after = previous["msgs"], spec_vars["msgs"]
        served = [
            m for m, count in after.items() if m["type"] == "GetOk" and count > before.get(m, 0)
        ]
        if not served:
            return
        parked = {r["id"]: r["key"] for r in previous["rcvReads"]}
        if step.action == "RcvGet":
            parked[step.params["msg"]["id"]] = step.params["msg"]["key"]
        state, chunks = previous["rcvState"], previous["rcvChunks"]
        for msg in served:
            key = parked.get(msg["id"])
            if key is None or state != "ready" or self.config.chunk_of(key) not in chunks:
                raise InvariantViolation(
                    f"ReadSafe: the receiver served read {value_label(msg['id'])} of "
                    f"{key or 'a key it had not parked'} while {state} with chunk(s) "
                    f"{', '.join(sorted(chunks)) or 'none'}"
                )

    def _check_data(self, spec_vars: Mapping[str, Any]) -> None:
        keys, log = self.config.keys, spec_vars["srcLog"]
        data, state = spec_vars["rcvKv"], spec_vars["rcvState"]
        if state in ("replaying", "ready"):
            position = spec_vars["rcvPos"]
            expected = kv_at(keys, log, position)
            wrong = [k for k in keys if data[k] != expected[k]]
            if wrong:
                raise InvariantViolation(
                    f"ReplicaMatchesSource: the {state} receiver at position {position} holds "
                    f"{_show(data, wrong)}; the source's log up to {position} gives "
                    f"{_show(expected, wrong)}"
                )
        elif spec_vars["rcvSnap"] != NO_POSITION:
            snap = spec_vars["rcvSnap"]
            expected = kv_at(keys, log, snap)
            for chunk in sorted(spec_vars["rcvChunks"]):
                ckeys = self.config.chunk_keys[chunk]
                wrong = [k for k in ckeys if data[k] != expected[k]]
                if wrong:
                    raise InvariantViolation(
                        f"ReplicaMatchesSource: chunk {chunk} of snapshot {snap} holds "
                        f"{_show(data, wrong)}; the source's log up to {snap} gives "
                        f"{_show(expected, wrong)}"
                    )

    def _check_acks(self, spec_vars: Mapping[str, Any]) -> None:
        msgs = spec_vars["msgs"]
        # A message that was in flight at the last step was looked at then.
        before = self._previous["msgs"] if self._previous is not None else {}
        for msg in msgs:
            if msg not in before and msg["type"] == "ChunkAck":
                self.acknowledged.add((msg["snap"], msg["chunk"]))
        snap, chunks = spec_vars["rcvSnap"], spec_vars["rcvChunks"]
        # `acknowledged` only grows, so its size tells whether it changed.
        inputs = (len(self.acknowledged), snap, chunks, spec_vars["srcSnap"], spec_vars["srcAcked"])
        if self._passed.get("AckedIsDurable") == inputs:
            return
        lost = sorted(c for s, c in self.acknowledged if s != snap or c not in chunks)
        if lost:
            raise InvariantViolation(
                f"AckedIsDurable: the receiver acknowledged chunk(s) {', '.join(lost)} but its "
                f"durable state (snapshot {snap}, chunks {', '.join(sorted(chunks)) or 'none'}) "
                "no longer holds them"
            )
        if spec_vars["srcSnap"] == snap and not set(spec_vars["srcAcked"]) <= set(chunks):
            extra = sorted(set(spec_vars["srcAcked"]) - set(chunks))
            raise InvariantViolation(
                f"AckedIsDurable: the source counts chunk(s) {', '.join(extra)} of snapshot "
                f"{snap} as acknowledged, but the receiver does not hold them"
            )
        self._passed["AckedIsDurable"] = inputs

    def check_liveness(self, spec_vars: Mapping[str, Any]) -> str | None:
        parts = []
        if spec_vars["rcvState"] != "ready":
            parts.append(
                f"the receiver is {spec_vars['rcvState']} with chunk(s) "
                f"{', '.join(sorted(spec_vars['rcvChunks'])) or 'none'} at position "
                f"{spec_vars['rcvPos']}, not ready"
            )
        counts = {c: len(ops) for c, ops in self.config.ops.items()}
        busy = unfinished_clients(spec_vars["clientOp"], counts)
        if busy:
            parts.append(busy)
        return "; ".join(parts) or None
