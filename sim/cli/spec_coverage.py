"""`tlasim spec-coverage`: which fraction of the spec's reachable states runs reach
(sim/coverage/against_spec.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from tlasim.protocols import get_protocol
from tlasim.protocols.errors import ConfigError
from tlasim.sim import exitcodes
from tlasim.sim.campaign.guide import GUIDES
from tlasim.sim.campaign.sweep import parse_seed_range
from tlasim.sim.cli.conformance import explorer_fault_options, tlc_model_options
from tlasim.sim.cli.support import (
    ProtocolName,
    bounded_int,
    err,
    exit_code_help,
    guarded,
    out,
    parse_assignments,
)
from tlasim.sim.conformance import defaults
from tlasim.tracing.printable import printable


def _bound(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`NAME=JSON` pairs: a model constant's value as the model file gives it."""
    bound = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--bound {pair!r:.60}: expected NAME=VALUE, such as MaxInFlight=3")
        try:
            bound[name] = json.loads(text)
        except ValueError:
            raise ConfigError(f"--bound {name}: {text!r:.60} is not a JSON value (a number, "
                              'or a set as {"#set": ["k1"]})') from None
    return bound


@click.command("spec-coverage", epilog=exit_code_help())
@click.argument("protocol", type=ProtocolName())
@click.option("--seeds", "seed_range", default="0:1000", show_default=True, metavar="A:B",
              help="The campaign's seeds, A up to but not including B.")
@click.option("--campaign/--no-campaign", "with_campaign", default=True, show_default=True,
              help="Measure a campaign (--no-campaign: the explorer alone).")
@click.option("--guide", "guides", multiple=True, type=click.Choice(GUIDES),
              help="Run the campaign with this guide; given twice (none and coverage), two "
                   "campaigns side by side.  [default: none]")
@click.option("--guide-seed", type=bounded_int(min=0), default=0, show_default=True,
              help="Seeds a guided campaign's choices.")
@click.option("--workers", type=bounded_int(min=1), default=2, show_default=True,
              help="Worker processes of each campaign.")
@click.option("--explore-states", type=bounded_int(min=0, max=10_000_000),
              default=defaults.EXPLORE_STATES, show_default=True,
              help="Distinct states the explorer may reach in each workload (0: no explorer).")
@click.option("--explore-workloads", type=bounded_int(min=1, max=1000),
              default=defaults.EXPLORE_WORKLOADS, show_default=True,
              help="Explore the workloads of this many seeds (0, 1, ...).")
@explorer_fault_options
@click.option("--set", "protocol_settings", multiple=True, metavar="KEY=VALUE",
              help="A protocol option over the model's small constants (repeatable).")
@click.option("--bound", "bound_settings", multiple=True, metavar="NAME=VALUE",
              help="A constant of the spec's model (MaxInFlight=3) over the model's coverage "
                   "bound (repeatable); VALUE is JSON.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Also write the result as JSON to this file.")
@tlc_model_options
@guarded
def spec_coverage_command(
    protocol: str, seed_range: str, with_campaign: bool, guides: tuple[str, ...],
    guide_seed: int, workers: int,
    explore_states: int, explore_workloads: int, crashes: int, losses: int, dups: int,
    idle_crashes: bool, protocol_settings: tuple[str, ...], bound_settings: tuple[str, ...],
    json_out: Path | None, tlc_timeout: float, spec_dirs: tuple[Path, ...],
) -> None:
    """Measure which fraction of PROTOCOL's reachable spec states a campaign
    and the explorer reach, side by side.

    TLC enumerates the spec at the small constants of its conformance model
    (the "coverage" bound of <Spec>.conformance.json), and each state is
    hashed as a run's coverage hashes it. A campaign (plain or --guide
    coverage) and the explorer run the code at the same constants; the
    table gives the states each reached within TLC's set, and those beyond
    the model's bound (more messages in flight than TLC was let explore).
    States beyond it are printed back by TLC to check that both sides hash
    alike: a mismatch means they do not, and exits 7.
    """
    from tlasim.sim.coverage.against_spec import CampaignPlan, ExplorePlan, spec_coverage
    from tlasim.sim.explore.system import FaultBounds

    definition = get_protocol(protocol)
    overrides = parse_assignments(protocol_settings, "--set")
    definition.make_options(overrides)  # bad options fail before TLC runs
    bound = _bound(bound_settings)
    seeds = parse_seed_range(seed_range)
    campaigns = [CampaignPlan(seeds, workers, guide, guide_seed)
                 for guide in dict.fromkeys(guides or ("none",))] if with_campaign else []
    explorer = None
    if explore_states:
        explorer = ExplorePlan(FaultBounds(crashes, losses, dups, idle_crashes), explore_states,
                               explore_workloads)
    if not campaigns and explorer is None:
        raise ConfigError("nothing to measure: --no-campaign and --explore-states 0 leave out "
                          "both sides")
    err.print(f"{protocol}: enumerating {definition.spec_module} with TLC ...", markup=False)
    result = spec_coverage(
        definition, campaigns=campaigns, explorer=explorer, options=overrides, bound=bound,
        spec_dirs=list(spec_dirs) or None, timeout_s=tlc_timeout,
        progress=lambda line: err.print(f"{protocol}: {line}", markup=False))
    _print(result)
    if json_out is not None:
        from tlasim.tracing.outputs import write_output

        write_output(json_out, "--json", (json.dumps(_as_json(result), indent=1) + "\n").encode())
    if any(side.mismatched for side in result.sides):
        sys.exit(exitcodes.DRIFT)


def _assignments(values: Any) -> str:
    return " ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in sorted(values.items()))


def _print(result: Any) -> None:
    spec = result.spec
    out.print(f"{spec.protocol} at {_assignments(spec.options) or 'its default options'}: "
              f"TLC reached {spec.tlc_states:,} states of {spec.module} "
              f"({len(spec.states):,} abstract) in {spec.seconds:.0f} s", markup=False)
    out.print(f"  bound: {_assignments(spec.bound) or 'none'}"
              + (f" under {', '.join(spec.constraints)}" if spec.constraints else ""),
              markup=False)
    out.print(f"  {printable(spec.bound_why)}", markup=False)
    table = Table("side", "runs", "states", "in TLC's", "fraction", "beyond bound",
                  "mismatched", "seconds")
    for side in result.sides:
        runs = f"{side.runs:,}"
        if side.name == "explorer":
            runs += " states" if side.exhausted else " states, cut"
        table.add_row(side.name, runs, f"{len(side.reached):,}", f"{side.within:,}",
                      f"{side.fraction(spec):.1%}", f"{side.outside:,}", str(side.mismatched),
                      f"{side.seconds:.0f}")
    out.print(table)
    for side in result.sides:
        if side.skipped:
            what = "runs" if side.name != "explorer" else "workloads"
            out.print(f"  {side.name}: {side.skipped} {what} left out: their workload gives "
                      "other spec constants than TLC's", markup=False)
        if side.mismatched:
            out.print(f"  MISMATCH: {side.mismatched} of {side.name}'s states beyond the bound "
                      "hash differently once TLC prints them: the code's spec variables and "
                      "TLC's values disagree (a function the code builds that TLC prints as a "
                      "sequence, say), so the fractions above are not to be trusted",
                      markup=False)


def _as_json(result: Any) -> dict[str, Any]:
    spec = result.spec
    return {
        "protocol": spec.protocol,
        "options": dict(spec.options),
        "module": spec.module,
        "bound": dict(spec.bound),
        "tlc_states": spec.tlc_states,
        "abstract_states": len(spec.states),
        "tlc_seconds": round(spec.seconds, 3),
        "sides": [
            {"side": side.name, "runs": side.runs, "reached": len(side.reached),
             "within": side.within, "fraction": side.fraction(spec), "beyond": side.outside,
             "skipped": side.skipped, "exhausted": side.exhausted,
             "mismatched": side.mismatched, "seconds": round(side.seconds, 3)}
            for side in result.sides],
    }
