"""The simulation kernel: simpy with integer ticks, one seed, every step traced.

Theory of operation: `Simulation` builds the nodes of one protocol run and
drives them on a simpy Environment. Every input to a core (start, message,
timer, recovery) comes from a simpy event; the core's effects are carried out
step by step by the `StepMachine` it extends (sim/kernel/stepping.py), which
after every atomic step computes the spec variables through the protocol's
refinement mapping, writes one trace line, and runs the safety oracle. Faults are drawn only by the
FaultInjector. After the fault phase every node restarts, the network is
reliable, and the protocol has `liveness_bound_ticks` to finish.
"""

from __future__ import annotations

import functools
import itertools
import weakref
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import simpy

from tlasim.faults.plan import Crash, FaultPlan
from tlasim.faults.swarm import swarm_plan
from tlasim.protocols.base import Receive, Send, SetTimer, Start, Timeout
from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError, InvariantViolation
from tlasim.sim.coverage.run import RunCoverage
from tlasim.sim.kernel.host import NodeHost
from tlasim.sim.kernel.injector import FaultInjector
from tlasim.sim.kernel.network import InFlight, Network
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.kernel.rng import split
from tlasim.sim.kernel.stepping import NET_NODE, StepMachine
from tlasim.tracing.emit.emitter import TraceEmitter
from tlasim.tracing.values import Record

OUTCOME_OK = "ok"
OUTCOME_SAFETY = "safety"
OUTCOME_LIVENESS = "liveness"

# protocol -> payload -> the message's spec record, shared by every run in this
# process. A record depends on the message alone, and runs of one protocol
# send mostly the same messages (seeds 0-999 send 210,824 snapshot messages,
# 5,029 of them distinct; 63,250 two-phase commit messages, 75 distinct), so
# each is frozen once instead of at every send.
_MESSAGE_RECORDS: weakref.WeakKeyDictionary[ProtocolDefinition, dict[bytes, Hashable]] = (
    weakref.WeakKeyDictionary()
)


def message_records(protocol: ProtocolDefinition) -> dict[bytes, Hashable]:
    """The process's cache of `protocol`'s message records, by payload."""
    return _MESSAGE_RECORDS.setdefault(protocol, {})


@dataclass(slots=True)
class RunStats:
    steps: int = 0
    messages_sent: int = 0
    messages_delivered: int = 0
    messages_lost: int = 0
    messages_duplicated: int = 0
    crashes: int = 0
    unsynced_records_lost: int = 0
    last_tick: int = 0


@dataclass(slots=True)
class RunResult:
    protocol: str
    seed: int
    bug: str | None
    outcome: str
    failure: str | None
    failing_step: int | None  # seq of the step after which the oracle failed
    plan: FaultPlan
    stats: RunStats = field(default_factory=RunStats)
    coverage: RunCoverage | None = None  # what it reached of the spec, when measured

    @property
    def ok(self) -> bool:
        return self.outcome == OUTCOME_OK


class Simulation(StepMachine):
    def __init__(
        self,
        protocol: ProtocolDefinition,
        seed: int,
        *,
        protocol_options: Any = None,
        options: SimOptions | None = None,
        bug: str | None = None,
        emitter: TraceEmitter | None = None,
    ) -> None:
        self.seed = seed
        self.options = options or SimOptions()
        self.protocol_options = (
            protocol_options if protocol_options is not None else protocol.default_options()
        )
        self.bug = bug
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            # random.Random(-n) seeds like Random(n): two seeds, one run.
            raise ConfigError(f"seed={seed!r}: must be a non-negative integer")
        streams = split(seed)
        config = protocol.configure(self.protocol_options, bug, streams.workload)
        super().__init__(protocol, config, protocol.make_oracle(config), emitter)
        node_ids = protocol.node_ids(config)
        if self.options.faults is None:
            self.plan = swarm_plan(
                streams.faults,
                node_ids,
                horizon_ticks=self.options.swarm_horizon_ticks,
                crash_nodes=protocol.crash_nodes(config),
            )
        else:
            self.plan = self.options.faults
        self.plan.check_wellformed()
        self.plan.check_recoverable(node_ids, crash_nodes=protocol.crash_nodes(config))
        self.env = simpy.Environment()
        self.injector = FaultInjector(self.plan)
        self.network = Network(
            self.options.network,
            streams.network,
            self.injector,
            self._schedule,
            protocol.encode_message,
            lambda msg: Record(protocol.message_record(msg)),
            message_records(protocol),
        )
        self.stats = RunStats()
        self._timer_generation = itertools.count()

    # ---- scheduling ----

    def _schedule(self, delay: int, fn: Callable[[], None]) -> None:
        event = self.env.timeout(delay)
        event.callbacks.append(lambda _event: fn())

    @property
    def now(self) -> int:
        return int(self.env.now)

    def deadline(self) -> int:
        """The tick by which, after healing, the protocol must have finished."""
        restart = max((c.restart_ticks for c in self.plan.crashes), default=0)
        healed = self.plan.heal_tick + restart
        return max(healed, self.protocol.settle_tick(self.config)) + (
            self.options.liveness_bound_ticks
        )

    # ---- the run ----

    def options_record(self) -> dict[str, Any]:
        """Every option of the run, as printed first and repeated in the header."""
        return {
            "seed": self.seed,
            "protocol": self.protocol.name,
            "bug": self.bug,
            "protocol_options": self.protocol_options.as_dict(),
            "network": self.options.network.as_dict(),
            "faults_mode": "swarm" if self.options.faults is None else "plan",
            "faults": self.plan.to_dict(),
            "swarm_horizon_ticks": self.options.swarm_horizon_ticks,
            "liveness_bound_ticks": self.options.liveness_bound_ticks,
        }

    def run(self) -> RunResult:
        result = RunResult(
            protocol=self.protocol.name,
            seed=self.seed,
            bug=self.bug,
            outcome=OUTCOME_OK,
            failure=None,
            failing_step=None,
            plan=self.plan,
            stats=self.stats,
        )
        try:
            self.record(None, "Init", {})
            for crash in self.plan.crashes:
                self._schedule(crash.tick, functools.partial(self._arm, crash))
            for host in self.hosts.values():
                self.dispatch(host, Start())
            self.env.run(until=self.deadline())
        except InvariantViolation as violation:
            result.outcome = OUTCOME_SAFETY
            result.failure = str(violation)
            result.failing_step = self.steps - 1
        else:
            problem = self.oracle.check_liveness(self.last_vars)
            if problem is not None:
                result.outcome = OUTCOME_LIVENESS
                result.failure = f"{problem} (tick {self.now}, bound {self.deadline()})"
        if self.emitter is not None:
            self.emitter.end(
                outcome=result.outcome, failure=result.failure, failing_step=result.failing_step
            )
        self.stats.steps = self.steps
        self.stats.last_tick = self.last_tick
        self.stats.messages_sent = self.network.sent
        self.stats.messages_delivered = self.network.delivered
        self.stats.messages_lost = self.network.lost
        self.stats.messages_duplicated = self.network.duplicated
        if self.coverage is not None:
            result.coverage = self.coverage.result()
        return result

    # ---- the step machine's hooks: simpy time, a network with latency ----

    def _bag(self) -> Mapping[Hashable, int]:
        return self.network.bag()

    def _send(self, host: NodeHost, send: Send) -> InFlight | None:
        return self.network.send(self.now, host.node_id, send.dst, send.msg, self._arrive)

    def _add_duplicate(self, copy: InFlight) -> Mapping[str, Any]:
        self.network.add_copy(self.now, copy, self._arrive)
        return self._msg_params(copy)

    def _arm_timer(self, host: NodeHost, timer: SetTimer) -> None:
        generation = next(self._timer_generation)
        host.timers[timer.name] = generation

        def fire() -> None:
            if host.up and host.timers.get(timer.name) == generation:
                del host.timers[timer.name]
                self.dispatch(host, Timeout(timer.name))

        self._schedule(timer.delay, fire)

    def _take_fired_faults(self) -> list[str]:
        return self.injector.take_fired()

    def _crash_strikes(self, host: NodeHost) -> Crash | None:
        return self.injector.crash_after_step(host.node_id, self.now)

    def _crashed(self, host: NodeHost, crash: Crash, lost_records: int) -> None:
        self.injector.disarm(host.node_id)
        self.stats.crashes += 1
        self.stats.unsynced_records_lost += lost_records
        self._schedule(crash.restart_ticks, lambda: self.restart(host))

    def _msg_params(self, entry: InFlight) -> dict[str, Any]:
        return {"msg": entry.record}

    def _arrive(self, entry: InFlight) -> None:
        host = self.hosts[entry.dst]
        self.network.remove(entry)
        if not host.up or self.injector.lose_on_delivery(self.now, entry.src, entry.dst):
            self.network.lost += 1
            action = self.net_action(self.protocol.net_lose_action)
            self.record(NET_NODE, action, self._msg_params(entry))
            return
        self.network.delivered += 1
        msg = self.protocol.decode_message(Network.decode(entry))
        self.dispatch(host, Receive(entry.src, msg))

    def _arm(self, crash: Crash) -> None:
        if self.hosts[crash.node].up:
            self.injector.arm(crash)
