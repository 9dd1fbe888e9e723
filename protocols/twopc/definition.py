"""The two-phase commit protocol as the simulator sees it."""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from tlasim.protocols.base import Core
from tlasim.protocols.coverage import in_flight
from tlasim.protocols.defaults import ProtocolBase
from tlasim.protocols.derived import Derived, DerivedEach, per_node
from tlasim.protocols.twopc import bugs
from tlasim.protocols.twopc.config import TwoPCConfig, TwoPCOptions, TxPlan, draw_workload, rm_ids
from tlasim.protocols.twopc.messages import Message, from_wire, to_wire
from tlasim.protocols.twopc.oracles import TwoPCOracle
from tlasim.protocols.twopc.rm import ResourceManager
from tlasim.protocols.twopc.tm import TM_ID, TransactionManager


class TwoPhaseCommit(ProtocolBase):
    name = "twopc"
    summary = "two-phase commit: one TM, N RMs, presumed abort, crash recovery from logs"
    spec_module = "TwoPhaseCommitMsg"
    net_lose_action = "NetLose"
    net_duplicate_action = "NetDuplicate"
    # Coverage counts which messages are in flight, not how many copies.
    COVERAGE_ABSTRACTION = MappingProxyType({"msgs": in_flight})
    # What search mode draws workloads from; each range shrinks toward its
    # first bound: two RMs, one transaction, every RM voting yes and none
    # aborting on its own.
    workload_ranges: Mapping[str, tuple[int, int] | tuple[float, float]] = {
        "rm_count": (2, 4),
        "tx_count": (1, 6),
        "no_vote_probability": (0.0, 0.5),
        "self_abort_probability": (0.0, 0.3),
    }
    source_files: Sequence[str] = (
        "protocols/twopc/tm.py",
        "protocols/twopc/rm.py",
        "protocols/twopc/messages.py",
        "protocols/twopc/definition.py",
    )
    OPTIONS = TwoPCOptions
    BUGS = bugs.BUGS

    def __init__(self) -> None:
        # The variables gathered from every RM, and the TM's log as a set,
        # kept while their inputs are the same objects (see protocols.derived).
        self._tm_log: Derived[frozenset[Any]] = Derived(frozenset)
        self._rm_state = Derived(self._gather_rm_state)
        # Per transaction, each RM's state of it: a row stays the same
        # object while the RMs' states of that transaction are.
        self._rm_state_row: DerivedEach[dict[str, str]] = DerivedEach(per_node)
        self._rm_log = Derived(self._gather_rm_log)
        # Per RM, its synced log as a set, kept while the log is unchanged.
        self._rm_log_set: DerivedEach[frozenset[Any]] = DerivedEach(frozenset)
        self._rm_up = Derived(per_node)
        self._rm_lost_work = Derived(self._gather_rm_lost_work)

    def configure(
        self, options: TwoPCOptions, bug: str | None, workload_rng: random.Random
    ) -> TwoPCConfig:
        return TwoPCConfig(
            rms=rm_ids(options.rm_count),
            txs=draw_workload(options, workload_rng),
            options=options,
            bug=self.check_bug(bug),
        )

    def node_ids(self, config: TwoPCConfig) -> tuple[str, ...]:
        return (TM_ID, *config.rms)

    def symmetric_nodes(self, config: TwoPCConfig) -> tuple[tuple[str, ...], ...]:
        # The RMs, as the spec's RM constant is a symmetry set: no core reads
        # an RM's name for more than addressing, and the TM treats them alike.
        return (config.rms,)

    def make_core(self, config: TwoPCConfig, node_id: str) -> Core:
        if node_id == TM_ID:
            return TransactionManager(config)
        return ResourceManager(node_id, config)

    def crash_step(self, node_id: str) -> tuple[str, Mapping[str, Any]]:
        if node_id == TM_ID:
            return "TMCrash", {}
        return "RMCrash", {"rm": node_id}

    # Two-phase commit's messages are dataclasses, not a wire Schema, and a
    # message's spec record is its wire form.
    def encode_message(self, msg: Message) -> dict[str, Any]:
        return to_wire(msg)

    def decode_message(self, data: Any) -> Message:
        return from_wire(data)

    def message_record(self, msg: Message) -> Mapping[str, Any]:
        return to_wire(msg)

    def spec_constants(self, config: TwoPCConfig) -> Mapping[str, Any]:
        return {"RM": frozenset(config.rms), "Tx": frozenset(p.tx for p in config.txs)}

    def spec_vars(
        self,
        config: TwoPCConfig,
        views: Mapping[str, Mapping[str, Any]],
        logs: Mapping[str, Sequence[Mapping[str, Any]]],
        up: Mapping[str, bool],
        in_flight: Mapping[Hashable, int],
    ) -> dict[str, Any]:
        tm_view = views[TM_ID]
        rms = config.rms
        return {
            "tmState": tm_view["tmState"],
            "tmPrepared": tm_view["tmPrepared"],
            "tmLog": self._tm_log(logs[TM_ID]),
            "tmUp": up[TM_ID],
            "rmState": self._rm_state(config.txs, rms, *map(views.__getitem__, rms)),
            "rmLog": self._rm_log(rms, *map(logs.__getitem__, rms)),
            "rmUp": self._rm_up(rms, *map(up.__getitem__, rms)),
            "rmLostWork": self._rm_lost_work(rms, *map(views.__getitem__, rms)),
            "msgs": in_flight,
        }

    def _gather_rm_state(
        self, txs: Sequence[TxPlan], rms: Sequence[str], *views: Mapping[str, Any]
    ) -> dict[str, dict[str, str]]:
        states = [view["rmState"] for view in views]
        return {
            plan.tx: self._rm_state_row(plan.tx, rms, *[state[plan.tx] for state in states])
            for plan in txs
        }

    def _gather_rm_log(
        self, rms: Sequence[str], *logs: Sequence[Mapping[str, Any]]
    ) -> dict[str, frozenset[Any]]:
        return {rm: self._rm_log_set(rm, log) for rm, log in zip(rms, logs, strict=True)}

    def _gather_rm_lost_work(
        self, rms: Sequence[str], *views: Mapping[str, Any]
    ) -> dict[str, frozenset[str]]:
        return {rm: view["rmLostWork"] for rm, view in zip(rms, views, strict=True)}

    def make_oracle(self, config: TwoPCConfig) -> TwoPCOracle:
        return TwoPCOracle(tuple(p.tx for p in config.txs), config.rms)

    def settle_tick(self, config: TwoPCConfig) -> int:
        last_begin = max(p.begin_tick for p in config.txs)
        return last_begin + config.options.working_timeout_ticks


DEFINITION = TwoPhaseCommit()
