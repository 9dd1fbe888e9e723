"""`tlasim conformance`: the spec behaviour the correct implementation never shows.

Each profile TLC reaches at the model's constants but no explored schedule
and no seeded run reaches is one of two things: a hole in what the
simulator tries (a fault it never injects there, a workload it never
draws), or a place where the spec is looser than the code, where a bug that
does exactly that would pass TLC. Each must be explained in the model's
`explained` list, or the spec tightened; an unexplained one fails the check.
Profiles the code reaches beyond the model's bounds are counted, not
judged: the model bounds the messages in flight, the code does not.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError
from tlasim.sim.conformance import defaults
from tlasim.sim.conformance.chase import Goal, Targets, chase
from tlasim.sim.conformance.impl_side import ImplRuns, impl_profiles
from tlasim.sim.conformance.model import ConformanceModel, Explained, model_path, read_model
from tlasim.sim.conformance.profiles import NET_ROLE, Profile, Profiler, message_kind
from tlasim.sim.conformance.spec_side import SideProfiles, spec_profiles
from tlasim.sim.explore.system import FaultBounds
from tlasim.sim.kernel.rng import split
from tlasim.tracing.tla.speccheck import find_spec


@dataclass(frozen=True, slots=True)
class ActionLooseness:
    action: str
    spec_profiles: int
    reached: int  # of the spec's profiles, how many the code reached
    explained: tuple[tuple[Profile, Explained], ...]
    unexplained: tuple[Profile, ...]
    shown_as: str = ""  # the action name its profiles are printed (and explained) under

    def text(self, profile: Profile) -> str:
        return profile.render(self.shown_as or None)


@dataclass(slots=True)
class ConformanceResult:
    protocol: str
    model: ConformanceModel
    spec: SideProfiles
    impl: SideProfiles
    runs: ImplRuns
    actions: list[ActionLooseness] = field(default_factory=list)
    beyond_model: int = 0  # profiles the code reached that the bounded model did not
    unused_explanations: tuple[Explained, ...] = ()
    spec_seconds: float = 0.0
    impl_seconds: float = 0.0
    unowned: tuple[str, ...] = ()  # spec variables no node owns: in no profile

    @property
    def unexplained(self) -> int:
        return sum(len(a.unexplained) for a in self.actions)

    @property
    def passed(self) -> bool:
        return self.unexplained == 0


def _key(profile: Profile) -> tuple[object, ...]:
    return (profile.role, profile.before, profile.after)


def label_groups(spec: SideProfiles, impl: SideProfiles) -> dict[str, tuple[str, ...]]:
    """Which of the code's action names each of TLC's labels stands for.

    TLC labels a step with the action it split `Next` into. It cannot split
    a quantifier over a set that depends on the state (`\\E m \\in DOMAIN
    msgs : NetLose(m) \\/ NetDuplicate(m)`), so such steps are labelled with
    the enclosing definition (`Next`). A label the code never uses stands
    for every code action TLC never names.
    """
    labels = set(spec.by_action)
    unnamed = tuple(sorted(set(impl.by_action) - labels))
    return {label: (label,) if label in impl.by_action or not unnamed else unnamed
            for label in labels}


def signature(profile: Profile) -> tuple[object, ...]:
    """What a step does, without the states it does it in: the message kinds
    it takes and adds, or the role and the variables it changes."""
    if profile.role == NET_ROLE:
        taken, added = profile.after
        context = tuple(role for role, _ in profile.before)
        return ("net", context, tuple(sorted(map(message_kind, taken))),
                tuple(sorted(map(message_kind, added))))
    changed = tuple(var for (var, old), (_, new) in zip(profile.before, profile.after,
                                                         strict=False) if old != new)
    return (profile.role, changed)


def _infer_names(label: str, names: tuple[str, ...], spec: SideProfiles,
                 impl: SideProfiles) -> dict[Profile, str]:
    """For a label standing for several code actions, the one action each of
    its profiles must be, when only one of them ever takes a step of that
    signature in the code."""
    if names == (label,):
        return {}
    if len(names) == 1:
        return dict.fromkeys(spec.by_action[label], names[0])
    takers: dict[tuple[object, ...], set[str]] = defaultdict(set)
    for name in names:
        for profile in impl.by_action.get(name, ()):
            takers[signature(profile)].add(name)
    inferred = {}
    for profile in spec.by_action[label]:
        candidates = takers.get(signature(profile), set())
        if len(candidates) == 1:
            inferred[profile] = next(iter(candidates))
    return inferred


def compare(spec: SideProfiles, impl: SideProfiles, explained: Sequence[Explained]
            ) -> tuple[list[ActionLooseness], int, tuple[Explained, ...]]:
    used: set[tuple[Explained, str]] = set()
    groups = label_groups(spec, impl)
    impl_keys_of = {
        label: {_key(p) for action in names for p in impl.by_action.get(action, ())}
        for label, names in groups.items()
    }
    # One row per action: a label TLC gives several actions is split by the
    # action each profile is inferred to be, what cannot be inferred stays.
    rows: dict[str, tuple[list[Profile], list[Profile], tuple[str, ...]]] = {}
    for label in sorted(spec.by_action):
        names = groups[label]
        inferred = _infer_names(label, names, spec, impl)
        group_name = label if names == (label,) else f"{label} (one of {', '.join(names)})"
        for profile in spec.by_action[label]:
            name = inferred.get(profile)
            row = group_name if name is None else (
                name if name == label else f"{name} (TLC: {label})")
            wanted, missing, matches = rows.setdefault(
                row, ([], [], (label, *names) if name is None else (name, label)))
            wanted.append(profile)
            if _key(profile) not in impl_keys_of[label]:
                missing.append(profile)
    actions = []
    for row in sorted(rows):
        wanted, missing, matches = rows[row]
        covered: list[tuple[Profile, Explained]] = []
        open_: list[Profile] = []
        shown = matches[0]  # the inferred action, or TLC's label
        for profile in sorted(missing, key=lambda p: p.render(shown)):
            text = profile.render(shown)
            hit = next(((e, n) for e in explained for n in matches if e.covers(n, text)), None)
            if hit is None:
                open_.append(profile)
            else:
                covered.append((profile, hit[0]))
                used.add(hit)
        actions.append(ActionLooseness(row, len(wanted), len(wanted) - len(missing),
                                       tuple(covered), tuple(open_), shown))
    spec_keys = {(name, _key(p)) for label, names in groups.items() for name in names
                 for p in spec.by_action[label]}
    beyond = sum(1 for action, profiles in impl.by_action.items() for p in profiles
                 if (action, _key(p)) not in spec_keys)
    # Each explanation narrowed to the actions it explained nothing under.
    unused = tuple(
        replace(e, actions=idle) for e in explained
        if (idle := tuple(n for n in e.actions if (e, n) not in used)))
    return actions, beyond, unused


def _symmetry(protocol: ProtocolDefinition, config: object, constants: Mapping[str, Any],
              model: ConformanceModel) -> list[tuple[str, ...]]:
    """The groups of interchangeable names: the protocol's nodes, and the
    constants the model names whose elements the spec treats alike."""
    groups = [tuple(group) for group in protocol.symmetric_nodes(config)]
    for name in model.symmetric:
        value = constants.get(name)
        if not isinstance(value, (frozenset, set)) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{model.path}: symmetric names {name}, which is not a constant "
                              "set of names of this protocol")
        group = tuple(sorted(value))
        if group not in groups:
            groups.append(group)
    return groups


def _chase(protocol: ProtocolDefinition, options: Any, constants: Mapping[str, Any],
           spec: SideProfiles, impl: SideProfiles, actions: Sequence[ActionLooseness],
           profiler: Profiler, *, workloads: range, max_states: int) -> tuple[int, int, int]:
    """Chase the unexplained profiles in each workload (sim/conformance/chase.py);
    the code's steps go into `impl`. Return the states expanded, the
    profiles reached and the moves on which the correct code failed."""
    assert spec.graph is not None
    groups = label_groups(spec, impl)
    unexplained = [p for a in actions for p in a.unexplained]
    edges_of: dict[Profile, list[int]] = {p: [] for p in unexplained}
    for index, (_source, _target, profiles) in enumerate(spec.graph.edges):
        for profile in profiles:
            if profile in edges_of:
                edges_of[profile].append(index)
    goals = [Goal(frozenset((name, *_key(p)) for name in groups[p.action]),
                  tuple(edges_of[p])) for p in unexplained]
    targets = Targets(spec.graph, goals)
    bounds = FaultBounds(crashes=defaults.CHASE_CRASHES, losses=defaults.CHASE_LOSSES,
                         duplicates=defaults.CHASE_DUPLICATES, idle_crashes=True)
    expanded = 0
    for seed in workloads:
        config = protocol.configure(options, None, split(seed).workload)
        if dict(protocol.spec_constants(config)) != dict(constants) or not targets.open:
            continue
        expanded += chase(protocol, config, spec.graph, targets, profiler, impl,
                          bounds=bounds, max_states=max_states)
    return expanded, len(targets.reached), targets.failures


def has_model(protocol: ProtocolDefinition, spec_dirs: Sequence[Path] | None = None) -> bool:
    module_path, _template = find_spec(protocol.spec_module, spec_dirs)
    return model_path(module_path, protocol.spec_module).is_file()


def conformance(
    protocol: ProtocolDefinition,
    *,
    explore_faults: FaultBounds,
    seeds: int | None = None,
    explore_states: int | None = None,
    explore_workloads: int | None = None,
    explore_seconds: float | None = None,
    chase_states: int | None = None,
    spec_dirs: Sequence[Path] | None = None,
    tlc_timeout_s: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> ConformanceResult:
    module_path, _template = find_spec(protocol.spec_module, spec_dirs)
    model = read_model(model_path(module_path, protocol.spec_module))
    unknown = sorted(set(model.ownership.owners) - set(protocol.variable_types))
    if model.ownership.network is not None and model.ownership.network not in \
            protocol.variable_types:
        unknown.append(model.ownership.network)
    if unknown:
        raise ConfigError(f"{model.path}: nodes names {', '.join(unknown)}, not variables of "
                          f"{protocol.spec_module} ({', '.join(protocol.variable_types)})")
    # What the caller leaves unset comes from the model's budget, then the
    # global defaults: both deterministic, so the report is the same anywhere.
    if seeds is None:
        seeds = model.budget.get("seeds", defaults.SEEDS)
    if explore_states is None:
        explore_states = model.budget.get("explore_states", defaults.EXPLORE_STATES)
    if explore_workloads is None:
        explore_workloads = model.budget.get("explore_workloads", defaults.EXPLORE_WORKLOADS)
    options = protocol.make_options(dict(model.options))
    config = protocol.configure(options, None, split(0).workload)
    constants = protocol.spec_constants(config)
    profiler = Profiler(model.ownership, protocol.node_ids(config),
                        _symmetry(protocol, config, constants, model),
                        [a for a in (protocol.net_lose_action, protocol.net_duplicate_action)
                         if a is not None])
    started = time.monotonic()
    spec = spec_profiles(model, module_path.parent, constants, profiler, timeout_s=tlc_timeout_s)
    spec_seconds = time.monotonic() - started
    if progress is not None:
        progress(f"TLC: {spec.states} states, {spec.steps} steps, "
                 f"{len(spec.profiles())} profiles in {spec_seconds:.0f} s")
    started = time.monotonic()
    impl, runs = impl_profiles(protocol, options, constants, profiler, seeds=range(seeds),
                               explore_states=explore_states, explore_seconds=explore_seconds,
                               explore_faults=explore_faults,
                               explore_workloads=explore_workloads, progress=progress)
    actions, beyond, unused = compare(spec, impl, model.explained)
    if chase_states is None:
        chase_states = model.budget.get("chase_states", defaults.CHASE_STATES)
    if chase_states and any(a.unexplained for a in actions):
        runs.chased_states, runs.chased_profiles, runs.chase_failures = _chase(
            protocol, options, constants, spec, impl, actions, profiler,
            workloads=range(explore_workloads), max_states=chase_states)
        if progress is not None:
            progress(f"chase: {runs.chased_profiles} unreached profiles reached in "
                     f"{runs.chased_states} states")
        actions, beyond, unused = compare(spec, impl, model.explained)
    impl_seconds = time.monotonic() - started
    unowned = tuple(v for v in protocol.variable_types
                    if v not in model.ownership.owners and v != model.ownership.network)
    return ConformanceResult(protocol.name, model, spec, impl, runs, actions, beyond, unused,
                             spec_seconds, impl_seconds, unowned)
