"""The whole system as the explorer holds it: every core, disk, timer and message.

Theory of operation: `ExploredSystem` is the kernel's `StepMachine` with the
explorer's answers to its hooks. There is no clock. A message stays in
flight until a move delivers, loses or duplicates it. An armed timer may
fire at any moment, so its delay is ignored. A crash strikes when the move
says so. `moves` lists what may happen next and `apply` makes one of them
happen, writing trace lines and running the oracle exactly as the simulator
does. `freeze` and `thaw` copy the system so that a search can try each move
from one state, and `digest` names the state for the visited set.

Why crashes only follow the crashing node's own steps: a crash changes
nothing but its node, and another node's step reads nothing of that node.
So a crash that in some run falls after other nodes' steps commutes back to
right after the node's own last step. Offering it there covers every
placement once.

What the explorer leaves out, and why that only widens what it checks:
latency (any order of delivery is tried, the simulator's included), the
fault plan (losses, duplicates and crashes are chosen, up to their bounds),
and a message to a crashed node, which the simulator drops but the explorer
keeps in flight, to be lost by a move or delivered after a restart.
"""

from __future__ import annotations

import enum
import pickle
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from typing import Any

import msgpack

from tlasim.protocols.base import Receive, Send, SetTimer, Start, Timeout
from tlasim.protocols.definition import ProtocolDefinition, StepInfo
from tlasim.protocols.errors import ConfigError
from tlasim.sim.explore.canonical import state_digest
from tlasim.sim.explore.moves import CRASH, DELIVER, DUPLICATE, FIRE, LOSE, RESTART, START, Move
from tlasim.sim.explore.symmetry import Symmetry
from tlasim.sim.kernel.host import NodeHost
from tlasim.sim.kernel.simulation import message_records
from tlasim.sim.kernel.stepping import NET_NODE, StepMachine
from tlasim.tracing.emit.emitter import TraceEmitter
from tlasim.tracing.values import Record


@dataclass(frozen=True, slots=True)
class FaultBounds:
    """The most faults one schedule may have, of each kind."""

    crashes: int = 0
    losses: int = 0
    duplicates: int = 0
    # Also crash a started, idle node between its steps (a crash move), not
    # only after a step of its own: a node that has taken no step yet, or
    # holds work in memory while it waits, is then crashed too.
    idle_crashes: bool = False


# protocol -> a payload as a schedule gives it -> the payload as a send makes it.
_PAYLOADS: weakref.WeakKeyDictionary[ProtocolDefinition, dict[bytes, bytes]] = (
    weakref.WeakKeyDictionary()
)

# protocol -> a payload -> the message it decodes to (see digest).
_MESSAGES: weakref.WeakKeyDictionary[ProtocolDefinition, dict[bytes, Any]] = (
    weakref.WeakKeyDictionary()
)


class _Bag(Set[Any]):
    """Items in no order, hashable or not: the canonical walk sorts their encodings."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = list(items)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


# (src, dst, payload): a message in flight. Equal messages between the same
# nodes are one entry with a count, as in the spec's bag.
Envelope = tuple[str, str, bytes]


_LEAVES = frozenset({str, int, float, bytes, bool, type(None)})


_OBJECT, _CONTAINER, _VALUE, _CONSTANT = "object", "container", "value", "constant"


def _kind_of(value: Any) -> str:
    if isinstance(value, dict | list | set | bytearray):
        return _CONTAINER
    if isinstance(value, tuple | frozenset):
        return _CONSTANT  # its parts decide
    if isinstance(value, enum.Enum | type) or callable(value):
        return _CONSTANT
    hash_of: Any = type(value).__hash__
    return _OBJECT if hash_of is None or hash_of is object.__hash__ else _VALUE


def _parts(value: Any) -> list[Any]:
    if isinstance(value, enum.Enum | type) or callable(value):
        return []  # a constant or code, not state
    if isinstance(value, Mapping):
        return [*value.keys(), *value.values()]
    if isinstance(value, list | tuple | set | frozenset):
        return list(value)
    parts = list(getattr(value, "__dict__", {}).values())
    for klass in type(value).__mro__:
        for name in klass.__dict__.get("__slots__", ()):
            if isinstance(name, str) and hasattr(value, name):
                parts.append(getattr(value, name))
    return parts


def _renamed(data: Any, names: Mapping[str, str]) -> Any:
    """Plain data (a message as the protocol encodes it) with whole strings renamed."""
    if isinstance(data, str):
        return names.get(data, data)
    if isinstance(data, list):
        return [_renamed(item, names) for item in data]
    if isinstance(data, dict):
        return {_renamed(k, names): _renamed(v, names) for k, v in data.items()}
    return data


class ExploredSystem(StepMachine):
    def __init__(
        self,
        protocol: ProtocolDefinition,
        config: Any,
        bounds: FaultBounds,
        emitter: TraceEmitter | None = None,
    ) -> None:
        super().__init__(protocol, config, protocol.make_oracle(config), emitter)
        self.bounds = bounds
        self.crash_nodes = frozenset(protocol.crash_nodes(config))
        self.unstarted: list[str] = list(self.hosts)
        self.in_flight: dict[Envelope, int] = {}
        self.crashes = self.losses = self.duplicates = 0
        self.moves_made = 0
        self._records = message_records(protocol)
        self._payloads = _PAYLOADS.setdefault(protocol, {})  # see _payload
        self._bag_snapshot: dict[Hashable, int] | None = None
        # Hears every trace step as (variables before, the step, variables
        # after); the differential check collects the spec's steps with it.
        self.observer: Callable[[Mapping[str, Any], StepInfo, Mapping[str, Any]], None] | None = (
            None
        )
        # The move being made: its node, its steps so far, the step it crashes after.
        self._mover: str | None = None
        self._mover_steps = 0
        self._crash_after: int | None = None

    # ---- what may happen next ----

    def moves(self) -> Iterator[Move]:
        """Every move enabled now, without crashes, in a fixed order."""
        for node in self.unstarted:
            yield Move(START, node)
        for (src, dst, payload) in sorted(self.in_flight):
            host = self.hosts[dst]
            if host.up and dst not in self.unstarted:
                yield Move(DELIVER, dst, src, payload)
        for node, host in self.hosts.items():
            if host.up:
                for timer in sorted(host.timers):
                    yield Move(FIRE, node, timer=timer)
            else:
                yield Move(RESTART, node)
        if self.losses < self.bounds.losses:
            for (src, dst, payload) in sorted(self.in_flight):
                yield Move(LOSE, dst, src, payload)
        if self.duplicates < self.bounds.duplicates:
            for (src, dst, payload) in sorted(self.in_flight):
                yield Move(DUPLICATE, dst, src, payload)
        if self.bounds.idle_crashes:
            for node, host in self.hosts.items():
                if host.up and node not in self.unstarted and self.may_crash(node):
                    yield Move(CRASH, node)

    def may_crash(self, node: str) -> bool:
        return self.crashes < self.bounds.crashes and node in self.crash_nodes

    # ---- making a move ----

    def initial_step(self) -> None:
        """Write the trace's first line, the initial state."""
        self.record(None, "Init", {})

    def apply(self, move: Move) -> int:
        """Make `move` happen; return how many trace steps its node took.

        Raises InvariantViolation when the oracle rejects a step, and
        ConfigError when the move is not enabled here (a schedule that does
        not fit this system)."""
        self.moves_made += 1
        self._mover, self._mover_steps, self._crash_after = move.node, 0, move.crash_after
        if self.observer is not None and not self.last_vars:
            # A thawed system has not kept its variables (see freeze).
            self.last_vars = self.spec_vars()
        host = self.hosts.get(move.node)
        if host is None:
            raise ConfigError(f"{move.describe()}: no node {move.node!r} in this system")
        if move.kind == START:
            if move.node not in self.unstarted:
                raise ConfigError(f"{move.describe()}: {move.node} has already started")
            self.unstarted.remove(move.node)
            self.dispatch(host, Start())
        elif move.kind == DELIVER:
            self._enabled(host.up and move.node not in self.unstarted, move, "is not running")
            envelope = self._take(move)
            msg = self.protocol.decode_message(msgpack.unpackb(envelope[2], raw=False))
            self.dispatch(host, Receive(envelope[0], msg))
        elif move.kind == FIRE:
            self._enabled(host.up and move.timer in host.timers, move, "has no such timer armed")
            del host.timers[move.timer or ""]
            self.dispatch(host, Timeout(move.timer or ""))
        elif move.kind == RESTART:
            self._enabled(not host.up, move, "is not down")
            self.restart(host)
        elif move.kind == LOSE:
            self._enabled(self.losses < self.bounds.losses, move, "is past the loss bound")
            envelope = self._take(move)
            self.losses += 1
            action = self.net_action(self.protocol.net_lose_action)
            self.record(NET_NODE, action, self._params(envelope))
        elif move.kind == CRASH:
            # Enabled whenever a crash is left, flag or not, so that a
            # schedule holding one replays under its recorded fault counts.
            self._enabled(host.up and move.node not in self.unstarted, move, "is not running")
            self._enabled(self.may_crash(move.node), move, "may not crash (none left)")
            self.crash(host, None)
        elif move.kind == DUPLICATE:
            self._enabled(self.duplicates < self.bounds.duplicates, move, "is past the bound")
            envelope = self._envelope(move)
            self._enabled(envelope in self.in_flight, move, "has no such message in flight")
            self._put(envelope)
            self.duplicates += 1
            action = self.net_action(self.protocol.net_duplicate_action)
            self.record(NET_NODE, action, self._params(envelope))
        if move.crash_after is not None and host.up:
            raise ConfigError(
                f"{move.describe()}: {move.node} took only {self._mover_steps} step(s)"
            )
        self._mover = None
        return self._mover_steps

    def _enabled(self, condition: bool, move: Move, why: str) -> None:
        if not condition:
            raise ConfigError(f"{move.describe()}: not enabled here, {move.node} {why}")

    def _envelope(self, move: Move) -> Envelope:
        return (move.src or "", move.node, self._payload(move))

    def _payload(self, move: Move) -> bytes:
        """The move's message as the network carries it. A schedule read from
        a file may order a message's fields otherwise (a trace header's JSON
        sorts them), so it is decoded and encoded again, as a send would."""
        payload = move.payload or b""
        canonical = self._payloads.get(payload)
        if canonical is None:
            try:
                msg = self.protocol.decode_message(msgpack.unpackb(payload, raw=False))
                canonical = msgpack.packb(self.protocol.encode_message(msg), use_bin_type=True)
            except Exception as exc:
                raise ConfigError(
                    f"{move.describe()}: not a message of {self.protocol.name} ({exc})"
                ) from None
            self._payloads[payload] = canonical
        return canonical

    def _take(self, move: Move) -> Envelope:
        envelope = self._envelope(move)
        count = self.in_flight.get(envelope, 0)
        if not count:
            raise ConfigError(f"{move.describe()}: no such message in flight")
        if count == 1:
            del self.in_flight[envelope]
        else:
            self.in_flight[envelope] = count - 1
        self._bag_snapshot = None
        return envelope

    def _put(self, envelope: Envelope) -> None:
        self.in_flight[envelope] = self.in_flight.get(envelope, 0) + 1
        self._bag_snapshot = None

    def _record_of(self, envelope: Envelope) -> Hashable:
        payload = envelope[2]
        record = self._records.get(payload)
        if record is None:
            msg = self.protocol.decode_message(msgpack.unpackb(payload, raw=False))
            record = self._records[payload] = Record(self.protocol.message_record(msg))
        return record

    def _params(self, envelope: Envelope) -> dict[str, Any]:
        return {"msg": self._record_of(envelope)}

    def record(self, node: str | None, action: str, params: Mapping[str, Any]) -> None:
        before = self.last_vars
        super().record(node, action, params)
        if self.observer is not None:
            self.observer(before, StepInfo(self.now, node, action, params), self.last_vars)

    # ---- the step machine's hooks ----

    @property
    def now(self) -> int:
        # No clock: a trace line's tick is the number of the move that made it.
        return self.moves_made

    def _bag(self) -> Mapping[Hashable, int]:
        bag = self._bag_snapshot
        if bag is None:
            bag = {}
            for envelope, count in self.in_flight.items():
                record = self._record_of(envelope)
                bag[record] = bag.get(record, 0) + count
            self._bag_snapshot = bag
        return bag

    def _send(self, host: NodeHost, send: Send) -> None:
        payload = msgpack.packb(self.protocol.encode_message(send.msg), use_bin_type=True)
        self._put((host.node_id, send.dst, payload))
        # A duplicate is a move of its own, not something a send decides.
        return None

    def _add_duplicate(self, copy: Any) -> Mapping[str, Any]:
        raise AssertionError("the explorer duplicates by moves, never on send")

    def _arm_timer(self, host: NodeHost, timer: SetTimer) -> None:
        host.timers[timer.name] = 0

    def _crash_strikes(self, host: NodeHost) -> bool:
        if host.node_id != self._mover:
            return False
        self._mover_steps += 1
        return self._mover_steps == self._crash_after

    def _crashed(self, host: NodeHost, crash: Any, lost_records: int) -> None:
        self.crashes += 1

    # ---- states ----

    def freeze(self) -> bytes:
        """The state as bytes, for `thaw` to make any number of copies from.

        Pickling copies a system about three times faster than copy.deepcopy,
        and a state waiting in the search's frontier takes a few kilobytes.
        The protocol's definition and the record cache are shared, not copied:
        they are detached for the pickle and attached again by `thaw`. The
        refinement mapping's per-node inputs are derived from the hosts, so
        they are rebuilt rather than copied."""
        kept = (self.protocol, self._records, self._views, self._logs, self._up,
                self._changed, self.last_vars, self._bag_snapshot, self._payloads,
                self.observer, self.emitter)
        self.protocol, self._records = None, None  # type: ignore[assignment]
        # A replay's emitter writes to its stream; a copy writes nowhere.
        self._payloads, self.observer, self.emitter = {}, None, None
        self._views, self._logs, self._up, self._changed = {}, {}, {}, []
        self.last_vars, self._bag_snapshot = {}, None
        try:
            return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            (self.protocol, self._records, self._views, self._logs, self._up,
             self._changed, self.last_vars, self._bag_snapshot, self._payloads,
             self.observer, self.emitter) = kept

    @staticmethod
    def thaw(frozen: bytes, protocol: ProtocolDefinition) -> ExploredSystem:
        system: ExploredSystem = pickle.loads(frozen)
        system.protocol = protocol
        system._records = message_records(protocol)
        system._payloads = _PAYLOADS.setdefault(protocol, {})
        system._changed = list(system.hosts.values())
        return system

    def digest(self, symmetry: Symmetry | None = None) -> bytes:
        """The state's name: equal for equal systems (see sim/explore/canonical.py).

        With `symmetry`, equal for systems equal up to a permutation of
        interchangeable nodes (sim/explore/symmetry.py)."""
        if symmetry is None:
            hosts: Any = [
                (node_id, host.up, host.core, host.disk.contents(), sorted(host.timers))
                for node_id, host in self.hosts.items()
            ]
            return state_digest((
                self.config,
                hosts,
                sorted(self.in_flight.items()),
                self.unstarted,
                (self.crashes, self.losses, self.duplicates),
            ))
        return symmetry.digest(self.renameable_state())

    def own_parts(self) -> dict[str, Any]:
        """Each node's own part of the state: what it holds, and whether it has started."""
        return {
            node_id: (host.up, host.core, host.disk.contents(), frozenset(host.timers),
                      node_id in self.unstarted)
            for node_id, host in self.hosts.items()
        }

    def renameable_state(self) -> tuple[Any, ...]:
        """The whole state, in a shape whose encoding a renaming of node ids
        changes only by the renaming (sim/explore/symmetry.py).

        Every part that holds node ids reads the same whichever node comes
        first: nodes and timers as maps and sets, and messages decoded, so
        that the ids inside them are renamed too."""
        hosts = {
            node_id: (host.up, host.core, host.disk.contents(), frozenset(host.timers))
            for node_id, host in self.hosts.items()
        }
        messages = _Bag(
            (src, dst, self._message_of(payload), count)
            for (src, dst, payload), count in self.in_flight.items()
        )
        return (
            self.config,
            hosts,
            messages,
            frozenset(self.unstarted),
            (self.crashes, self.losses, self.duplicates),
        )

    def renamed(self, move: Move, names: Mapping[str, str]) -> Move:
        """`move` with its node ids renamed by `names`, its message included
        (whole strings only, as symmetry renames a state)."""
        payload = move.payload
        if payload is not None:
            data = _renamed(msgpack.unpackb(payload, raw=False), names)
            msg = self.protocol.decode_message(data)
            payload = msgpack.packb(self.protocol.encode_message(msg), use_bin_type=True)
        src = move.src
        timer = move.timer
        return Move(
            move.kind,
            names.get(move.node, move.node),
            None if src is None else names.get(src, src),
            payload,
            None if timer is None else names.get(timer, timer),
            move.crash_after,
        )

    def _message_of(self, payload: bytes) -> Any:
        messages = _MESSAGES.setdefault(self.protocol, {})
        msg = messages.get(payload)
        if msg is None:
            msg = messages[payload] = self.protocol.decode_message(
                msgpack.unpackb(payload, raw=False)
            )
        return msg

    def cores_share_state(self) -> bool:
        """Whether two cores hold one mutable object (a shared memory, say).

        Then a move of one node can change what another reads, and moves of
        different nodes do not commute (see the search's reduction). An
        object hashed by its identity, or not hashable, is mutable. So is a
        dict, list, set or bytearray, unless it is part of a value (an object
        that hashes by value, such as a frozen configuration): a frozen
        object's containers are taken as frozen with it."""
        owner: dict[int, str] = {}
        for node_id, host in self.hosts.items():
            stack: list[tuple[Any, bool]] = [(host.core, False)]
            seen: set[int] = set()
            while stack:
                value, in_value = stack.pop()
                if id(value) in seen or type(value) in _LEAVES:
                    continue
                seen.add(id(value))
                kind = _kind_of(value)
                if (kind == _OBJECT or (kind == _CONTAINER and not in_value)) and owner.setdefault(
                    id(value), node_id
                ) != node_id:
                    return True
                inside = in_value or kind == _VALUE
                stack.extend((part, inside) for part in _parts(value))
        return False

    def unfinished(self) -> str | None:
        """What the protocol has not finished in this state, or None."""
        # A thawed system that has taken no step since has no last variables
        # yet; they are the ones its state maps to now.
        return self.oracle.check_liveness(self.last_vars or self.spec_vars())
