"""Rules the shard split code states are rules TLC enforces.

docs/shardsplit-model.md lists each rule the cores state or rely on, and
where ShardSplitMsg enforces it. The rules this change tightened are the
durability rules: a node's durable spec variables (the coordinator's phases
and routing; a shard's state, data and applied ids) change only in a step
that syncs the change, and recovery rebuilds exactly them from the synced
log. So a write is synced before its PutOk leaves, a child's installed data
before its Installed, a split's progress before the message that acts on it.
For each, a core that breaks exactly that rule runs swarm seeds until one
shows the scenario; TLC must reject that trace at the very line where the
rule was first broken (found here from the trace, not written down), and the
correct cores must pass the same seed, whose trace shows the same scenario.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tlasim.protocols.base import Core, Effect, Input, Persist
from tlasim.protocols.shardsplit.config import COORD_ID, NO_VALUE, ShardSplitConfig
from tlasim.protocols.shardsplit.coordinator import FREEZING, IDLE, Coordinator
from tlasim.protocols.shardsplit.definition import ShardSplit
from tlasim.protocols.shardsplit.shard import ABSENT, SPLITTING, Shard
from tlasim.protocols.steps import StepList
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import Trace, TraceStep, read_trace
from tlasim.tracing.validation.validator import validate_traces

SEEDS = range(200)  # swarm seeds searched for one that shows the scenario

# The line where a trace first shows the rule's scenario: in a broken core's
# trace, where the rule was first broken. None if the trace never shows it.
FirstBreak = Callable[[Trace], int | None]


class ShardAcksUnsyncedWrites(Shard):
    """Applies a write without syncing it to its log, and acknowledges it at once."""

    def handle(self, now: int, event: Input) -> list[Effect]:
        return [
            replace(e, sync=False) if isinstance(e, Persist) and e.record["kind"] == "apply" else e
            for e in super().handle(now, event)
        ]


class ChildInstallsInMemory(Shard):
    """Installs its parent's data and applied ids, and answers Installed, but
    persists only its new state: the data lives in memory only."""

    def handle(self, now: int, event: Input) -> list[Effect]:
        effects = super().handle(now, event)
        return [
            e for e in effects if not (isinstance(e, Persist) and e.record["kind"] == "install")
        ]


class CoordinatorRecoversLastRecordOnly(Coordinator):
    """Syncs every phase change, but rebuilds only the latest one on recovery,
    as if the last record held every split's progress."""

    def restore(self, log: tuple[Mapping[str, Any], ...]) -> None:
        super().restore(log[-1:])


class CoordinatorSwitchesLate(Coordinator):
    """Counts the Installed that completes a split's answers, but switches only
    after its next event (a resend, a RouteReq, another answer): the switch
    leaves the handler of the answer that made it due."""

    def __init__(self, config: ShardSplitConfig) -> None:
        super().__init__(config)
        self._late: tuple[str, str, str, list[Effect]] | None = None

    def _move(self, out: StepList, parent: str, phase: str, action: str,
              sends: list[Effect], params: Mapping[str, Any] | None = None) -> None:
        if action == "CoordSwitch":
            self._late = (parent, phase, action, sends)  # handle() makes it later
            return
        super()._move(out, parent, phase, action, sends, params)

    def handle(self, now: int, event: Input) -> list[Effect]:
        late, self._late = self._late, None
        effects = super().handle(now, event)
        if late is not None:
            parent, phase, action, sends = late
            plan = self.config.split_of(parent)
            assert plan is not None
            if self.phase[parent] == FREEZING and self.acks[parent] == set(plan.children):
                out = StepList(self.view)
                super()._move(out, parent, phase, action, sends)
                effects += out.effects
        return effects


class WithCores(ShardSplit):
    """Shard split whose shards, or whose coordinator, are `core_class`; the
    other nodes run the correct cores."""

    def __init__(self, core_class: type[Shard] | type[Coordinator]) -> None:
        super().__init__()
        self.core_class = core_class

    def make_core(self, config: ShardSplitConfig, node_id: str) -> Core:
        if issubclass(self.core_class, Coordinator) and node_id == COORD_ID:
            return self.core_class(config)
        if issubclass(self.core_class, Shard) and node_id in config.shards:
            return self.core_class(node_id, config)
        return super().make_core(config, node_id)


def _first(trace: Trace, shows: Callable[[TraceStep, TraceStep], bool]) -> int | None:
    """The line of the first step that `shows(before, after)` picks."""
    for before, after in zip(trace.steps, trace.steps[1:], strict=False):
        if shows(before, after):
            return after.line
    return None


def first_apply_lost_in_a_crash(trace: Trace) -> int | None:
    """The first ShardApply, provided some shard applies a write and then
    crashes with no change of its state in between: the apply is the only
    record that crash could lose (a state change syncs the log anew), so a
    shard that left it unsynced loses a write it acknowledged."""
    unsaved: set[str] = set()
    for before, after in zip(trace.steps, trace.steps[1:], strict=False):
        if after.action == "ShardApply":
            unsaved.add(after.params["shard"])
        elif after.action == "ShardCrash" and after.params["shard"] in unsaved:
            return next(s.line for s in trace.steps if s.action == "ShardApply")
        states = before.vars["shardState"], after.vars["shardState"]
        unsaved -= {shard for shard in states[1] if states[0][shard] != states[1][shard]}
    return None


def _installs_content(before: TraceStep, after: TraceStep) -> bool:
    """A child installs (absent to splitting) data or applied ids that differ
    from what an empty shard holds: a recovery from its state record alone
    would show something else."""
    if after.action != "ShardInstall":
        return False
    child = after.params["shard"]
    if (before.vars["shardState"][child], after.vars["shardState"][child]) != (ABSENT, SPLITTING):
        return False
    kv = after.vars["kv"][child]
    return bool(after.vars["applied"][child]) or any(kv[k] != NO_VALUE for k in kv)


def first_install_with_content(trace: Trace) -> int | None:
    return _first(trace, _installs_content)


def first_second_split_started(trace: Trace) -> int | None:
    """The first line at which two splits have left idle: from then on the
    last phase record alone no longer says where every split stands."""
    return _first(
        trace,
        lambda _, a: sum(phase != IDLE for phase in a.vars["splitPhase"].values()) >= 2,
    )


def first_coordinator_step_after_both_installed(trace: Trace) -> int | None:
    """The coordinator's first step after an Installed completed a split's
    answers: the switch, from the correct core, in the same handler."""
    due = False  # other nodes' steps may fall between, so due holds across them
    for step in trace.steps:
        if due and step.node == COORD_ID:
            return step.line
        # Every split has two children, so two answers complete its phase.
        due = due or (step.action == "CoordInstalled" and any(
            phase == FREEZING and len(step.vars["coordAcks"][p]) == 2
            for p, phase in step.vars["splitPhase"].items()))
    return None


def _trace(protocol: ShardSplit, seed: int, path: Path) -> Trace:
    run_seed(protocol, seed, trace_path=path)
    return read_trace(path)


@pytest.mark.parametrize(
    ("core_class", "first_break"),
    [
        (ShardAcksUnsyncedWrites, first_apply_lost_in_a_crash),
        (ChildInstallsInMemory, first_install_with_content),
        (CoordinatorRecoversLastRecordOnly, first_second_split_started),
        (CoordinatorSwitchesLate, first_coordinator_step_after_both_installed),
    ],
    ids=["write-acked-before-sync", "install-not-persisted", "recovery-misses-a-split",
         "switch-leaves-the-handler"],
)
def test_shardsplit_core_that_breaks_a_rule_is_rejected_where_it_breaks_it(
    core_class: type[Shard] | type[Coordinator], first_break: FirstBreak, tmp_path: Path
) -> None:
    broken = WithCores(core_class)
    for seed in SEEDS:
        trace = _trace(broken, seed, tmp_path / f"broken-{seed}.ndjson")
        line = first_break(trace)
        if line is not None:
            break
    else:
        pytest.fail(f"no seed in {SEEDS} shows the scenario {core_class.__name__} breaks")
    correct = _trace(ShardSplit(), seed, tmp_path / f"correct-{seed}.ndjson")
    assert first_break(correct) is not None, f"seed {seed}: the correct run lacks the scenario"
    rejected, accepted = validate_traces([trace, correct])
    assert not rejected.accepted, f"seed {seed}: TLC accepted a trace that breaks the rule"
    assert rejected.divergence is not None
    assert rejected.divergence.line == line, (seed, rejected.divergence)
    assert accepted.accepted, (seed, accepted.divergence)
