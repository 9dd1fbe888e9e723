"""The spec's side: every step TLC takes at the model's constants, as profiles.

TLC explores the model (`ConformanceModel.module` under its constraints,
with the protocol's constants taken from the code's configuration, and no
symmetry so that every node's steps are there) and dumps its state graph
with `-dump dot,actionlabels`: every distinct state, and every transition
labelled with the action that takes it. Each transition is cut into
profiles (sim/conformance/profiles.py). The dump is read line by line and
each state is parsed once.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlasim.protocols.errors import SpecError, TLCError
from tlasim.sim.conformance.model import ConformanceModel
from tlasim.sim.conformance.profiles import Norm, Profile, Profiler, normalise
from tlasim.tracing.tla.literal import is_identifier, to_tla
from tlasim.tracing.tla.next_split import SplitNext, action_of_label, split_next
from tlasim.tracing.tla.parse import parse_state
from tlasim.tracing.tla.sany import export_xml
from tlasim.tracing.tla.tlc import TLCResult, run_tlc
from tlasim.tracing.values import freeze, from_json

ROOT_MODULE = "TlasimConformance"
_STATE = re.compile(r'^(-?\d+) \[label="(.*)"(?:,style = filled)?\];?$')
_EDGE = re.compile(r'^(-?\d+) -> (-?\d+) \[label="([^"]*)"')
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPED = {"n": "\n", '"': '"', "\\": "\\"}


def state_key(state: Mapping[str, Any]) -> tuple[tuple[str, Norm], ...]:
    """A whole state, as the spec's parsed states and the code's variables
    both give it: equal exactly when they are the same TLA+ state."""
    return tuple(sorted((name, normalise(value)) for name, value in state.items()))


@dataclass(slots=True)
class SpecGraph:
    """TLC's state graph: its states by key, and its edges with their profiles."""

    index: dict[tuple[tuple[str, Norm], ...], int] = field(default_factory=dict)
    edges: list[tuple[int, int, tuple[Profile, ...]]] = field(default_factory=list)
    _predecessors: list[list[int]] | None = None

    @property
    def size(self) -> int:
        return len(self.index)

    def predecessors(self) -> list[list[int]]:
        if self._predecessors is None:
            self._predecessors = [[] for _ in range(self.size)]
            for source, target, _profiles in self.edges:
                self._predecessors[target].append(source)
        return self._predecessors


@dataclass(slots=True)
class SideProfiles:
    """What one side reached: profiles by action, and each role's local states."""

    by_action: dict[str, set[Profile]] = field(default_factory=lambda: defaultdict(set))
    local_states: dict[str, set[Norm]] = field(default_factory=lambda: defaultdict(set))
    states: int = 0
    steps: int = 0
    graph: SpecGraph | None = None  # the spec's side only: what the chase steers by

    def add_state(self, profiler: Profiler, locals_: Mapping[str, Norm]) -> None:
        for node, local in locals_.items():
            role, canonical = profiler.canonical_local(node, local)
            self.local_states[role].add(canonical)

    def profiles(self) -> set[Profile]:
        return set().union(*self.by_action.values()) if self.by_action else set()


def constant_lines(values: Mapping[str, Any], where: str) -> tuple[list[str], list[str]]:
    """A root module's definitions of `values` (TLA+ values by constant
    name), and its config's `CONSTANTS` section substituting them."""
    definitions, cfg = [], ["CONSTANTS"]
    for name, value in values.items():
        if not is_identifier(name):
            raise SpecError(f"{where}: constant name {name!r:.40} is not a TLA+ name")
        definitions.append(f"TlasimConst_{name} == {to_tla(value)}")
        cfg.append(f"    {name} <- TlasimConst_{name}")
    return definitions, cfg


def _module_text(model: ConformanceModel, constants: Mapping[str, Any],
                 split: SplitNext | None) -> tuple[str, str]:
    """The root module and its config: the model, with every constant given."""
    # The model's own constants are JSON as in a trace header ({"#set": [...]}).
    values = {name: from_json(value, f"{model.path}: model.constants.{name}")
              for name, value in model.model_constants.items()}
    values.update({name: freeze(value, name) for name, value in constants.items()})
    definitions, cfg = constant_lines(values, str(model.path))
    lines = [f"---- MODULE {ROOT_MODULE} ----", f"EXTENDS {model.module}", *definitions]
    if split is not None:
        lines.append(split.definitions)
    lines.append("====")
    if split is not None:
        # The same behaviours as Spec (Init /\ [][Next]_vars), each step
        # labelled with its action (tracing/tla/next_split.py).
        cfg.extend(["INIT Init", f"NEXT {split.name}"])
    else:
        cfg.append(f"SPECIFICATION {model.specification}")
    cfg.extend(f"CONSTRAINT {c}" for c in model.constraints)
    return "\n".join(lines) + "\n", "\n".join(cfg) + "\n"


def _unescape(label: str) -> str:
    return _ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(1)), label)


@contextmanager
def spec_scratch(spec_folder: Path) -> Iterator[Path]:
    """A scratch folder holding copies of the spec folder's modules, for as
    long as the caller works in it: TLC reads the modules from the root
    module's folder, and a private copy keeps generated modules (and what
    SANY and TLC write) out of the spec folder."""
    with tempfile.TemporaryDirectory(prefix="tlasim-tlc-") as scratch:
        folder = Path(scratch)
        for module in spec_folder.glob("*.tla"):
            shutil.copy(module, folder / module.name)
        yield folder


def run_root(folder: Path, root: tuple[str, str], args: Sequence[str], what: str,
             *, timeout_s: float | None = None) -> TLCResult:
    """Run TLC on a root module (its text and config) written into `folder`
    (a `spec_scratch`); SpecError unless TLC finished without error."""
    (folder / f"{ROOT_MODULE}.tla").write_text(root[0])
    (folder / f"{ROOT_MODULE}.cfg").write_text(root[1])
    result = run_tlc(folder / f"{ROOT_MODULE}.tla", folder / f"{ROOT_MODULE}.cfg",
                     workdir=folder, args=["-deadlock", *args], timeout_s=timeout_s)
    if result.outcome != "ok":
        raise SpecError(f"TLC could not explore {what} ({result.outcome}): "
                        f"{result.error_text() or result.output[-2000:]}")
    return result


def model_root(model: ConformanceModel, folder: Path, constants: Mapping[str, Any],
               *, labelled: bool = False) -> tuple[str, str]:
    """The root module and config that explore the model (its modules in
    `folder`, a `spec_scratch`) with the protocol's `constants`; `labelled`
    splits Next so that TLC labels each step with its action."""
    if not (folder / f"{model.module}.tla").is_file():
        raise SpecError(f"{model.path}: model module {model.module}.tla is not in "
                        f"{model.path.parent}")
    split = None
    if labelled and model.specification == "Spec":
        split = split_next(export_xml(folder / f"{model.spec}.tla"), model.spec, folder)
    return _module_text(model, constants, split)


def spec_profiles(
    model: ConformanceModel,
    spec_folder: Path,
    constants: Mapping[str, Any],
    profiler: Profiler,
    *,
    timeout_s: float | None = None,
) -> SideProfiles:
    """Have TLC explore the model and cut every transition into profiles."""
    with spec_scratch(spec_folder) as folder:
        root = model_root(model, folder, constants, labelled=True)
        run_root(folder, root, ["-dump", "dot,actionlabels", "states.dot"],
                 f"{model.module} for {model.path.name}", timeout_s=timeout_s)
        return _read_dot(folder / "states.dot", profiler)


def _read_dot(dot: Path, profiler: Profiler) -> SideProfiles:
    side = SideProfiles()
    graph = side.graph = SpecGraph()
    states: dict[str, dict[str, Any]] = {}
    number: dict[str, int] = {}  # TLC's state id -> the graph's index
    locals_of: dict[str, dict[str, Norm]] = {}
    edges: list[tuple[str, str, str]] = []
    # States share most of their variables' values, so each `/\ x = v`
    # conjunct is parsed once, and a node's local state is computed once for
    # each text of the variables it owns.
    conjuncts: dict[str, tuple[str, Any]] = {}
    owned = tuple(profiler.ownership.owners)
    local_cache: dict[tuple[str, tuple[str, ...]], Norm] = {}
    with dot.open(encoding="utf-8") as lines:
        for line in lines:
            line = line.rstrip("\n")
            edge = _EDGE.match(line)
            if edge is not None:
                edges.append((edge.group(1), edge.group(2), action_of_label(edge.group(3))))
                continue
            state = _STATE.match(line)
            if state is None or state.group(1) in states:
                continue
            texts: dict[str, str] = {}
            values: dict[str, Any] = {}
            for part in _unescape(state.group(2)).split("\n/\\ "):
                parsed = conjuncts.get(part)
                if parsed is None:
                    (name, value), = parse_state(part).items()
                    parsed = conjuncts[part] = (name, value)
                texts[parsed[0]] = part
                values[parsed[0]] = parsed[1]
            states[state.group(1)] = values
            number[state.group(1)] = graph.index.setdefault(state_key(values), len(graph.index))
            local = {}
            for node in profiler.nodes:
                key = (node, tuple(texts.get(var, "") for var in owned))
                cached = local_cache.get(key)
                if cached is None:
                    cached = local_cache[key] = profiler.ownership.local(values, node)
                local[node] = cached
            locals_of[state.group(1)] = local
            side.add_state(profiler, local)
    if not states:
        raise TLCError(f"TLC's state graph {dot.name} holds no state")
    side.states = len(states)
    for source, target, action in edges:
        if source not in states or target not in states:
            raise TLCError(f"TLC's state graph names a state it does not define: {source}")
        side.steps += 1
        profiles = tuple(profiler.profiles(action, states[source], states[target],
                                           locals_of[source], locals_of[target]))
        side.by_action[action].update(profiles)
        graph.edges.append((number[source], number[target], profiles))
    return side
