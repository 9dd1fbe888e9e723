"""The simulated network: latency, no FIFO, and fault hooks.

Every message is msgpack-encoded when sent and decoded when delivered, so no
two nodes ever share a Python object. Latency comes from the network stream;
duplication, extra delay and loss come from the fault injector. The network
keeps a count of each message in flight, which is the spec's `msgs` bag.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import msgpack

from tlasim.sim.kernel.injector import FaultInjector
from tlasim.sim.kernel.options import NetworkOptions

# At most this many message records are kept (see Network): ten times the
# distinct messages of a thousand runs of any protocol here.
RECORDS_KEPT = 1 << 16


@dataclass(slots=True)
class InFlight:
    src: str
    dst: str
    payload: bytes
    record: Hashable  # the message's spec record: its key in the spec's `msgs` bag


class Network:
    def __init__(
        self,
        options: NetworkOptions,
        rng: random.Random,
        injector: FaultInjector,
        schedule: Callable[[int, Callable[[], None]], None],
        encode: Callable[[Any], Any],
        spec_record: Callable[[Any], Hashable],
        records: dict[bytes, Hashable] | None = None,
    ) -> None:
        self.options = options
        self.rng = rng
        self.injector = injector
        self._schedule = schedule
        self._encode = encode
        # One packer for every message, not msgpack.packb's new one per call:
        # each new packer allocates a buffer larger than glibc's mmap
        # threshold, and where that threshold is fixed (a Dask worker sets
        # MALLOC_TRIM_THRESHOLD_, which does so) every message costs an mmap
        # and a munmap, ten times the packing itself.
        self._packer = msgpack.Packer(use_bin_type=True)
        self._spec_record = spec_record
        # The spec's `msgs` bag, kept up to date as copies enter and leave.
        self.in_flight: Counter[Hashable] = Counter()
        self._bag: dict[Hashable, int] | None = None  # see `bag`
        # payload -> the message's spec record. The receiver decodes the
        # message from exactly these bytes, so equal payloads are equal
        # messages with equal records, and a message sent again (a resend, a
        # retry, or the same message in another run of the protocol, when the
        # caller shares this cache between runs) reuses its frozen record.
        self._records: dict[bytes, Hashable] = {} if records is None else records
        self.sent = 0
        self.delivered = 0
        self.lost = 0
        self.duplicated = 0

    def _latency(self, now: int, entry: InFlight) -> int:
        base = self.rng.randint(self.options.latency_ticks_min, self.options.latency_ticks_max)
        return base + self.injector.extra_delay_on_send(now, entry.src, entry.dst)

    def send(
        self, now: int, src: str, dst: str, msg: Any, arrive: Callable[[InFlight], None]
    ) -> InFlight | None:
        """Put one copy in flight; return a second copy if the fault plan duplicates it.

        The duplicate is not in flight yet: the caller adds it with `add_copy`
        in its own trace step, after the step that sent the original.
        """
        payload = self._packer.pack(self._encode(msg))
        record = self._records.get(payload)
        if record is None:
            if len(self._records) >= RECORDS_KEPT:
                self._records.clear()
            record = self._records[payload] = self._spec_record(msg)
        entry = InFlight(src, dst, payload, record)
        self.sent += 1
        self._put(now, entry, arrive)
        if self.injector.duplicate_on_send(now, src, dst):
            return InFlight(src, dst, payload, entry.record)
        return None

    def add_copy(self, now: int, entry: InFlight, arrive: Callable[[InFlight], None]) -> None:
        self.duplicated += 1
        self._put(now, entry, arrive)

    def bag(self) -> dict[Hashable, int]:
        """`in_flight` as a snapshot nobody changes: the same object until a
        copy enters or leaves, so a step that moved no message hands the
        trace recorder the very bag of the step before, which it names
        rather than compares."""
        bag = self._bag
        if bag is None:
            bag = self._bag = dict(self.in_flight)
        return bag

    def _put(self, now: int, entry: InFlight, arrive: Callable[[InFlight], None]) -> None:
        self.in_flight[entry.record] += 1
        self._bag = None
        self._schedule(self._latency(now, entry), lambda: arrive(entry))

    def remove(self, entry: InFlight) -> None:
        self._bag = None
        count = self.in_flight[entry.record] - 1
        if count:
            self.in_flight[entry.record] = count
        else:
            del self.in_flight[entry.record]

    @staticmethod
    def decode(entry: InFlight) -> Any:
        return msgpack.unpackb(entry.payload, raw=False)
