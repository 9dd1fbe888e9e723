"""Each campaign worker checks its own runs in its own TLC: the verdicts,
where the JVMs live, what survives a killed worker or JVM, and the memory
plan that decides whether `--workers N` fits."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import psutil
import pytest

import tlasim.sim.campaign.batch as batch_module
from tlasim.protocols.errors import ConfigError
from tlasim.sim.campaign import worker_tlc
from tlasim.sim.campaign.executors import ProcessPool
from tlasim.sim.campaign.results import SeedOutcome
from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.corpus import CorpusOptions, build_corpus
from tlasim.sim.run.runner import SeedRun
from tlasim.tracing.tla.binary import PreparedTrace, trace_blob
from tlasim.tracing.validation import validator
from tlasim.tracing.validation.tlc_batch import logs_every_variable

MB = 2**20


def _java_descendants() -> list[psutil.Process]:
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "java" in child.name():
                found.append(child)
        except psutil.Error:
            pass
    return found


def _verdicts(outcomes: list[SeedOutcome]) -> list[tuple[int, str, str]]:
    return [(o.seed, o.outcome, o.validation) for o in outcomes]


def test_each_worker_checks_its_own_runs_and_no_tlc_outlives_the_campaign() -> None:
    heard: dict[str, int] = {}
    outcomes = run_campaign(
        "twopc", range(0, 40), validate="all", workers=2, batch_size=2,
        on_tlc=lambda worker, resident: heard.__setitem__(worker, resident),
    )
    assert all(o.validation == "accepted" and o.tlc_seconds > 0 for o in outcomes)
    # The workers ran the JVMs, not this process: it only recorded verdicts.
    assert heard and all(not w.endswith(f":{os.getpid()}") for w in heard)
    assert all(50 * MB < resident < 4096 * MB for resident in heard.values())
    _, alive = psutil.wait_procs(_java_descendants(), timeout=30)
    assert not alive


def test_the_only_worker_checks_in_this_process_and_closes_its_tlc_at_the_end() -> None:
    heard: dict[str, int] = {}
    outcomes = run_campaign(
        "twopc", range(0, 12), validate="all", workers=1,
        on_tlc=lambda worker, resident: heard.__setitem__(worker, resident),
    )
    assert all(o.validation == "accepted" for o in outcomes)
    assert list(heard) and all(w.endswith(f":{os.getpid()}") for w in heard)
    assert not worker_tlc._sessions
    _, alive = psutil.wait_procs(_java_descendants(), timeout=30)
    assert not alive


def test_a_worker_killed_mid_campaign_loses_no_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = run_campaign("twopc", range(0, 40), validate="all", workers=2, batch_size=4)
    marker = tmp_path / "killed"
    real = batch_module.run_recorded

    def dies_once(protocol: Any, seed: int, **kwargs: Any) -> Any:
        # The pool's workers are forked from here, so they run this too.
        if seed == 17 and not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return real(protocol, seed, **kwargs)

    monkeypatch.setattr(batch_module, "run_recorded", dies_once)
    again = run_campaign("twopc", range(0, 40), validate="all", workers=2, batch_size=4)
    assert marker.exists()
    assert _verdicts(again) == _verdicts(clean)


def test_a_pool_whose_workers_keep_dying_stops_with_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def always_dies(protocol: Any, seed: int, **kwargs: Any) -> SeedRun:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")

    monkeypatch.setattr(batch_module, "run_seed", always_dies)
    with pytest.raises(Exception, match="a worker process died 4 times"):
        run_campaign("twopc", range(0, 8), validate="none", workers=2)


def test_a_jvm_killed_mid_campaign_leaves_its_runs_checked_all_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = batch_module.run_recorded
    killed: list[int] = []

    def kills_the_jvm(protocol: Any, seed: int, **kwargs: Any) -> Any:
        if seed == 9 and not killed:
            for s in list(worker_tlc._sessions.values()):
                for pid in s.jvm_pids():
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
        return real(protocol, seed, **kwargs)

    monkeypatch.setattr(batch_module, "run_recorded", kills_the_jvm)
    outcomes = run_campaign("twopc", range(0, 30), validate="all", workers=1, batch_size=6)
    assert killed
    assert all(o.validation == "accepted" for o in outcomes)


def test_the_heap_is_sized_so_the_workers_fit_or_the_campaign_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    roomy = worker_tlc.plan_tlc("c", 2, long_run=False, local=True, available=24 * 1024 * MB)
    assert roomy.heap_mb == worker_tlc.HEAP_MAX_MB
    tight = worker_tlc.plan_tlc("c", 16, long_run=False, local=True, available=16 * 1024 * MB)
    assert tight.heap_mb is not None
    assert worker_tlc.HEAP_MIN_MB <= tight.heap_mb < worker_tlc.HEAP_MAX_MB
    # A remote cluster's workers size their own.
    assert worker_tlc.plan_tlc("c", 64, long_run=True, local=False).heap_mb is None
    with pytest.raises(ConfigError, match=r"--workers 64: .* at most \d+ such workers fit"):
        worker_tlc.plan_tlc("c", 64, long_run=False, local=True, available=8 * 1024 * MB)

    ran: list[int] = []
    monkeypatch.setattr(worker_tlc, "_available_bytes", lambda: 2 * 1024 * MB)
    monkeypatch.setattr(batch_module, "run_seed", lambda *a, **k: ran.append(1))
    with pytest.raises(ConfigError, match="--workers 8"):
        run_campaign("twopc", range(0, 8), validate="all", workers=8)
    assert not ran
    # Without TLC there is nothing to size.
    monkeypatch.undo()
    monkeypatch.setattr(worker_tlc, "_available_bytes", lambda: 2 * 1024 * MB)
    assert len(run_campaign("twopc", range(0, 4), validate="none", workers=2)) == 4


def test_a_stream_that_checked_its_share_is_retired_for_a_new_one() -> None:
    from tlasim.sim.run.runner import run_recorded
    from tlasim.tracing.validation.tlc_batch import CheckSession

    with CheckSession(stream=True, retire_steps=300) as session:
        for seed in range(12):
            _, ready, _ = run_recorded("twopc", seed)
            assert ready is not None
            session.submit(seed, ready)
        session.flush()
        results = [session.results.get(timeout=120) for _ in range(12)]
        pids = {s.pid for s in session._every_stream}
    assert sorted(int(r.tag) for r in results) == list(range(12))  # type: ignore[call-overload]
    assert all(r.accepted for r in results)
    assert len(pids) >= 3


def test_dask_workers_check_their_own_runs_as_the_pool_does() -> None:
    seeds = range(0, 16)
    pool = run_campaign("twopc", seeds, bug="abort-after-prepare", validate="all", workers=2)
    heard: dict[str, int] = {}
    on_dask = run_campaign(
        "twopc", seeds, bug="abort-after-prepare", validate="all", workers=2, dask=True,
        on_tlc=lambda worker, resident: heard.__setitem__(worker, resident),
    )
    assert _verdicts(on_dask) == _verdicts(pool)
    assert any(o.validation == "rejected" for o in pool)
    assert [o.rejection for o in on_dask] == [o.rejection for o in pool]
    assert heard and all(not w.endswith(f":{os.getpid()}") for w in heard)


# --- the verdicts: the validator's, trace for trace -----------------------------

CORPUS_TRACES = int(os.environ.get("TLASIM_WORKER_CORPUS_TRACES", "60"))


def _prepared(path: Path) -> PreparedTrace | None:
    """A corpus file as a worker would hand it to its TLC; None if unreadable."""
    try:
        trace, spec, constants = validator._load(path, None, None, None, {})
    except Exception:
        return None
    variables: set[str] = set()
    for step in trace.steps:
        variables |= set(step.vars)
    try:
        blob = trace_blob(trace)
    except Exception:
        return None
    return PreparedTrace(
        spec=spec.name, constants=constants, blob=blob, steps=len(trace.steps),
        first_action=trace.steps[0].action or "",
        later_actions=frozenset(s.action or "" for s in trace.steps[1:]),
        variables=frozenset(variables), full_logs=logs_every_variable(trace, spec),
    )


def _check_in_a_worker(paths: list[str]) -> list[tuple[str, bool]]:
    """In a pool worker: its own session's verdict on each file."""
    session = worker_tlc.session(worker_tlc.TLCPlan("corpus", 512, long_run=False))
    tags = {}
    for path in paths:
        prepared = _prepared(Path(path))
        if prepared is not None:
            session.submit(path, prepared)
            tags[path] = None
    session.flush()
    said = {}
    while len(said) < len(tags):
        result = session.next_result(1.0)
        if result is not None:
            said[str(result.tag)] = result.accepted
    return sorted(said.items())


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["twopc", "shardsplit", "snapshot"])
def test_worker_sessions_give_the_validators_verdicts_on_a_corpus_with_mutations(
    protocol: str, tmp_path: Path
) -> None:
    out = tmp_path / "corpus"
    manifest = build_corpus(
        CorpusOptions(protocol, CORPUS_TRACES, seed=4096, invalid_ratio=0.5), out, jobs=2
    )
    files = [str(out / entry["file"]) for entry in manifest["files"]]
    expected = {
        path: v.accepted
        for path, v in zip(files, validator.validate_traces(files, explain=False, jobs=2,
                                                             keep_going=True), strict=True)
        if v.error is None
    }
    with ProcessPool(2) as pool:
        chunks = [files[i : i + 25] for i in range(0, len(files), 25)]
        said = dict(pair for part in pool.map_unordered(_check_in_a_worker, chunks)
                    for pair in part)
    compared = {p: said[p] for p in expected if p in said}
    assert len(compared) >= 0.9 * len(expected)
    assert {True, False} <= set(expected.values())
    wrong = {p: (said[p], expected[p]) for p in compared if said[p] != expected[p]}
    assert not wrong, wrong
