"""The merge of node traces: Lamport order, and a receipt never before its send.

Lines that cannot be ordered are the run's error (bad input, exit 2), not a bug."""

from __future__ import annotations

import io
from typing import Any

import pytest

from tlasim.protocols import get_protocol
from tlasim.sim.kernel.rng import split
from tlasim.sim.live.files import LiveRunError
from tlasim.sim.live.merge import causal_order, write_merged
from tlasim.sim.live.nodelog import NodeLine
from tlasim.tracing.values import Record

PREPARE = Record({"type": "Prepare", "tx": "t1", "rm": "r1"})


def line(owner: str, number: int, clock: int, action: str, view: dict[str, Any], *,
         sent: tuple[Any, ...] = (), recv: Any = None, params: dict[str, Any] | None = None
         ) -> NodeLine:
    return NodeLine(owner, number, 0, clock, clock, owner, action,
                    Record(params or {"tx": "t1", "rm": "r1"}), Record(view), True,
                    None, sent, recv)


def twopc() -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    protocol = get_protocol("twopc")
    config = protocol.configure(protocol.make_options({"tx_count": 1, "rm_count": 1}), None,
                                split(0).workload)
    tm = dict(protocol.make_core(config, "tm").view())
    r1 = dict(protocol.make_core(config, "r1").view())
    return protocol, config, tm, r1


def test_lines_are_ordered_by_clock_then_node_whatever_file_they_came_from() -> None:
    _, _, tm, r1 = twopc()
    logs = {
        "r1": [line("r1", 1, 3, "RMRcvPrepare", r1, recv=PREPARE)],
        "tm": [line("tm", 1, 1, "TMBegin", tm), line("tm", 2, 2, "TMSendPrepare", tm,
                                                     sent=(PREPARE,))],
    }
    assert [(x.owner, x.clock) for x in causal_order(logs)] == [("tm", 1), ("tm", 2), ("r1", 3)]


def test_a_clock_that_goes_back_within_a_node_is_an_error_of_the_run() -> None:
    _, _, tm, _ = twopc()
    with pytest.raises(LiveRunError, match="went back"):
        causal_order({"tm": [line("tm", 1, 5, "TMBegin", tm), line("tm", 2, 5, "TMAbort", tm)]})


def test_a_receipt_with_no_send_before_it_is_an_error_of_the_run() -> None:
    protocol, config, _, r1 = twopc()
    lines = [line("r1", 1, 1, "RMRcvPrepare", r1, recv=PREPARE)]
    with pytest.raises(LiveRunError, match="no line of the run sent before it"):
        write_merged(protocol, config, lines, io.BytesIO(), {"protocol": "twopc", "seed": 0})
