"""The mapping file that reads another system's log as a trace of a spec.

Theory of operation. A mapping file (TOML, docs/interchange.md) says which
spec a foreign log is a behaviour of, the values of its constants, where
each part of a step lives in a log record, how the log's names map to the
spec's, and the TLA+ type of each variable whose JSON form alone is
ambiguous. `read_mapping` reads one into a `LogMapping` and checks it
against the spec before any log is read: a renamed variable or action the
spec does not have, a constant it does not declare, a type
tracing/tla/type_expr.py cannot parse, is a ConfigError naming the mapping
file, its line and key. Reading a log through the mapping is
tracing/interchange/foreign.py's; this module never opens a log.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlasim.protocols.errors import ConfigError, SpecError, TraceFormatError
from tlasim.tracing.inputs import MAPPING_MAX_BYTES, read_regular_file
from tlasim.tracing.interchange.itf import itf_to_tagged
from tlasim.tracing.tla.speccheck import load_trace_spec
from tlasim.tracing.tla.type_expr import ANY, Shape, parse_type
from tlasim.tracing.values import Record, from_json, short_repr

__all__ = ["LogMapping", "VariableMap", "read_mapping"]

# Where a step's parts live in a log record, unless the mapping says otherwise.
# "entry" names a field that wraps the step (a structlog or slog record's).
FIELD_DEFAULTS = {
    "action": "action",
    "vars": "vars",
    "ts": "ts",
    "params": "params",
    "node": "node",
    "seq": "seq",
    "entry": "entry",
}
_TOP_KEYS = ("spec", "ignore", "constants", "fields", "actions", "params", "variables")
_VARIABLE_KEYS = ("var", "type")


@dataclass(frozen=True, slots=True)
class VariableMap:
    """One logged variable: the spec variable it is and how to decode it."""

    logged: str
    var: str
    shape: Shape


@dataclass(frozen=True, slots=True)
class LogMapping:
    """A mapping file, read and checked against its spec."""

    path: str
    spec: str
    constants: Record
    fields: dict[str, str]  # part of a step -> the log's field name ("" when not logged)
    actions: dict[str, str]  # the log's action name -> the spec's
    params: dict[str, str]  # the log's parameter name -> the template's
    variables: dict[str, VariableMap]  # by the log's name
    ignore: frozenset[str]  # logged variables that are not the spec's
    spec_variables: frozenset[str]  # a logged one not under [variables] keeps its name


def read_mapping(
    path: str | os.PathLike[str], spec_dirs: Sequence[Path] | None = None
) -> LogMapping:
    """Read a mapping file and check it against the spec it names."""
    name = os.fspath(path)
    raw = read_regular_file(name, "mapping", MAPPING_MAX_BYTES)
    try:
        text = raw.decode("utf-8")
        doc = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"mapping {name}: not TOML: {exc}") from None
    except RecursionError:
        # tomllib reads nested arrays and inline tables recursively.
        raise ConfigError(
            f"mapping {name}: not TOML that tlasim reads: arrays or tables nested too deep "
            "(values may nest 100 levels)"
        ) from None
    return _Reader(name, text, doc).read(spec_dirs)


class _Reader:
    """Checks a parsed mapping file, naming the file, line and key of a problem."""

    def __init__(self, name: str, text: str, doc: dict[str, Any]) -> None:
        self.name = name
        self.lines = text.splitlines()
        self.doc = doc

    def error(self, table: str | None, key: str | None, message: str) -> ConfigError:
        line = self.line_of(table, key)
        where = f"{self.name}:{line}" if line else self.name
        if table is not None or key is not None:
            where += ": " + ".".join(part for part in (table, key) if part)
        return ConfigError(f"mapping {where}: {message}")

    def line_of(self, table: str | None, key: str | None) -> int | None:
        """The line that sets `key` in `[table]` (top level when None), best effort."""
        current: str | None = None
        header = re.compile(r"\s*\[\s*([^\]]+?)\s*\]")
        for number, line in enumerate(self.lines, 1):
            m = header.match(line)
            if m and not line.lstrip().startswith("[["):
                current = m.group(1).strip("\"'")
                if current == (table if key is None else f"{table}.{key}"):
                    return number
                continue
            if key is not None and current == table:
                stripped = line.lstrip()
                for spelled in (key, f'"{key}"', f"'{key}'"):
                    if stripped.startswith(spelled) and stripped[len(spelled) :].lstrip()[:1] in (
                        "=",
                        ".",
                    ):
                        return number
        return None

    def table(self, key: str) -> dict[str, Any]:
        value = self.doc.get(key, {})
        if type(value) is not dict:
            raise self.error(None, key, f"must be a table, not {short_repr(value)}")
        return value

    def strings(self, key: str) -> dict[str, str]:
        table = self.table(key)
        for k, v in table.items():
            if type(v) is not str or not v:
                raise self.error(key, k, f"must be a non-empty string, not {short_repr(v)}")
        return table

    def read(self, spec_dirs: Sequence[Path] | None) -> LogMapping:
        unknown = sorted(set(self.doc) - set(_TOP_KEYS))
        if unknown:
            raise self.error(None, unknown[0], f"unknown key; known: {', '.join(_TOP_KEYS)}")
        spec_name = self.doc.get("spec")
        if type(spec_name) is not str:
            raise self.error(None, "spec", "name the spec module: spec = \"ModuleName\"")
        try:
            spec = load_trace_spec(spec_name, spec_dirs)
        except (SpecError, TraceFormatError) as exc:
            raise self.error(None, "spec", str(exc)) from None
        constants = self.constants(spec_name, [c for c, _ in spec.decls.constants])
        fields = self.fields()
        actions = self.strings("actions")
        for logged, action in actions.items():
            if action not in spec.actions:
                raise self.error(
                    "actions",
                    logged,
                    f"{action!r} is not an action of {spec_name}'s trace template; "
                    f"its actions: {', '.join(spec.actions)}",
                )
        variables = self.variables(spec_name, spec.decls.variables)
        ignore = self.doc.get("ignore", [])
        if type(ignore) is not list or not all(type(v) is str for v in ignore):
            raise self.error(None, "ignore", "must be a list of logged variable names")
        both = sorted(set(ignore) & set(variables))
        if both:
            raise self.error(None, "ignore", f"{both} are also under [variables]")
        return LogMapping(
            self.name,
            spec_name,
            constants,
            fields,
            actions,
            self.strings("params"),
            variables,
            frozenset(ignore),
            frozenset(spec.decls.variables),
        )

    def constants(self, spec: str, declared: list[str]) -> Record:
        table = self.table("constants")
        values = {}
        for name, raw in table.items():
            if name not in declared:
                raise self.error(
                    "constants", name, f"{spec} declares no such constant; it has {declared}"
                )
            try:
                values[name] = from_json(itf_to_tagged(raw, name), name)
            except TraceFormatError as exc:
                raise self.error("constants", name, str(exc)) from None
        missing = [c for c in declared if c not in values]
        if missing:
            raise self.error("constants", None, f"no value for {', '.join(missing)}")
        return Record(values)

    def fields(self) -> dict[str, str]:
        table = self.table("fields")
        fields = dict(FIELD_DEFAULTS)
        for part, field in table.items():
            if part not in FIELD_DEFAULTS:
                raise self.error(
                    "fields", part, f"unknown part; known: {', '.join(FIELD_DEFAULTS)}"
                )
            if type(field) is not str or (part == "vars" and not field):
                raise self.error("fields", part, f"must be a field name, not {short_repr(field)}")
            fields[part] = field
        return fields

    def variables(self, spec: str, declared: Sequence[str]) -> dict[str, VariableMap]:
        table = self.table("variables")
        out: dict[str, VariableMap] = {}
        taken: dict[str, str] = {}
        for logged, entry in table.items():
            if type(entry) is not dict:
                raise self.error(
                    "variables", logged, 'must be a table: { var = "specVar", type = "..." }'
                )
            unknown = sorted(set(entry) - set(_VARIABLE_KEYS))
            if unknown:
                raise self.error(
                    "variables", logged, f"unknown key {unknown[0]!r}; known: var, type"
                )
            var = entry.get("var", logged)
            if type(var) is not str or var not in declared:
                raise self.error(
                    "variables",
                    logged,
                    f"{var!r} is not a variable of {spec}; its variables: {', '.join(declared)}",
                )
            if var in taken:
                raise self.error(
                    "variables", logged, f"{var} is already the spec name of {taken[var]!r}"
                )
            taken[var] = logged
            text = entry.get("type")
            if text is None:
                shape = ANY
            elif type(text) is not str:
                raise self.error(
                    "variables", logged, f"type must be a string, not {short_repr(text)}"
                )
            else:
                try:
                    shape = parse_type(text)
                except ConfigError as exc:
                    raise self.error("variables", logged, str(exc)) from None
            out[logged] = VariableMap(logged, var, shape)
        return out
