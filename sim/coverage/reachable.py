"""The spec's own reachable states at small constants, as coverage sees them.

A run's coverage is a set of abstract spec states (`run.CoverageRecorder`),
so how much of the spec it reached is measured against the abstract states
the spec itself reaches at the same constants. TLC enumerates those:
`reachable` has it explore the protocol's conformance model (the module
beside the spec that bounds it, `sim/conformance/model.py`) with the
model's `coverage` constants over its own, no symmetry (a run names its
nodes), and `-dump`, which writes every distinct state. Each state is
parsed (`tracing.tla.parse`) and hashed by a `CoverageRecorder` under the
protocol's abstraction, exactly as a run's steps are.

The two sides hash values that came by different roads: a run's are Python
values from its refinement mapping, TLC's are parsed from TLC's printing.
`printed_back` checks that the roads meet: TLC reads states a run reached
as the initial states of a module of their own and prints them back, and a
state whose hash changes on the way is a mismatch of the two sides.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError, SpecError
from tlasim.sim.conformance.model import ConformanceModel, model_path, read_model
from tlasim.sim.conformance.spec_side import (
    ROOT_MODULE,
    constant_lines,
    model_root,
    run_root,
    spec_scratch,
)
from tlasim.sim.coverage.run import CoverageRecorder, abstraction_of
from tlasim.sim.kernel.rng import split
from tlasim.tracing.tla.literal import to_tla
from tlasim.tracing.tla.parse import parse_state
from tlasim.tracing.tla.speccheck import find_spec
from tlasim.tracing.tla.tlc import parse_dump
from tlasim.tracing.values import FnMap, freeze

__all__ = ["SpecStates", "printed_back", "reachable", "same_variables", "state_hash"]

_DUMP = "states"  # TLC names the file states.dump


@dataclass(frozen=True, slots=True)
class SpecStates:
    """The abstract spec states TLC reached at one protocol's small constants."""

    protocol: str
    options: Mapping[str, Any]  # the protocol options the constants come from
    constants: Mapping[str, Any]  # the protocol's spec constants, from the code
    module: str  # the model module TLC explored
    constraints: tuple[str, ...]
    bound: Mapping[str, Any]  # the model's own constants (MaxCopies, ...)
    bound_why: str
    spec_folder: Path
    tlc_states: int  # distinct states TLC found
    states: frozenset[int]  # their abstract hashes
    seconds: float


def _model(protocol: ProtocolDefinition, spec_dirs: Sequence[Path] | None
           ) -> tuple[ConformanceModel, Path]:
    module_path, _template = find_spec(protocol.spec_module, spec_dirs)
    path = model_path(module_path, protocol.spec_module)
    if not path.is_file():
        raise ConfigError(f"{protocol.name}: no conformance model {path.name} beside "
                          f"{module_path}, so no bound to enumerate the spec within "
                          "(docs/conformance.md says how to write one)")
    return read_model(path), module_path.parent


class _Hasher:
    """Hashes whole spec states one after another, as a run's recorder does."""

    def __init__(self, protocol: ProtocolDefinition) -> None:
        self._abstraction = abstraction_of(protocol)
        self._recorder = CoverageRecorder(self._abstraction)

    def add(self, state: dict[str, Any]) -> None:
        # TLC prints the empty function as << >>, which equals it but is no
        # mapping: a variable the abstraction views (a bag) gets a mapping.
        for name, view in self._abstraction.items():
            if view is not None and state.get(name) == ():
                state[name] = FnMap({})
        self._recorder.step(None, "", state)

    def states(self) -> frozenset[int]:
        return self._recorder.result().states


def state_hash(protocol: ProtocolDefinition, spec_vars: Mapping[str, Any]) -> int:
    """One state's abstract hash, as a run's coverage holds it."""
    hasher = _Hasher(protocol)
    hasher.add(dict(spec_vars))
    (found,) = hasher.states()
    return found


def same_variables(protocol: ProtocolDefinition, names: Iterable[str], where: str) -> None:
    """Refuse states that do not hold exactly the spec's variables: their
    hashes would be of something else than the spec's states."""
    spec = set(protocol.variable_types)
    found = set(names)
    if found != spec:
        raise SpecError(
            f"{where} do not hold the variables of {protocol.spec_module}: "
            f"missing {sorted(spec - found) or 'none'}, extra {sorted(found - spec) or 'none'}")


def _hash_dump(protocol: ProtocolDefinition, dump: Path, where: str
               ) -> tuple[frozenset[int], int]:
    """The abstract hashes of a dump's states, and how many states it holds."""
    hasher = _Hasher(protocol)
    # States share most of their variables' values: each `/\ x = v` is parsed once.
    conjuncts: dict[str, tuple[str, Any]] = {}
    count = 0
    for dumped in parse_dump(dump.read_text(encoding="utf-8")):
        state = {}
        for part in dumped.text.removeprefix("/\\ ").split("\n/\\ "):
            parsed = conjuncts.get(part)
            if parsed is None:
                (parsed,) = parse_state(part).items()
                conjuncts[part] = parsed
            state[parsed[0]] = parsed[1]
        if not count:
            same_variables(protocol, state, where)
        hasher.add(state)
        count += 1
    return hasher.states(), count


def reachable(
    protocol: ProtocolDefinition,
    *,
    options: Mapping[str, Any] | None = None,
    bound: Mapping[str, Any] | None = None,
    spec_dirs: Sequence[Path] | None = None,
    timeout_s: float | None = None,
) -> SpecStates:
    """TLC's reachable abstract states at the model's coverage constants,
    with `options` over its protocol options and `bound` over its model
    constants."""
    model, folder = _model(protocol, spec_dirs)
    small = model.coverage
    merged = {**model.options, **(small.options if small else {}), **(options or {})}
    config = protocol.configure(protocol.make_options(dict(merged)), None, split(0).workload)
    constants = dict(protocol.spec_constants(config))
    model_bound = {**model.model_constants, **(small.constants if small else {})}
    unknown = sorted(set(bound or {}) - set(model_bound))
    if unknown:
        raise ConfigError(f"--bound {', '.join(unknown)}: not a constant of {model.module}'s "
                          f"model (it has {', '.join(sorted(model_bound)) or 'none'})")
    if bound:
        why = "set on the command line"
    elif small is not None:
        why = small.why
    else:
        why = "the conformance model's bound (the model sets no coverage bound)"
    model_bound.update(bound or {})
    bounded = dataclasses.replace(model, model_constants=model_bound)
    started = time.monotonic()
    with spec_scratch(folder) as scratch:
        root = model_root(bounded, scratch, constants)
        result = run_root(scratch, root, ["-dump", _DUMP],
                          f"{model.module} at coverage's bound", timeout_s=timeout_s)
        states, count = _hash_dump(protocol, scratch / f"{_DUMP}.dump",
                                   f"TLC's states of {model.module}")
    if count != result.distinct_states:
        raise SpecError(f"TLC found {result.distinct_states} states of {model.module} but "
                        f"its dump holds {count}")
    return SpecStates(protocol.name, merged, constants, model.module, model.constraints,
                      model_bound, why, folder, count, states, time.monotonic() - started)


def printed_back(protocol: ProtocolDefinition, spec: SpecStates,
                 states: Sequence[Mapping[str, Any]], *,
                 timeout_s: float | None = None) -> frozenset[int]:
    """The hashes of `states` as TLC prints them: each is an initial state
    of a module over the spec, read from its TLA+ and printed back."""
    if not states:
        return frozenset()
    names = sorted(protocol.variable_types)
    definitions, cfg = constant_lines({n: freeze(v, n) for n, v in spec.constants.items()},
                                      protocol.spec_module)
    choices = []
    for i, state in enumerate(states):
        for name in names:
            definitions.append(f"TlasimS{i}_{name} == {to_tla(freeze(state[name], name))}")
        choices.append("    \\/ " + " /\\ ".join(f"{n} = TlasimS{i}_{n}" for n in names))
    definitions.append("TlasimInit ==\n" + "\n".join(choices))
    definitions.append(f"TlasimNext == UNCHANGED <<{', '.join(names)}>>")
    text = "\n".join([f"---- MODULE {ROOT_MODULE} ----",
                      f"EXTENDS {protocol.spec_module}, TLC", *definitions, "===="]) + "\n"
    cfg.extend(["INIT TlasimInit", "NEXT TlasimNext"])
    with spec_scratch(spec.spec_folder) as scratch:
        run_root(scratch, (text, "\n".join(cfg) + "\n"), ["-dump", _DUMP],
                 f"states printed back by {protocol.spec_module}", timeout_s=timeout_s)
        return _hash_dump(protocol, scratch / f"{_DUMP}.dump",
                          f"TLC's printing of {protocol.spec_module}'s states")[0]
