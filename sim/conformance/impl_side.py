"""The code's side: every step the correct implementation takes, as profiles.

Two sources, both at the model's options (so at the spec's constants):

- `explore`, every schedule of the cores within fault bounds (breadth-first,
  cut by a time limit), which reaches the rare interleavings; and
- seeded runs under swarm faults, as a campaign runs them, which reach the
  long histories and the fault mixes the explorer's bounds leave out.

A seed whose workload gives other constants (another set of transactions,
say) is skipped and counted: its profiles would not be comparable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tlasim.protocols.definition import ProtocolDefinition, StepInfo
from tlasim.sim.conformance.profiles import Profile, Profiler
from tlasim.sim.conformance.spec_side import SideProfiles
from tlasim.sim.explore.search import SearchBounds, explore
from tlasim.sim.explore.system import FaultBounds
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.kernel.rng import split
from tlasim.sim.kernel.simulation import Simulation
from tlasim.tracing.emit.emitter import TraceEmitter


@dataclass(slots=True)
class ImplRuns:
    explored_states: int = 0
    explored_workloads: int = 0
    explore_exhausted: bool = False  # every explored workload's bound was exhausted
    seeds_run: int = 0
    seeds_skipped: int = 0  # another workload's constants
    seeds_failed: int = 0  # a correct protocol that failed: worth a look of its own
    chased_states: int = 0  # code states the chase toward unreached profiles expanded
    chased_profiles: int = 0  # unreached profiles the chase reached
    chase_failures: int = 0  # chased moves on which the correct code failed


class _ProfilingEmitter(TraceEmitter):
    """Writes nothing; cuts every step of a run into profiles."""

    def __init__(self, profiler: Profiler, side: SideProfiles) -> None:
        super().__init__(None)
        self._profiler = profiler
        self._side = side
        self._before: Mapping[str, Any] | None = None

    def header(self, **_fields: Any) -> None:
        pass

    def step(self, *, ts: int, node: str | None, action: str, params: Mapping[str, Any],
             vars: Mapping[str, Any], faults: Sequence[str] = (),
             timer: str | None = None) -> None:
        take_step(self._profiler, self._side, self._before, action, vars)
        # Spec variables are never changed after their step (ProtocolDefinition
        # .spec_vars), so keeping the mapping is keeping the state.
        self._before = vars


def take_step(profiler: Profiler, side: SideProfiles, before: Mapping[str, Any] | None,
              action: str, after: Mapping[str, Any]) -> list[Profile]:
    """Add a step (or, without `before`, the initial state) to `side`; return its profiles."""
    after_locals = profiler.locals_of(after)
    side.add_state(profiler, after_locals)
    side.steps += 1
    if not before:
        return []  # the Init line: a state, not a step
    profiles = list(profiler.profiles(action, before, after, None, after_locals))
    side.by_action[action].update(profiles)
    return profiles


def impl_profiles(
    protocol: ProtocolDefinition,
    options: Any,
    constants: Mapping[str, Any],
    profiler: Profiler,
    *,
    seeds: range,
    explore_states: int,
    explore_seconds: float | None,
    explore_faults: FaultBounds,
    explore_workloads: int = 1,
    progress: Callable[[str], None] | None = None,
) -> tuple[SideProfiles, ImplRuns]:
    side = SideProfiles()
    runs = ImplRuns()
    # Each workload seed's configuration is explored in turn, sharing the
    # time: a workload fixes what each node is asked to do (a vote, an
    # operation's kind), which no schedule of another workload can change.
    # A state bound, not a time limit, ends each search by default, so the
    # same options always reach the same profiles, on any machine.
    workloads = range(seeds.start, seeds.start + explore_workloads) if explore_states else []
    exhausted = []
    for seed in workloads:
        config = protocol.configure(options, None, split(seed).workload)
        if dict(protocol.spec_constants(config)) != dict(constants):
            continue

        def on_step(before: Mapping[str, Any], step: StepInfo, after: Mapping[str, Any],
                    _path: Any) -> None:
            take_step(profiler, side, before, step.action, after)

        bounds = SearchBounds(
            explore_faults, max_states=explore_states,
            time_limit=None if explore_seconds is None else explore_seconds / len(workloads))
        found = explore(protocol, config, bounds, on_step=on_step)
        runs.explored_states += found.states
        runs.explored_workloads += 1
        exhausted.append(found.exhausted)
        if progress is not None:
            cut = "" if found.exhausted else f" (cut by its {found.cut_by} limit)"
            progress(f"explore, workload of seed {seed}: {found.states} states in "
                     f"{found.seconds:.0f} s{cut}")
    runs.explore_exhausted = bool(exhausted) and all(exhausted)
    for seed in seeds:
        emitter = _ProfilingEmitter(profiler, side)
        sim = Simulation(protocol, seed, protocol_options=options, options=SimOptions(),
                         emitter=emitter)
        if dict(protocol.spec_constants(sim.config)) != dict(constants):
            runs.seeds_skipped += 1
            continue
        result = sim.run()
        runs.seeds_run += 1
        runs.seeds_failed += not result.ok
    return side, runs
