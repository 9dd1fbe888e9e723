"""Campaigns: results recorded as they arrive, resumed after SIGKILL, the same on Dask."""

from __future__ import annotations

import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from distributed import LocalCluster

import tlasim.sim.campaign.batch as campaign_module
import tlasim.sim.campaign.executors as executors
from tlasim.protocols.errors import ConfigError
from tlasim.sim.campaign.results import ResultsDB, SeedOutcome
from tlasim.sim.campaign.sweep import run_campaign
from tlasim.sim.run.runner import SeedRun
from tlasim.sim.run.runner import run_seed as real_run_seed

ROOT = Path(__file__).resolve().parents[2]

# Runs a campaign into a database and logs every seed as it starts, line
# buffered, so the log holds each started seed even after a SIGKILL.
DRIVER = """
import sys

import tlasim.sim.campaign.batch as batch
import tlasim.sim.campaign.sweep as campaign

db_path, log_path, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
real_run_seed = batch.run_seed
started = open(log_path, "a", buffering=1)


def logged_run_seed(protocol, seed, **kwargs):
    started.write(f"{seed}\\n")
    return real_run_seed(protocol, seed, **kwargs)


batch.run_seed = logged_run_seed
if __name__ == "__main__":
    campaign.run_campaign(
        "twopc", range(0, 400), validate="none", workers=workers, batch_size=5, db=db_path
    )
"""


@pytest.fixture
def started_seeds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every seed a campaign in this process starts, in order."""
    started: list[int] = []

    def logged_run_seed(protocol: Any, seed: int, **kwargs: Any) -> SeedRun:
        started.append(seed)
        return real_run_seed(protocol, seed, **kwargs)

    monkeypatch.setattr(campaign_module, "run_seed", logged_run_seed)
    return started


def recorded_count(path: Path) -> int:
    """Rows in `runs`, read without opening the file as a writer would."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return 0
    try:
        count: int = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        return count
    except sqlite3.Error:  # not created yet
        return 0
    finally:
        conn.close()


def start_and_kill(tmp_path: Path, workers: int) -> list[psutil.Process]:
    """Run DRIVER until 20 seeds are recorded, SIGKILL it; return its child processes."""
    db_path, log_path, driver = tmp_path / "results.db", tmp_path / "started", tmp_path / "d.py"
    driver.write_text(DRIVER)
    process = subprocess.Popen(
        [sys.executable, str(driver), str(db_path), str(log_path), str(workers)], cwd=ROOT
    )
    try:
        deadline = time.monotonic() + 120
        while recorded_count(db_path) < 20:
            assert process.poll() is None, "the campaign ended before it could be killed"
            assert time.monotonic() < deadline, "the campaign recorded nothing in time"
            time.sleep(0.01)
        children: list[psutil.Process] = psutil.Process(process.pid).children(recursive=True)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == -signal.SIGKILL
    return children


def test_each_batch_is_recorded_before_it_is_reported(tmp_path: Path) -> None:
    reported: list[int] = []
    with ResultsDB(tmp_path / "results.db") as db:

        def on_batch(batch: list[SeedOutcome]) -> None:
            (campaign,) = db.campaigns()
            assert {o.seed for o in batch} <= db.finished_seeds(campaign.id)
            reported.extend(o.seed for o in batch)

        outcomes = run_campaign(
            "twopc", range(10, 40), validate="none", batch_size=4, db=db, on_batch=on_batch
        )
        (campaign,) = db.campaigns()
        assert db.outcomes(campaign.id) == outcomes
    assert sorted(reported) == list(range(10, 40))
    assert [o.seed for o in outcomes] == list(range(10, 40))


def test_campaign_killed_by_sigkill_resumes_without_rerunning_or_losing_a_seed(
    tmp_path: Path, started_seeds: list[int]
) -> None:
    db_path, log_path = tmp_path / "results.db", tmp_path / "started"
    start_and_kill(tmp_path, workers=1)

    with ResultsDB(db_path) as db:
        (campaign,) = db.campaigns()
        finished_before = db.finished_seeds(campaign.id)
    started_before = {int(line) for line in log_path.read_text().split()}
    assert 20 <= len(finished_before) < 400
    assert finished_before <= started_before

    outcomes = run_campaign(
        "twopc", range(0, 400), validate="none", batch_size=5, db=db_path, resume=True
    )
    # No finished seed ran again, and every other seed ran exactly once.
    assert not finished_before & set(started_seeds)
    assert sorted(started_seeds) == sorted(set(range(400)) - finished_before)
    assert [o.seed for o in outcomes] == list(range(400))
    with ResultsDB(db_path) as db:
        assert [o.seed for o in db.outcomes(campaign.id)] == list(range(400))


def test_process_pool_workers_exit_when_their_campaign_is_killed(tmp_path: Path) -> None:
    workers = start_and_kill(tmp_path, workers=2)
    assert len(workers) == 2
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, alive


def test_a_recorded_campaign_is_rerun_only_with_resume_and_then_runs_nothing_twice(
    tmp_path: Path, started_seeds: list[int]
) -> None:
    db_path = tmp_path / "results.db"
    first = run_campaign("twopc", range(0, 12), validate="none", db=db_path)
    with pytest.raises(ConfigError, match="pass --resume"):
        run_campaign("twopc", range(0, 12), validate="none", db=db_path)
    started_seeds.clear()
    heard: list[SeedOutcome] = []
    again = run_campaign(
        "twopc", range(0, 12), validate="none", db=db_path, resume=True, on_resume=heard.extend
    )
    assert started_seeds == []
    assert again == first == heard


def test_resume_without_a_database_is_refused() -> None:
    with pytest.raises(ConfigError, match="--resume needs --db"):
        run_campaign("twopc", range(0, 3), validate="none", resume=True)


def test_dask_gives_the_same_outcomes_as_the_process_pool(tmp_path: Path) -> None:
    seeds = range(0, 24)
    pool = run_campaign("twopc", seeds, validate="none", workers=2, db=tmp_path / "pool.db")
    on_local_cluster = run_campaign(
        "twopc", seeds, validate="none", workers=2, dask=True, db=tmp_path / "dask.db"
    )
    assert on_local_cluster == pool
    with ResultsDB(tmp_path / "dask.db") as db:
        (campaign,) = db.campaigns()
        assert db.outcomes(campaign.id) == pool
    # A scheduler that is already running, reached by its address.
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        at_address = run_campaign(
            "twopc", seeds, validate="none", dask=cluster.scheduler_address
        )
    assert at_address == pool


@pytest.mark.skipif(
    "forkserver" not in __import__("multiprocessing").get_all_start_methods(),
    reason="no fork server here: a LocalCluster spawns its workers",
)
def test_a_local_clusters_fork_server_has_tlasim_imported_before_its_first_worker() -> None:
    # In a fresh interpreter, so no earlier test's fork server is the one asked.
    probe = f"""
import multiprocessing, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import forkserver_probe
from tlasim.sim.campaign.executors import WORKER_PRELOAD, start_local_workers_early
start_local_workers_early()
assert "distributed" not in sys.modules  # this process has not paid for Dask yet
with multiprocessing.get_context("forkserver").Pool(1) as pool:
    print([pool.apply(forkserver_probe.imported, (m,)) for m in WORKER_PRELOAD])
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([True] * len(executors.WORKER_PRELOAD))


def _worker_settings() -> list[Any]:
    import dask

    return [dask.config.get(key) for key in executors.LOCAL_CLUSTER_SETTINGS]


def test_a_campaigns_local_cluster_has_its_settings_and_leaves_the_users_alone() -> None:
    import dask

    before = _worker_settings()
    with executors.DaskExecutor(None, 2) as executor:
        on_workers = executor._client.run(_worker_settings)
        assert _worker_settings() == before
    assert list(on_workers.values()) == [list(executors.LOCAL_CLUSTER_SETTINGS.values())] * 2
    assert before != list(executors.LOCAL_CLUSTER_SETTINGS.values())
    assert dask.config.get("distributed.worker.profile.enabled") is True


@pytest.fixture
def garbage_server() -> Iterator[str]:
    """A TCP server that answers every connection with bytes that are not Dask's."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    server.close()


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port: int = probe.getsockname()[1]
        return port


def test_dask_address_without_a_scheduler_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, garbage_server: str, started_seeds: list[int]
) -> None:
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_SECONDS", 1.0)
    for address, message in (
        (f"tcp://127.0.0.1:{closed_port()}", "no Dask scheduler answered within 1 s"),
        (garbage_server, "is not a Dask scheduler"),
        ("no-port-here", "not a scheduler address"),
    ):
        with pytest.raises(ConfigError, match=message):
            run_campaign("twopc", range(0, 4), validate="none", dask=address)
    assert started_seeds == []


def test_a_validated_failure_is_recorded_with_its_verdict_and_its_trace(tmp_path: Path) -> None:
    bug = "abort-after-prepare"  # seeds 4 and 6 break atomicity; seed 5 does not
    with ResultsDB(tmp_path / "results.db") as db:
        outcomes = run_campaign(
            "twopc", range(4, 7), bug=bug, validate="failures", db=db,
            trace_dir=str(tmp_path / "traces"),
        )
        failures = db.failures()
    assert [f.failure_id for f in failures] == ["1:4", "1:6"]
    for record in failures:
        failed = record.outcome
        assert record.campaign.bug == bug
        assert failed.outcome != "ok" and failed.failure
        # Every bug variant's failing trace is one TLC rejects (protocols/twopc/bugs.py).
        assert failed.validation == "rejected" and failed.rejection and failed.tlc_seconds > 0
        assert failed.trace_path is not None and Path(failed.trace_path).is_file()
    (passed,) = [o for o in outcomes if o.seed == 5]
    assert passed.validation == "skipped" and passed.trace_path is None


def test_a_campaign_traces_only_the_runs_whose_trace_it_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Encoding a trace costs more than the run: without validation, only a
    # failure is traced, by replaying it, and its kept trace is the run's own.
    traced: list[int] = []

    def counting_run_seed(protocol: str, seed: int, **kwargs: Any) -> SeedRun:
        if kwargs.get("trace_path") is not None or kwargs.get("keep_trace"):
            traced.append(seed)
        return real_run_seed(protocol, seed, **kwargs)

    monkeypatch.setattr(campaign_module, "run_seed", counting_run_seed)
    monkeypatch.setattr("tlasim.sim.run.runner.run_seed", counting_run_seed)
    outcomes = run_campaign(
        "twopc", range(12), bug="abort-after-prepare", validate="none", workers=1,
        trace_dir=str(tmp_path / "traces"),
    )
    failed = [o for o in outcomes if o.outcome != "ok"]
    assert failed and len(failed) < len(outcomes)
    assert sorted(traced) == sorted(o.seed for o in failed)
    for o in failed:
        assert o.trace_path is not None
        direct = tmp_path / f"direct-{o.seed}.ndjson"
        real_run_seed("twopc", o.seed, bug="abort-after-prepare", trace_path=direct)
        assert Path(o.trace_path).read_bytes() == direct.read_bytes()


