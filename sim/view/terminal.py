"""A run in the terminal: one line per step, what it changed beneath it.

Every text that came from the trace file goes through `printable`, so a value
holding a terminal escape or a newline cannot print a line of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from rich.console import Console
from rich.text import Text

from tlasim.sim.view.model import Change, Mark, RunView, StepView, matches
from tlasim.tracing.printable import printable


def _change_line(change: Change) -> Text:
    line = Text("    ")
    line.append(printable(change.path), style="bold")
    line.append(": ")
    if change.is_set:
        if change.old is not None:
            line.append(f"-{printable(change.old)}", style="red")
        if change.old is not None and change.new is not None:
            line.append(" ")
        if change.new is not None:
            line.append(f"+{printable(change.new)}", style="green")
        return line
    line.append("(absent)" if change.old is None else printable(change.old), style="red")
    line.append(" -> ")
    line.append("(absent)" if change.new is None else printable(change.new), style="green")
    return line


def _step_line(step: StepView, marks: list[Mark]) -> Text:
    line = Text()
    line.append(f"#{step.seq if step.seq is not None else step.index}", style="cyan")
    if step.ts is not None:
        line.append(f" ts={step.ts}")
    line.append(f" {printable(step.node or '-')} ", style="magenta")
    line.append(printable(step.action), style="bold")
    if step.params:
        line.append(f" {printable(step.params)}")
    if step.timer is not None:
        line.append(f"  (timer {printable(step.timer)} fired)", style="blue")
    for mark in marks:
        line.append(f"  <<< {mark.title}", style="bold red")
    return line


def step_lines(
    view: RunView,
    *,
    node: str | None = None,
    fields: Mapping[str, str] | None = None,
    first: int | None = None,
    last: int | None = None,
) -> Iterator[Text]:
    """The chosen steps: those of `node`, naming every `fields` value in their
    params, whose seq lies in [first, last]; each with its changes, its
    faults, and the oracles' and TLC's marks with what they said."""
    plan_text = {e.name: e.text for e in view.plan or ()}
    marks = [m for m in (view.oracle, view.tlc) if m is not None]
    for step in view.steps:
        seq = step.seq if step.seq is not None else step.index
        if (first is not None and seq < first) or (last is not None and seq > last):
            continue
        here = [m for m in marks if m.step == step.index]
        if not here and not matches(step, node, fields or {}):
            continue
        yield _step_line(step, here)
        for name in step.faults:
            yield Text(f"    fault {printable(name)}: {printable(plan_text.get(name, '?'))}",
                       style="yellow")
        for change in step.changes:
            yield _change_line(change)
        for mark in here:
            for row in mark.text.splitlines():
                yield Text(f"    | {printable(row)}", style="red")


def _seq(view: RunView, index: int) -> int:
    seq = view.steps[index].seq
    return index if seq is None else seq


def summary_lines(view: RunView) -> Iterator[Text]:
    """Who wrote the trace, and the verdicts, before the steps."""
    yield Text(
        f"trace {printable(view.path)}: {printable(view.protocol or '?')} "
        f"seed={view.seed if view.seed is not None else '?'}, {len(view.steps)} steps, "
        f"{len(view.messages)} message copies, nodes {', '.join(map(printable, view.lanes))}"
    )
    if view.oracle_verdict is not None:
        where = "" if view.oracle is None else f" (#{_seq(view, view.oracle.step)})"
        yield Text(f"oracles: {printable(view.oracle_verdict)}{where}",
                   style="red" if view.oracle is not None else "green")
    if view.tlc_verdict is not None:
        where = "" if view.tlc is None else f" (#{_seq(view, view.tlc.step)})"
        yield Text(f"TLC: {printable(view.tlc_verdict)}{where}",
                   style="red" if view.tlc is not None else "green")
    if view.plan is not None:
        fired = sum(1 for e in view.plan if e.fired)
        yield Text(f"fault plan: {len(view.plan) - 1} fault(s), {fired} fired"
                   + ("" if view.faults_recorded else " (this trace records no fired faults)"))
    for note in view.notes:
        yield Text(f"note: {printable(note)}", style="dim")


def print_view(
    console: Console,
    view: RunView,
    *,
    node: str | None = None,
    fields: Mapping[str, str] | None = None,
    first: int | None = None,
    last: int | None = None,
) -> None:
    """Print the summary, then the chosen steps (see `step_lines`)."""
    for line in summary_lines(view):
        console.print(line)
    for line in step_lines(view, node=node, fields=fields, first=first, last=last):
        console.print(line, soft_wrap=True)
