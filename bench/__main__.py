"""`make bench`: every benchmark's figures and ratios, measured side by side in one run."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from bench import bugs, campaign, kernel, validation


def main() -> None:
    console = Console()

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

    cost = validation.run()
    console.print(
        f"TLC validation, one TLC run per trace: {cost.traces} traces, {cost.steps} steps, "
        f"{cost.wall_seconds:.1f} s wall ({cost.tlc_seconds:.1f} s in TLC), "
        f"{cost.ms_per_step:.1f} ms per trace step, "
        f"{cost.wall_seconds / cost.traces:.2f} s per trace"
    )

    rates = campaign.run()
    table = Table(title="Campaign: twopc, 3 RMs, 5 transactions, swarm faults")
    for column in ("run", "seeds", "seconds", "seeds/s"):
        table.add_column(column)
    for r in rates:
        table.add_row(r.label, str(r.seeds), f"{r.seconds:.2f}", f"{r.per_second:.0f}")
    console.print(table)
    _, one, two, dask = rates
    console.print(
        f"2 workers / 1 worker: {two.per_second / one.per_second:.2f}x; "
        f"dask LocalCluster / process pool (2 workers each): "
        f"{dask.per_second / two.per_second:.2f}x"
    )

    table = Table(title="Swarm: seeds to the first failure, per bug variant")
    for column in ("bug", "median", "sweeps", "misses", "counts"):
        table.add_column(column)
    for f in bugs.run():
        table.add_row(f.bug, f"{f.median:g}", str(len(f.counts)), str(f.misses),
                      " ".join(map(str, f.counts)))
    console.print(table)


if __name__ == "__main__":
    main()
