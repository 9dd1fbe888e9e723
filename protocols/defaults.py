"""Defaults for a protocol definition, so that a protocol writes only what is its own.

Theory of operation: `ProtocolBase` implements every part of
`protocols.definition.ProtocolDefinition` that can be said once for all
protocols, from a few class attributes:

- options: `OPTIONS`, a frozen dataclass of the protocol's options (its
  defaults are the defaults; an unknown option is a ConfigError naming it),
  which subclasses `OptionsBase` for `as_dict`;
- bugs: `BUGS`, the protocol's bug zoo by name; `check_bug` refuses an
  unknown name the same way for every protocol;
- trace actions: read once from the trace template's `TraceActionNames`
  (protocols/trace_template.py), never written in Python;
- messages: `MESSAGES`, a `protocols.wire.Schema`, encodes and decodes them,
  and a message's spec record is the message itself. A protocol without it
  sends no messages: it has no network actions, and asking it to encode or
  decode one is an error that names the protocol;
- crashes: a protocol that defines `crash_step` may crash every node; one
  that does not, none;
- source files: every Python module of the definition's package.

- the spec's variables and their types: read from the spec (its VARIABLES
  and TypeOK; protocols.spec_variables);
- the trace template's action names: its `TraceActionNames`, or, with no
  template beside the spec, the actions of the spec's Next (the template is
  derived, tracing.tla.derive_template).

- the refinement mapping: gathered from the nodes as `SPEC_VARS` declares
  (protocols.gather), unless the protocol writes `spec_vars`.

What stays for a protocol to write is what only it knows: its name and
spec, `configure`, `node_ids`, `make_core`,
`spec_constants`, `SPEC_VARS` (or `spec_vars`) and `make_oracle`. Any default may be
overridden, as two-phase commit does for its messages. This module is
stdlib-only, like the rest of `protocols/`.
"""

from __future__ import annotations

import inspect
import random
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, cast

from tlasim.protocols.base import Core
from tlasim.protocols.coverage import Abstraction
from tlasim.protocols.definition import Oracle, ProtocolDefinition, build_options
from tlasim.protocols.errors import ConfigError, InternalError, ProtocolViolation
from tlasim.protocols.gather import Gathered, gather
from tlasim.protocols.spec_variables import find_module, read_spec_variables
from tlasim.protocols.trace_template import find_template, read_action_names, shipped_spec_dirs
from tlasim.protocols.wire import Schema
from tlasim.protocols.zoo import BugVariant, check_bug

__all__ = ["NoOptions", "OptionsBase", "ProtocolBase"]

_PACKAGES_ROOT = Path(__file__).resolve().parents[1]  # source_files are relative to it


class OptionsBase:
    """A protocol's options dataclass: `as_dict` gives every option by name, in order."""

    __slots__ = ()

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(cast(Any, self))}


@dataclass(frozen=True, slots=True)
class NoOptions(OptionsBase):
    """The options of a protocol that has none."""


class ProtocolBase(ABC):
    """Every default of a protocol definition; see the module's docstring.

    The abstract methods are what each protocol must write; a subclass that
    lacks one cannot be instantiated, and the error names it.
    """

    name: str
    summary: str
    spec_module: str

    OPTIONS: ClassVar[type[OptionsBase]] = NoOptions
    BUGS: ClassVar[Mapping[str, BugVariant]] = MappingProxyType({})
    MESSAGES: ClassVar[Schema | None] = None
    # The refinement mapping, declared (protocols.gather); or write spec_vars.
    SPEC_VARS: ClassVar[Mapping[str, Gathered]] = MappingProxyType({})
    # What spec coverage tells apart of each variable (protocols.coverage).
    COVERAGE_ABSTRACTION: ClassVar[Abstraction] = MappingProxyType({})
    _undeclared: str | None = None  # SPEC_VARS checked against the spec, once
    # The protocol's own spec folders: its module, trace template, configs and
    # manifest. When empty, a `specs` folder beside the definition module if
    # there is one (a user's protocol), else the specs shipped with tlasim.
    SPEC_DIRS: ClassVar[tuple[Path, ...]] = ()

    # The network actions; a protocol that sends messages names its own.
    net_lose_action: str | None = None
    net_duplicate_action: str | None = None
    # Search mode draws no option from a range unless the protocol names one.
    workload_ranges: Mapping[str, tuple[int, int] | tuple[float, float]] = MappingProxyType({})

    # ---- options and bugs ----

    def default_options(self) -> Any:
        return self.OPTIONS()

    def make_options(self, overrides: Mapping[str, Any]) -> Any:
        return build_options(self.OPTIONS, self.name, overrides)

    @property
    def bugs(self) -> Mapping[str, BugVariant]:
        return self.BUGS

    def check_bug(self, bug: str | None) -> str | None:
        """`bug` if it is one of the protocol's variants (or None); else a ConfigError."""
        return check_bug(self.BUGS, self.name, bug)

    # ---- what the spec and the revision are made of ----

    @cached_property
    def spec_dirs(self) -> tuple[Path, ...]:
        if self.SPEC_DIRS:
            return tuple(self.SPEC_DIRS)
        beside = Path(inspect.getfile(type(self))).resolve().parent / "specs"
        return (beside,) if beside.is_dir() else shipped_spec_dirs()

    @cached_property
    def variable_types(self) -> Mapping[str, str]:
        """The spec's variables in its order, with their types from its TypeOK
        (protocols.spec_variables); a definition may still write its own."""
        return read_spec_variables(find_module(self.spec_module, self.spec_dirs))

    @cached_property
    def trace_actions(self) -> frozenset[str]:
        return read_action_names(find_template(self.spec_module, self.spec_dirs))

    @cached_property
    def source_root(self) -> Path:
        """The folder `source_files` are relative to: tlasim's own for its
        protocols, else the folder on sys.path the definition's package is in."""
        module = Path(inspect.getfile(type(self))).resolve()
        if module.is_relative_to(_PACKAGES_ROOT):
            return _PACKAGES_ROOT
        return module.parents[len(type(self).__module__.split(".")) - 1]

    @cached_property
    def source_files(self) -> Sequence[str]:
        package = Path(inspect.getfile(type(self))).resolve().parent
        return tuple(sorted(
            path.relative_to(self.source_root).as_posix() for path in package.rglob("*.py")))

    # ---- what each protocol writes ----

    @abstractmethod
    def configure(self, options: Any, bug: str | None, workload_rng: random.Random) -> Any:
        """Draw the workload and return the run's configuration (call `check_bug`)."""

    @abstractmethod
    def node_ids(self, config: Any) -> tuple[str, ...]: ...

    @abstractmethod
    def make_core(self, config: Any, node_id: str) -> Core: ...

    @abstractmethod
    def spec_constants(self, config: Any) -> Mapping[str, Any]: ...

    def spec_vars(
        self,
        config: Any,
        views: Mapping[str, Mapping[str, Any]],
        logs: Mapping[str, Sequence[Mapping[str, Any]]],
        up: Mapping[str, bool],
        in_flight: Mapping[Hashable, int],
    ) -> dict[str, Any]:
        """The refinement mapping: the variables SPEC_VARS declares (protocols.gather).
        A protocol with a variable of another shape overrides this."""
        if not self.SPEC_VARS:
            raise ConfigError(f"{self.name} declares no SPEC_VARS and does not define "
                                "spec_vars: one of them is the refinement mapping")
        if self._undeclared is None:
            spec, declared = list(self.variable_types), list(self.SPEC_VARS)
            self._undeclared = (
                "" if spec == declared else
                f"{self.name}'s SPEC_VARS declares {', '.join(declared)}; the spec "
                f"{self.spec_module} has {', '.join(spec)}, in that order")
        if self._undeclared:
            raise ConfigError(self._undeclared)
        roles: dict[str | None, Sequence[str]] = {None: self.node_ids(config)}
        roles.update(self.roles(config))
        return gather(self.SPEC_VARS, roles, views, logs, up, in_flight)

    def roles(self, config: Any) -> Mapping[str, Sequence[str]]:
        """The nodes of each role SPEC_VARS names (protocols.gather)."""
        return {}

    @abstractmethod
    def make_oracle(self, config: Any) -> Oracle: ...

    # ---- nodes and crashes ----

    def crash_nodes(self, config: Any) -> tuple[str, ...]:
        if type(self).crash_step is ProtocolBase.crash_step:
            return ()
        return self.node_ids(config)

    def symmetric_nodes(self, config: Any) -> Sequence[Sequence[str]]:
        # No promise unless the protocol makes it.
        return ()

    def crash_step(self, node_id: str) -> tuple[str, Mapping[str, Any]]:
        raise InternalError(
            f"{self.name} defines no crash_step, so none of its nodes may crash, "
            f"but {node_id} did"
        )

    def settle_tick(self, config: Any) -> int:
        """By default every node starts its work at once."""
        return 0

    # ---- messages ----

    def _schema(self, doing: str) -> Schema:
        if self.MESSAGES is None:
            raise ProtocolViolation(
                f"{self.name} sends no messages (its definition has no MESSAGES schema), "
                f"but was asked to {doing}"
            )
        return self.MESSAGES

    def encode_message(self, msg: Any) -> dict[str, Any]:
        return self._schema(f"encode {msg!r}").to_wire(msg)

    def decode_message(self, data: Any) -> Any:
        return self._schema(f"decode {data!r}").from_wire(data)

    def message_record(self, msg: Any) -> Mapping[str, Any]:
        self._schema(f"give the record of {msg!r}")
        return cast(Mapping[str, Any], msg)


if TYPE_CHECKING:

    def _meets_the_interface(definition: ProtocolBase) -> ProtocolDefinition:
        """Never called: mypy checks here that ProtocolBase is a ProtocolDefinition."""
        return definition
