"""Campaigns that check every run (or a sample) with TLC, in large batches,
while the workers simulate: the verdicts, the modes, the disagreements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tlasim.protocols.errors import ConfigError, InternalError
from tlasim.sim.campaign.records import ValidateMode, parse_validate_mode
from tlasim.sim.campaign.results import ResultsDB
from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.cli.main import main as cli
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.emit.recorder import TLCRecorder
from tlasim.tracing.validation.validator import validate_traces


def test_every_run_is_checked_and_gets_the_validators_verdict(tmp_path: Path) -> None:
    seeds = range(0, 24)
    outcomes = run_campaign("twopc", seeds, validate="all", workers=2,
                            trace_dir=str(tmp_path / "kept"))
    assert [o.seed for o in outcomes] == list(seeds)
    assert all(o.validation == "accepted" and o.tlc_seconds > 0 for o in outcomes)
    # The same runs' logs, checked file by file by the validator.
    paths = []
    for seed in seeds[:8]:
        path = tmp_path / f"{seed}.ndjson"
        run_seed("twopc", seed, trace_path=path)
        paths.append(path)
    assert all(v.accepted for v in validate_traces(paths, explain=False))


def test_a_run_tlc_rejects_is_checked_again_from_its_log_and_kept(tmp_path: Path) -> None:
    # Every failing run of this variant is one TLC rejects too; under
    # --validate all it is checked from its log, kept, and recorded rejected.
    bug = "abort-after-prepare"
    with ResultsDB(tmp_path / "results.db") as db:
        outcomes = run_campaign("twopc", range(4, 10), bug=bug, validate="all", workers=1,
                                db=db, trace_dir=str(tmp_path / "traces"))
        stored = {o.seed: o for o in db.outcomes(db.campaigns()[0].id)}
    failed = [o for o in outcomes if o.outcome != "ok"]
    assert failed
    for o in outcomes:
        assert stored[o.seed] == o
        if o.outcome != "ok":
            assert o.validation == "rejected"
        if o.validation == "rejected":
            # Rejected by the validator from the log, which is kept.
            assert o.rejection and o.trace_path and Path(o.trace_path).is_file()
            assert not validate_traces([o.trace_path], explain=False)[0].accepted
        else:
            assert o.validation == "accepted" and o.trace_path is None
    # TLC sees the bug in runs that no oracle failed, too.
    assert any(o.outcome == "ok" and o.validation == "rejected" for o in outcomes)


def test_a_recording_tlc_rejects_but_whose_log_it_accepts_is_an_internal_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The recorder and the log must hold the same values; a recorder that
    # writes something else is caught, not recorded as a verdict.
    real_step = TLCRecorder.step

    def corrupting_step(self: TLCRecorder, **kwargs: Any) -> None:
        if self.steps_written == 3:
            kwargs["vars"] = {**kwargs["vars"], "tmUp": not kwargs["vars"]["tmUp"]}
        real_step(self, **kwargs)

    monkeypatch.setattr(TLCRecorder, "step", corrupting_step)
    with pytest.raises(InternalError, match="recorder and the log disagree"):
        run_campaign("twopc", range(0, 3), validate="all", workers=1)


def test_sample_checks_every_failure_and_a_seeded_share_of_the_rest() -> None:
    mode = parse_validate_mode("sample:4")
    assert mode == ValidateMode("sample", 4) and str(mode) == "sample:4"
    picked = [seed for seed in range(4000) if mode.samples(seed)]
    assert 800 <= len(picked) <= 1200  # about one in four
    assert picked == [seed for seed in range(4000) if parse_validate_mode("sample:4").samples(seed)]
    assert all(parse_validate_mode("sample:1").samples(s) for s in range(50))
    outcomes = run_campaign("twopc", range(0, 24), bug="abort-after-prepare",
                            validate="sample:4", workers=1)
    assert any(o.outcome != "ok" and not mode.samples(o.seed) for o in outcomes)
    for o in outcomes:
        if o.outcome != "ok":
            assert o.validation == "rejected"
        elif mode.samples(o.seed):
            # This variant's runs TLC rejects even where no oracle failed.
            assert o.validation in ("accepted", "rejected")
        else:
            assert o.validation == "skipped"


@pytest.mark.parametrize("text", ["sample:0", "sample:", "sample:x", "sample:-2", "every",
                                  "sample:1e3", "all "])
def test_a_bad_validate_mode_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="expected all, failures, none or sample:N"):
        parse_validate_mode(text)
    result = CliRunner().invoke(cli, ["campaign", "twopc", "--seeds", "0:2", "--validate", text])
    assert result.exit_code == 2
    assert "sample:N" in result.output


def test_the_command_validates_every_run_by_default_and_shows_both_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["campaign", "twopc", "--seeds", "0:6", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "validate=all" in result.output
    assert "simulated" in result.output and "validated" in result.output
