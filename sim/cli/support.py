"""What every `tlasim` command shares: consoles, error mapping, option parsing.

Every command turns bad input into a one-line error and a distinct exit code
(sim/exitcodes.py), never a traceback; only an InternalError prints one,
because that is a bug in tlasim.
"""

from __future__ import annotations

import math
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
from rich.console import Console

from tlasim.faults.plan import NO_FAULTS_PLAN, FaultPlan
from tlasim.protocols import get_protocol, zoo
from tlasim.protocols.checked import checked_finite, checked_int, clip, load_json
from tlasim.protocols.errors import (
    ConfigError,
    InternalError,
    SpecError,
    SpecParseError,
    TlasimError,
    TLCError,
    ToolNotFound,
    TraceFormatError,
)
from tlasim.sim import exitcodes
from tlasim.sim.kernel.simulation import OUTCOME_LIVENESS, OUTCOME_SAFETY
from tlasim.tracing.codec import HEADER_EVENT, read_trace, thaw
from tlasim.tracing.inputs import PLAN_MAX_BYTES, read_regular_file
from tlasim.tracing.printable import printable

F = TypeVar("F", bound=Callable[..., Any])

# Rich assumes 80 columns when output is not a terminal; tables piped to a
# file or a CI log read better wider.
_PIPED_WIDTH = 120
# emoji=False: rich would turn a ":smile:" in a logged value into an emoji.
out = Console(
    highlight=False, soft_wrap=True, emoji=False,
    width=None if sys.stdout.isatty() else _PIPED_WIDTH,
)
err = Console(
    stderr=True, highlight=False, soft_wrap=True, emoji=False,
    width=None if sys.stderr.isatty() else _PIPED_WIDTH,
)


# An error is one line a person reads: input it echoes is cut to fit.
ERROR_MAX_CHARS = 1_000


def fail(code: int, message: str) -> NoReturn:
    # One line, whatever values the message quotes, and never the whole of a
    # long input: what it echoes is cut in the middle, keeping both ends.
    err.print(f"tlasim: error: {clip(printable(message), ERROR_MAX_CHARS)}", markup=False)
    sys.exit(code)


def fail_report(code: int, headline: str, report: str) -> NoReturn:
    """`fail`, with a tool's multi-line report after the headline: each of its
    lines made printable on its own, so the report reads as the tool wrote it."""
    err.print(f"tlasim: error: {clip(printable(headline), ERROR_MAX_CHARS)}", markup=False)
    lines = report.splitlines()
    for line in lines[:_REPORT_MAX_LINES]:
        err.print(f"  {clip(printable(line), ERROR_MAX_CHARS)}", markup=False)
    if len(lines) > _REPORT_MAX_LINES:
        err.print(f"  ... and {len(lines) - _REPORT_MAX_LINES} more lines", markup=False)
    sys.exit(code)


_REPORT_MAX_LINES = 60


def guarded(fn: F) -> F:
    """Map every tlasim error to its exit code and a one-line message."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolNotFound as exc:
            fail(exitcodes.TOOL_MISSING, str(exc))
        except SpecParseError as exc:
            fail_report(exitcodes.USAGE, f"SANY cannot parse {exc.module}:", exc.report)
        except (ConfigError, TraceFormatError, SpecError) as exc:
            fail(exitcodes.USAGE, str(exc))
        except TLCError as exc:
            fail(exitcodes.INTERNAL, f"TLC failed: {exc}")
        except TlasimError as exc:
            if not isinstance(exc, InternalError):
                fail(exitcodes.USAGE, str(exc))
            internal_error()
        except OSError as exc:
            # A path the user gave cannot be read or written.
            where = f" {exc.filename}" if exc.filename else ""
            fail(exitcodes.USAGE, f"cannot use{where}: {exc.strerror or exc}")
        except UnicodeError as exc:
            fail(exitcodes.USAGE, f"a file is not UTF-8 text: {exc}")
        except KeyboardInterrupt:
            err.print("tlasim: interrupted")
            sys.exit(exitcodes.INTERRUPTED)
        except Exception:
            internal_error()

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper  # type: ignore[return-value]


def internal_error() -> NoReturn:
    err.print("tlasim: internal error (a bug in tlasim, please report it):")
    err.print(traceback.format_exc(), markup=False)
    sys.exit(exitcodes.INTERNAL)


# An integer option ends in SQLite, msgpack or a range, none of which holds
# more than 64 bits: every integer option is bounded by this at most.
OPTION_INT_MAX = 2**63 - 1


def bounded_int(min: int = 0, max: int = OPTION_INT_MAX) -> click.IntRange:
    """The type of every integer option: a range, never wider than 64 bits."""
    return click.IntRange(min=min, max=max)


class _FiniteFloat(click.FloatRange):
    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        # A NaN passes every range check (each comparison is false), and an
        # infinite time limit never ends: neither is a number an option means.
        if not math.isfinite(number):
            self.fail(f"{printable(value)!r} is not a finite number.", param, ctx)
        return number


def finite_float(
    min: float | None = None, max: float | None = None, *, min_open: bool = False
) -> click.FloatRange:
    """The type of every number option: finite (no nan, no inf), within its range."""
    return _FiniteFloat(min=min, max=max, min_open=min_open)


def parse_assignments(pairs: Sequence[str], what: str) -> dict[str, Any]:
    """`key=value` pairs; values are ints (64 bits), finite floats or strings."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{what} {clip(repr(pair))}: expected key=value")
        value: Any = text
        for convert in (int, float):
            try:
                value = convert(text)
                break
            except ValueError:
                continue
        where = f"{what} {clip(repr(pair))}"
        if type(value) is int:
            checked_int(value, where, low=-OPTION_INT_MAX - 1, high=OPTION_INT_MAX)
        elif type(value) is float:
            checked_finite(value, where)
        values[key.replace("-", "_")] = value
    return values


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        # One of them does not exist (yet): the same path is still the same file.
        return a.resolve() == b.resolve()


def refuse_overwrite(
    outputs: Mapping[str, Path | None], inputs: Mapping[str, Path | None]
) -> None:
    """Refuse to write any output over a file the command reads.

    Both maps go from the option's name (`--trace`, `DB`) to its path or
    None. Paths are compared as files (symlinks and hard links included),
    so `--trace ./results.db` is caught as surely as `--trace results.db`.
    """
    for out_name, out_path in outputs.items():
        for in_name, in_path in inputs.items():
            if out_path is not None and in_path is not None and _same_file(out_path, in_path):
                raise ConfigError(
                    f"{out_name} {out_path} is {in_name}, which this command reads; "
                    f"writing {out_name} would overwrite it: give {out_name} another path"
                )


def fault_plan(mode: str, plan_path: Path | None) -> FaultPlan | None:
    """None means swarm: the seed draws the plan."""
    if plan_path is not None:
        data = read_regular_file(plan_path, "--plan", PLAN_MAX_BYTES)
        if _is_trace(data):
            return _plan_of_trace(plan_path)
        return FaultPlan.from_json(data.decode("utf-8", errors="replace"), where=str(plan_path))
    return None if mode == "swarm" else NO_FAULTS_PLAN


def plan_is_trace(plan_path: Path | None) -> bool:
    """Whether a --plan file is a trace; False when there is none or it cannot be read
    (reading it for the plan then says why)."""
    if plan_path is None:
        return False
    try:
        data = read_regular_file(plan_path, "--plan", PLAN_MAX_BYTES)
    except ConfigError:
        return False
    return _is_trace(data)


def _is_trace(data: bytes) -> bool:
    """Whether a --plan file is a trace (whose header holds the plan) rather than a plan."""
    first = data.lstrip()[:1]
    if first and first != b"{":
        return True  # msgpack: a plan file is always JSON
    line = data.split(b"\n", 1)[0]
    try:
        parsed = load_json(line, "--plan")
    except ConfigError:
        return False
    return isinstance(parsed, dict) and parsed.get("event") == HEADER_EVENT


def _plan_of_trace(path: Path) -> FaultPlan:
    trace = read_trace(path)
    options = trace.header.get("options") if trace.header else None
    faults = options.get("faults") if isinstance(options, Mapping) else None
    if not isinstance(faults, Mapping):
        raise ConfigError(f"--plan {path}: the trace's header holds no fault plan")
    return FaultPlan.from_dict(thaw(faults))


def print_options(options: dict[str, Any]) -> None:
    """Print `seed=` first, then every option, one per line, as VOPR does."""
    out.print(f"seed={options['seed']}", markup=False)
    for key, value in options.items():
        if key == "seed":
            continue
        if key == "faults":
            for line in FaultPlan.from_dict(value).describe().splitlines():
                out.print(f"fault: {line}", markup=False)
            continue
        if isinstance(value, dict):
            for sub, subvalue in value.items():
                out.print(f"{key}.{sub}={printable(subvalue)}", markup=False)
        else:
            out.print(f"{key}={printable(value)}", markup=False)


def exit_code_help() -> str:
    return "\b\nExit codes:\n" + "\n".join(f"  {code:>3}  {text}" for code, text in exitcodes.TABLE)


class ProtocolName(click.types.StringParamType):
    """A protocol's name, or `module:ATTR` for a user's own (tlasim.protocols):
    converted to the name it is registered under, so the rest of a command
    (and the processes it starts) looks it up by name."""

    name = "protocol"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        try:
            return get_protocol(str(value)).name
        except ConfigError as exc:
            self.fail(clip(str(exc), 600), param, ctx)


protocol_argument = click.argument("protocol", metavar="PROTOCOL", type=ProtocolName())


def check_bug(protocol: str, bug: str | None) -> None:
    zoo.check_bug(get_protocol(protocol).bugs, protocol, bug)


def exit_for(outcome: str) -> None:
    """Exit with the code of a failed run's outcome; return for a passing one."""
    if outcome == OUTCOME_SAFETY:
        sys.exit(exitcodes.SAFETY)
    if outcome == OUTCOME_LIVENESS:
        sys.exit(exitcodes.LIVENESS)
