"""The simulation kernel: simpy with integer ticks, one seed, every step traced.

Theory of operation: `Simulation` builds the nodes of one protocol run and
drives them on a simpy Environment. Every input to a core (start, message,
timer, recovery) comes from a simpy event; the core's effects are carried out
step by step (see protocols/base.py). After every atomic step the kernel
computes the spec variables through the protocol's refinement mapping, writes
one trace line, and runs the safety oracle. Faults are drawn only by the
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

from faults.plan import Crash, FaultPlan
from faults.swarm import swarm_plan
from protocols.base import (
    CancelTimer,
    Effect,
    Input,
    Persist,
    Receive,
    Recover,
    Send,
    SetTimer,
    Start,
    Timeout,
    Trace,
)
from protocols.definition import ProtocolDefinition, StepInfo
from protocols.errors import ConfigError, InternalError, InvariantViolation
from sim.kernel.host import NodeHost
from sim.kernel.injector import FaultInjector
from sim.kernel.network import InFlight, Network
from sim.kernel.options import SimOptions
from sim.kernel.rng import split
from tracing.emit.emitter import TraceEmitter
from tracing.values import Record

NET_NODE = "net"

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

    @property
    def ok(self) -> bool:
        return self.outcome == OUTCOME_OK


def _net_action(protocol: ProtocolDefinition, action: str | None) -> str:
    """A network action of the protocol; only a protocol that sends messages has them."""
    if action is None:
        raise InternalError(
            f"{protocol.name} declares no network actions, but a message of it was lost "
            "or duplicated: its cores must send no messages"
        )
    return action


class Simulation:
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
        self.protocol = protocol
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
        self.config = protocol.configure(self.protocol_options, bug, streams.workload)
        node_ids = protocol.node_ids(self.config)
        if self.options.faults is None:
            self.plan = swarm_plan(
                streams.faults,
                node_ids,
                horizon_ticks=self.options.swarm_horizon_ticks,
                crash_nodes=protocol.crash_nodes(self.config),
            )
        else:
            self.plan = self.options.faults
        self.plan.check_wellformed()
        self.plan.check_recoverable(node_ids, crash_nodes=protocol.crash_nodes(self.config))
        self.env = simpy.Environment()
        self.injector = FaultInjector(self.plan)
        self.network = Network(
            self.options.network,
            streams.network,
            self.injector,
            self._schedule,
            protocol.encode_message,
            lambda msg: Record(protocol.message_record(msg)),
            _MESSAGE_RECORDS.setdefault(protocol, {}),
        )
        self.hosts: dict[str, NodeHost] = {
            node_id: NodeHost(node_id, protocol.make_core(self.config, node_id))
            for node_id in node_ids
        }
        self.oracle = protocol.make_oracle(self.config)
        self.emitter = emitter
        self.stats = RunStats()
        self._timer_generation = itertools.count()
        self._last_vars: Mapping[str, Any] = {}
        # The refinement mapping's inputs, one entry per node. A step changes
        # at most the stepping node's entries (and the network), so rather
        # than gathering every node's view, log and liveness at each step,
        # the kernel updates the entries of the hosts it marked changed.
        self._views: dict[str, Mapping[str, Any]] = {}
        self._logs: dict[str, tuple[Record, ...]] = {}
        self._up: dict[str, bool] = {}
        self._changed: list[NodeHost] = list(self.hosts.values())

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
            self._record(None, "Init", {})
            for crash in self.plan.crashes:
                self._schedule(crash.tick, functools.partial(self._arm, crash))
            for host in self.hosts.values():
                self._dispatch(host, Start())
            self.env.run(until=self.deadline())
        except InvariantViolation as violation:
            result.outcome = OUTCOME_SAFETY
            result.failure = str(violation)
            result.failing_step = self.stats.steps - 1
        else:
            problem = self.oracle.check_liveness(self._last_vars)
            if problem is not None:
                result.outcome = OUTCOME_LIVENESS
                result.failure = f"{problem} (tick {self.now}, bound {self.deadline()})"
        self.stats.messages_sent = self.network.sent
        self.stats.messages_delivered = self.network.delivered
        self.stats.messages_lost = self.network.lost
        self.stats.messages_duplicated = self.network.duplicated
        return result

    # ---- steps ----

    def spec_vars(self) -> dict[str, Any]:
        for host in self._changed:
            node_id = host.node_id
            self._views[node_id] = host.view
            self._logs[node_id] = host.disk.synced()
            self._up[node_id] = host.up
        self._changed.clear()
        return self.protocol.spec_vars(
            self.config, self._views, self._logs, self._up, self.network.bag()
        )

    def _record(self, node: str | None, action: str, params: Mapping[str, Any]) -> None:
        spec_vars = self.spec_vars()
        now = self.now
        self.stats.steps += 1
        self.stats.last_tick = now
        if self.emitter is not None:
            self.emitter.step(ts=now, node=node, action=action, params=params, vars=spec_vars)
        self._last_vars = spec_vars
        self.oracle.check_step(spec_vars, StepInfo(now, node, action, params))

    def _dispatch(self, host: NodeHost, event: Input) -> None:
        # Virtual time stands still while one input's effects are carried out.
        now = self.now
        effects = host.live_core().handle(now, event)
        if isinstance(event, Receive | Recover) and not any(
            isinstance(e, Trace) for e in effects
        ):
            raise InternalError(
                f"{host.node_id} handled {event!r} without a trace step; the consumed "
                "message or the restart would be invisible to the spec"
            )
        pending: list[Effect] = []
        for effect in effects:
            if not isinstance(effect, Trace):
                pending.append(effect)
                continue
            duplicates = self._apply(host, pending, now)
            pending = []
            host.view = effect.view
            self._changed.append(host)
            self._record(host.node_id, effect.action, effect.params)
            for copy in duplicates:
                self.network.add_copy(now, copy, self._arrive)
                action = _net_action(self.protocol, self.protocol.net_duplicate_action)
                self._record(NET_NODE, action, self._msg_params(copy))
            crash = self.injector.crash_after_step(host.node_id, now)
            if crash is not None:
                self._crash(host, crash)
                return
        if any(isinstance(e, Send | Persist) for e in pending):
            raise InternalError(
                f"{host.node_id} returned {pending!r} after its last trace step; "
                "a send or persist must belong to a traced step"
            )
        self._apply(host, pending, now)

    def _apply(self, host: NodeHost, effects: list[Effect], now: int) -> list[InFlight]:
        duplicates = []
        for effect in effects:
            if isinstance(effect, Send):
                copy = self.network.send(now, host.node_id, effect.dst, effect.msg, self._arrive)
                if copy is not None:
                    duplicates.append(copy)
            elif isinstance(effect, Persist):
                host.disk.persist(effect.record, effect.sync)
            elif isinstance(effect, SetTimer):
                self._set_timer(host, effect)
            elif isinstance(effect, CancelTimer):
                host.timers.pop(effect.name, None)
            else:
                raise InternalError(f"{host.node_id} returned an unknown effect {effect!r}")
        return duplicates

    def _set_timer(self, host: NodeHost, timer: SetTimer) -> None:
        if timer.delay < 0:
            raise InternalError(f"{host.node_id} set timer {timer.name} with a negative delay")
        generation = next(self._timer_generation)
        host.timers[timer.name] = generation

        def fire() -> None:
            if host.up and host.timers.get(timer.name) == generation:
                del host.timers[timer.name]
                self._dispatch(host, Timeout(timer.name))

        self._schedule(timer.delay, fire)

    def _msg_params(self, entry: InFlight) -> dict[str, Any]:
        return {"msg": entry.record}

    def _arrive(self, entry: InFlight) -> None:
        host = self.hosts[entry.dst]
        self.network.remove(entry)
        if not host.up or self.injector.lose_on_delivery(self.now, entry.src, entry.dst):
            self.network.lost += 1
            action = _net_action(self.protocol, self.protocol.net_lose_action)
            self._record(NET_NODE, action, self._msg_params(entry))
            return
        self.network.delivered += 1
        msg = self.protocol.decode_message(Network.decode(entry))
        self._dispatch(host, Receive(entry.src, msg))

    def _arm(self, crash: Crash) -> None:
        if self.hosts[crash.node].up:
            self.injector.arm(crash)

    def _crash(self, host: NodeHost, crash: Crash) -> None:
        self.injector.disarm(host.node_id)
        host.up = False
        host.core = None
        host.timers.clear()
        host.crashes += 1
        self.stats.crashes += 1
        self.stats.unsynced_records_lost += host.disk.crash()
        # A crashed node's variables show what it will recover to.
        recovered = self.protocol.make_core(self.config, host.node_id)
        recovered.restore(host.disk.synced())
        host.view = recovered.view()
        self._changed.append(host)
        action, params = self.protocol.crash_step(host.node_id)
        self._record(host.node_id, action, params)
        self._schedule(crash.restart_ticks, lambda: self._restart(host))

    def _restart(self, host: NodeHost) -> None:
        host.core = self.protocol.make_core(self.config, host.node_id)
        host.up = True
        self._changed.append(host)
        self._dispatch(host, Recover(host.disk.synced()))
