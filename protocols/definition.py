"""What the simulator needs to know about a protocol, in one interface.

A protocol package exposes one `ProtocolDefinition` (see
`protocols/twopc/definition.py`). The simulator never imports a protocol's
cores directly: it builds them through the definition, encodes messages
through it, and asks it for the refinement mapping, the oracle and the spec
metadata that go into the trace header. Adding a protocol means writing one
of these as `DEFINITION` in the package's `definition` module, usually as a
subclass of `protocols.defaults.ProtocolBase`, which supplies every part
that is the same for all protocols; `protocols/__init__.py` finds it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from tlasim.protocols.base import Core
from tlasim.protocols.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StepInfo:
    """What a trace line says besides the state: when, who, which action."""

    tick: int
    node: str | None
    action: str
    params: Mapping[str, Any]


def build_options(options_type: Callable[..., T], protocol: str, overrides: Mapping[str, Any]) -> T:
    """Build a protocol's frozen options dataclass, naming any unknown option."""
    known = {f.name for f in fields(cast(Any, options_type))}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ConfigError(
            f"unknown {protocol} option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return options_type(**dict(overrides))


def check_option_values(
    options: Any, probabilities: Sequence[str], minimums: Mapping[str, int] | None = None
) -> None:
    """Check an options dataclass: named fields are probabilities, the rest integers
    of at least 1 (or their entry in `minimums`). Raises ConfigError naming the option."""
    for f in fields(options):
        value = getattr(options, f.name)
        if f.name in probabilities:
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (0.0 <= value <= 1.0)
            ):
                raise ConfigError(f"{f.name}={value!r}: must be a probability in [0, 1]")
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{f.name}={value!r}: must be an integer")
        low = (minimums or {}).get(f.name, 1)
        if value < low:
            raise ConfigError(f"{f.name}={value}: must be at least {low}")


class Oracle(Protocol):
    def check_step(self, spec_vars: Mapping[str, Any], step: StepInfo) -> None:
        """Raise InvariantViolation if a safety property is broken.

        `step` is the step that led to `spec_vars`; an oracle that checks a
        history (such as linearizability of client operations) reads the
        operations from the steps' params. Nothing changes `spec_vars` or its
        values after the call, so an oracle may keep them to compare with a
        later step's (and skip a check whose inputs did not change).
        """
        ...

    def check_liveness(self, spec_vars: Mapping[str, Any]) -> str | None:
        """Describe the unfinished work, or None when the protocol finished."""
        ...


class ProtocolDefinition(Protocol):
    name: str
    summary: str
    spec_module: str  # the TLA+ module every trace line is a step of
    # The actions the kernel writes when the network loses or duplicates a
    # message; None for a protocol whose cores send no messages. (Read-only,
    # so that a protocol may declare them as plain strings.)
    @property
    def net_lose_action(self) -> str | None: ...

    @property
    def net_duplicate_action(self) -> str | None: ...

    @property
    def variable_types(self) -> Mapping[str, str]:
        """Spec variable -> TLA+ type, in the spec's order."""
        ...

    # option name -> (simplest, most complex) bound that search mode draws from
    workload_ranges: Mapping[str, tuple[int, int] | tuple[float, float]]
    @property
    def source_files(self) -> Sequence[str]:
        """The modelled code, relative to `source_root`."""
        ...

    @property
    def source_root(self) -> Path:
        """The folder `source_files` are relative to (tlasim's own root for its
        protocols, the user's package's folder on sys.path for theirs)."""
        ...

    @property
    def spec_dirs(self) -> Sequence[Path]:
        """The folders of the protocol's specs: its module, trace template,
        TLC configs and manifest."""
        ...

    @property
    def trace_actions(self) -> frozenset[str]:
        """Every action name a trace line of this protocol may carry.

        Its cores' steps, crash_step's actions, the network actions (if any),
        and "Init", the first line the kernel writes. It must equal the trace
        template's TraceActionNames (ProtocolBase reads it from there), and
        `tlasim drift` holds both the code and the spec to it.
        """
        ...

    @property
    def bugs(self) -> Mapping[str, Any]: ...

    def default_options(self) -> Any: ...

    def make_options(self, overrides: Mapping[str, Any]) -> Any: ...

    def configure(self, options: Any, bug: str | None, workload_rng: random.Random) -> Any:
        """Draw the workload and return the run's configuration (plain data)."""
        ...

    def node_ids(self, config: Any) -> tuple[str, ...]: ...

    def crash_nodes(self, config: Any) -> tuple[str, ...]:
        """The nodes a fault plan may crash (clients that are the load may not)."""
        ...

    def make_core(self, config: Any, node_id: str) -> Core: ...

    def symmetric_nodes(self, config: Any) -> Sequence[Sequence[str]]:
        """Groups of interchangeable nodes, for the explorer's symmetry reduction.

        Declaring a group promises what TLC's SYMMETRY asks of a spec: the
        protocol depends neither on these nodes' names nor on the order in
        which the configuration lists them, and a node id appears in its
        state only as a whole string. The explorer still keeps only the
        permutations that map this configuration's workload to itself
        (sim/explore/symmetry.py)."""
        ...

    def crash_step(self, node_id: str) -> tuple[str, Mapping[str, Any]]:
        """The spec action (and params) of a crash of `node_id`."""
        ...

    def encode_message(self, msg: Any) -> dict[str, Any]: ...

    def decode_message(self, data: Any) -> Any: ...

    def message_record(self, msg: Any) -> Mapping[str, Any]:
        """The spec's record for a message (its value in the `msgs` bag)."""
        ...

    def spec_constants(self, config: Any) -> Mapping[str, Any]: ...

    def spec_vars(
        self,
        config: Any,
        views: Mapping[str, Mapping[str, Any]],
        logs: Mapping[str, Sequence[Mapping[str, Any]]],
        up: Mapping[str, bool],
        in_flight: Mapping[Hashable, int],
    ) -> dict[str, Any]:
        """The refinement mapping: every spec variable from the whole system's state.

        `views` holds each node's own spec variables (for a crashed node, what
        it will recover to), `logs` each node's synced records and `in_flight`
        the spec record of each message in flight (see `message_record`) with
        its copy count. Log and message records arrive as hashable, immutable
        mappings, so they can be set elements and function keys as they are.
        The simulator updates `views`, `logs` and `up` in place from one
        step to the next, so the result must not hold them, only values read
        from them. A view, a log and a liveness flag in them are snapshots
        nobody changes, and each stays the same object until its node steps,
        syncs or crashes, so a mapping may keep what it built from them
        (`protocols.derived`). `in_flight` is such a snapshot itself, the
        same object until a message enters or leaves the network: it may be
        the bag of messages as it is.
        """
        ...

    def make_oracle(self, config: Any) -> Oracle: ...

    def settle_tick(self, config: Any) -> int:
        """The tick by which the workload has started all its work."""
        ...
