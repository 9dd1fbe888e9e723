"""The explorer (sim/explore/): states, bounds, counterexamples and their replay.

Most tests drive a tiny protocol written here, "relay": a sender sends one
message to a receiver, which acknowledges it in a step of two trace lines.
Its switches make the cases the explorer must report: a receiver that
raises, an oracle that fails on the second line of a move, and a sender
that never resends, so one lost message leaves the run stuck.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tlasim.protocols import get_protocol
from tlasim.protocols.base import Effect, Input, Receive, Recover, Send, SetTimer, Start, Timeout
from tlasim.protocols.definition import StepInfo
from tlasim.protocols.errors import ConfigError, InvariantViolation
from tlasim.protocols.steps import StepList
from tlasim.sim import exitcodes
from tlasim.sim.explore.canonical import state_digest
from tlasim.sim.explore.moves import DELIVER, FIRE, START, Move
from tlasim.sim.explore.schedule import Schedule, replay
from tlasim.sim.explore.search import (
    BFS,
    DFS,
    FOUND_ERROR,
    FOUND_LIVENESS,
    FOUND_SAFETY,
    SearchBounds,
    explore,
)
from tlasim.sim.explore.system import ExploredSystem, FaultBounds
from tlasim.sim.kernel.rng import split

# ---- the relay protocol ------------------------------------------------------


@dataclass(frozen=True)
class RelayOptions:
    bug: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"bug": self.bug}


@dataclass
class RelayConfig:
    bug: str | None


class Sender:
    def __init__(self, config: RelayConfig) -> None:
        self.node_id = "s"
        self.config = config
        self.sent = False
        self.acked = False

    def view(self) -> Mapping[str, Any]:
        return {"sent": self.sent, "acked": self.acked}

    def handle(self, now: int, event: Input) -> list[Effect]:
        out = StepList(self.view)
        if isinstance(event, Start):
            # A correct sender resends until acknowledged; the "no-resend" one
            # sends once, so a lost message strands it.
            out.add(SetTimer("send", 5))
        elif isinstance(event, Timeout) and not self.acked:
            self.sent = True
            out.step("Send", {}, Send("r", {"kind": "data"}))
            if self.config.bug != "no-resend":
                out.add(SetTimer("send", 5))
        elif isinstance(event, Receive):
            self.acked = True
            out.step("Acked", {})
        return out.effects

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        pass


class Receiver:
    def __init__(self, config: RelayConfig) -> None:
        self.node_id = "r"
        self.config = config
        self.got = 0

    def view(self) -> Mapping[str, Any]:
        return {"got": self.got}

    def handle(self, now: int, event: Input) -> list[Effect]:
        out = StepList(self.view)
        if isinstance(event, Recover):
            out.step("Recover", {})
        elif isinstance(event, Receive):
            if self.config.bug == "raises":
                raise ValueError("the receiver's own bug")
            self.got = min(self.got + 1, 2)
            out.step("Receive", {})
            out.step("Ack", {}, Send("s", {"kind": "ack"}))
        return out.effects

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        pass


class RelayOracle:
    def __init__(self, config: RelayConfig) -> None:
        self.config = config

    def check_step(self, spec_vars: Mapping[str, Any], step: StepInfo) -> None:
        if self.config.bug == "second-line" and step.action == "Ack":
            raise InvariantViolation("second-line: the oracle fails on a move's second line")

    def check_liveness(self, spec_vars: Mapping[str, Any]) -> str | None:
        return None if spec_vars["acked"] else "the sender has no acknowledgement"


class Relay:
    name = "relay"
    summary = "one message and its acknowledgement"
    spec_module = "Relay"
    net_lose_action = "NetLose"
    net_duplicate_action = "NetDuplicate"
    variable_types: Mapping[str, str] = {}
    workload_ranges: Mapping[str, Any] = {}
    source_files: Sequence[str] = ()
    trace_actions = frozenset()
    bugs: Mapping[str, Any] = {}

    def default_options(self) -> RelayOptions:
        return RelayOptions()

    def make_options(self, overrides: Mapping[str, Any]) -> RelayOptions:
        return RelayOptions(**overrides)

    def configure(self, options: RelayOptions, bug: str | None, rng: random.Random) -> RelayConfig:
        return RelayConfig(bug)

    def node_ids(self, config: RelayConfig) -> tuple[str, ...]:
        return ("s", "r")

    def crash_nodes(self, config: RelayConfig) -> tuple[str, ...]:
        return ("r",)

    def make_core(self, config: RelayConfig, node_id: str) -> Any:
        return Sender(config) if node_id == "s" else Receiver(config)

    def crash_step(self, node_id: str) -> tuple[str, Mapping[str, Any]]:
        return "Crash", {}

    def encode_message(self, msg: Any) -> Any:
        return msg

    def decode_message(self, data: Any) -> Any:
        return data

    def message_record(self, msg: Any) -> Mapping[str, Any]:
        return msg  # type: ignore[no-any-return]

    def spec_constants(self, config: RelayConfig) -> Mapping[str, Any]:
        return {}

    def spec_vars(
        self,
        config: RelayConfig,
        views: Mapping[str, Mapping[str, Any]],
        logs: Mapping[str, Sequence[Mapping[str, Any]]],
        up: Mapping[str, bool],
        in_flight: Mapping[Hashable, int],
    ) -> dict[str, Any]:
        return {**views["s"], **views["r"], "msgs": dict(in_flight)}

    def make_oracle(self, config: RelayConfig) -> RelayOracle:
        return RelayOracle(config)

    def settle_tick(self, config: RelayConfig) -> int:
        return 0


RELAY = Relay()


def relay_explore(bug: str | None = None, **bounds: Any) -> Any:
    faults = FaultBounds(**{k: bounds.pop(k) for k in ("crashes", "losses", "duplicates")
                            if k in bounds})
    return explore(RELAY, RelayConfig(bug), SearchBounds(faults=faults, **bounds))


# ---- canonical states --------------------------------------------------------


@dataclass
class Holder:
    items: dict[str, Any] = field(default_factory=dict)
    shared: Any = None


@dataclass(frozen=True)
class Plan:
    name: str


def test_equal_states_have_one_digest_whatever_the_insertion_order() -> None:
    a, b = Holder(), Holder()
    a.items["x"], a.items["y"] = 1, {3, 4}
    b.items["y"], b.items["x"] = {4, 3}, 1
    assert state_digest(a) == state_digest(b)


def test_true_and_one_and_a_list_and_a_tuple_are_told_apart() -> None:
    assert state_digest(Holder({"v": True})) != state_digest(Holder({"v": 1}))
    assert state_digest(Holder({"v": [1]})) != state_digest(Holder({"v": (1,)}))
    assert state_digest(Holder({"v": "1"})) != state_digest(Holder({"v": 1}))


def test_an_immutable_object_is_its_value_wherever_it_is_held() -> None:
    plan = Plan("p")
    shared = (Holder({"a": plan}), Holder({"a": plan}))
    copies = (Holder({"a": Plan("p")}), Holder({"a": Plan("p")}))
    assert state_digest(shared) == state_digest(copies)


def test_which_cores_share_a_mutable_object_is_part_of_the_state() -> None:
    memory = Holder({"word": 0})
    shared = (Holder(shared=memory), Holder(shared=memory))
    separate = (Holder(shared=Holder({"word": 0})), Holder(shared=Holder({"word": 0})))
    assert state_digest(shared) != state_digest(separate)


def test_a_cycle_through_objects_is_encoded() -> None:
    a = Holder()
    a.shared = a
    assert len(state_digest(a)) == 16


# ---- moves and the system ----------------------------------------------------


def test_the_first_moves_are_the_starts_and_a_move_not_enabled_is_refused() -> None:
    system = ExploredSystem(RELAY, RelayConfig(None), FaultBounds())
    system.initial_step()
    assert list(system.moves()) == [Move(START, "s"), Move(START, "r")]
    with pytest.raises(ConfigError, match="r is not running"):
        system.apply(Move(DELIVER, "r", "s", b"\x81\xa4kind\xa4data"))
    system.apply(Move(START, "r"))
    with pytest.raises(ConfigError, match="no such message in flight"):
        system.apply(Move(DELIVER, "r", "s", b"\x81\xa4kind\xa4data"))
    system.apply(Move(START, "s"))
    with pytest.raises(ConfigError, match="already started"):
        system.apply(Move(START, "s"))
    system.apply(Move(FIRE, "s", timer="send"))
    with pytest.raises(ConfigError, match="only 1 step"):
        system.apply(Move(FIRE, "s", timer="send", crash_after=2))


def test_a_frozen_system_thaws_into_an_equal_independent_copy() -> None:
    system = ExploredSystem(RELAY, RelayConfig(None), FaultBounds())
    system.initial_step()
    system.apply(Move(START, "s"))
    frozen = system.freeze()
    twin = ExploredSystem.thaw(frozen, RELAY)
    assert twin.digest() == system.digest()
    twin.apply(Move(FIRE, "s", timer="send"))
    assert twin.digest() != system.digest()
    assert ExploredSystem.thaw(frozen, RELAY).digest() == system.digest()


# ---- searches on the relay ---------------------------------------------------


def test_the_correct_relay_exhausts_its_bound_with_no_counterexample() -> None:
    result = relay_explore(crashes=1, losses=1, duplicates=1, max_depth=12)
    assert result.counterexample is None
    assert result.exhausted and result.liveness_checked
    assert result.states > 20


def test_one_lost_message_strands_a_sender_that_never_resends() -> None:
    assert relay_explore("no-resend", max_depth=10).counterexample is None
    found = relay_explore("no-resend", losses=1, max_depth=10).counterexample
    assert found is not None and found.kind == FOUND_LIVENESS
    assert "no acknowledgement" in found.failure
    assert [m.kind for m in found.schedule][-1] == "lose"


def test_a_replay_judges_liveness_itself_whatever_the_schedule_claims() -> None:
    found = relay_explore("no-resend", losses=1, max_depth=10).counterexample
    assert found is not None and found.kind == FOUND_LIVENESS
    bounds = FaultBounds(losses=1)
    claimed = {"kind": FOUND_LIVENESS, "failure": "claimed"}
    # The stranded schedule, with no claim at all: still liveness.
    stranded = Schedule("relay", 0, "no-resend", {"bug": None}, bounds, found.schedule)
    assert replay(stranded).outcome == "liveness"
    # Its prefix before the loss can still finish: no liveness failure,
    # though the file claims one.
    before_loss = Schedule("relay", 0, "no-resend", {"bug": None}, bounds,
                           found.schedule[:-1], claimed)
    assert replay(before_loss).outcome == "ok"


def test_an_oracle_failing_on_the_second_line_of_a_move_is_found() -> None:
    found = relay_explore("second-line").counterexample
    assert found is not None and found.kind == FOUND_SAFETY
    assert found.schedule[-1].kind == DELIVER
    outcome = replay(_schedule("second-line", found.schedule))
    assert outcome.outcome == "safety" and outcome.failing_step == outcome.steps - 1


def test_a_core_that_raises_is_a_finding_with_its_schedule() -> None:
    found = relay_explore("raises").counterexample
    assert found is not None and found.kind == FOUND_ERROR
    assert "ValueError: the receiver's own bug" in found.failure


def test_a_state_limit_ends_the_search_without_claiming_the_bound() -> None:
    result = relay_explore(crashes=1, losses=1, duplicates=1, max_states=5)
    assert result.states == 5 and not result.exhausted and result.cut_by == "states"
    assert not result.liveness_checked


def _schedule(bug: str | None, moves: tuple[Move, ...]) -> Schedule:
    return Schedule("relay", 0, bug, {"bug": None}, FaultBounds(), moves)


@pytest.fixture(autouse=True)
def _relay_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    from tlasim.protocols import PROTOCOLS

    monkeypatch.setitem(PROTOCOLS, "relay", RELAY)


# ---- searches on two-phase commit ------------------------------------------


def twopc_config(bug: str | None = None) -> tuple[Any, Any]:
    definition = get_protocol("twopc")
    options = definition.make_options({"rm_count": 2, "tx_count": 1})
    return definition, definition.configure(options, bug, split(0).workload)


def test_breadth_and_depth_first_reach_the_same_states_within_a_depth() -> None:
    definition, config = twopc_config()
    bfs = explore(definition, config, SearchBounds(max_depth=9, order=BFS))
    dfs = explore(definition, config, SearchBounds(max_depth=9, order=DFS))
    assert bfs.exhausted and dfs.exhausted
    assert bfs.states == dfs.states
    assert bfs.counterexample is None and dfs.counterexample is None


def test_breadth_first_finds_a_shortest_counterexample() -> None:
    definition, config = twopc_config("commit-before-durable")
    found = explore(definition, config, SearchBounds(FaultBounds(crashes=1)))
    assert found.counterexample is not None
    depth = len(found.counterexample.schedule)
    assert found.counterexample.schedule[-2].crash_after is not None  # the TM's crash
    shallower = explore(definition, config, SearchBounds(FaultBounds(crashes=1),
                                                         max_depth=depth - 1))
    assert shallower.exhausted and shallower.counterexample is None
    # Without a crash there is no such schedule at all within the same depth.
    no_crash = explore(definition, config, SearchBounds(max_depth=depth))
    assert no_crash.counterexample is None


# ---- the command line --------------------------------------------------------


def tlasim(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tlasim.sim", *args], capture_output=True, text=True, check=False,
        cwd=cwd,
    )


def test_explore_writes_a_schedule_that_run_replays_byte_for_byte(tmp_path: Path) -> None:
    done = tlasim("explore", "twopc", "--bug", "tm-forgets-decision", "--crashes", "1",
                  "--set", "rm_count=2", "--set", "tx_count=1", "--out", str(tmp_path))
    assert done.returncode == exitcodes.SAFETY, done.stdout + done.stderr
    assert "FAILURE safety: durability" in done.stdout
    (schedule,) = tmp_path.glob("*.schedule.json")
    (trace,) = tmp_path.glob("*.ndjson")
    again = tmp_path / "again.ndjson"
    replayed = tlasim("run", "twopc", "--schedule", str(schedule), "--trace", str(again))
    assert replayed.returncode == exitcodes.SAFETY, replayed.stdout + replayed.stderr
    assert again.read_bytes() == trace.read_bytes()
    # Checked without --trace, the trace is a scratch file gone at exit: the
    # verdict names the schedule, and its regenerate command still works.
    checked = tlasim("run", "twopc", "--schedule", str(schedule), "--validate")
    regenerate = f"regenerate: tlasim run twopc --schedule {schedule.resolve()}"
    assert regenerate in checked.stdout, checked.stdout
    assert "tlasim-run-" not in checked.stdout
    # The trace holds its own schedule.
    third = tmp_path / "third.ndjson"
    from_trace = tlasim("run", "twopc", "--schedule", str(trace), "--trace", str(third))
    assert from_trace.returncode == exitcodes.SAFETY, from_trace.stderr
    assert third.read_bytes() == trace.read_bytes()


def test_explore_says_when_a_limit_and_not_the_bound_ended_it(tmp_path: Path) -> None:
    done = tlasim("explore", "twopc", "--max-states", "50", "--quiet", "--out", str(tmp_path))
    assert done.returncode == exitcodes.INCOMPLETE, done.stdout + done.stderr
    assert "bound not exhausted: --max-states ended the search" in done.stdout
    assert "states=50 " in done.stdout


def test_explore_refuses_bad_options(tmp_path: Path) -> None:
    for args, message in (
        (("explore", "twopc", "--bug", "nope"), "unknown twopc bug"),
        (("explore", "twopc", "--set", "rm_count=0"), "rm_count=0"),
        (("explore", "twopc", "--order", "random"), "'random' is not one of"),
        (("explore", "nope"), "unknown protocol 'nope'; known: "),
        (("explore", "twopc", "--crashes", "-1"), "-1 is not in the range"),
    ):
        done = tlasim(*args, "--out", str(tmp_path))
        assert done.returncode == exitcodes.USAGE, (args, done.stdout, done.stderr)
        assert message in done.stderr + done.stdout, (args, done.stderr)


def test_run_refuses_a_bad_schedule_with_a_clear_message(tmp_path: Path) -> None:
    good = {
        "tlasim_schedule": 1, "protocol": "twopc", "seed": 0, "bug": None,
        "protocol_options": {"rm_count": 2, "tx_count": 1},
        "faults": {"crashes": 0}, "moves": [{"kind": "start", "node": "tm"}],
    }
    cases = {
        "not json at all": "neither a schedule (JSON) nor a trace",
        json.dumps({**good, "tlasim_schedule": 9}): "not a tlasim schedule of version 1",
        json.dumps({**good, "moves": [{"kind": "teleport", "node": "tm"}]}): "kind 'teleport'",
        json.dumps({**good, "moves": [{"kind": "fire", "node": "tm", "timer": "x"}]}):
            "not enabled here",
        json.dumps({**good, "moves": [{"kind": "start", "node": "zz"}]}): "no node 'zz'",
        json.dumps({**good, "protocol": "snapshot"}): "is a schedule of snapshot, not twopc",
        json.dumps({**good, "faults": {"crashes": -1}}): "faults must hold non-negative",
        json.dumps({**good, "moves": [{"kind": "start", "node": "tm"},
                                      {"kind": "deliver", "node": "tm", "src": "r1",
                                       "msg": {"type": "Nonsense"}}]}): "not a message of twopc",
    }
    for number, (text, message) in enumerate(cases.items()):
        path = tmp_path / f"s{number}.json"
        path.write_text(text)
        done = tlasim("run", "twopc", "--schedule", str(path))
        assert done.returncode == exitcodes.USAGE, (text, done.stdout, done.stderr)
        assert message in done.stderr, (text, done.stderr)
    path = tmp_path / "good.json"
    path.write_text(json.dumps(good))
    clash = tlasim("run", "twopc", "--schedule", str(path), "--seed", "3")
    assert clash.returncode == exitcodes.USAGE and "--seed cannot be given" in clash.stderr
    missing = tlasim("run", "twopc")
    assert missing.returncode == exitcodes.USAGE and "--seed is required" in missing.stderr


def test_reduction_keeps_every_state_and_tries_fewer_moves() -> None:
    definition, config = twopc_config()
    full = explore(definition, config, SearchBounds(max_depth=10))
    reduced = explore(definition, config, SearchBounds(max_depth=10, reduce=True))
    assert reduced.reduced and reduced.states == full.states
    assert reduced.transitions < full.transitions * 0.8
    assert not reduced.liveness_checked
    buggy_definition, buggy = twopc_config("commit-before-durable")
    found = explore(buggy_definition, buggy,
                    SearchBounds(FaultBounds(crashes=1), reduce=True)).counterexample
    assert found is not None and found.kind == FOUND_SAFETY


def test_reduction_is_off_when_cores_share_memory() -> None:
    definition = get_protocol("lockfree-queue")
    config = definition.configure(
        definition.make_options({"thread_count": 2, "ops_per_thread": 1}), None,
        split(0).workload,
    )
    result = explore(definition, config, SearchBounds(reduce=True))
    assert not result.reduced and result.liveness_checked
    assert ExploredSystem(definition, config, FaultBounds()).cores_share_state()
    twopc, twopc_cfg = twopc_config()
    assert not ExploredSystem(twopc, twopc_cfg, FaultBounds()).cores_share_state()


def _reference(value: Any) -> Any:
    """A slow, obviously injective and canonical encoding: every value in
    full (no back-references), mappings and sets sorted by repr."""
    import enum
    from collections.abc import Mapping as AnyMapping
    from collections.abc import Set as AnySet

    kind = type(value)
    if kind in (str, int, float, bytes, bool, type(None)):
        return (kind.__name__, value)
    if kind in (tuple, list):
        return (kind.__name__, tuple(_reference(v) for v in value))
    if isinstance(value, enum.Enum):
        return ("enum", kind.__qualname__, value.name)
    if isinstance(value, AnyMapping):
        items = sorted(((_reference(k), _reference(v)) for k, v in value.items()), key=repr)
        return ("map", kind.__qualname__, tuple(items))
    if isinstance(value, AnySet):
        return ("set", tuple(sorted((_reference(v) for v in value), key=repr)))
    fields = dict(getattr(value, "__dict__", {}))
    for klass in kind.__mro__:
        for name in klass.__dict__.get("__slots__", ()):
            if hasattr(value, name):
                fields[name] = getattr(value, name)
    return ("obj", kind.__qualname__, tuple((n, _reference(fields[n])) for n in sorted(fields)))


@pytest.mark.parametrize("protocol", ["twopc", "shardsplit", "snapshot", "lockfree-queue"])
def test_the_digest_names_states_as_a_full_value_encoding_does(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the states a search meets, two states share a digest exactly when
    their full encodings are equal: nothing merged, nothing split."""
    by_digest: dict[bytes, str] = {}
    by_value: dict[str, bytes] = {}
    digest = ExploredSystem.digest

    def checked(system: ExploredSystem, symmetry: Any = None) -> bytes:
        assert symmetry is None
        named = digest(system)
        hosts = [(n, h.up, h.core, h.disk.contents(), sorted(h.timers))
                 for n, h in system.hosts.items()]
        value = repr(_reference((system.config, hosts, sorted(system.in_flight.items()),
                                 sorted(system.unstarted),
                                 (system.crashes, system.losses, system.duplicates))))
        assert by_digest.setdefault(named, value) == value, "two different states merged"
        assert by_value.setdefault(value, named) == named, "one state got two names"
        return named

    monkeypatch.setattr(ExploredSystem, "digest", checked)
    definition = get_protocol(protocol)
    small = {"twopc": {"rm_count": 2, "tx_count": 1},
             "lockfree-queue": {"thread_count": 2, "ops_per_thread": 2}}.get(protocol, {})
    config = definition.configure(definition.make_options(small), None, split(0).workload)
    faults = FaultBounds(1, 1, 1) if protocol != "lockfree-queue" else FaultBounds()
    result = explore(definition, config, SearchBounds(faults, max_states=300))
    assert result.states == len(by_digest) == len(by_value)


@pytest.mark.slow
def test_a_long_search_behind_a_pipe_reports_its_progress(tmp_path: Path) -> None:
    # stderr is a pipe here, not a terminal: plain progress lines, one per
    # ten seconds, so a search that runs for minutes is never silent.
    done = tlasim("explore", "twopc", "--crashes", "1", "--losses", "1", "--time", "11",
                  "--out", str(tmp_path), cwd=tmp_path)
    assert done.returncode == exitcodes.INCOMPLETE, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("explore: ")]
    assert lines, done.stderr
    for word in ("states", "transitions", "depth", "queue", "states/s"):
        assert word in lines[0], lines[0]
