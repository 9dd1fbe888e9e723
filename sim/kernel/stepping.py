"""What every runtime does with a core's effects: one place, for all of them.

Theory of operation: a runtime hands a core one input and carries out the
effects it returns, atomic step by atomic step (protocols/base.py). After
each step it computes the spec variables through the protocol's refinement
mapping, writes one trace line, runs the safety oracle, and asks whether a
crash strikes now. That much is the same whether time is simpy's (the
simulator, sim/kernel/simulation.py) or whether an explorer chooses every
next event (sim/explore/). `StepMachine` is that shared part. Its subclass
says what time means and where messages and timers go, through the hooks at
the end of the class.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from tlasim.protocols.base import (
    CancelTimer,
    Effect,
    Input,
    Persist,
    Receive,
    Recover,
    Send,
    SetTimer,
    Timeout,
    Trace,
)
from tlasim.protocols.definition import Oracle, ProtocolDefinition, StepInfo
from tlasim.protocols.errors import InternalError
from tlasim.sim.coverage.run import CoverageRecorder
from tlasim.sim.kernel.host import NodeHost
from tlasim.tracing.emit.emitter import TraceEmitter

NET_NODE = "net"


class StepMachine:
    """Hosts, the refinement mapping, the trace and the oracle, step by step."""

    def __init__(
        self,
        protocol: ProtocolDefinition,
        config: Any,
        oracle: Oracle,
        emitter: TraceEmitter | None,
    ) -> None:
        self.protocol = protocol
        self.config = config
        self.oracle = oracle
        self.emitter = emitter
        self.hosts: dict[str, NodeHost] = {
            node_id: NodeHost(node_id, protocol.make_core(config, node_id))
            for node_id in protocol.node_ids(config)
        }
        self.steps = 0
        self.last_tick = 0
        self.last_vars: Mapping[str, Any] = {}
        # The refinement mapping's inputs, one entry per node. A step changes
        # at most the stepping node's entries (and the network), so rather
        # than gathering every node's view, log and liveness at each step,
        # the machine updates the entries of the hosts it marked changed.
        self._views: dict[str, Mapping[str, Any]] = {}
        self._logs: dict[str, tuple[Any, ...]] = {}
        self._up: dict[str, bool] = {}
        self._changed: list[NodeHost] = list(self.hosts.values())
        # The timer whose expiry the next line's step answers, named on that line.
        self._timer: str | None = None
        # Set by a runtime that measures spec coverage: it sees every step's state.
        self.coverage: CoverageRecorder | None = None

    # ---- the hooks a runtime provides ----

    @property
    def now(self) -> int:
        raise NotImplementedError

    def _bag(self) -> Mapping[Hashable, int]:
        """The spec's `msgs` bag, as a snapshot (see ProtocolDefinition.spec_vars)."""
        raise NotImplementedError

    def _send(self, host: NodeHost, send: Send) -> Any:
        """Put the message in flight; return a second copy to add in a step of
        its own (a duplicate), or None."""
        raise NotImplementedError

    def _add_duplicate(self, copy: Any) -> Mapping[str, Any]:
        """Put the duplicate in flight; return its NetDuplicate step's params."""
        raise NotImplementedError

    def _arm_timer(self, host: NodeHost, timer: SetTimer) -> None:
        raise NotImplementedError

    def _crash_strikes(self, host: NodeHost) -> Any:
        """Count one step of `host`; return what crashes it now (truthy), or None."""
        raise NotImplementedError

    def _take_fired_faults(self) -> list[str]:
        """The plan's faults that struck since the last line; a machine that
        chooses its faults itself (the explorer) names none."""
        return []

    def _crashed(self, host: NodeHost, crash: Any, lost_records: int) -> None:
        """`host` just crashed, losing `lost_records` unsynced records: arrange
        what follows (its crash step is written next)."""
        raise NotImplementedError

    # ---- steps ----

    def net_action(self, action: str | None) -> str:
        """A network action of the protocol; only a protocol that sends messages has them."""
        if action is None:
            raise InternalError(
                f"{self.protocol.name} declares no network actions, but a message of it was "
                "lost or duplicated: its cores must send no messages"
            )
        return action

    def spec_vars(self) -> dict[str, Any]:
        for host in self._changed:
            node_id = host.node_id
            self._views[node_id] = host.view
            self._logs[node_id] = host.disk.synced()
            self._up[node_id] = host.up
        self._changed.clear()
        return self.protocol.spec_vars(self.config, self._views, self._logs, self._up, self._bag())

    def record(self, node: str | None, action: str, params: Mapping[str, Any]) -> None:
        """Write one trace line for the step just taken and hold the oracle to it."""
        spec_vars = self.spec_vars()
        now = self.now
        self.steps += 1
        self.last_tick = now
        faults = self._take_fired_faults()
        timer, self._timer = self._timer, None
        if self.emitter is not None:
            self.emitter.step(
                ts=now, node=node, action=action, params=params, vars=spec_vars,
                faults=faults, timer=timer,
            )
        if self.coverage is not None:
            self.coverage.step(node, action, spec_vars)
        self.last_vars = spec_vars
        self.oracle.check_step(spec_vars, StepInfo(now, node, action, params))

    def dispatch(self, host: NodeHost, event: Input) -> None:
        """Hand `event` to the host's core and carry out its effects, step by step."""
        # Time stands still while one input's effects are carried out.
        now = self.now
        effects = host.live_core().handle(now, event)
        # The first line this input writes names the timer; a timer that wrote no
        # line (it only set itself again, say) must not lend its name to a later one.
        self._timer = event.name if isinstance(event, Timeout) else None
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
            duplicates = self._apply(host, pending)
            pending = []
            host.view = effect.view
            self._changed.append(host)
            self.record(host.node_id, effect.action, effect.params)
            for copy in duplicates:
                action = self.net_action(self.protocol.net_duplicate_action)
                self.record(NET_NODE, action, self._add_duplicate(copy))
            crash = self._crash_strikes(host)
            if crash:
                self.crash(host, crash)
                return
        if any(isinstance(e, Send | Persist) for e in pending):
            raise InternalError(
                f"{host.node_id} returned {pending!r} after its last trace step; "
                "a send or persist must belong to a traced step"
            )
        self._apply(host, pending)
        self._timer = None

    def _apply(self, host: NodeHost, effects: list[Effect]) -> list[Any]:
        duplicates = []
        for effect in effects:
            if isinstance(effect, Send):
                copy = self._send(host, effect)
                if copy is not None:
                    duplicates.append(copy)
            elif isinstance(effect, Persist):
                host.disk.persist(effect.record, effect.sync)
            elif isinstance(effect, SetTimer):
                if effect.delay < 0:
                    raise InternalError(
                        f"{host.node_id} set timer {effect.name} with a negative delay"
                    )
                self._arm_timer(host, effect)
            elif isinstance(effect, CancelTimer):
                host.timers.pop(effect.name, None)
            else:
                raise InternalError(f"{host.node_id} returned an unknown effect {effect!r}")
        return duplicates

    def crash(self, host: NodeHost, crash: Any) -> None:
        """Crash `host` after its step: volatile state, timers and unsynced records go."""
        host.up = False
        host.core = None
        host.timers.clear()
        host.crashes += 1
        self._crashed(host, crash, host.disk.crash())
        # A crashed node's variables show what it will recover to.
        recovered = self.protocol.make_core(self.config, host.node_id)
        recovered.restore(host.disk.synced())
        host.view = recovered.view()
        self._changed.append(host)
        action, params = self.protocol.crash_step(host.node_id)
        self.record(host.node_id, action, params)

    def restart(self, host: NodeHost) -> None:
        """Bring a crashed host back: a fresh core recovers from its synced log."""
        host.core = self.protocol.make_core(self.config, host.node_id)
        host.up = True
        self._changed.append(host)
        self.dispatch(host, Recover(host.disk.synced()))
