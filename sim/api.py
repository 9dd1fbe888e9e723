"""The Python API for users' own tests.

    from hypothesis import given
    from tlasim.faults.strategies import fault_plans
    from tlasim.sim.api import nodes, run

    @given(plan=fault_plans(nodes("twopc")))
    def test_twopc_survives(plan):
        run("twopc", plan).assert_ok()

When a run fails, `assert_ok` raises `RunFailed` (an AssertionError, so
pytest and hypothesis treat it as a test failure) whose message is the full
failure report: the broken property, the plan, a trace excerpt and the one
`tlasim run ...` command that replays it. The plan is written to a file
(under `TLASIM_FAILURE_DIR`, default `.tlasim/failures`) so that command
works as printed, from any folder: its path is absolute.

Hypothesis raises many failures on its way to the one it reports (each
example it tries, then each step of shrinking), and re-runs the reported one
last. So each new plan file of a test replaces the one that test wrote
before, and one file per failing test remains: the reported failure's.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlasim.faults.plan import FaultPlan
from tlasim.protocols import get_protocol
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.kernel.rng import split
from tlasim.sim.kernel.simulation import OUTCOME_OK, RunResult
from tlasim.sim.run.report import FailureReport, reproduce_command, trace_excerpt
from tlasim.sim.run.runner import replay_traced, run_seed
from tlasim.tracing.outputs import write_output


class RunFailed(AssertionError):
    """A simulated run broke a property; the message is the failure report."""

    def __init__(self, report: FailureReport) -> None:
        super().__init__(report.render())
        self.report = report


def failure_dir() -> Path:
    return Path(os.environ.get("TLASIM_FAILURE_DIR", ".tlasim/failures"))


# The plan file each failing test (or each caller, outside pytest) saved last,
# by (folder, protocol, seed, bug, options, test): the next one replaces it.
_saved: dict[tuple[str, ...], Path] = {}


def save_plan(
    protocol: str,
    seed: int,
    plan: FaultPlan,
    directory: Path | None = None,
    *,
    bug: str | None = None,
    protocol_overrides: Mapping[str, Any] | None = None,
) -> Path:
    """Write `plan` where a reproduction command can name it; same run, same file.

    The file that the same test saved for an earlier failure of the same
    protocol, seed, bug and options is removed: it was superseded.
    """
    text = plan.to_json()
    settings = repr(sorted((protocol_overrides or {}).items()))
    digest = hashlib.sha256("\0".join([text, bug or "", settings]).encode()).hexdigest()[:10]
    folder = (directory or failure_dir()).resolve()
    target = folder / f"{protocol}-seed{seed}-{digest}.plan.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    write_output(target, "the failure's plan file", text.encode("utf-8"))
    # pytest names the running test here; hypothesis runs all of a test's examples in it.
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
    key = (str(folder), protocol, str(seed), bug or "", settings, test)
    previous = _saved.get(key)
    _saved[key] = target
    if previous is not None and previous != target:
        previous.unlink(missing_ok=True)
    return target


@dataclass(slots=True)
class Outcome:
    result: RunResult
    protocol: str
    protocol_overrides: dict[str, Any]
    trace_excerpt: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.result.outcome == OUTCOME_OK

    def report(
        self, *, original_plan_size: int | None = None, plan_path: Path | None = None
    ) -> FailureReport:
        """The failure report; the plan is saved to `plan_path` (or the failure dir)."""
        result = self.result
        if plan_path is None:
            plan_path = save_plan(self.protocol, result.seed, result.plan, bug=result.bug,
                                  protocol_overrides=self.protocol_overrides)
        else:
            write_output(plan_path, "--out", result.plan.to_json().encode("utf-8"))
        return FailureReport(
            protocol=self.protocol,
            seed=result.seed,
            bug=result.bug,
            outcome=result.outcome,
            failure=result.failure or "",
            plan=result.plan,
            original_plan_size=original_plan_size,
            excerpt=self.trace_excerpt,
            reproduce=reproduce_command(
                self.protocol,
                result.seed,
                result.bug,
                plan_path,
                [f"{k}={v}" for k, v in self.protocol_overrides.items()],
            ),
        )

    def assert_ok(self) -> None:
        if not self.ok:
            raise RunFailed(self.report())


def nodes(protocol: str, **protocol_options: Any) -> tuple[str, ...]:
    """The node ids of a run of `protocol` with these options (for building plans)."""
    definition = get_protocol(protocol)
    return definition.node_ids(_config(protocol, protocol_options))


def crash_nodes(protocol: str, **protocol_options: Any) -> tuple[str, ...]:
    """The nodes a fault plan may crash, for `fault_plans(..., crash_nodes=...)`."""
    definition = get_protocol(protocol)
    return definition.crash_nodes(_config(protocol, protocol_options))


def _config(protocol: str, protocol_options: Mapping[str, Any]) -> Any:
    # Node ids depend on the options, never on the drawn workload.
    definition = get_protocol(protocol)
    return definition.configure(
        definition.make_options(dict(protocol_options)), None, split(0).workload
    )


def run(
    protocol: str,
    plan: FaultPlan | None = None,
    *,
    seed: int = 0,
    bug: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Outcome:
    """Run `protocol` once under `plan` (None: the seed's swarm plan)."""
    overrides = dict(options or {})
    sim_options = SimOptions(faults=plan)
    # Most runs pass, so the trace is only made by replaying a failure.
    result = run_seed(
        protocol, seed, bug=bug, protocol_overrides=overrides, options=sim_options
    ).result
    excerpt: tuple[str, ...] = ()
    if result.outcome != OUTCOME_OK and result.failure:
        with tempfile.TemporaryDirectory(prefix="tlasim-api-") as scratch:
            path = Path(scratch) / "trace.ndjson"
            replay_traced(
                protocol, seed, result, path, bug=bug, protocol_overrides=overrides,
                options=sim_options,
            )
            excerpt = trace_excerpt(path, result.failure, result.failing_step)
    return Outcome(result, protocol, overrides, excerpt)
