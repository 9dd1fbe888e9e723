"""The model of one run that `tlasim show` and `tlasim report` both draw.

Theory of operation. Everything here comes from a trace file (and, when the
caller ran TLC, its verdict); nothing re-runs the simulation. A trace line
holds the whole state, so each step's view keeps only what changed since the
line before, down to the record field or set element (`Change`). Messages
come from the spec's message bag: a variable whose value is a function from
records to positive counts (every message protocol here names it `msgs`). A
copy that enters the bag in a node's step was sent by that node; a copy that
leaves it in a node's step was delivered to that node; one that leaves in a
network step was lost, and one that enters in a network step is a
duplicate. Equal messages cannot be told apart, so copies are matched first
in, first out. The fault plan comes from the header, and which of its faults
fired from the steps' `faults` fields; the oracles' verdict from the end
record (docs/trace-format.md). This module knows nothing of terminals or
HTML.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tlasim.faults.plan import FaultPlan
from tlasim.protocols.errors import ConfigError, TraceFormatError
from tlasim.sim.kernel.stepping import NET_NODE
from tlasim.tracing.codec import Trace, TraceStep, thaw
from tlasim.tracing.values import FnMap, canonical_json

# A value shown in full up to this many characters; longer ones are cut, with
# their length, so one huge value cannot flood a terminal or a diff panel.
SHOWN_CHARS = 400
# How many message copies a view draws; a trace may claim any count in its bag.
MESSAGES_DRAWN_MAX = 20_000


@dataclass(frozen=True, slots=True)
class Change:
    """One changed place in the state: `path` such as `rmState.t2.r1`.

    For a set, `old` holds the removed elements and `new` the added ones;
    otherwise `old` and `new` are the values before and after (None: absent).
    """

    path: str
    old: str | None
    new: str | None
    is_set: bool = False


@dataclass(slots=True)
class StepView:
    index: int  # position among the trace's steps, from 0
    seq: int | None
    ts: int | None
    node: str | None
    action: str
    params: str
    changes: list[Change]
    faults: tuple[str, ...]
    param_values: Mapping[str, Any]
    timer: str | None = None  # the timer whose expiry this step answers


@dataclass(slots=True)
class Message:
    """One copy of a message: sent (or duplicated) at one step, then delivered,
    lost, or still in flight at the end."""

    text: str
    src: str | None
    sent: int  # step index
    duplicate: bool = False
    dst: str | None = None
    delivered: int | None = None
    lost: int | None = None


@dataclass(frozen=True, slots=True)
class Downtime:
    node: str
    crashed: int  # the crash step
    recovered: int | None  # the node's next step (its recovery), if any


@dataclass(frozen=True, slots=True)
class PlanEntry:
    name: str  # as in a trace line's `faults`: `crashes/0`, `windows/3`
    text: str
    fired: tuple[int, ...]  # the steps it struck in


@dataclass(frozen=True, slots=True)
class Mark:
    """A step the oracles or TLC single out, with what they said."""

    step: int  # step index
    title: str
    text: str


@dataclass(slots=True)
class RunView:
    path: str
    protocol: str | None
    spec: str | None
    seed: int | None
    reproduce: str | None
    lanes: list[str]
    steps: list[StepView]
    messages: list[Message]
    downtimes: list[Downtime]
    plan: list[PlanEntry] | None  # None: the header holds no fault plan
    partitions: list[dict[str, Any]]
    faults_recorded: bool  # whether the trace names fired faults at all
    kind: str = "run"  # what made the trace: a simulated "run", a "live run", a "schedule"
    oracle: Mark | None = None
    oracle_verdict: str | None = None  # None: the trace has no end record
    tlc: Mark | None = None
    tlc_verdict: str | None = None  # None: TLC was not asked
    notes: list[str] = field(default_factory=list)


def show_value(value: Any, limit: int = SHOWN_CHARS) -> str:
    """A value in TLA+'s notation, cut to `limit` characters."""
    text = _tla(value)
    if len(text) > limit:
        return f"{text[:limit]}... ({len(text)} chars)"
    return text


def _tla(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, frozenset):
        return "{" + ", ".join(_tla(v) for v in _canonical(value)) + "}"
    if isinstance(value, tuple):
        return "<<" + ", ".join(_tla(v) for v in value) + ">>"
    if isinstance(value, FnMap):
        pairs = (f"{_tla(k)} :> {_tla(value[k])}" for k in _canonical(value))
        return "(" + " @@ ".join(pairs) + ")" if value else "<<>>"
    if isinstance(value, Mapping):
        return "[" + ", ".join(f"{k} |-> {_tla(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _canonical(values: Iterable[Any]) -> list[Any]:
    return sorted(values, key=canonical_json)


def _key_text(key: Any) -> str:
    return key if isinstance(key, str) else _tla(key)


def diff_values(before: Any, after: Any, path: str) -> list[Change]:
    """Where `after` differs from `before`, field by field and element by element."""
    if before is after or before == after:
        return []
    if isinstance(before, frozenset) and isinstance(after, frozenset):
        removed, added = before - after, after - before
        return [Change(
            path,
            show_value(frozenset(removed)) if removed else None,
            show_value(frozenset(added)) if added else None,
            is_set=True,
        )]
    if (
        isinstance(before, Mapping) and isinstance(after, Mapping)
        # An empty function prints as `{}`, a record's form, whatever its domain.
        and (isinstance(before, FnMap) == isinstance(after, FnMap) or not before or not after)
    ):
        changes: list[Change] = []
        for key in _canonical(set(before) | set(after)):
            text = _key_text(key)
            where = f"{path}.{text}" if isinstance(key, str) else f"{path}[{text}]"
            if key not in before:
                changes.append(Change(where, None, show_value(after[key])))
            elif key not in after:
                changes.append(Change(where, show_value(before[key]), None))
            else:
                changes.extend(diff_values(before[key], after[key], where))
        return changes
    return [Change(path, show_value(before), show_value(after))]


def step_changes(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> list[Change]:
    """What a step changed; the first step's whole state counts as changed."""
    changes: list[Change] = []
    for name in current:
        value = current[name]
        if previous is None or name not in previous:
            changes.append(Change(name, None, show_value(value)))
        else:
            changes.extend(diff_values(previous[name], value, name))
    return changes


def _is_bag(value: Any) -> bool:
    return isinstance(value, FnMap) and all(
        type(n) is int and n > 0 and isinstance(k, Mapping) for k, n in value.items()
    )


def message_variables(trace: Trace) -> list[str]:
    """The variables that hold a bag of messages on every line that logs them."""
    seen_bag: set[str] = set()
    never: set[str] = set()
    for step in trace.steps:
        for name, value in step.vars.items():
            if _is_bag(value):
                seen_bag.add(name)
            elif not (isinstance(value, Mapping) and not value):  # an empty bag is `{}`
                never.add(name)
    return sorted(seen_bag - never)


def _messages(trace: Trace, bags: list[str]) -> tuple[list[Message], int]:
    """The message copies to draw, and how many more the trace holds past
    MESSAGES_DRAWN_MAX (a bag's count is the file's to choose: 2**31 copies
    of one message must cost a line of text, not a copy each)."""
    messages: list[Message] = []
    not_drawn = 0
    in_flight: dict[tuple[str, str], deque[Message]] = {}
    last_sent: dict[tuple[str, str], Message] = {}
    previous: dict[str, Any] = {}
    for index, step in enumerate(trace.steps):
        for name in bags:
            if name not in step.vars:
                continue
            before, after = previous.get(name), step.vars[name]
            previous[name] = after
            if before is after:
                continue
            before_map = before if isinstance(before, Mapping) else {}
            for msg in _canonical(set(before_map) | set(after)):
                delta = after.get(msg, 0) - before_map.get(msg, 0)
                key = (name, canonical_json(msg))
                queue = in_flight.setdefault(key, deque())
                sent, received = max(delta, 0), max(-delta, 0)
                room = max(MESSAGES_DRAWN_MAX - len(messages), 0)
                not_drawn += max(sent - room, 0)
                for _ in range(min(sent, room)):
                    original = last_sent.get(key)
                    if step.node == NET_NODE:
                        copy = Message(key[1] if original is None else original.text,
                                       None if original is None else original.src,
                                       index, duplicate=True)
                    else:
                        copy = Message(show_value(msg), step.node, index)
                        last_sent[key] = copy
                    messages.append(copy)
                    queue.append(copy)
                for _ in range(received):
                    if queue:
                        copy = queue.popleft()
                    elif len(messages) < MESSAGES_DRAWN_MAX:
                        # A message the trace never showed being sent.
                        copy = Message(show_value(msg), None, index)
                        messages.append(copy)
                    else:
                        not_drawn += received
                        break
                    if step.node == NET_NODE or step.node is None:
                        copy.lost = index
                    else:
                        copy.dst = step.node
                        copy.delivered = index
    return messages, not_drawn


def _lanes(steps: Iterable[TraceStep]) -> list[str]:
    """One lane per node, by kind in order of first appearance and by number
    within a kind: tm, r1, r2, r3 rather than tm, r1, r3, r2."""
    first: dict[str, int] = {}
    for step in steps:
        if step.node is not None and step.node != NET_NODE:
            first.setdefault(step.node, len(first))
    kinds: dict[str, int] = {}
    for node in first:
        kinds.setdefault(node.rstrip("0123456789"), len(kinds))

    def order(node: str) -> tuple[int, int, str, int]:
        kind = node.rstrip("0123456789")
        number = node[len(kind):]
        # Numbers compared as digit strings, shortest first: r2 before r10,
        # and a name of 5,000 digits never becomes an int.
        digits = number.lstrip("0")
        return (kinds[kind], len(digits) if number else -1, digits, first[node])

    return sorted(first, key=order)


def _plan(trace: Trace) -> FaultPlan | None:
    header: Mapping[str, Any] = trace.header or {}
    options = header.get("options")
    if not isinstance(options, Mapping) or options.get("faults") is None:
        return None
    try:
        return FaultPlan.from_dict(thaw(options["faults"]), f"{trace.path}: the header's plan")
    except ConfigError as exc:
        raise TraceFormatError(str(exc)) from None


def _downtimes(trace: Trace, crash_names: set[str]) -> list[Downtime]:
    downtimes = []
    down: dict[str, int] = {}
    for index, step in enumerate(trace.steps):
        node = step.node
        if node is None:
            continue
        if node in down:
            downtimes.append(Downtime(node, down.pop(node), index))
        elif any(name in crash_names for name in step.faults):
            down[node] = index
    downtimes.extend(Downtime(node, at, None) for node, at in down.items())
    return sorted(downtimes, key=lambda d: d.crashed)


def _kind(header: Mapping[str, Any]) -> str:
    """What wrote the trace, from its header's options: `tlasim live`, an
    explorer's schedule, or a simulated run."""
    options = header.get("options")
    if isinstance(options, Mapping):
        if options.get("mode") == "live":
            return "live run"
        if "explore" in options:
            return "schedule"
    return "run"


def build_run_view(trace: Trace) -> RunView:
    """The run a trace records, ready to draw; TLC's verdict is added by `mark_tlc`."""
    header: Mapping[str, Any] = trace.header or {}
    steps: list[StepView] = []
    previous: Mapping[str, Any] | None = None
    fired: dict[str, list[int]] = {}
    for index, step in enumerate(trace.steps):
        steps.append(StepView(
            index=index,
            seq=step.seq,
            ts=step.ts,
            node=step.node,
            action=step.action or "?",
            params=show_value(step.params) if step.params else "",
            changes=step_changes(previous, step.vars),
            faults=step.faults,
            param_values=step.params,
            timer=step.timer,
        ))
        previous = step.vars
        for name in step.faults:
            fired.setdefault(name, []).append(index)
    plan = _plan(trace)
    entries = None
    partitions: list[dict[str, Any]] = []
    if plan is not None:
        entries = [
            PlanEntry(name, text, tuple(fired.get(name, ()))) for name, text in plan.entries()
        ]
        partitions = [
            {"name": f"partitions/{i}", "start": p.start, "end": p.end, "src": list(p.src),
             "dst": list(p.dst), "both_ways": p.both_ways}
            for i, p in enumerate(plan.partitions)
        ]
    messages, not_drawn = _messages(trace, message_variables(trace))
    view = RunView(
        path=trace.path,
        protocol=_text(header.get("protocol")),
        spec=_text(header.get("spec")),
        seed=header.get("seed") if type(header.get("seed")) is int else None,
        reproduce=_text(header.get("reproduce")),
        lanes=_lanes(trace.steps),
        steps=steps,
        messages=messages,
        downtimes=_downtimes(trace, {n for n in fired if n.startswith("crashes/")}),
        plan=entries,
        partitions=partitions,
        faults_recorded=bool(fired),
        kind=_kind(header),
    )
    if not_drawn:
        view.notes.append(
            f"{not_drawn:,} message copies past the first {MESSAGES_DRAWN_MAX:,} are not drawn"
        )
    end = trace.end
    if end is None:
        view.notes.append("the trace has no end record, so the oracles' verdict is not shown")
    else:
        verdict = end.outcome if end.failure is None else f"{end.outcome}: {end.failure}"
        view.oracle_verdict = verdict
        failing = None if end.failing_step is None else _index_of_seq(steps, end.failing_step)
        if failing is not None:
            view.oracle = Mark(failing, f"oracle: {end.outcome} failure", end.failure or "")
    if view.reproduce is not None:
        view.reproduce = view.reproduce.replace("{trace}", trace.path)
    return view


def _index_of_seq(steps: list[StepView], seq: int) -> int | None:
    if seq < len(steps) and steps[seq].seq == seq:
        return seq
    return next((s.index for s in steps if s.seq == seq), None)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def mark_tlc(view: RunView, trace: Trace, verdict: Any) -> None:
    """Add TLC's verdict (a `tracing.validation.validator.Verdict`) to the view:
    the first line no spec step explains, with the validator's own report."""
    view.tlc_verdict = verdict.summary()
    divergence = verdict.divergence
    if divergence is None:
        return
    index = next((i for i, s in enumerate(trace.steps) if s.line == divergence.line), None)
    if index is not None:
        view.tlc = Mark(index, f"TLC: first rejected line {divergence.line}", verdict.report())


def matches(step: StepView, node: str | None, fields: Mapping[str, str]) -> bool:
    """Whether a step is the node's, and names each field's value in its params
    (at any depth: a message's `tx` counts)."""
    if node is not None and step.node != node:
        return False
    return all(_names(step.param_values, name, value) for name, value in fields.items())


def _names(value: Any, name: str, wanted: str) -> bool:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if key == name and isinstance(inner, str | int) and str(inner) == wanted:
                return True
            if _names(inner, name, wanted):
                return True
        return False
    if isinstance(value, frozenset | tuple):
        return any(_names(v, name, wanted) for v in value)
    return False
