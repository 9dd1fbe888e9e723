"""tracing.emit.emitter: deterministic trace bytes from a structlog chain of our own."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from tlasim.protocols.errors import ConfigError, InternalError, TraceFormatError
from tlasim.tracing.codec import read_trace
from tlasim.tracing.emit.emitter import TraceEmitter
from tlasim.tracing.values import Record, freeze

REPO = Path(__file__).resolve().parents[2]

VARIABLES = {"tmState": "[Tx -> STRING]", "tmLog": "SUBSET Rec", "msgs": "[Msg -> Nat]"}


def _state(n: int) -> dict[str, Any]:
    # Built by iterating sets, so insertion orders follow the hash seed.
    txs = {f"t{i}" for i in range(n)}
    return {
        "tmState": {t: "preparing" for t in txs},
        "tmLog": {Record({"kind": "begin", "tx": t}) for t in txs},
        "msgs": {Record({"type": "Prepare", "tx": t, "rm": "r1"}): 1 for t in txs},
    }


def _write_run(emitter: TraceEmitter) -> None:
    emitter.header(
        protocol="twopc",
        spec="TwoPhaseCommitMsg",
        seed=7,
        options={"loss_probability": 0.25, "delay_ticks_max": 5},
        tool_version="0.1.0",
        source_revision="sha256:abc",
        constants={"Tx": {"t0", "t1", "t2"}, "RM": {"r1"}},
        variables=VARIABLES,
    )
    emitter.step(ts=0, node=None, action="Init", params={}, vars=_state(3))
    emitter.step(ts=5, node="tm", action="TMBegin", params={"tx": "t1"}, vars=_state(3))


def test_step_lines_have_fixed_key_order_and_seq_counts_from_zero() -> None:
    emitter = TraceEmitter.in_memory()
    _write_run(emitter)
    lines = [json.loads(line) for line in emitter.getvalue().splitlines()]
    assert list(lines[0]) == [
        "event",
        "schema",
        "protocol",
        "spec",
        "seed",
        "options",
        "tool_version",
        "source_revision",
        "constants",
        "variables",
    ]
    assert list(lines[0]["variables"]) == list(VARIABLES)
    assert list(lines[1]) == ["event", "seq", "ts", "action", "params", "vars"]
    assert list(lines[2]) == ["event", "seq", "ts", "node", "action", "params", "vars"]
    assert [line["seq"] for line in lines[1:]] == [0, 1]
    assert lines[2]["vars"]["tmLog"]["#set"][0] == {"kind": "begin", "tx": "t0"}
    assert emitter.steps_written == 2


def test_written_trace_reads_back_to_the_frozen_state(tmp_path: Path) -> None:
    for fmt in ("ndjson", "msgpack"):
        emitter = TraceEmitter.in_memory(fmt)
        _write_run(emitter)
        path = tmp_path / f"trace.{fmt}"
        path.write_bytes(emitter.getvalue())
        trace = read_trace(path)
        assert trace.header is not None
        assert trace.header["constants"]["Tx"] == frozenset({"t0", "t1", "t2"})
        assert [s.action for s in trace.steps] == ["Init", "TMBegin"]
        assert trace.steps[1].vars == freeze(_state(3))
        assert trace.steps[1].node == "tm"


_RUN_IN_CHILD = """
import hashlib, sys
from tests.unit.test_emitter import TraceEmitter, _write_run
for fmt in ("ndjson", "msgpack"):
    e = TraceEmitter.in_memory(fmt)
    _write_run(e)
    print(hashlib.sha256(e.getvalue()).hexdigest())
"""


def test_same_run_gives_identical_bytes_under_two_hash_seeds() -> None:
    digests = []
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", _RUN_IN_CHILD],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)},
        )
        digests.append(out.stdout.split())
    assert digests[0] == digests[1]
    assert len(digests[0]) == 2


@pytest.fixture
def noisy_global_structlog() -> Iterator[None]:
    structlog.configure(
        processors=[structlog.processors.TimeStamper(), structlog.processors.JSONRenderer()]
    )
    yield
    structlog.reset_defaults()


@pytest.mark.usefixtures("noisy_global_structlog")
def test_global_structlog_configuration_does_not_reach_the_trace() -> None:
    emitter = TraceEmitter.in_memory()
    emitter.step(ts=1, node="tm", action="A", params={}, vars={"x": 1})
    assert emitter.getvalue() == (
        b'{"event":"tla_trace","seq":0,"ts":1,"node":"tm","action":"A","params":{},'
        b'"vars":{"x":1}}\n'
    )


def test_discarding_emitter_counts_steps_and_writes_nothing() -> None:
    emitter = TraceEmitter(None)
    emitter.header(
        protocol="p",
        spec="S",
        seed=1,
        options={},
        tool_version="0",
        source_revision="r",
        constants={},
        variables={"x": "Int"},
    )
    for ts in range(3):
        emitter.step(ts=ts, node=None, action="A", params={}, vars={"x": ts})
    emitter.close()
    assert emitter.steps_written == 3
    with pytest.raises(InternalError, match="in_memory"):
        emitter.getvalue()
    with pytest.raises(ConfigError, match="yaml"):
        TraceEmitter(None, "yaml")  # type: ignore[arg-type]


def test_header_must_come_once_and_before_any_step() -> None:
    emitter = TraceEmitter.in_memory()
    _write_run(emitter)
    with pytest.raises(InternalError, match="once, before any step"):
        _write_run(emitter)


def test_step_vars_must_name_exactly_the_header_variables() -> None:
    emitter = TraceEmitter.in_memory()
    _write_run(emitter)
    state = _state(1)
    del state["msgs"]
    with pytest.raises(InternalError, match="declared"):
        emitter.step(ts=9, node=None, action="A", params={}, vars=state)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"vars": {"x": 0.5}}, "step 0 (A): vars['x']: a float"),
        ({"params": {"m": None}}, "step 0 (A): params['m']: a NoneType"),
        ({"ts": 1.0}, "an int ts"),
        ({"action": ""}, "an action name"),
    ],
)
def test_step_refuses_values_a_trace_cannot_hold(kwargs: dict[str, Any], message: str) -> None:
    step: dict[str, Any] = {"ts": 0, "node": None, "action": "A", "params": {}, "vars": {}}
    emitter = TraceEmitter.in_memory()
    with pytest.raises(TraceFormatError, match=re.escape(message)):
        emitter.step(**{**step, **kwargs})


def test_header_options_may_hold_floats_but_not_nan() -> None:
    emitter = TraceEmitter.in_memory()
    with pytest.raises(TraceFormatError, match=r"options.p: nan is not a finite number"):
        emitter.header(
            protocol="p",
            spec="S",
            seed=1,
            options={"p": float("nan")},
            tool_version="0",
            source_revision="r",
            constants={},
            variables={},
        )


def test_close_flushes_and_leaves_the_stream_open() -> None:
    raw = io.BytesIO()
    stream = io.BufferedWriter(raw)
    emitter = TraceEmitter(stream)
    emitter.step(ts=0, node=None, action="Init", params={}, vars={})
    emitter.close()
    assert not stream.closed
    assert raw.getvalue().endswith(b"\n")
    with pytest.raises(InternalError, match="after the writer was closed"):
        emitter.step(ts=1, node=None, action="A", params={}, vars={})
