"""`--guide coverage`: one guide seed gives one campaign, whoever runs it and
however often it is interrupted; its mutants are plans the kernel accepts,
and a guided failure replays from the database."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tlasim.faults.mutation import mutate_plan
from tlasim.faults.plan import FaultPlan
from tlasim.faults.swarm import swarm_plan
from tlasim.protocols.errors import ConfigError
from tlasim.sim.api import crash_nodes, nodes
from tlasim.sim.campaign.guide import FIRST_ROUND_SEEDS, ROUND_SEEDS
from tlasim.sim.campaign.results import ResultsDB
from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.cli.main import main as cli
from tlasim.sim.kernel.options import SimOptions

SEEDS = range(0, 2 * ROUND_SEEDS + 10)  # two rounds guided by the corpus, and a part round


@pytest.fixture(scope="module")
def guided() -> list:
    return run_campaign("twopc", SEEDS, validate="none", guide="coverage", guide_seed=3)


def test_a_guided_campaign_runs_mutants_once_its_corpus_holds_a_run(guided: list) -> None:
    first_round = [o for o in guided if o.seed < SEEDS.start + FIRST_ROUND_SEEDS]
    later = [o for o in guided if o.seed >= SEEDS.start + FIRST_ROUND_SEEDS]
    assert all(o.run_seed is None for o in first_round)  # nothing to mutate yet
    mutants = [o for o in later if o.run_seed is not None]
    assert len(later) / 4 < len(mutants) < len(later) * 3 / 4
    # Mutants of earlier runs: the seed of an earlier slot, or of their own.
    assert all(o.run_seed <= o.seed for o in mutants)
    plain = {o.seed: o for o in run_campaign("twopc", SEEDS, validate="none")}
    # A fresh slot is exactly the plain campaign's run of that seed.
    fresh = [o for o in guided if o.run_seed is None]
    assert all(o == plain[o.seed] for o in fresh)
    assert any(o.plan_json != plain[o.seed].plan_json for o in mutants)


def test_one_guide_seed_gives_one_campaign_on_any_number_of_workers(guided: list) -> None:
    again = run_campaign("twopc", SEEDS, validate="none", guide="coverage", guide_seed=3,
                         workers=2)
    assert again == guided
    other = run_campaign("twopc", SEEDS, validate="none", guide="coverage", guide_seed=4)
    assert [o.plan_json for o in other] != [o.plan_json for o in guided]


def test_an_interrupted_guided_campaign_resumes_to_the_same_runs(
    guided: list, tmp_path: Path
) -> None:
    db = tmp_path / "g.db"
    recorded = 0

    def stop_midway(batch: list) -> None:
        nonlocal recorded
        recorded += len(batch)
        if recorded >= ROUND_SEEDS + 7:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_campaign("twopc", SEEDS, validate="none", guide="coverage", guide_seed=3, db=db,
                     on_batch=stop_midway, batch_size=7)
    resumed = run_campaign("twopc", SEEDS, validate="none", guide="coverage", guide_seed=3,
                           db=db, resume=True)
    assert resumed == guided
    with ResultsDB(db, readonly=True) as store:
        assert store.outcomes(1) == guided


def test_a_guided_failure_replays_from_the_database(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    ran = run_campaign("twopc", range(0, 3 * ROUND_SEEDS), bug="counts-duplicate-votes",
                       validate="none", guide="coverage", db=db)
    mutant = next(o for o in ran if o.run_seed is not None and o.outcome != "ok")
    result = CliRunner().invoke(cli, ["repro", str(db), f"1:{mutant.seed}"])
    assert result.exit_code != 0 and "replayed: safety" in result.output, result.output
    assert f"seed={mutant.run_seed}" in result.output
    assert "did not reproduce" not in result.output


def test_guiding_needs_coverage_and_swarm_faults() -> None:
    with pytest.raises(ConfigError, match="coverage"):
        run_campaign("twopc", range(0, 5), validate="none", guide="coverage", coverage=False)
    with pytest.raises(ConfigError, match="fixed fault plan"):
        run_campaign("twopc", range(0, 5), validate="none", guide="coverage",
                     options=SimOptions(faults=FaultPlan()))
    with pytest.raises(ConfigError, match="--guide 'nearest'"):
        run_campaign("twopc", range(0, 5), validate="none", guide="nearest")


@pytest.mark.parametrize("protocol", ["twopc", "shardsplit", "snapshot"])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), count=st.integers(1, 4))
def test_every_mutant_is_a_plan_the_kernel_accepts(protocol: str, seed: int, count: int) -> None:
    every, crashable = nodes(protocol), crash_nodes(protocol)
    rng = random.Random(seed)
    parent = swarm_plan(rng, every, crash_nodes=crashable)
    mutant, done = mutate_plan(rng, parent, every, crashable, count=count)
    mutant.check_wellformed()
    mutant.check_recoverable(every, crash_nodes=crashable)
    assert len(done) <= count + 1
    assert mutant.heal_tick == parent.heal_tick
    if done:
        assert mutant != parent
    assert FaultPlan.from_json(mutant.to_json()) == mutant
