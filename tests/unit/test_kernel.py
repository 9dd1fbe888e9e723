"""The simulation kernel's parts: disk, timers, network faults, crash points, RNG streams."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest

from tlasim.faults.plan import Crash, FaultPlan, Partition, Window
from tlasim.protocols import get_protocol
from tlasim.protocols.errors import ConfigError
from tlasim.sim.kernel.disk import Disk
from tlasim.sim.kernel.options import NetworkOptions, SimOptions
from tlasim.sim.kernel.rng import split
from tlasim.sim.kernel.simulation import Simulation
from tlasim.tracing.codec import END_EVENT
from tlasim.tracing.emit.emitter import TraceEmitter
from tlasim.tracing.values import from_json

TWOPC = get_protocol("twopc")


def test_disk_loses_unsynced_records_on_crash_and_keeps_synced_ones() -> None:
    disk = Disk()
    disk.persist({"kind": "begin", "tx": "t1"}, sync=True)
    disk.persist({"kind": "commit", "tx": "t1"}, sync=False)
    assert disk.crash() == 1
    assert [dict(r) for r in disk.synced()] == [{"kind": "begin", "tx": "t1"}]


def test_disk_sync_makes_every_earlier_record_durable() -> None:
    disk = Disk()
    disk.persist({"kind": "begin", "tx": "t1"}, sync=False)
    disk.persist({"kind": "begin", "tx": "t2"}, sync=True)
    assert disk.crash() == 0
    assert len(disk.synced()) == 2


def run_steps(seed: int, faults: FaultPlan, **protocol: int) -> list[dict[str, Any]]:
    emitter = TraceEmitter.in_memory()
    sim = Simulation(
        TWOPC,
        seed,
        protocol_options=TWOPC.make_options(protocol),
        options=SimOptions(faults=faults),
        emitter=emitter,
    )
    sim.run()
    records = [json.loads(line) for line in emitter.getvalue().decode().splitlines()]
    return [r for r in records if r["event"] != END_EVENT]


def test_crash_point_between_two_effects_leaves_log_and_messages_consistent() -> None:
    # The TM crashes right after its first step, TMBegin: its begin record is
    # durable and no Prepare ever left.
    steps = run_steps(
        1,
        FaultPlan(crashes=(Crash("tm", 0, restart_ticks=10),), heal_tick=1000),
        rm_count=2,
        tx_count=1,
    )
    actions = [s["action"] for s in steps]
    begin = actions.index("TMBegin")
    assert actions[begin + 1] == "TMCrash"
    after_crash = from_json(steps[begin + 1]["vars"])
    assert after_crash["tmLog"] == frozenset({from_json({"kind": "begin", "tx": "t1"})})
    assert not after_crash["msgs"]
    assert after_crash["tmState"]["t1"] == "aborted"  # presumed abort, shown at the crash


def test_network_delivers_out_of_send_order() -> None:
    steps = run_steps(3, FaultPlan(), rm_count=3, tx_count=3)
    sent = [s["params"]["rm"] for s in steps if s["action"] == "TMSendPrepare"]
    received = [s["params"]["rm"] for s in steps if s["action"] == "RMRcvPrepare"]
    assert sorted(sent) == sorted(received)
    assert sent != received  # latency is drawn per message: no FIFO


def test_duplicate_and_loss_faults_are_their_own_steps() -> None:
    steps = run_steps(
        2,
        FaultPlan(
            windows=(Window("duplicate", 0, 1000, 0.5, seed=1), Window("loss", 0, 1000, 0.3)),
            heal_tick=1000,
        ),
    )
    actions = {s["action"] for s in steps}
    assert {"NetDuplicate", "NetLose"} <= actions
    for before, after in pairwise(steps):
        if after["action"] == "NetDuplicate":
            msg = from_json(after["params"]["msg"])
            assert from_json(after["vars"]["msgs"])[msg] == from_json(
                before["vars"]["msgs"]
            )[msg] + 1


def test_faults_stop_at_heal_tick() -> None:
    steps = run_steps(
        4,
        FaultPlan(
            crashes=(Crash("r1", 50, restart_ticks=20),),
            windows=(Window("loss", 0, 100, 0.5), Window("duplicate", 0, 100, 0.5, seed=3)),
            heal_tick=100,
        ),
    )
    late = [s for s in steps if s["ts"] >= 100]
    assert late
    assert not {"NetLose", "NetDuplicate", "TMCrash", "RMCrash"} & {s["action"] for s in late}


def test_each_part_draws_from_its_own_stream() -> None:
    # A change in fault options must not shift the workload or the network.
    quiet = Simulation(TWOPC, 9, options=SimOptions(faults=FaultPlan()))
    stormy = Simulation(
        TWOPC,
        9,
        options=SimOptions(faults=FaultPlan(windows=(Window("loss", 0, 50, 0.9),), heal_tick=50)),
    )
    assert quiet.config == stormy.config
    a, b = split(9), split(9)
    assert a.network.random() == b.network.random()
    assert split(9).workload.random() != split(9).network.random()


def test_latency_stays_within_its_range_without_delay_faults() -> None:
    steps = run_steps(5, FaultPlan(), tx_count=1)
    send = next(s for s in steps if s["action"] == "TMSendPrepare")
    rcv = next(s for s in steps if s["action"] == "RMRcvPrepare")
    options = NetworkOptions()
    assert options.latency_ticks_min <= rcv["ts"] - send["ts"] <= options.latency_ticks_max


def test_crash_strikes_after_the_planned_step_of_a_handler() -> None:
    # At the TM's begin tick, after_steps=3 crashes it after TMBegin and two sends.
    plain = run_steps(6, FaultPlan(), rm_count=3, tx_count=1)
    begin_tick = next(s["ts"] for s in plain if s["action"] == "TMBegin")
    steps = run_steps(
        6,
        FaultPlan(crashes=(Crash("tm", begin_tick, 30, after_steps=3),), heal_tick=begin_tick + 1),
        rm_count=3,
        tx_count=1,
    )
    actions = [s["action"] for s in steps]
    begin = actions.index("TMBegin")
    assert actions[begin : begin + 4] == ["TMBegin", "TMSendPrepare", "TMSendPrepare", "TMCrash"]


def test_one_way_partition_drops_only_one_direction() -> None:
    plan = FaultPlan(
        partitions=(Partition(0, 400, src=("r1",), dst=("tm",), both_ways=False),),
        heal_tick=400,
    )
    steps = run_steps(7, plan, rm_count=2, tx_count=2)
    early = [s for s in steps if s["ts"] < 400]
    lost = [s["params"]["msg"] for s in early if s["action"] == "NetLose"]
    assert lost and all(m["rm"] == "r1" and m["type"] in ("Prepared", "Aborted") for m in lost)
    assert any(s["action"] == "RMRcvPrepare" and s["params"]["rm"] == "r1" for s in early)


def test_a_crash_still_waiting_for_its_step_at_heal_tick_never_strikes() -> None:
    # The TM would take its 222nd step long after the plan healed at tick 1:
    # the liveness deadline assumes nothing goes wrong after heal_tick.
    plan = FaultPlan(crashes=(Crash("tm", 0, restart_ticks=2000, after_steps=222),), heal_tick=1)
    steps = run_steps(1, plan, tx_count=20)
    assert "TMCrash" not in {s["action"] for s in steps}


@pytest.mark.parametrize(
    "plan",
    [
        FaultPlan(crashes=(Crash("tm", 3, restart_ticks=-5),), heal_tick=10),
        FaultPlan(crashes=(Crash("tm", 3, restart_ticks=2.5),), heal_tick=10),  # type: ignore[arg-type]
        FaultPlan(crashes=(Crash("tm", 30, restart_ticks=5),), heal_tick=10),
    ],
)
def test_plans_built_in_python_are_checked_like_json_ones(plan: FaultPlan) -> None:
    with pytest.raises(ConfigError):
        Simulation(TWOPC, 1, options=SimOptions(faults=plan))


def test_negative_seed_is_refused_rather_than_aliased() -> None:
    with pytest.raises(ConfigError, match="non-negative"):
        Simulation(TWOPC, -5)
