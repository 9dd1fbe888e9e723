"""What the kernel and the oracles keep between steps never goes stale.

The kernel updates the refinement mapping's inputs only for the hosts a step
changed (in place, so the variables of an earlier step must not hold them),
the network reuses a message's spec record for an equal payload, and the
oracles skip a check whose inputs equal those it last passed with. Each is
checked here at every step of many seeds, failing ones included, against
what a full recomputation gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tlasim.protocols import get_protocol
from tlasim.protocols.definition import Oracle, StepInfo
from tlasim.protocols.errors import InvariantViolation
from tlasim.sim.kernel.network import Network
from tlasim.sim.kernel.simulation import OUTCOME_OK, Simulation
from tlasim.tracing.values import canonical_json


class CrossChecked:
    """An oracle that checks the kernel's state and the real oracle's verdicts
    against full recomputations, then answers as the real oracle does."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.oracle: Oracle = sim.oracle
        # The same oracle, made to run every check at every step.
        self.reference: Any = sim.protocol.make_oracle(sim.config)
        self.chunk_acks: set[tuple[int, str]] = set()
        self.steps = 0
        # The last step's variables as given and as encoded then: oracles keep
        # them, so nothing may change them afterwards.
        self.last: tuple[Mapping[str, Any], str] | None = None

    def full_spec_vars(self) -> dict[str, Any]:
        hosts = self.sim.hosts.values()
        return self.sim.protocol.spec_vars(
            self.sim.config,
            {h.node_id: h.view for h in hosts},
            # The synced prefix read afresh, not through the disk's kept tuple.
            {h.node_id: tuple(h.disk._records[: h.disk._synced]) for h in hosts},
            {h.node_id: h.up for h in hosts},
            self.sim.network.in_flight,
        )

    def check_step(self, spec_vars: Mapping[str, Any], step: StepInfo) -> None:
        self.steps += 1
        if self.last is not None:
            assert canonical_json(self.last[0]) == self.last[1], "a step changed the last one's"
        encoded = canonical_json(spec_vars)
        assert encoded == canonical_json(self.full_spec_vars()), step
        self.last = (spec_vars, encoded)
        self.reference._passed.clear()
        expected = _verdict(self.reference, spec_vars, step)
        verdict = _verdict(self.oracle, spec_vars, step)
        assert verdict == expected, step
        if verdict is not None:
            raise InvariantViolation(verdict)
        if hasattr(self.reference, "acknowledged"):
            # The snapshot oracle looks for chunk acks only among new messages.
            msgs = spec_vars["msgs"]
            self.chunk_acks |= {(m["snap"], m["chunk"]) for m in msgs if m["type"] == "ChunkAck"}
            assert self.oracle.acknowledged == self.chunk_acks  # type: ignore[attr-defined]

    def check_liveness(self, spec_vars: Mapping[str, Any]) -> str | None:
        return self.oracle.check_liveness(spec_vars)


def _verdict(oracle: Any, spec_vars: Mapping[str, Any], step: StepInfo) -> str | None:
    try:
        oracle.check_step(spec_vars, step)
    except InvariantViolation as violation:
        return str(violation)
    return None


class CheckedRecords(dict[bytes, Any]):
    """The network's record cache, checking every reuse against a fresh record.

    It replaces the cache for one run, starting from what the runs before
    left in it."""

    def __init__(self, network: Network) -> None:
        # Records kept from earlier runs are checked when reused, too.
        super().__init__(network._records)
        self.spec_record = network._spec_record
        self.sent: Any = None
        self.reuses = 0
        encode = network._encode

        def remember(msg: Any) -> Any:
            # The network encodes a message just before it looks up its payload.
            self.sent = msg
            return encode(msg)

        network._encode = remember

    def get(self, payload: bytes, default: Any = None) -> Any:
        record = super().get(payload, default)
        if record is not None:
            self.reuses += 1
            assert canonical_json(record) == canonical_json(self.spec_record(self.sent))
        return record


# Measured: seeds that fail, for variants whose first failure comes after seed 7,
# and for frozen-accepts-writes, runs whose lost write shows at the step that
# acknowledges the write that the key's value should hold.
FAILING_SEEDS: dict[tuple[str, str | None], tuple[int, ...]] = {
    ("twopc", "commit-before-durable"): (41, 90),
    ("twopc", "counts-duplicate-votes"): (8, 11),
    ("shardsplit", "frozen-accepts-writes"): (14, 30),
    ("shardsplit", "retire-with-pending"): (21, 26),
    ("shardsplit", "switch-before-transfer"): (9, 16),
    ("snapshot", "ack-before-persist"): (22, 34),
    ("snapshot", "duplicate-chunk-reapplied"): (8, 56),
}


def _variants(protocol: str) -> list[str | None]:
    return [None, *sorted(get_protocol(protocol).bugs)]


@pytest.mark.parametrize(
    ("protocol", "bug"),
    [(p, bug) for p in ("twopc", "shardsplit", "snapshot") for bug in _variants(p)],
)
def test_kept_state_and_skipped_checks_match_full_recomputation_at_every_step(
    protocol: str, bug: str | None
) -> None:
    outcomes = set()
    crashes = reuses = 0
    for seed in (*range(8), *FAILING_SEEDS.get((protocol, bug), ())):
        sim = Simulation(get_protocol(protocol), seed, bug=bug)
        checked = CrossChecked(sim)
        sim.oracle = checked
        records = CheckedRecords(sim.network)
        sim.network._records = records
        result = sim.run()
        assert checked.steps == result.stats.steps
        outcomes.add(result.outcome)
        crashes += result.stats.crashes
        reuses += records.reuses
    assert crashes and reuses
    if bug is not None:
        assert outcomes != {OUTCOME_OK}, "no seed broke the bug variant: pick other seeds"
