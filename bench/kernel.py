"""Kernel throughput: delivered messages per second, against raw simpy.

Both sides run in this process, one after the other, on the same machine
state, so the ratio is meaningful even on a noisy machine; absolute numbers
are not.

- raw simpy: a ping-pong between two nodes with random integer latency, a
  callback per delivery, nothing else. It is the floor: what simpy costs.
- tlasim: two-phase commit (3 RMs, 5 transactions, no faults), with tracing
  off (refinement mapping and oracle still run every step) and on (ndjson
  to memory).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import simpy

from tlasim.faults.plan import NO_FAULTS_PLAN
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.run.runner import run_seed


@dataclass(frozen=True)
class Throughput:
    label: str
    messages: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.messages / self.seconds


def raw_simpy_ping_pong(messages: int, seed: int = 1) -> Throughput:
    env = simpy.Environment()
    rng = random.Random(seed)
    delivered = 0

    def deliver(_event: simpy.Event) -> None:
        nonlocal delivered
        delivered += 1
        if delivered < messages:
            send()

    def send() -> None:
        event = env.timeout(rng.randint(1, 10))
        event.callbacks.append(deliver)

    start = time.perf_counter()
    send()
    env.run()
    return Throughput("raw simpy ping-pong", delivered, time.perf_counter() - start)


def tlasim_twopc(seeds: int, *, tracing: bool) -> Throughput:
    options = SimOptions(faults=NO_FAULTS_PLAN)
    delivered = 0
    start = time.perf_counter()
    for seed in range(seeds):
        run = run_seed("twopc", seed, options=options, keep_trace=tracing)
        delivered += run.result.stats.messages_delivered
    label = "tlasim twopc, tracing " + ("on (ndjson, in memory)" if tracing else "off")
    return Throughput(label, delivered, time.perf_counter() - start)


def run(seeds: int = 200) -> list[Throughput]:
    off = tlasim_twopc(seeds, tracing=False)
    on = tlasim_twopc(seeds, tracing=True)
    raw = raw_simpy_ping_pong(max(off.messages, 10_000))
    return [raw, off, on]
