"""Fault plans: what goes wrong in a run, as plain, serializable data.

A plan lists timed crashes, windows of message loss, duplication and delay
on chosen links, and partitions (one-way or both ways). `sim/` carries a
plan out; this module never imports `sim/`. A plan plus a seed fixes a run:
the random choices a probabilistic window makes come from its own `seed`, so
removing one fault while shrinking does not change the draws of another.

After `heal_tick` nothing goes wrong: every crashed node restarts, every
window and partition has ended, and the protocol must finish its work within
the liveness bound. The atlas rules in `check_recoverable` keep every plan
recoverable in that sense.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields, replace
from typing import Any, Literal, TypeAlias

from tlasim.protocols.checked import load_json
from tlasim.protocols.errors import ConfigError, short_repr

WindowKind: TypeAlias = Literal["loss", "duplicate", "delay"]
WINDOW_KINDS: tuple[WindowKind, ...] = ("loss", "duplicate", "delay")
Link: TypeAlias = tuple[str, str]  # (source node, destination node)

SCHEMA = 1
# Ticks, counts and seeds are 64-bit integers (what SQLite and msgpack hold);
# Python could not even print one of thousands of digits in an error.
PLAN_INT_MIN, PLAN_INT_MAX = -(2**63), 2**63 - 1
# A plan is a few levels deep; Python's JSON parser recurses, so a hostile
# plan nested thousands deep must be refused, not crash it.
_PLAN_FIELDS = ("schema", "heal_tick", "crashes", "windows", "partitions")


@dataclass(frozen=True, slots=True)
class Crash:
    """Crash `node` after its `after_steps`-th atomic step at or after `tick`.

    Striking after a step, not at an idle moment, is what lets a plan crash
    a node between two effects of one handler: `after_steps=3` at the tick a
    handler runs crashes the node after that handler's third step. The node
    restarts `restart_ticks` after it crashed. A node that takes no step
    after `tick` never crashes; one that is down at `tick` is left alone.
    """

    node: str
    tick: int
    restart_ticks: int
    after_steps: int = 1


@dataclass(frozen=True, slots=True)
class Window:
    """Between `start` (inclusive) and `end` (exclusive), hit messages on `links`.

    `loss` drops a message delivered in the window; `duplicate` adds a second
    copy to a message sent in the window; `delay` adds up to
    `delay_ticks_max` ticks to a message sent in the window. Each matching
    message is hit with `probability`, drawn from a stream seeded by `seed`.
    `links=None` means every link.
    """

    kind: WindowKind
    start: int
    end: int
    probability: float
    links: tuple[Link, ...] | None = None
    delay_ticks_max: int = 0
    seed: int = 0

    def covers(self, src: str, dst: str) -> bool:
        return self.links is None or (src, dst) in self.links


@dataclass(frozen=True, slots=True)
class Partition:
    """Between `start` and `end`, drop every message from `src` nodes to `dst` nodes.

    With `both_ways`, messages from `dst` to `src` are dropped too. A message
    is dropped when it is delivered inside the partition.
    """

    start: int
    end: int
    src: tuple[str, ...]
    dst: tuple[str, ...]
    both_ways: bool = True

    def cuts(self, src: str, dst: str) -> bool:
        if src in self.src and dst in self.dst:
            return True
        return self.both_ways and src in self.dst and dst in self.src


@dataclass(frozen=True, slots=True)
class FaultPlan:
    crashes: tuple[Crash, ...] = ()
    windows: tuple[Window, ...] = ()
    partitions: tuple[Partition, ...] = ()
    heal_tick: int = 0  # nothing goes wrong from this tick on

    @property
    def size(self) -> int:
        """How many faults the plan holds; shrinking makes this smaller."""
        return len(self.crashes) + len(self.windows) + len(self.partitions)

    def faults(self) -> list[Crash | Window | Partition]:
        return [*self.crashes, *self.windows, *self.partitions]

    def with_faults(self, faults: Iterable[Crash | Window | Partition]) -> FaultPlan:
        """The same plan holding only `faults` (used by shrinking)."""
        items = list(faults)
        return replace(
            self,
            crashes=tuple(f for f in items if isinstance(f, Crash)),
            windows=tuple(f for f in items if isinstance(f, Window)),
            partitions=tuple(f for f in items if isinstance(f, Partition)),
        )

    def describe(self) -> str:
        """One line per fault, for reports."""
        return "\n".join(text for _name, text in self.entries())

    def entries(self) -> list[tuple[str, str]]:
        """Each fault with its name in the plan (`crashes/0`, `windows/3`: the
        names a trace line's `faults` field uses) and its one-line description;
        the heal tick comes first, named `heal`."""
        entries = [("heal", f"heal at tick {self.heal_tick}")]
        for i, c in enumerate(self.crashes):
            entries.append((f"crashes/{i}", f"crash {c.node} after its step #{c.after_steps} at "
                            f"tick >= {c.tick}, restart {c.restart_ticks} ticks later"))
        for i, w in enumerate(self.windows):
            where = "all links" if w.links is None else ", ".join(f"{a}->{b}" for a, b in w.links)
            extra = f" up to {w.delay_ticks_max} ticks" if w.kind == "delay" else ""
            entries.append((f"windows/{i}", f"{w.kind}{extra} p={w.probability:g} in "
                            f"[{w.start}, {w.end}) on {where}"))
        for i, p in enumerate(self.partitions):
            arrow = "<->" if p.both_ways else "->"
            entries.append((f"partitions/{i}", f"partition {','.join(p.src)} {arrow} "
                            f"{','.join(p.dst)} in [{p.start}, {p.end})"))
        return entries

    # ---- plain data ----

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "heal_tick": self.heal_tick,
            "crashes": [
                {"node": c.node, "tick": c.tick, "restart_ticks": c.restart_ticks,
                 "after_steps": c.after_steps}
                for c in self.crashes
            ],
            "windows": [_window_dict(w) for w in self.windows],
            "partitions": [
                {"start": p.start, "end": p.end, "src": list(p.src), "dst": list(p.dst),
                 "both_ways": p.both_ways}
                for p in self.partitions
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, data: Any, where: str = "fault plan") -> FaultPlan:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a JSON object, got {type(data).__name__}")
        schema = data.get("schema", SCHEMA)
        if type(schema) is not int or schema != SCHEMA:
            raise ConfigError(f"{where}: schema {short_repr(data.get('schema'))} is not {SCHEMA}")
        unknown = _names(set(data) - set(_PLAN_FIELDS))
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {unknown}")
        plan = cls(
            crashes=tuple(
                _build(Crash, item, f"{where}: crashes[{i}]")
                for i, item in enumerate(_list(data, "crashes", where))
            ),
            windows=tuple(
                _build(Window, item, f"{where}: windows[{i}]")
                for i, item in enumerate(_list(data, "windows", where))
            ),
            partitions=tuple(
                _build(Partition, item, f"{where}: partitions[{i}]")
                for i, item in enumerate(_list(data, "partitions", where))
            ),
            heal_tick=_int(data.get("heal_tick", 0), f"{where}: heal_tick"),
        )
        plan.check_wellformed(where)
        return plan

    @classmethod
    def from_json(cls, text: str, where: str = "fault plan") -> FaultPlan:
        return cls.from_dict(load_json(text, where), where)

    # ---- validation ----

    def check_wellformed(self, where: str = "fault plan") -> None:
        """Each field of the right type and in range, every fault over by `heal_tick`."""
        _check_types(self, where)
        if self.heal_tick < 0:
            raise ConfigError(f"{where}: heal_tick={self.heal_tick} must be >= 0")
        for c in self.crashes:
            if c.tick < 0 or c.restart_ticks < 1 or c.after_steps < 1:
                raise ConfigError(
                    f"{where}: {c}: needs tick >= 0, restart_ticks >= 1 and after_steps >= 1"
                )
            if c.tick >= self.heal_tick:
                raise ConfigError(f"{where}: {c} is at or after heal_tick={self.heal_tick}")
        for w in self.windows:
            if w.kind not in WINDOW_KINDS:
                raise ConfigError(f"{where}: window kind {w.kind!r}: expected one of "
                                  f"{', '.join(WINDOW_KINDS)}")
            if not 0.0 <= w.probability <= 1.0:
                raise ConfigError(f"{where}: {w}: probability must be in [0, 1]")
            if w.kind == "delay" and w.delay_ticks_max < 1:
                raise ConfigError(f"{where}: {w}: a delay window needs delay_ticks_max >= 1")
            if w.kind != "delay" and w.delay_ticks_max != 0:
                raise ConfigError(f"{where}: {w}: only a delay window has delay_ticks_max")
            if w.links is not None and (
                not w.links or any(a == b for a, b in w.links) or len(set(w.links)) < len(w.links)
            ):
                raise ConfigError(
                    f"{where}: {w}: links must be null (every link) or distinct pairs "
                    "of two different nodes"
                )
            _span(w.start, w.end, self.heal_tick, f"{where}: {w}")
        for p in self.partitions:
            if (
                not p.src
                or not p.dst
                or set(p.src) & set(p.dst)
                or len(set(p.src)) < len(p.src)
                or len(set(p.dst)) < len(p.dst)
            ):
                raise ConfigError(
                    f"{where}: {p}: src and dst must be non-empty, disjoint and without repeats"
                )
            _span(p.start, p.end, self.heal_tick, f"{where}: {p}")

    def check_recoverable(
        self,
        nodes: Sequence[str],
        where: str = "fault plan",
        crash_nodes: Sequence[str] | None = None,
    ) -> None:
        """The atlas: every fault names a real node and the system can heal.

        `crash_nodes` are the nodes that may crash (default: all of them); a
        protocol whose clients are the load rather than the system under
        test keeps them out of it.
        """
        known = set(nodes)
        if crash_nodes is not None:
            cannot = sorted(({c.node for c in self.crashes} & known) - set(crash_nodes))
            if cannot:
                raise ConfigError(
                    f"{where}: node(s) {', '.join(cannot)} cannot crash in this protocol; "
                    f"these can: {', '.join(crash_nodes)}"
                )
        named = [c.node for c in self.crashes]
        for w in self.windows:
            for a, b in w.links or ():
                named += [a, b]
        for p in self.partitions:
            named += [*p.src, *p.dst]
        unknown = _names(set(named) - known)
        if unknown:
            raise ConfigError(
                f"{where}: unknown node(s) {unknown}; this run has {', '.join(nodes)}"
            )


def _check_types(plan: FaultPlan, where: str) -> None:
    """Plans built in Python skip `from_dict`'s checks; ticks must stay integers."""
    def is_int(value: Any) -> bool:
        return type(value) is int and PLAN_INT_MIN <= value <= PLAN_INT_MAX

    # Fields are named by index: a plan's repr would print the bad value whole.
    ints: list[tuple[Any, str]] = [(plan.heal_tick, "heal_tick")]
    for i, c in enumerate(plan.crashes):
        ints += [(c.tick, f"crashes[{i}].tick"), (c.restart_ticks, f"crashes[{i}].restart_ticks"),
                 (c.after_steps, f"crashes[{i}].after_steps")]
        if not isinstance(c.node, str):
            raise ConfigError(f"{where}: crash node {short_repr(c.node)} must be a string")
    for i, w in enumerate(plan.windows):
        ints += [(w.start, f"windows[{i}].start"), (w.end, f"windows[{i}].end"),
                 (w.delay_ticks_max, f"windows[{i}].delay_ticks_max"),
                 (w.seed, f"windows[{i}].seed")]
        if type(w.probability) not in (int, float):
            raise ConfigError(
                f"{where}: window probability {short_repr(w.probability)} must be a number"
            )
    for i, p in enumerate(plan.partitions):
        ints += [(p.start, f"partitions[{i}].start"), (p.end, f"partitions[{i}].end")]
    for value, name in ints:
        if not is_int(value):
            raise ConfigError(f"{where}: {name}={short_repr(value)}: must be a 64-bit integer")


def _window_dict(w: Window) -> dict[str, Any]:
    data: dict[str, Any] = {
        "kind": w.kind, "start": w.start, "end": w.end, "probability": w.probability,
        "links": None if w.links is None else [list(link) for link in w.links],
        "seed": w.seed,
    }
    if w.kind == "delay":
        data["delay_ticks_max"] = w.delay_ticks_max
    return data


def _span(start: int, end: int, heal: int, where: str) -> None:
    if not 0 <= start < end <= heal:
        raise ConfigError(f"{where}: needs 0 <= start < end <= heal_tick={heal}")


def _list(data: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {key} must be a list")
    return value


def _int(value: Any, where: str) -> int:
    if type(value) is not int:
        raise ConfigError(f"{where}: expected an integer, got {short_repr(value)}")
    if not PLAN_INT_MIN <= value <= PLAN_INT_MAX:
        raise ConfigError(f"{where}: expected a 64-bit integer, got {short_repr(value)}")
    return value


def _names(names: Iterable[Any]) -> str:
    """Names for a message, sorted; one that is not a printable string is escaped,
    so a newline or a terminal escape in a plan cannot forge a line of output."""
    shown = [n if isinstance(n, str) and n.isprintable() else short_repr(n) for n in names]
    return ", ".join(sorted(shown))


_FIELD_TYPES: dict[str, str] = {
    "node": "str", "tick": "int", "restart_ticks": "int", "after_steps": "int",
    "kind": "str", "start": "int", "end": "int", "probability": "float",
    "delay_ticks_max": "int", "seed": "int",
    "both_ways": "bool", "links": "links", "src": "nodes", "dst": "nodes",
}


def _build(cls: type[Any], item: Any, where: str) -> Any:
    if not isinstance(item, Mapping):
        raise ConfigError(f"{where}: expected a JSON object")
    names = {f.name for f in fields(cls)}
    unknown = _names(set(item) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {unknown}")
    kwargs: dict[str, Any] = {}
    for name, value in item.items():
        kind = _FIELD_TYPES[name]
        if kind == "int":
            kwargs[name] = _int(value, f"{where}.{name}")
        elif kind == "float":
            if type(value) is int:
                # float() of an integer past 1e308 raises; no probability is one.
                value = float(value) if -2 <= value <= 2 else float("inf")
            if type(value) is not float:
                raise ConfigError(f"{where}.{name}: expected a number, got {short_repr(value)}")
            kwargs[name] = value
        elif kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(
                    f"{where}.{name}: expected true or false, got {short_repr(value)}"
                )
            kwargs[name] = value
        elif kind == "str":
            if not isinstance(value, str):
                raise ConfigError(f"{where}.{name}: expected a string, got {short_repr(value)}")
            kwargs[name] = value
        elif kind == "nodes":
            if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
                raise ConfigError(f"{where}.{name}: expected a list of node names")
            kwargs[name] = tuple(value)
        else:  # links
            if value is None:
                kwargs[name] = None
                continue
            if not isinstance(value, list) or not all(
                isinstance(link, list) and len(link) == 2 and all(isinstance(n, str) for n in link)
                for link in value
            ):
                raise ConfigError(f"{where}.{name}: expected null or a list of [src, dst] pairs")
            kwargs[name] = tuple((a, b) for a, b in value)
    missing = [
        f.name for f in fields(cls)
        if f.name not in kwargs and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        raise ConfigError(f"{where}: missing field(s) {', '.join(missing)}")
    return cls(**kwargs)


NO_FAULTS_PLAN = FaultPlan()
