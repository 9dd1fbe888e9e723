"""How a campaign cuts its seeds into batches (sim/campaign/sizing.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tlasim.sim.campaign.sizing import (
    BATCH_TARGET_SECONDS,
    FIRST_BATCH_SEEDS,
    TAIL_BATCH_SECONDS,
    BatchSizer,
)


def test_a_fixed_size_is_kept_whatever_the_pace() -> None:
    sizer = BatchSizer(range(25), slots=2, fixed=4)
    sizer.observe(4, 100.0)
    assert [len(b) for b in sizer] == [4, 4, 4, 4, 4, 4, 1]


def test_before_any_batch_is_back_batches_are_small() -> None:
    sizer = BatchSizer(range(10_000), slots=2, in_flight_per_slot=4)
    assert sizer.size(10_000) == FIRST_BATCH_SEEDS
    # A short campaign still spreads over every slot.
    assert BatchSizer(range(12), slots=4).size(12) == 3


def test_batches_grow_to_the_target_time_at_the_recent_pace() -> None:
    sizer = BatchSizer(range(100_000), slots=2, in_flight_per_slot=4)
    sizer.observe(10, 2.0)  # a first batch, slowed by starting TLC: 200 ms a seed
    slow = sizer.size(100_000)
    for _ in range(20):
        sizer.observe(50, 50 * 0.004)  # then 4 ms a seed
    fast = sizer.size(100_000)
    assert slow < 5
    # The first batch's pace is all but forgotten.
    assert abs(fast - BATCH_TARGET_SECONDS / 0.004) <= 0.1 * BATCH_TARGET_SECONDS / 0.004


def test_the_tail_is_shared_out_but_not_one_seed_at_a_time() -> None:
    sizer = BatchSizer(range(100_000), slots=2, in_flight_per_slot=4)
    sizer.observe(100, 100 * 0.001)  # 1 ms a seed
    assert sizer.size(800) == 100  # an even share of what is left
    least = round(TAIL_BATCH_SECONDS / 0.001)
    assert sizer.size(200) == least  # a batch is worth TAIL_BATCH_SECONDS at least...
    assert sizer.size(3) == 3  # ...but never more than what is left


@given(
    st.integers(0, 3000),
    st.integers(1, 64),
    st.lists(st.tuples(st.integers(1, 500), st.floats(0, 10)), max_size=30),
)
def test_every_seed_is_handed_out_once_in_order(
    count: int, slots: int, paces: list[tuple[int, float]]
) -> None:
    seeds = list(range(7, 7 + count))
    sizer = BatchSizer(seeds, slots=slots, in_flight_per_slot=4)
    handed: list[int] = []
    observed = iter(paces)
    for batch in sizer:
        assert batch
        handed.extend(batch)
        pace = next(observed, None)
        if pace is not None:
            sizer.observe(*pace)
    assert handed == seeds
