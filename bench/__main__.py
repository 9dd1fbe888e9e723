"""`make bench`: every benchmark's figures and ratios, measured side by side in one run."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from bench import (
    bugs,
    campaign,
    explore,
    guided,
    kernel,
    linearizability,
    live,
    refinement,
    report,
    scaling,
    validation,
)
from tlasim.sim.cli.support import out

# The standard campaign of each protocol: its default options, swarm faults.
CAMPAIGNS = {
    "twopc": "3 RMs, 5 transactions",
    "shardsplit": "4 keys, 2 splits, 3 clients x 8 operations",
    "snapshot": "6 keys in 3 chunks, 3 clients x 8 operations",
}


def main() -> None:
    # The CLI's console: as wide as the terminal, and 120 columns in a log.
    console = out

    raw, off, on = kernel.run()
    table = Table(title="Kernel: delivered messages per second (same process, side by side)")
    for column in ("run", "messages", "seconds", "msgs/s", "vs raw simpy"):
        table.add_column(column)
    for t in (raw, off, on):
        table.add_row(
            t.label, str(t.messages), f"{t.seconds:.2f}", f"{t.per_second:,.0f}",
            f"{t.per_second / raw.per_second:.4f}x",
        )
    console.print(table)
    console.print(f"tracing on / tracing off: {on.per_second / off.per_second:.2f}x")

    for line in validation.describe(validation.run()):
        console.print(line, markup=False)
    for line in validation.describe_large(validation.large_values()):
        console.print(line, markup=False)
    for line in report.describe(report.run()):
        console.print(line, markup=False)

    twopc_rates = campaign.run("twopc")
    campaign_table("twopc", twopc_rates, console)
    _, one, two, dask, command = twopc_rates
    console.print(
        f"2 workers / 1 worker: {two.per_second / one.per_second:.2f}x; "
        f"dask LocalCluster / process pool (2 workers each): "
        f"{dask.per_second / two.per_second:.2f}x; "
        f"command / library (1 worker): {command.per_second / one.per_second:.2f}x"
    )
    for protocol in ("shardsplit", "snapshot"):
        rates = campaign.run(protocol, dask=False)
        campaign_table(protocol, rates, console)
        _, its_one, its_two, its_command = rates
        console.print(
            f"2 workers / 1 worker: {its_two.per_second / its_one.per_second:.2f}x; "
            f"command / library (1 worker): {its_command.per_second / its_one.per_second:.2f}x; "
            f"{protocol} / twopc seeds per second (1 worker): "
            f"{its_one.per_second / one.per_second:.2f}x"
        )

    refinement_tables(console)
    scaling_lines(console)
    explore_table(console)

    table = Table(title="Swarm: seeds to the first failure, per bug variant")
    for column in ("protocol", "bug", "median", "sweeps", "misses", "counts"):
        table.add_column(column)
    for protocol in CAMPAIGNS:
        for f in bugs.run(protocol):
            table.add_row(f.protocol, f.bug, f"{f.median:g}", str(len(f.counts)), str(f.misses),
                          " ".join(map(str, f.counts)))
    console.print(table)

    guided_tables(console)
    spec_coverage_table(console)
    linearizability_tables(console)
    live_table(console)


# Runs after which each mode's coverage is compared: the two budgets.
COVERAGE_RUNS = (1_000, 10_000)
# The standard campaigns, and twopc at the constants TLC enumerates, where
# a campaign's abstract states run out and guidance has room to work.
COVERAGE_CONFIGS = (
    ("twopc", {}), ("twopc", {"rm_count": 2, "tx_count": 1}), ("shardsplit", {}),
    ("snapshot", {}),
)


def guided_tables(console: Console) -> None:
    table = Table(title="--guide coverage against plain swarm: seeds (and seconds) to the first "
                        "failure, median of 5 sweeps, same slots side by side")
    for column in ("protocol", "bug", "plain seeds", "guided seeds", "guided / plain",
                   "plain s", "guided s", "misses (plain/guided)"):
        table.add_column(column)
    for protocol in CAMPAIGNS:
        figures = {(f.bug, f.mode): f for f in guided.first_failures(protocol)}
        for bug in dict.fromkeys(b for b, _mode in figures):
            plain, led = figures[bug, "plain"], figures[bug, "guided"]
            table.add_row(protocol, bug, f"{plain.median_seeds:g}", f"{led.median_seeds:g}",
                          f"{led.median_seeds / plain.median_seeds:.2f}",
                          f"{plain.median_seconds:.2f}", f"{led.median_seconds:.2f}",
                          f"{plain.misses}/{led.misses}")
    console.print(table)
    table = Table(title="Spec coverage after N runs: plain swarm and --guide coverage, "
                        "side by side (2 workers, no TLC)")
    for column in ("protocol", "runs", "plain states", "guided states", "guided / plain",
                   "pairs (plain/guided)", "actions (plain/guided)",
                   "s (plain/guided, pro rata)"):
        table.add_column(column)
    for protocol, overrides in COVERAGE_CONFIGS:
        name = protocol + "".join(f" {k}={v}" for k, v in overrides.items())
        reached = guided.coverage_after(protocol, COVERAGE_RUNS, overrides)
        for runs, plain, led in zip(COVERAGE_RUNS, reached["plain"], reached["guided"],
                                    strict=True):
            table.add_row(name, f"{runs:,}", f"{plain.states:,}", f"{led.states:,}",
                          f"{led.states / max(plain.states, 1):.2f}",
                          f"{plain.pairs}/{led.pairs}", f"{plain.actions}/{led.actions}",
                          f"{plain.seconds:.0f}/{led.seconds:.0f}")
    console.print(table)


# Runs (and explored states per workload) measured against TLC's own states.
SPEC_COVERAGE_RUNS = 10_000
SPEC_COVERAGE_EXPLORE_STATES = 50_000


def spec_coverage_table(console: Console) -> None:
    """Issue 25's item 2: the fraction of TLC's reachable abstract states at
    each model's coverage constants that plain swarm, --guide coverage and
    the explorer reach, side by side in one run."""
    from tlasim.protocols import get_protocol
    from tlasim.sim.conformance import defaults
    from tlasim.sim.coverage.against_spec import CampaignPlan, ExplorePlan, spec_coverage
    from tlasim.sim.explore.system import FaultBounds

    table = Table(title=f"Fraction of TLC's reachable states at small constants: "
                        f"{SPEC_COVERAGE_RUNS:,} runs per campaign, explorer "
                        f"{SPEC_COVERAGE_EXPLORE_STATES:,} states per workload")
    for column in ("protocol", "TLC states", "side", "in TLC's", "fraction", "beyond bound",
                   "mismatched", "s"):
        table.add_column(column)
    faults = FaultBounds(defaults.CRASHES, defaults.LOSSES, defaults.DUPLICATES,
                         defaults.IDLE_CRASHES)
    seeds = range(SPEC_COVERAGE_RUNS)
    for protocol in CAMPAIGNS:
        result = spec_coverage(
            get_protocol(protocol),
            campaigns=[CampaignPlan(seeds, 2), CampaignPlan(seeds, 2, "coverage")],
            explorer=ExplorePlan(faults, SPEC_COVERAGE_EXPLORE_STATES,
                                 defaults.EXPLORE_WORKLOADS))
        for side in result.sides:
            table.add_row(protocol, f"{len(result.spec.states):,}", side.name,
                          f"{side.within:,}", f"{side.fraction(result.spec):.1%}",
                          f"{side.outside:,}", str(side.mismatched), f"{side.seconds:.0f}")
    console.print(table)


def live_table(console: Console) -> None:
    table = Table(title=f"Live cluster on loopback ({live.TICK_MS:g} ms per tick) beside the "
                        "simulator, same workload, no faults")
    for column in ("protocol", "live msgs", "live s", "live msgs/s", "sim msgs/s (wall)",
                   "sim msgs/s (sim time)", "live / sim time", "commit ms live", "commit ms sim"):
        table.add_column(column)
    for r in live.run():
        table.add_row(
            r.protocol, str(r.live_messages), f"{r.live_seconds:.2f}", f"{r.live_rate:,.0f}",
            f"{r.sim_wall_rate:,.0f}", f"{r.sim_time_rate:,.0f}",
            f"{r.live_rate / r.sim_time_rate:.2f}x",
            "-" if r.live_commit_ms is None else f"{r.live_commit_ms:.1f}",
            "-" if r.sim_commit_ms is None else f"{r.sim_commit_ms:.1f}",
        )
    console.print(table)


def explore_table(console: Console) -> None:
    table = Table(title="Explorer beside TLC: states per second on the same constants")
    for column in ("bound", "explorer states", "s", "states/s", "TLC check", "TLC states",
                   "s", "states/s", "explorer / TLC"):
        table.add_column(column)
    for row in explore.run():
        table.add_row(
            row.label + ("" if row.explorer_exhausted else " (cut by time)"),
            f"{row.explorer_states:,}", f"{row.explorer_seconds:.1f}",
            f"{row.explorer_rate:,.0f}", row.tlc_check, f"{row.tlc_states:,}",
            f"{row.tlc_seconds:.1f}", f"{row.tlc_rate:,.0f}",
            f"{row.explorer_rate / row.tlc_rate:.3f}x",
        )
    console.print(table)
    table = Table(title="Explorer: what each reduction saves on the same bound (side by side)")
    for column in ("bound", "reduction", "states", "with", "moves", "with", "s", "with",
                   "time ratio"):
        table.add_column(column)
    for r in explore.reductions():
        table.add_row(
            r.label, r.reduction, f"{r.plain_states:,}", f"{r.reduced_states:,}",
            f"{r.plain_moves:,}", f"{r.reduced_moves:,}", f"{r.plain_seconds:.1f}",
            f"{r.reduced_seconds:.1f}", f"{r.reduced_seconds / r.plain_seconds:.2f}x",
        )
    console.print(table)
    seen = explore.projection()
    console.print(
        f"differential, {seen.label}: {seen.implementation_states:,} implementation states "
        f"project to {seen.projected_states:,} distinct spec states and "
        f"{seen.projected_steps:,} distinct spec steps; TLC's {seen.tlc_check} "
        f"(same constants, its own bounds, up to symmetry): {seen.tlc_states:,} states"
    )


def refinement_tables(console: Console) -> None:
    table = Table(title="Every run checked by TLC: campaign --validate all against none, "
                        "2 workers, side by side")
    for column in ("protocol", "seeds", "none seeds/s", "all seeds/s",
                   f"all / none (median of {refinement.PAIRS} pairs; each pair)",
                   "all as before (seeds/s)", "now / before"):
        table.add_column(column)
    for r in refinement.ratios():
        each = ", ".join(f"{x:.0%}" for x in r.ratios)
        table.add_row(r.protocol, str(r.seeds), f"{r.none_rate:.0f}", f"{r.all_rate:.1f}",
                      f"{r.ratio:.0%} ({each})", f"{r.before_rate:.2f} ({r.before_seeds} seeds)",
                      f"{r.all_rate / r.before_rate:.1f}x")
    console.print(table)
    table = Table(title="Where a checked step's time goes (ms per step; CPU counts every "
                        "thread of TLC's JVM)")
    for column in ("protocol", "traces", "steps", "record (Python)", "batch file (Python)",
                   "TLC fixed per run (JVM start, SANY)", "TLC batch run: wall, CPU",
                   "TLC stream (campaign): wall, CPU", "same traces as text (before)"):
        table.add_column(column)
    for protocol in refinement.SEEDS:
        p = refinement.profile(protocol)
        table.add_row(
            protocol, str(p.traces), str(p.steps), f"{p.per_step_ms(p.record_seconds):.3f}",
            f"{p.per_step_ms(p.file_seconds):.3f}",
            f"{p.fixed_seconds:.2f} s ({p.jvm_seconds:.2f} s, {p.sany_seconds:.2f} s)",
            f"{p.per_step_ms(p.batch_seconds):.3f}, {p.per_step_ms(p.batch_cpu):.3f} "
            f"({p.batch_seconds:.1f} s)",
            f"{p.per_step_ms(p.stream_seconds):.3f}, {p.per_step_ms(p.stream_cpu):.3f} "
            f"({p.stream_seconds:.1f} s)",
            f"{p.per_step_ms(p.text_seconds):.3f} ({p.text_seconds:.1f} s)",
        )
    console.print(table)


def scaling_lines(console: Console) -> None:
    """Issue 24's figures: TLC per worker, measured parts and the model."""
    console.print("Refinement checking beside each worker: does it scale?", markup=False)
    for protocol in CAMPAIGNS:
        for line in scaling.describe(protocol):
            console.print(line, markup=False)
    console.print(scaling.ASSUMPTIONS, markup=False)
    rows = scaling.side_by_side()
    for r in rows:
        console.print(
            f"(d) twopc {scaling.SIDE_BY_SIDE_SEEDS} seeds, {r.label}, 2 workers: none "
            f"{scaling.SIDE_BY_SIDE_SEEDS / r.none_seconds:.0f} seeds/s, all "
            f"{scaling.SIDE_BY_SIDE_SEEDS / r.all_seconds:.0f} seeds/s, all / none {r.ratio:.0%}",
            markup=False,
        )
    pool, dask = rows
    console.print(
        f"(d) dask LocalCluster / process pool: none {pool.none_seconds / dask.none_seconds:.2f}x, "
        f"all {pool.all_seconds / dask.all_seconds:.2f}x",
        markup=False,
    )


def campaign_table(protocol: str, rates: list[campaign.Rate], console: Console) -> None:
    table = Table(title=f"Campaign: {protocol}, {CAMPAIGNS[protocol]}, swarm faults")
    for column in ("run", "seeds", "seconds", "seeds/s"):
        table.add_column(column)
    for r in rates:
        table.add_row(r.label, str(r.seeds), f"{r.seconds:.2f}", f"{r.per_second:.0f}")
    console.print(table)


def linearizability_tables(console: Console) -> None:
    runs = linearizability.large()
    table = Table(
        title="Linearizability: check_linearizable on 10,000-operation histories",
        caption="overlap: the most completed operations on one key in flight at one tick; "
        "a corrupted read returns a value nobody wrote",
    )
    for column in (
        "history", "corrupted read", "ops", "keys", "clients", "pending writes", "overlap",
        "verdict", "keys checked", "states explored", "seconds",
    ):
        table.add_column(column)
    for r in runs:
        table.add_row(
            r.label, "yes" if r.corrupted else "no", f"{r.ops:,}", str(r.keys), str(r.clients),
            str(r.pending_writes), str(r.overlap), "accepted" if r.ok else "rejected",
            str(r.keys_checked), f"{r.states_explored:,}", f"{r.seconds:.3f}",
        )
    console.print(table)
    clean = {r.label: r for r in runs if not r.corrupted}
    console.print(
        "rejecting the corrupted history / accepting the clean one: "
        + "; ".join(
            f"{r.label} {r.seconds / clean[r.label].seconds:.2f}x" for r in runs if r.corrupted
        )
    )

    a = linearizability.agreement()
    table = Table(title="Linearizability: check_linearizable against brute force, small histories")
    for column in (
        "histories", "read altered", "linearizable", "not", "agreed",
        "check_linearizable s", "brute force s", "speed-up",
    ):
        table.add_column(column)
    table.add_row(
        str(a.histories), str(a.altered), str(a.linearizable), str(a.not_linearizable),
        f"{a.agreed} ({a.agreed / a.histories:.0%})", f"{a.fast_seconds:.3f}",
        f"{a.brute_seconds:.3f}", f"{a.speed_ratio:.1f}x",
    )
    console.print(table)


if __name__ == "__main__":
    main()
