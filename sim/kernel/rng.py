"""One seed, one stream per part (VOPR style).

The master RNG only hands out one seed per part, in a fixed order, so a draw
added to one part never shifts another part's stream. No module in tlasim
uses the global `random`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

PARTS = ("network", "disk", "faults", "workload")


@dataclass(frozen=True, slots=True)
class Streams:
    network: random.Random
    disk: random.Random
    faults: random.Random
    workload: random.Random


def split(seed: int) -> Streams:
    master = random.Random(seed)
    seeds = {part: master.getrandbits(64) for part in PARTS}
    return Streams(**{part: random.Random(seeds[part]) for part in PARTS})
