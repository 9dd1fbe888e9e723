"""Failure reports: the broken property, the plan, a short trace excerpt, one command.

A report is what a user reads first, so it is short: the excerpt keeps only
the steps that touch what the failure names (a transaction, a node) plus
crashes and restarts, ending at the step where the oracle fired.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tlasim.faults.plan import FaultPlan
from tlasim.protocols import command_name
from tlasim.tracing.codec import TraceStep, read_trace
from tlasim.tracing.values import canonical_json

EXCERPT_STEPS_MAX = 24
_CRASH_OR_RESTART = re.compile(r"Crash$|Recover$")


@dataclass(frozen=True, slots=True)
class FailureReport:
    protocol: str
    seed: int
    bug: str | None
    outcome: str
    failure: str
    plan: FaultPlan
    original_plan_size: int | None  # before shrinking, when the plan was shrunk
    excerpt: tuple[str, ...]
    reproduce: str

    def render(self) -> str:
        lines = [
            f"FAILURE {self.outcome}: {self.failure}",
            f"  protocol={self.protocol} seed={self.seed}"
            + (f" bug={self.bug}" if self.bug else ""),
        ]
        shrunk = (
            f" (shrunk from {self.original_plan_size})"
            if self.original_plan_size is not None
            else ""
        )
        lines.append(f"  fault plan: {self.plan.size} fault(s){shrunk}")
        lines += [f"    {line}" for line in self.plan.describe().splitlines()]
        if self.excerpt:
            lines.append("  trace excerpt (the steps that touch the failure, up to the break):")
            lines += [f"    {line}" for line in self.excerpt]
        lines.append(f"  reproduce: {self.reproduce}")
        return "\n".join(lines)


def reproduce_command(
    protocol: str,
    seed: int,
    bug: str | None,
    plan_path: Path | None,
    protocol_overrides: Sequence[str] = (),
    extra: Sequence[str] = (),
) -> str:
    """The `tlasim run` command that replays a run; `extra` holds further options.

    The plan's path is absolute, so the command works from any folder.
    """
    command = ["tlasim", "run", command_name(protocol), "--seed", str(seed)]
    if bug:
        command += ["--bug", bug]
    if plan_path is not None:
        command += ["--plan", str(Path(plan_path).resolve())]
    for assignment in protocol_overrides:
        command += ["--set", assignment]
    return shlex.join([*command, *extra])


def _named(step: TraceStep) -> set[str]:
    text = canonical_json(step.params)
    return {name for name in re.findall(r'"([^"]+)"', text)} | {step.node or ""}


def trace_excerpt(trace_path: Path, failure: str, failing_step: int | None) -> tuple[str, ...]:
    """The steps up to the failing one that touch the identifiers `failure` names."""
    trace = read_trace(trace_path)
    steps = list(trace.steps)
    if failing_step is not None:
        steps = steps[: failing_step + 1]
    # The identifiers the failure names that steps also name: a transaction, a node.
    named = [_named(s) for s in steps]
    seen = set().union(*named) if named else set()
    names = {word for word in re.findall(r"[\w-]+", failure) if word in seen}
    # Steps that touch every named identifier tell the story best; when too
    # few do, fall back to steps that touch any of them.
    for touches in (names.issubset, names.intersection):
        chosen = [
            s
            for s, n in zip(steps, named, strict=True)
            if _CRASH_OR_RESTART.search(s.action or "") or (names and touches(n))
        ]
        if len(chosen) >= 4:
            break
    if steps and (not chosen or chosen[-1] is not steps[-1]):
        chosen.append(steps[-1])
    chosen = chosen[-EXCERPT_STEPS_MAX:]
    return tuple(
        f"#{s.seq} ts={s.ts} {s.node or '-'} {s.action} {canonical_json(s.params)}"
        for s in chosen
    )
