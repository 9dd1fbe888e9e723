"""`tlasim conformance`'s default effort, one place for the CLI and the tests.

Deterministic by design: the explorer is bounded by states, not time, so
a model's `explained` list written against these defaults holds on any
machine.
"""

SEEDS = 500  # seeded runs under swarm faults
EXPLORE_STATES = 20_000  # distinct states the explorer reaches in each workload
EXPLORE_WORKLOADS = 2  # workloads (of seeds 0, 1, ...) the explorer searches
CRASHES, LOSSES, DUPLICATES = 1, 1, 1  # faults per explored schedule
IDLE_CRASHES = True  # a crash may strike a started node between its own steps
# The chase toward what the above left unreached (sim/conformance/chase.py):
# code states it expands in each workload, and the faults a schedule may
# hold. Its search is narrow, so it affords more faults than the explorer.
CHASE_STATES = 20_000
CHASE_CRASHES, CHASE_LOSSES, CHASE_DUPLICATES = 3, 3, 3
