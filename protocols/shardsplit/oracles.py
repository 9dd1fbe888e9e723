"""Shard split oracles: the seed's invariants, lost writes and linearizability.

Safety is checked after every step from the spec variables and the step:
- SingleOwner: no key is served by two shards;
- SafeRetire: no shard is retired with writes pending;
- RouteLive: the routing table never sends a key to a retired shard;
- no lost write (no acknowledged write is ever lost): the value the store holds for a key (the
  abstract map of the refinement mapping) is never a write that completed
  before some acknowledged write of that key was invoked, nor the initial
  value once a write of the key was acknowledged;
- the clients' history is linearizable (protocols/history.py reads it from
  the `ClientInvoke` and `ClientReturn` steps).

Liveness, once faults have healed and the bound has passed: every split is
done and every client has finished all its operations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.protocols.definition import StepInfo
from tlasim.protocols.errors import InvariantViolation
from tlasim.protocols.history import ClientHistory, unfinished_clients, value_label
from tlasim.protocols.shardsplit.config import NO_VALUE, ShardSplitConfig

_SERVING = ("active", "frozen")


def abstract_map(
    config: ShardSplitConfig, shard_state: Mapping[str, str], kv: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """The refinement mapping's `map`: each key's value at the shard with authority over it.

    That is the shard that serves the key, else a child that has installed
    it but is not active yet (between the parent's retirement and the
    child's activation), else nobody (the initial value).
    """
    out = {}
    for key in config.keys:
        holders = [s for s in config.shards if key in config.shard_keys[s]]
        serving = [s for s in holders if shard_state[s] in _SERVING]
        installed = [s for s in holders if shard_state[s] == "splitting"]
        chosen = serving or installed
        out[key] = kv[chosen[0]][key] if chosen else NO_VALUE
    return out


class ShardSplitOracle:
    def __init__(self, config: ShardSplitConfig) -> None:
        self.config = config
        self.history = ClientHistory()
        self._owner_cache: dict[str, tuple[str, ...]] = {
            k: tuple(s for s in config.shards if k in config.shard_keys[s]) for k in config.keys
        }
        # Each check below is a function of the values it reads (and, for no
        # lost write, of the acknowledged writes): the inputs with which it last
        # passed are kept, and a check whose inputs equal them passes again
        # without running. Most steps change none of a check's inputs.
        self._passed: dict[str, tuple[Any, ...]] = {}

    # ---- safety ----

    def check_step(self, spec_vars: Mapping[str, Any], step: StepInfo) -> None:
        state = spec_vars["shardState"]
        passed = self._passed
        inputs: tuple[Any, ...] = (state,)
        if passed.get("SingleOwner") != inputs:
            for key, shards in self._owner_cache.items():
                serving = [s for s in shards if state[s] in _SERVING]
                if len(serving) > 1:
                    raise InvariantViolation(
                        f"SingleOwner: key {key} is served by {' and '.join(serving)} "
                        f"({', '.join(f'{s} {state[s]}' for s in serving)})"
                    )
            passed["SingleOwner"] = inputs
        inputs = (state, spec_vars["pending"])
        if passed.get("SafeRetire") != inputs:
            for shard, pending in spec_vars["pending"].items():
                if state[shard] == "retired" and pending:
                    writes = ", ".join(sorted(value_label(w["val"]) or "?" for w in pending))
                    raise InvariantViolation(
                        f"SafeRetire: {shard} retired with writes pending: {writes}"
                    )
            passed["SafeRetire"] = inputs
        inputs = (state, spec_vars["routing"])
        if passed.get("RouteLive") != inputs:
            for key, shard in spec_vars["routing"].items():
                if state[shard] == "retired":
                    raise InvariantViolation(
                        f"RouteLive: the routing table sends key {key} to {shard}, "
                        "which has retired"
                    )
            passed["RouteLive"] = inputs
        self.history.observe(step)
        inputs = (state, spec_vars["kv"], self.history.writes_acked)
        if passed.get("no lost write") != inputs:
            self.history.check_no_lost_write(abstract_map(self.config, state, spec_vars["kv"]))
            passed["no lost write"] = inputs

    # ---- liveness ----

    def check_liveness(self, spec_vars: Mapping[str, Any]) -> str | None:
        unfinished = [p for p, phase in spec_vars["splitPhase"].items() if phase != "done"]
        counts = {c: len(ops) for c, ops in self.config.ops.items()}
        busy = unfinished_clients(spec_vars["clientOp"], counts)
        if not unfinished and not busy:
            return None
        parts = []
        if unfinished:
            phases = spec_vars["splitPhase"]
            parts.append(
                "split(s) not done: " + ", ".join(f"{p} {phases[p]}" for p in sorted(unfinished))
            )
        if busy:
            parts.append(busy)
        return "; ".join(parts)
