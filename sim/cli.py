"""The `tlasim` command line.

Every command turns bad input into a one-line error and a distinct exit code
(sim/exitcodes.py), never a traceback; only an InternalError prints one,
because that is a bug in tlasim.
"""

from __future__ import annotations

import shlex
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from faults.plan import NO_FAULTS_PLAN, FaultPlan
from protocols import PROTOCOLS, get_protocol
from protocols.errors import (
    ConfigError,
    InternalError,
    SpecError,
    TlasimError,
    TLCError,
    ToolNotFound,
    TraceFormatError,
)
from sim import exitcodes
from sim.campaign import VALIDATE_MODES, SeedOutcome, parse_seed_range, run_campaign
from sim.kernel import OUTCOME_LIVENESS, OUTCOME_OK, OUTCOME_SAFETY
from sim.options import SimOptions
from sim.runner import run_seed
from tracing.codec import TraceFormat

F = TypeVar("F", bound=Callable[..., Any])

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(code: int, message: str) -> NoReturn:
    err.print(f"tlasim: error: {message}", markup=False)
    sys.exit(code)


def guarded(fn: F) -> F:
    """Map every tlasim error to its exit code and a one-line message."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolNotFound as exc:
            fail(exitcodes.TOOL_MISSING, str(exc))
        except (ConfigError, TraceFormatError, SpecError) as exc:
            fail(exitcodes.USAGE, str(exc))
        except InternalError:
            err.print("tlasim: internal error (a bug in tlasim, please report it):")
            err.print(traceback.format_exc(), markup=False)
            sys.exit(exitcodes.INTERNAL)
        except TLCError as exc:
            fail(exitcodes.INTERNAL, f"TLC failed: {exc}")
        except TlasimError as exc:
            fail(exitcodes.USAGE, str(exc))

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper  # type: ignore[return-value]


def _parse_assignments(pairs: Sequence[str], what: str) -> dict[str, Any]:
    """`key=value` pairs; values are ints, floats or strings."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{what} {pair!r}: expected key=value")
        value: Any = text
        for convert in (int, float):
            try:
                value = convert(text)
                break
            except ValueError:
                continue
        values[key.replace("-", "_")] = value
    return values


def _fault_plan(mode: str, plan_path: Path | None) -> FaultPlan | None:
    """None means swarm: the seed draws the plan."""
    if plan_path is not None:
        try:
            text = plan_path.read_text()
        except OSError as exc:
            raise ConfigError(f"--plan {plan_path}: cannot read it: {exc.strerror}") from None
        return FaultPlan.from_json(text, where=str(plan_path))
    return None if mode == "swarm" else NO_FAULTS_PLAN


def _print_options(options: dict[str, Any]) -> None:
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
                out.print(f"{key}.{sub}={subvalue}", markup=False)
        else:
            out.print(f"{key}={value}", markup=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option("0.1.0", prog_name="tlasim")
def main() -> None:
    """Simulate distributed protocols under faults; check every trace with TLC."""


def _exit_code_help() -> str:
    return "\b\nExit codes:\n" + "\n".join(f"  {code:>3}  {text}" for code, text in exitcodes.TABLE)


protocol_argument = click.argument("protocol", type=click.Choice(sorted(PROTOCOLS)))


@main.command(epilog=_exit_code_help())
@protocol_argument
@click.option("--seed", type=int, required=True, help="The seed; the same seed gives the same run.")
@click.option("--bug", default=None, help="Switch on a named bug variant (see `tlasim bugs`).")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--trace-format", type=click.Choice(["ndjson", "msgpack"]), default="ndjson")
@click.option("--validate", is_flag=True, help="Check the trace with TLC after the run.")
@click.option("--faults", "fault_mode", type=click.Choice(["swarm", "none"]), default="swarm",
              help="swarm: the seed draws a fault plan (default); none: a fault-free run.")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Run this fault plan (JSON) instead of the seed's swarm plan.")
@click.option("--set", "protocol_overrides", multiple=True, metavar="KEY=VALUE",
              help="Set a protocol option, e.g. rm_count=4.")
@click.option("--liveness-bound", "liveness_bound", type=int, default=600, show_default=True,
              help="Ticks the protocol has to finish after every fault healed.")
@guarded
def run(
    protocol: str,
    seed: int,
    bug: str | None,
    trace_path: Path | None,
    trace_format: TraceFormat,
    validate: bool,
    fault_mode: str,
    plan_path: Path | None,
    protocol_overrides: tuple[str, ...],
    liveness_bound: int,
) -> None:
    """Run one seed of PROTOCOL and report the result."""
    definition = get_protocol(protocol)
    if bug is not None and bug not in definition.bugs:
        raise ConfigError(
            f"unknown {protocol} bug {bug!r}; known: {', '.join(definition.bugs)}"
        )
    options = SimOptions(
        faults=_fault_plan(fault_mode, plan_path),
        trace_format=trace_format,
        liveness_bound_ticks=liveness_bound,
    )
    scratch = None
    if validate and trace_path is None:
        import tempfile

        scratch = tempfile.TemporaryDirectory(prefix="tlasim-run-")
        trace_path = Path(scratch.name) / f"{protocol}-{seed}.{trace_format}"
    seed_run = run_seed(
        definition,
        seed,
        bug=bug,
        protocol_overrides=_parse_assignments(protocol_overrides, "--set"),
        options=options,
        trace_path=trace_path,
    )
    _print_options(seed_run.options)
    result = seed_run.result
    stats = result.stats
    out.print(
        f"result={result.outcome} steps={stats.steps} last_tick={stats.last_tick} "
        f"crashes={stats.crashes} sent={stats.messages_sent} lost={stats.messages_lost} "
        f"duplicated={stats.messages_duplicated}",
        markup=False,
    )
    if result.failure:
        where = f" (trace step {result.failing_step})" if result.failing_step is not None else ""
        out.print(f"failure: {result.failure}{where}", markup=False)
    if trace_path is not None and scratch is None:
        out.print(f"trace={trace_path}", markup=False)
    code = {
        OUTCOME_OK: exitcodes.OK,
        OUTCOME_SAFETY: exitcodes.SAFETY,
        OUTCOME_LIVENESS: exitcodes.LIVENESS,
    }[result.outcome]
    if validate and trace_path is not None:
        from tracing.validate import validate_trace

        verdict = validate_trace(trace_path)
        out.print(verdict.report(), markup=False)
        if not verdict.accepted and code == exitcodes.OK:
            code = exitcodes.TRACE_REJECTED
    if scratch is not None:
        scratch.cleanup()
    command = ["tlasim", "run", protocol, "--seed", str(seed)]
    if bug:
        command += ["--bug", bug]
    if plan_path is not None:
        command += ["--plan", str(plan_path)]
    elif fault_mode != "swarm":
        command += ["--faults", fault_mode]
    for assignment in protocol_overrides:
        command += ["--set", assignment]
    if liveness_bound != SimOptions().liveness_bound_ticks:
        command += ["--liveness-bound", str(liveness_bound)]
    out.print(f"reproduce: {shlex.join(command)}", markup=False)
    if code != exitcodes.OK:
        sys.exit(code)


@main.command()
@protocol_argument
@guarded
def bugs(protocol: str) -> None:
    """List PROTOCOL's bug variants: name first, then what it breaks."""
    for variant in get_protocol(protocol).bugs.values():
        out.print(f"{variant.name}  breaks {variant.breaks}: {variant.description}", markup=False)


@main.command(epilog=_exit_code_help())
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--spec-dir", "spec_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Look for specs here (default: the specs shipped with tlasim).")
@click.option("--spec", default=None, help="The spec module, for traces without a header.")
@guarded
def validate(traces: tuple[Path, ...], spec_dirs: tuple[Path, ...], spec: str | None) -> None:
    """Check that every TRACE is a behaviour of its TLA+ spec, with TLC."""
    from tracing.validate import validate_trace

    rejected = 0
    for path in traces:
        if not path.is_file():
            raise ConfigError(f"trace {path}: no such file")
        verdict = validate_trace(path, spec_dirs=list(spec_dirs) or None, spec=spec)
        out.print(verdict.report(), markup=False)
        rejected += not verdict.accepted
    if rejected:
        sys.exit(exitcodes.TRACE_REJECTED)


@main.command("check-specs", epilog=_exit_code_help())
@click.option("--name", "names", multiple=True, help="Only the manifest checks with these names.")
@click.option("--manifest", type=click.Path(dir_okay=False, path_type=Path), default=None)
@guarded
def check_specs(names: tuple[str, ...], manifest: Path | None) -> None:
    """Run TLC on every config in specs/manifest.json and compare with the expected result."""
    from tracing.speccheck import check_specs as run_checks

    table = Table(title="TLC spec checks")
    for column in ("check", "expected", "actual", "distinct states", "seconds", "verdict"):
        table.add_column(column)
    results = run_checks(manifest, names=list(names) or None)
    for r in results:
        table.add_row(
            r.name,
            r.expected,
            r.actual,
            str(r.distinct_states if r.distinct_states is not None else "-"),
            f"{r.seconds:.1f}",
            "pass" if r.passed else "FAIL",
        )
    out.print(table)
    if not all(r.passed for r in results):
        sys.exit(exitcodes.SPEC_MISMATCH)


def _summary_table(protocol: str, bug: str | None, outcomes: list[SeedOutcome]) -> Table:
    table = Table(title=f"{protocol} campaign" + (f" (bug {bug})" if bug else ""))
    for column in ("outcome", "seeds", "mean steps", "crashes", "lost", "dup",
                   "TLC ok", "TLC rejected"):
        table.add_column(column, justify="right" if column != "outcome" else "left")
    for outcome in (OUTCOME_OK, OUTCOME_SAFETY, OUTCOME_LIVENESS):
        group = [o for o in outcomes if o.outcome == outcome]
        if not group:
            continue
        table.add_row(
            outcome,
            str(len(group)),
            f"{sum(o.steps for o in group) / len(group):.0f}",
            str(sum(o.crashes for o in group)),
            str(sum(o.messages_lost for o in group)),
            str(sum(o.messages_duplicated for o in group)),
            str(sum(o.validation == "accepted" for o in group)),
            str(sum(o.validation == "rejected" for o in group)),
        )
    return table


@main.command(epilog=_exit_code_help())
@protocol_argument
@click.option("--seeds", "seed_range", required=True, metavar="A:B",
              help="Seeds A up to but not including B.")
@click.option("--bug", default=None)
@click.option("--workers", type=int, default=2, show_default=True)
@click.option("--validate", "validate_mode", type=click.Choice(VALIDATE_MODES),
              default="failures", show_default=True)
@click.option("--trace-dir", default="traces", show_default=True,
              help="Where traces of failing or rejected runs are kept.")
@guarded
def campaign(
    protocol: str,
    seed_range: str,
    bug: str | None,
    workers: int,
    validate_mode: str,
    trace_dir: str,
) -> None:
    """Sweep seeds of PROTOCOL under swarm faults; validate traces with TLC."""
    definition = get_protocol(protocol)
    if bug is not None and bug not in definition.bugs:
        raise ConfigError(f"unknown {protocol} bug {bug!r}; known: {', '.join(definition.bugs)}")
    seeds = parse_seed_range(seed_range)
    out.print(
        f"campaign protocol={protocol} seeds={seeds.start}:{seeds.stop} bug={bug} "
        f"workers={workers} validate={validate_mode} faults=swarm",
        markup=False,
    )
    failures = 0
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:.1f} seeds/s  failures: {task.fields[failures]}"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        task = progress.add_task("seeds", total=len(seeds), rate=0.0, failures=0)

        def on_batch(batch: list[SeedOutcome]) -> None:
            nonlocal failures
            failures += sum(o.outcome != OUTCOME_OK or o.validation == "rejected" for o in batch)
            progress.advance(task, len(batch))
            elapsed = progress.tasks[0].elapsed or 1e-9
            progress.update(
                task, rate=progress.tasks[0].completed / elapsed, failures=failures
            )

        outcomes = run_campaign(
            protocol,
            seeds,
            bug=bug,
            validate=validate_mode,
            workers=workers,
            trace_dir=trace_dir,
            on_batch=on_batch,
        )
    out.print(_summary_table(protocol, bug, outcomes))
    bad = [o for o in outcomes if o.outcome != OUTCOME_OK or o.validation == "rejected"]
    for o in bad[:20]:
        what = o.failure or o.rejection or o.outcome
        out.print(
            f"seed {o.seed}: {o.outcome}: {what}\n  trace: {o.trace_path}\n"
            f"  reproduce: tlasim run {protocol} --seed {o.seed}"
            + (f" --bug {bug}" if bug else "")
            + (" --validate" if o.validation == "rejected" else ""),
            markup=False,
        )
    if len(bad) > 20:
        out.print(f"... and {len(bad) - 20} more failing seeds", markup=False)
    if any(o.outcome == OUTCOME_SAFETY for o in outcomes):
        sys.exit(exitcodes.SAFETY)
    if any(o.outcome == OUTCOME_LIVENESS for o in outcomes):
        sys.exit(exitcodes.LIVENESS)
    if any(o.validation == "rejected" for o in outcomes):
        sys.exit(exitcodes.TRACE_REJECTED)


def _exit_for(outcome: str) -> None:
    if outcome == OUTCOME_SAFETY:
        sys.exit(exitcodes.SAFETY)
    if outcome == OUTCOME_LIVENESS:
        sys.exit(exitcodes.LIVENESS)


@main.command(epilog=_exit_code_help())
@protocol_argument
@click.option("--bug", default=None, help="Switch on a named bug variant (see `tlasim bugs`).")
@click.option("--examples", type=int, default=200, show_default=True,
              help="How many inputs hypothesis may try before shrinking.")
@click.option("--search-seed", type=int, default=0, show_default=True,
              help="Seeds the search itself: the same value finds the same failure.")
@guarded
def search(protocol: str, bug: str | None, examples: int, search_seed: int) -> None:
    """Let hypothesis draw seeds, workloads and fault plans; shrink what fails."""
    from sim.search import search as run_search

    definition = get_protocol(protocol)
    if bug is not None and bug not in definition.bugs:
        raise ConfigError(f"unknown {protocol} bug {bug!r}; known: {', '.join(definition.bugs)}")
    out.print(
        f"search protocol={protocol} bug={bug} examples={examples} search_seed={search_seed}",
        markup=False,
    )
    found = run_search(protocol, bug=bug, max_examples=examples, search_seed=search_seed)
    if found.failure is None:
        out.print(f"no failure in {found.examples_run} examples", markup=False)
        return
    out.print(
        f"first failure at example {found.first_failure_at}; "
        f"{found.examples_run} runs in all, shrinking included",
        markup=False,
    )
    out.print(found.failure.report().render(), markup=False)
    _exit_for(found.failure.result.outcome)


@main.command(epilog=_exit_code_help())
@protocol_argument
@click.option("--seed", type=int, required=True, help="The failing seed.")
@click.option("--bug", default=None)
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Shrink this plan (default: the seed's swarm plan).")
@click.option("--set", "protocol_overrides", multiple=True, metavar="KEY=VALUE")
@click.option("--max-runs", type=int, default=300, show_default=True,
              help="The most simulation runs shrinking may take.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the shrunk plan here (default: under .tlasim/failures).")
@guarded
def shrink(
    protocol: str,
    seed: int,
    bug: str | None,
    plan_path: Path | None,
    protocol_overrides: tuple[str, ...],
    max_runs: int,
    out_path: Path | None,
) -> None:
    """Minimize the fault plan of a failing seed by delta debugging."""
    from sim.shrinking import shrink_failure

    definition = get_protocol(protocol)
    if bug is not None and bug not in definition.bugs:
        raise ConfigError(f"unknown {protocol} bug {bug!r}; known: {', '.join(definition.bugs)}")
    shrunk = shrink_failure(
        protocol,
        seed,
        bug=bug,
        plan=_fault_plan("swarm", plan_path),
        options=_parse_assignments(protocol_overrides, "--set"),
        max_runs=max_runs,
    )
    before = shrunk.original.result.plan.size
    out.print(
        f"shrunk {before} fault(s) to {shrunk.shrunk.result.plan.size} in {shrunk.shrink.runs} "
        "runs" + (" (run budget exhausted)" if shrunk.shrink.exhausted else ""),
        markup=False,
    )
    report = shrunk.shrunk.report(original_plan_size=before, plan_path=out_path)
    out.print(report.render(), markup=False)
    _exit_for(shrunk.shrunk.result.outcome)
