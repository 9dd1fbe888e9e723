"""A recorded run's pickled trace gets from TLC the verdict its written form gets.

`tracing.tla.pickled` hands TLC a run as Python's pickle, read by the Java
in `tracing/tla/java` (PickledTrace), while decoded traces still go through
`binary.TraceBlobWriter`. These tests hold the two to one meaning: the same
verdict for the same lines, and the same line between what TLC may hold and
what it may not (the pickled form is rejected where the writer refuses).
"""

from __future__ import annotations

import builtins
import enum
import io
import pickle
import re
import time
from collections import namedtuple
from collections.abc import Hashable
from typing import Any

import pytest

from tlasim.protocols.errors import TraceFormatError
from tlasim.sim.run.runner import run_recorded
from tlasim.tracing.emit.recorder import TLCRecorder
from tlasim.tracing.tla import literal
from tlasim.tracing.tla.binary import PreparedTrace, TraceBlobWriter
from tlasim.tracing.tla.pickled import PICKLED_TAG, Unpicklable, pickled_trace
from tlasim.tracing.tla.tlc import JAVA_SOURCES
from tlasim.tracing.validation.tlc_batch import CheckSession, SessionResult
from tlasim.tracing.values import MAX_DEPTH, FnMap, Record

Line = tuple[str, Any, Any]


class _Colour(enum.StrEnum):
    RED = "red"


class _Level(enum.IntEnum):
    HIGH = 7


_Pair = namedtuple("_Pair", "a b")


class _Reader(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        assert module == "builtins", (module, name)
        if name == "dict":
            return lambda d: Record(d) if all(type(k) is str for k in d) else FnMap(d)
        return getattr(builtins, name)


def _lines(prepared: PreparedTrace) -> list[Line]:
    assert prepared.blob[:1] == PICKLED_TAG
    lines: list[Line] = _Reader(io.BytesIO(prepared.blob[5:])).load()
    return lines


def _written(lines: list[Line]) -> bytes:
    writer = TraceBlobWriter()
    for action, params, vars in lines:
        writer.step(action, params, vars)
    return writer.blob()


def _as(prepared: PreparedTrace, blob: bytes) -> PreparedTrace:
    return PreparedTrace(
        spec=prepared.spec, constants=prepared.constants, blob=blob, steps=prepared.steps,
        first_action=prepared.first_action, later_actions=prepared.later_actions,
        variables=prepared.variables, full_logs=True,
    )


def _verdicts(items: dict[Hashable, PreparedTrace], *, stream: bool) -> dict[Hashable, bool]:
    got: dict[Hashable, SessionResult] = {}
    with CheckSession(jobs=1, stream=stream) as session:
        for tag, prepared in items.items():
            session.submit(tag, prepared)
        session.flush()
        deadline = time.monotonic() + 300
        while len(got) < len(items):
            assert time.monotonic() < deadline, "no verdict"
            result = session.next_result(1.0)
            if result is not None:
                got[result.tag] = result
    assert all(r.unchecked is None for r in got.values())
    return {tag: r.accepted for tag, r in got.items()}


def _nested(depth: int) -> Any:
    value: Any = "core"
    for _ in range(depth):
        value = (value,)
    return value


# Values a line's extra param may hold, which the twopc template never reads:
# the trace is accepted exactly when TLC can hold the value. The params are
# a container themselves, so the param may nest one level less than
# MAX_DEPTH.
HOLDABLE = [
    2**31 - 1, -(2**31), "printable ~ ascii \\ \"q\"\n\t\r\f", _nested(MAX_DEPTH - 1),
    {"CASE": 1, "a b": 2, "WF_x": 3}, {"ok": 1}, {1: "x", 2: "y"}, {}, frozenset(),
    _Colour.RED, _Level.HIGH, [True, 1], {frozenset({1}): Record({"f": 0})},
    FnMap({(1, 2): 3}),
]
UNHOLDABLE = [2**31, -(2**31) - 1, "a`b", "caf\u00e9", _nested(MAX_DEPTH), {"k": 2**40},
              1.5, None]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "batch"])
def test_pickled_and_written_runs_get_the_same_verdicts(stream: bool) -> None:
    items: dict[Hashable, PreparedTrace] = {}
    for seed in range(4):
        for bug in (None, "abort-after-prepare"):
            _, prepared, refused = run_recorded("twopc", seed, bug=bug)
            assert prepared is not None, refused
            items[("pickled", seed, bug)] = prepared
            items[("written", seed, bug)] = _as(prepared, _written(_lines(prepared)))
    verdicts = _verdicts(items, stream=stream)
    for (form, seed, bug), accepted in verdicts.items():
        assert accepted == verdicts[("written", seed, bug)], (form, seed, bug)
    assert any(verdicts.values()) and not all(verdicts.values())


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "batch"])
def test_a_pickled_run_is_accepted_exactly_when_tlc_can_hold_its_values(stream: bool) -> None:
    _, prepared, _ = run_recorded("twopc", 0)
    assert prepared is not None
    lines = _lines(prepared)
    items: dict[Hashable, PreparedTrace] = {}
    for kind, values in (("holdable", HOLDABLE), ("unholdable", UNHOLDABLE)):
        for index, value in enumerate(values):
            changed = list(lines)
            action, params, vars = changed[3]
            changed[3] = (action, {**params, "z": value}, vars)
            items[(kind, index)] = _as(prepared, pickled_trace(changed))
            if kind == "holdable":
                _written(changed)  # the writer holds it too
            else:
                with pytest.raises(TraceFormatError):
                    _written(changed)
    verdicts = _verdicts(items, stream=stream)
    assert {tag for tag, ok in verdicts.items() if ok} == {
        tag for tag in items if tag[0] == "holdable"
    }


def test_a_value_pickle_does_not_carry_falls_back_to_the_writer() -> None:
    for value in (object(), type, len, _Pair(1, "b")):
        with pytest.raises(Unpicklable):
            pickled_trace([("Init", {}, {"x": value})])


def test_the_java_reader_makes_records_of_the_keys_the_writer_makes_records_of() -> None:
    # PickledTrace.java keeps its own copy of the field-name rule.
    source = (JAVA_SOURCES / "src" / "tlasim" / "PickledTrace.java").read_text(encoding="utf-8")
    reserved = re.search(r"RESERVED = new HashSet<>\(Arrays.asList\(\((.*?)\)\.split", source, re.S)
    assert reserved is not None
    words = set(" ".join(re.findall(r'"([^"]*)"', reserved.group(1))).split())
    assert words == set(literal._RESERVED)
    ident = re.search(r'IDENT = Pattern.compile\("(.*?)"\)', source)
    assert ident is not None and ident.group(1) == literal._IDENT.pattern


def test_a_recorded_run_keeps_the_params_a_step_had_when_the_core_changes_them_after() -> None:
    recorder = TLCRecorder(persistent=True)
    recorder.header(spec="S", constants={}, variables={"x": "Int"})
    params: dict[str, Any] = {"n": 1, "seen": [1]}
    recorder.step(ts=0, node=None, action="Init", params={}, vars={"x": 0})
    recorder.step(ts=1, node=None, action="Step", params=params, vars={"x": 1})
    params["n"] = 2
    params["seen"].append(2)
    prepared = recorder.prepared()
    assert prepared is not None
    assert _lines(prepared)[1] == ("Step", {"n": 1, "seen": [1]}, {"x": 1})
