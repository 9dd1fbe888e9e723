"""Rules the snapshot transfer code states are rules TLC enforces.

docs/snapshot-model.md lists each rule the cores state or rely on, and where
SnapshotTransferMsg enforces it. The rules this change tightened are the
durability rules: a node's durable spec variables change only in a step that
syncs the change (a write is synced before its PutOk leaves, a chunk before
its ChunkAck, a replayed batch before its RecordsAck). For each, a core that
breaks exactly that rule runs swarm seeds until one shows the scenario; TLC
must reject that trace at the very line where the rule was first broken
(found here from the trace, not written down), and the correct core must
pass the same seed, whose trace shows the same scenario. Issue 30's
conformance report added the order rule: the source sends the first chunk
the receiver lacks, one at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tlasim.protocols.base import Core, Effect, Input, Persist, Timeout
from tlasim.protocols.snapshot.config import RECEIVER_ID, SOURCE_ID, SnapshotConfig
from tlasim.protocols.snapshot.definition import SnapshotTransfer
from tlasim.protocols.snapshot.receiver import _JOIN_TIMER, READY, RECEIVING, Receiver
from tlasim.protocols.snapshot.source import Source
from tlasim.protocols.steps import StepList
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import Trace, TraceStep, read_trace
from tlasim.tracing.validation.validator import validate_traces

SEEDS = range(100)  # swarm seeds searched for one that shows the scenario

# The line where a trace first shows the rule's scenario: in a broken core's
# trace, where the rule was first broken. None if the trace never shows it.
FirstBreak = Callable[[Trace], int | None]


def _unsynced(effects: list[Effect], kind: str | None) -> list[Effect]:
    """`effects` with each persist of a record of `kind` (any, if None) left unsynced."""
    return [
        replace(e, sync=False)
        if isinstance(e, Persist) and (kind is None or e.record.get("kind") == kind)
        else e
        for e in effects
    ]


class SourceAcksUnsyncedWrites(Source):
    """Appends a write to its log without syncing it, and acknowledges it at once."""

    def handle(self, now: int, event: Input) -> list[Effect]:
        return _unsynced(super().handle(now, event), None)


class ReceiverAcksUnsyncedChunks(Receiver):
    """Persists a chunk without syncing it, and acknowledges it at once."""

    def handle(self, now: int, event: Input) -> list[Effect]:
        return _unsynced(super().handle(now, event), "chunk")


class ReceiverKeepsReplayInMemory(Receiver):
    """Applies and acknowledges replayed records without persisting them."""

    def handle(self, now: int, event: Input) -> list[Effect]:
        effects = super().handle(now, event)
        return [
            e for e in effects if not (isinstance(e, Persist) and e.record["kind"] == "records")
        ]


class SourceSendsChunksOutOfOrder(Source):
    """Sends the last chunk the receiver lacks instead of the first: the data
    is right, only the order the source's rule fixes is broken."""

    def _chunks(self) -> list[Effect]:
        missing = [chunk for chunk in self.config.chunks if chunk not in self.acked]
        return [self._chunk_send(missing[-1])] if missing else []


class ReceiverJoinsWhenReady(Receiver):
    """Keeps re-joining on its timer once ready, with no read parked."""

    def handle(self, now: int, event: Input) -> list[Effect]:
        effects = super().handle(now, event)
        if (isinstance(event, Timeout) and event.name == _JOIN_TIMER
                and self.state == READY and not self.reads):
            out = StepList(self.view)
            self._join(out)
            effects = out.effects + effects  # the timer it re-armed stays
        return effects


class ReceiverServesLate(Receiver):
    """Serves a read whose index the replay has reached only at its next
    event (a chunk, a Get, its join timer), not in the handler of the
    ReadIndex or Records that made it servable."""

    def __init__(self, config: SnapshotConfig) -> None:
        super().__init__(config)
        self._due = False

    def _serve(self, out: StepList) -> None:
        self._due = True  # handle() serves after the next event

    def handle(self, now: int, event: Input) -> list[Effect]:
        due, self._due = self._due, False
        effects = super().handle(now, event)
        if due:
            out = StepList(self.view)
            super()._serve(out)
            effects += out.effects
        return effects


class WithCore(SnapshotTransfer):
    """Snapshot transfer with one node's core replaced; the rest are the correct ones."""

    def __init__(self, node_id: str, core_class: type[Source] | type[Receiver]) -> None:
        super().__init__()
        self.node_id, self.core_class = node_id, core_class

    def make_core(self, config: SnapshotConfig, node_id: str) -> Core:
        if node_id == self.node_id:
            return self.core_class(config)
        return super().make_core(config, node_id)


def _first(trace: Trace, shows: Callable[[TraceStep, TraceStep], bool]) -> int | None:
    """The line of the first step that `shows(before, after)` picks."""
    for before, after in zip(trace.steps, trace.steps[1:], strict=False):
        if shows(before, after):
            return after.line
    return None


def _grew(before: Mapping[str, Any], after: Mapping[str, Any], var: str) -> bool:
    return bool(len(after[var]) > len(before[var]))


def first_write_appended(trace: Trace) -> int | None:
    """The first SrcWrite that appends to the log (and acknowledges the write)."""
    return _first(
        trace, lambda b, a: a.action == "SrcWrite" and _grew(b.vars, a.vars, "srcLog")
    )


def first_chunk_acked_while_receiving(trace: Trace) -> int | None:
    """The first RcvChunk that adds a chunk and acknowledges it, the snapshot still
    incomplete (a chunk that completes it is synced with the receiver's new state)."""
    return _first(
        trace,
        lambda b, a: a.action == "RcvChunk"
        and _grew(b.vars, a.vars, "rcvChunks")
        and a.vars["rcvState"] == RECEIVING,
    )


def first_records_applied(trace: Trace) -> int | None:
    """The first RcvRecords that applies a batch holding at least one record."""
    return _first(
        trace, lambda b, a: a.action == "RcvRecords" and a.vars["rcvPos"] > b.vars["rcvPos"]
    )


def first_chunk_sent(trace: Trace) -> int | None:
    """The first step that sends a chunk while two or more are unacknowledged
    (so the order decides which one goes); in an out-of-order core's trace, the
    first chunk sent out of ChunkOrder."""
    chunks = tuple(trace.header["constants"]["ChunkOrder"])

    def sends_with_choice(before: TraceStep, after: TraceStep) -> bool:
        old, new = before.vars["msgs"], after.vars["msgs"]
        sent = [m for m in new if m["type"] == "Chunk" and new[m] > old.get(m, 0)]
        unacked = [c for c in chunks if c not in after.vars["srcAcked"]]
        return bool(sent) and len(unacked) >= 2

    return _first(trace, sends_with_choice)


def first_receiver_step_while_a_read_is_servable(trace: Trace) -> int | None:
    """The receiver's first step, other than a crash, taken while a parked
    read has its index and the replay has reached it: from the correct core,
    the RcvServe in the same handler."""
    def servable(before: TraceStep, after: TraceStep) -> bool:
        reads, pos = before.vars["rcvReads"], before.vars["rcvPos"]
        return (after.node == RECEIVER_ID and after.action != "RcvCrash"
                and any(r["idx"] != -1 and pos >= r["idx"] for r in reads))

    return _first(trace, servable)


def _trace(protocol: SnapshotTransfer, seed: int, path: Path) -> Trace:
    run_seed(protocol, seed, trace_path=path)
    return read_trace(path)


@pytest.mark.parametrize(
    ("node_id", "core_class", "first_break"),
    [
        (SOURCE_ID, SourceAcksUnsyncedWrites, first_write_appended),
        (RECEIVER_ID, ReceiverAcksUnsyncedChunks, first_chunk_acked_while_receiving),
        (RECEIVER_ID, ReceiverKeepsReplayInMemory, first_records_applied),
        (SOURCE_ID, SourceSendsChunksOutOfOrder, first_chunk_sent),
        (RECEIVER_ID, ReceiverServesLate, first_receiver_step_while_a_read_is_servable),
    ],
    ids=["write-acked-before-sync", "chunk-acked-before-sync", "replay-not-persisted",
         "chunks-out-of-order", "serve-leaves-the-handler"],
)
def test_snapshot_core_that_breaks_a_rule_is_rejected_where_it_breaks_it(
    node_id: str,
    core_class: type[Source] | type[Receiver],
    first_break: FirstBreak,
    tmp_path: Path,
) -> None:
    broken = WithCore(node_id, core_class)
    for seed in SEEDS:
        trace = _trace(broken, seed, tmp_path / f"broken-{seed}.ndjson")
        line = first_break(trace)
        if line is not None:
            break
    else:
        pytest.fail(f"no seed in {SEEDS} shows the scenario {core_class.__name__} breaks")
    correct = _trace(SnapshotTransfer(), seed, tmp_path / f"correct-{seed}.ndjson")
    assert first_break(correct) is not None, f"seed {seed}: the correct run lacks the scenario"
    rejected, accepted = validate_traces([trace, correct])
    assert not rejected.accepted, f"seed {seed}: TLC accepted a trace that breaks the rule"
    assert rejected.divergence is not None
    assert rejected.divergence.line == line, (seed, rejected.divergence)
    assert accepted.accepted, (seed, accepted.divergence)


def test_a_ready_receiver_that_joins_with_no_read_waiting_is_rejected_at_that_join(
        tmp_path: Path) -> None:
    """Tightened by issue 30: the receiver re-joins until it is ready and then
    only while reads are parked. The scenario (a join timer firing while ready
    and idle) leaves no line in a correct trace, so the correct run of the same
    seed is only required to reach ready and be accepted."""
    broken = WithCore(RECEIVER_ID, ReceiverJoinsWhenReady)
    for seed in SEEDS:
        trace = _trace(broken, seed, tmp_path / f"broken-{seed}.ndjson")
        line = _first(trace, lambda b, a: a.action == "RcvJoin"
                      and b.vars["rcvState"] == READY and not b.vars["rcvReads"])
        if line is not None:
            break
    else:
        pytest.fail(f"no seed in {SEEDS} lets a ready receiver's join timer fire")
    correct = _trace(SnapshotTransfer(), seed, tmp_path / f"correct-{seed}.ndjson")
    assert any(step.vars["rcvState"] == READY for step in correct.steps)
    rejected, accepted = validate_traces([trace, correct])
    assert not rejected.accepted and rejected.divergence is not None
    assert rejected.divergence.line == line, (seed, rejected.divergence)
    assert accepted.accepted, (seed, accepted.divergence)
