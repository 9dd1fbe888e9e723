"""`make bench`: print every benchmark's figures and ratios."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from bench import kernel, validation


def main() -> None:
    console = Console()
    raw, off, on = kernel.run()
    table = Table(title="Kernel: delivered messages per second (same process, side by side)")
    for column in ("run", "messages", "seconds", "msgs/s", "vs raw simpy"):
        table.add_column(column)
    for t in (raw, off, on):
        table.add_row(
            t.label, str(t.messages), f"{t.seconds:.2f}", f"{t.per_second:,.0f}",
            f"{t.per_second / raw.per_second:.3f}x",
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


main()
