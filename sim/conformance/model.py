"""A protocol's conformance model: the declaration beside its spec.

`<Spec>.conformance.json`, in the spec module's folder, says how to compare
the spec with the code at small constants:

```json
{
  "schema": 1,
  "spec": "TwoPhaseCommitMsg",
  "model": {"module": "MCTwoPhaseCommitMsg", "specification": "Spec",
            "constraints": ["MsgBound"], "constants": {"MaxCopies": 1}},
  "options": {"rm_count": 2, "tx_count": 1},
  "nodes": {"tmState": "tm", "rmState": "[*][node]", "rmUp": "[node]", "msgs": "network"},
  "explained": [{"action": "RMRcvAbort", "contains": "...", "why": "..."}]
}
```

- `model` names the module TLC explores (one that EXTENDS the spec and
  bounds it) and its extra constants; the protocol's own constants come from
  the code, from a run configured with `options`.
- `nodes` says which node owns which part of each variable: a node id owns
  a variable whole, `[node]` is the entry of each node, `[*][node]` each
  node's entry inside every entry; the `network` variable is the bag of
  messages. A variable not named belongs to no node.
- `messages` (optional) names, per message type (or `*` for every type),
  the nodes a message concerns: a node id (a fixed-id sender or receiver
  its fields do not name) or `field:F`, the nodes its field F names. A
  step that only moves messages is profiled from each node its messages
  concern. A type declaring no field concerns every node it names anywhere
  (a routing table's shards too), so declare the fields where that is noise.
  `{"from": [...], "to": [...]}` instead of a list separates the sides: a
  step that adds the message is seen from its senders, one that takes it
  from its receivers (a send is a rule about the sender's state, not the
  receiver's).
- `symmetric` (optional) names constants whose elements the spec treats
  alike (a SYMMETRY set, such as memory addresses): profiles that differ
  only in which element is which are one profile, as for the protocol's
  interchangeable nodes.
- `explained` lists spec behaviour the code never shows, each with why
  that is fine (a fault the simulator does not inject at these constants, a
  path the workload never takes): a profile whose action matches and whose
  text contains `contains` (all of it, when left out) is explained.
  `action` is one action's name or a list of them, for one reason that
  holds for the same state under several actions.
- `budget` (optional) sets this protocol's default effort, any of `seeds`,
  `explore_states`, `explore_workloads` and `chase_states`, where the global defaults
  (`defaults.py`) leave spec behaviour unreached that more runs do reach:
  a protocol whose runs are long needs more seeds to see each rare timing,
  and one whose workload varies (which key an operation uses) more
  workloads explored, and one whose deep steps follow several faults a
  longer chase. The command line's options override it.
- `coverage` (optional) sets the small constants `tlasim spec-coverage`
  measures runs against TLC's reachable states at (sim/coverage/against_spec.py):
  `options` over the model's options and `constants` over its constants,
  with `why` saying why this bound. Coverage sees less than profiles do
  (the messages in flight, not their copies), so its bound can differ:
  one copy of each message and any number in flight, say, where that
  loses nothing coverage tells apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlasim.protocols.checked import load_json
from tlasim.protocols.errors import ConfigError
from tlasim.sim.conformance.profiles import Ownership

SCHEMA = 1
MAX_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Explained:
    actions: tuple[str, ...]  # one reason often holds for the same state under several actions
    contains: str
    why: str

    def covers(self, action: str, text: str) -> bool:
        return action in self.actions and self.contains in text


@dataclass(frozen=True, slots=True)
class ConformanceModel:
    path: Path
    spec: str
    module: str
    specification: str
    constraints: tuple[str, ...]
    model_constants: Mapping[str, Any]
    options: Mapping[str, Any]
    ownership: Ownership
    explained: tuple[Explained, ...]
    symmetric: tuple[str, ...] = ()
    # The effort this protocol needs by default (seeds, explore_states,
    # explore_workloads), where the global defaults fall short of its spec.
    budget: Mapping[str, int] = field(default_factory=dict)
    coverage: CoverageModel | None = None


@dataclass(frozen=True, slots=True)
class CoverageModel:
    """The small constants spec coverage is measured at (the `coverage` key)."""

    options: Mapping[str, Any]  # over the model's options
    constants: Mapping[str, Any]  # over the model's constants
    why: str


# What a model's budget may set, with the least value each takes.
BUDGET_KEYS = {"seeds": 0, "explore_states": 0, "explore_workloads": 1, "chase_states": 0}


def _budget(root: Mapping[str, Any], where: str) -> dict[str, int]:
    budget = dict(_object(root, "budget", where))
    unknown = sorted(set(budget) - set(BUDGET_KEYS))
    if unknown:
        raise ConfigError(f"{where}: budget has unknown keys {unknown} "
                          f"(it may set {', '.join(BUDGET_KEYS)})")
    for key, value in budget.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < BUDGET_KEYS[key]:
            raise ConfigError(f"{where}: budget.{key} must be an integer of at least "
                              f"{BUDGET_KEYS[key]}, not {value!r:.40}")
    return budget


def _coverage(root: Mapping[str, Any], where: str) -> CoverageModel | None:
    if "coverage" not in root:
        return None
    entry = _object(root, "coverage", where)
    at = f"{where}: coverage"
    unknown = sorted(set(entry) - {"options", "constants", "why"})
    if unknown:
        raise ConfigError(f"{at} has unknown keys {unknown} (it may set options, constants "
                          "and why)")
    return CoverageModel(_object(entry, "options", at), _object(entry, "constants", at),
                         _text(entry, "why", at))


def model_path(spec_module: Path, spec: str) -> Path:
    return spec_module.with_name(f"{spec}.conformance.json")


def _text(entry: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = entry.get(key, default)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {key} must be a non-empty string, not {value!r:.60}")
    return value


def _actions(entry: Mapping[str, Any], where: str) -> tuple[str, ...]:
    value = entry.get("action")
    names = value if isinstance(value, list) else [value]
    if not names or not all(isinstance(name, str) and name for name in names):
        raise ConfigError(f"{where}: action must be an action's name or a non-empty list of "
                          f"names, not {value!r:.60}")
    return tuple(names)


def _object(entry: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = entry.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {key} must be an object, not {type(value).__name__}")
    return value


def read_model(path: Path) -> ConformanceModel:
    """Read and check a conformance model; ConfigError names what is wrong."""
    where = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"{where} does not exist: write one to compare this spec with its code "
            "(docs/conformance.md)") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {where}: {exc.strerror}") from None
    root = load_json(data, where, error=ConfigError, max_bytes=MAX_BYTES)
    if not isinstance(root, dict):
        raise ConfigError(f"{where}: must hold a JSON object")
    unknown = sorted(set(root) - {"schema", "spec", "model", "options", "nodes", "explained",
                                  "messages", "symmetric", "about", "budget", "coverage"})
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}")
    if root.get("schema") != SCHEMA:
        raise ConfigError(f"{where}: schema must be {SCHEMA}, not {root.get('schema')!r:.20}")
    model = _object(root, "model", where)
    constraints = model.get("constraints", [])
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        raise ConfigError(f"{where}: model.constraints must be a list of operator names")
    nodes = _object(root, "nodes", where)
    if not nodes:
        raise ConfigError(f"{where}: nodes must name which node owns which variable")
    symmetric = root.get("symmetric", [])
    if not isinstance(symmetric, list) or not all(isinstance(n, str) for n in symmetric):
        raise ConfigError(f"{where}: symmetric must be a list of constant names")
    explained_raw = root.get("explained", [])
    if not isinstance(explained_raw, list):
        raise ConfigError(f"{where}: explained must be a list")
    explained = []
    for i, entry in enumerate(explained_raw):
        at = f"{where}: explained[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"action", "contains", "why"}:
            raise ConfigError(f"{at} must be an object of action, contains and why")
        contains = entry.get("contains", "")
        if not isinstance(contains, str):
            raise ConfigError(f"{at}: contains must be a string")
        explained.append(Explained(_actions(entry, at), contains, _text(entry, "why", at)))
    return ConformanceModel(
        path=path,
        spec=_text(root, "spec", where),
        module=_text(model, "module", f"{where}: model"),
        specification=_text(model, "specification", f"{where}: model", "Spec"),
        constraints=tuple(constraints),
        model_constants=_object(model, "constants", f"{where}: model"),
        options=_object(root, "options", where),
        ownership=Ownership.parse(nodes, where, _object(root, "messages", where)),
        explained=tuple(explained),
        symmetric=tuple(symmetric),
        budget=_budget(root, where),
        coverage=_coverage(root, where),
    )
