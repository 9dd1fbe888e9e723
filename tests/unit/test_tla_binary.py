"""tracing.tla.binary, tracing.emit.recorder and the Java loader: the bytes TLC reads.

A small decoder written here from the format in binary.py's docstring (not
from the writer) turns the bytes back into type-tagged values, so these
tests hold the writer to the format, not to itself: TRUE is not 1, a set's
order does not matter, a record equals the function with its pairs, and an
empty record or function is `<<>>`, as in TLC.
"""

from __future__ import annotations

import builtins
import io
import pickle
import re
import struct
import zipfile
from collections.abc import Callable, Iterator, Mapping, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tlasim.protocols import get_protocol
from tlasim.protocols.errors import TLCError, TraceFormatError
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.run.runner import build_simulation, run_recorded, run_seed, write_header
from tlasim.tracing.codec import Trace, TraceStep, read_trace
from tlasim.tracing.emit.recorder import TLCRecorder
from tlasim.tracing.tla import binary, pickled
from tlasim.tracing.tla.binary import PreparedTrace, trace_blob, trace_logs_of
from tlasim.tracing.tla.tlc import JAVA_SOURCES, TLASIM_JAR, TLCResult, java_source_digest
from tlasim.tracing.tla.trace_module import MAX_NESTING, check_writable
from tlasim.tracing.validation.validator import Verdict, validate_traces
from tlasim.tracing.values import FnMap, Record

PROTOCOLS = ("twopc", "shardsplit", "snapshot")
# Seeds per protocol for the recorder's equivalence; the first few also
# serve the file-to-bytes check.
RECORDER_SEEDS = range(1, 13)
BLOB_SEEDS = range(1, 6)
BUG_SEEDS = (1, 2)


# --- an independent decoder ---------------------------------------------------

# A decoded value is a tuple led by its type: ("bool", b), ("int", n),
# ("str", s), ("seq", (..)), ("set", frozenset), ("fn", frozenset of
# (key, value) pairs). TLA+ has one empty function, `<<>>`, so an empty record
# or function decodes to ("seq", ()).
Tagged = tuple[Any, ...]
EMPTY_SEQ: Tagged = ("seq", ())


_U32 = struct.Struct(">I")


class Malformed(Exception):
    """The bytes do not follow the format."""


def _function(pairs: list[tuple[Tagged, Tagged]], at: int) -> Tagged:
    if not pairs:
        return EMPTY_SEQ
    if len({k for k, _ in pairs}) != len(pairs):
        raise Malformed(f"byte {at}: a function with a key twice")
    return ("fn", frozenset(pairs))


class _BuiltinsOnly(pickle.Unpickler):
    """Reads a pickled trace, calling nothing but the conversions it may name."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name == "dict":
            # A Record or another mapping, which may be a set's element.
            return lambda d: Record(d) if all(type(k) is str for k in d) else FnMap(d)
        if module == "builtins" and name in {"str", "int", "tuple", "list", "set", "frozenset"}:
            return getattr(builtins, name)
        raise Malformed(f"a pickled trace names {module}.{name}")


class Decoder:
    """Reads values from `data`; `shared` numbers the `D`s of the current trace."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.shared: list[Tagged | None] = []
        self.references = 0  # `P`s read, so a test can see sharing was used

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise Malformed(f"byte {self.pos}: {n} bytes wanted, {len(self.data) - self.pos} left")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def _u32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise Malformed(f"byte {self.pos}: a count cut short")
        value: int = _U32.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return value

    def _text(self) -> str:
        raw = self._take(self._u32())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Malformed(f"byte {self.pos}: bad UTF-8: {exc}") from None

    def value(self) -> Tagged:
        at = self.pos
        tag = self._take(1)
        if tag == b"F":
            return ("bool", False)
        if tag == b"T":
            return ("bool", True)
        if tag == b"I":
            n: int = struct.unpack(">i", self._take(4))[0]
            return ("int", n)
        if tag == b"S":
            return ("str", self._text())
        if tag == b"Q":
            return ("seq", tuple(self.value() for _ in range(self._u32())))
        if tag == b"E":
            elements = [self.value() for _ in range(self._u32())]
            frozen = frozenset(elements)
            if len(frozen) != len(elements):
                raise Malformed(f"byte {at}: a set with an element twice")
            return ("set", frozen)
        if tag == b"R":
            fields = [(("str", self._text()), self.value()) for _ in range(self._u32())]
            return _function(fields, at)
        if tag == b"M":
            pairs = [(self.value(), self.value()) for _ in range(self._u32())]
            return _function(pairs, at)
        if tag == b"D":
            slot = len(self.shared)
            self.shared.append(None)
            defined = self.value()
            self.shared[slot] = defined
            return defined
        if tag == b"P":
            number = self._u32()
            if number >= len(self.shared) or self.shared[number] is None:
                raise Malformed(f"byte {at}: P {number} names no value defined before it")
            self.references += 1
            found = self.shared[number]
            assert found is not None
            return found
        raise Malformed(f"byte {at}: unknown tag {tag!r}")

    def trace(self) -> Tagged:
        """One element of TraceLogs: its `D`s are numbered from 0; or a
        pickled trace (`tracing.tla.pickled`), read by pickle itself."""
        self.shared = []
        if self.data[self.pos : self.pos + 1] == pickled.PICKLED_TAG:
            self.pos += 1
            lines = _BuiltinsOnly(io.BytesIO(self._take(self._u32()))).load()
            memo: dict[int, tuple[Any, Tagged]] = {}
            return ("seq", tuple(
                tagged({"action": a, "params": p, "vars": v}, memo) for a, p, v in lines
            ))
        return self.value()

    def end(self) -> None:
        if self.pos != len(self.data):
            raise Malformed(f"{len(self.data) - self.pos} bytes after the value")


def decode_trace(blob: bytes) -> Tagged:
    """A trace's bytes (`trace_blob`, `PreparedTrace.blob`) as a tagged value."""
    decoder = Decoder(blob)
    value = decoder.trace()
    decoder.end()
    return value


def decode_file(data: bytes) -> list[Tagged]:
    """A whole TraceData.bin: its traces."""
    decoder = Decoder(data)
    if decoder._take(4) != b"TLSM":
        raise Malformed("no magic")
    if decoder._take(1)[0] != binary.VERSION:
        raise Malformed("another version")
    if decoder._take(1) != b"Q":
        raise Malformed("the file's value is not a tuple")
    traces = [decoder.trace() for _ in range(decoder._u32())]
    decoder.end()
    return traces


def references(blob: bytes) -> int:
    decoder = Decoder(blob)
    decoder.trace()
    return decoder.references


def tagged(v: Any, memo: dict[int, tuple[Any, Tagged]] | None = None) -> Tagged:
    """A Python value (frozen or plain) as the decoder would give it. `memo`
    remembers containers by identity (a trace's lines share their values)."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", int(v))
    if isinstance(v, str):
        return ("str", str.__str__(v))
    if memo is not None:
        hit = memo.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1]
    if isinstance(v, tuple | list):
        out: Tagged = ("seq", tuple(tagged(x, memo) for x in v))
    elif isinstance(v, Set):
        out = ("set", frozenset(tagged(x, memo) for x in v))
    elif isinstance(v, Mapping):
        out = _function([(tagged(k, memo), tagged(x, memo)) for k, x in v.items()], -1)
    else:
        raise TypeError(f"no TLA+ value: {v!r}")
    if memo is not None:
        memo[id(v)] = (v, out)
    return out


def expected_trace(trace: Trace) -> Tagged:
    """What TLC should read for a decoded trace: per step line the record
    [action |-> .., params |-> .., vars |-> ..]."""
    memo: dict[int, tuple[Any, Tagged]] = {}
    return (
        "seq",
        tuple(
            tagged({"action": step.action or "", "params": step.params, "vars": step.vars}, memo)
            for step in trace.steps
        ),
    )


# --- the decoder itself -------------------------------------------------------


def _u32(n: int) -> bytes:
    return struct.pack(">I", n)


def _s(text: str) -> bytes:
    data = text.encode()
    return b"S" + _u32(len(data)) + data


def _int(n: int) -> bytes:
    return b"I" + struct.pack(">i", n)


def test_decoder_tells_true_from_one_and_false_from_zero() -> None:
    assert decode_trace(b"T") == ("bool", True)
    assert decode_trace(_int(1)) == ("int", 1)
    assert decode_trace(b"T") != decode_trace(_int(1))
    assert decode_trace(b"F") != decode_trace(_int(0))
    assert tagged(True) != tagged(1)
    assert tagged(frozenset({0})) != tagged(frozenset({False}))


def test_decoder_compares_sets_unordered_and_records_with_functions_by_their_pairs() -> None:
    one, two = _int(1), _int(2)
    assert decode_trace(b"E" + _u32(2) + one + two) == decode_trace(b"E" + _u32(2) + two + one)
    record = b"R" + _u32(2) + _u32(1) + b"a" + one + _u32(1) + b"b" + two
    function = b"M" + _u32(2) + _s("b") + two + _s("a") + one
    assert decode_trace(record) == decode_trace(function) == tagged({"a": 1, "b": 2})
    assert decode_trace(record) != decode_trace(b"M" + _u32(2) + _s("b") + one + _s("a") + two)


def test_decoder_reads_every_empty_function_as_the_empty_tuple_but_not_the_empty_set() -> None:
    empties = [b"Q" + _u32(0), b"R" + _u32(0), b"M" + _u32(0)]
    assert {decode_trace(e) for e in empties} == {EMPTY_SEQ}
    assert tagged(Record()) == tagged({}) == tagged(()) == EMPTY_SEQ
    assert decode_trace(b"E" + _u32(0)) == ("set", frozenset()) != EMPTY_SEQ


def test_decoder_numbers_definitions_before_their_parts_and_refuses_forward_references() -> None:
    inner = b"D" + _s("shared-long-text")
    outer = b"D" + b"Q" + _u32(2) + inner + b"P" + _u32(1)
    value = decode_trace(b"Q" + _u32(2) + outer + b"P" + _u32(0))
    text = ("str", "shared-long-text")
    assert value == ("seq", (("seq", (text, text)), ("seq", (text, text))))
    with pytest.raises(Malformed, match="names no value"):
        decode_trace(b"D" + b"Q" + _u32(1) + b"P" + _u32(0))  # inside its own definition
    with pytest.raises(Malformed, match="names no value"):
        decode_trace(b"P" + _u32(0))


@pytest.mark.parametrize(
    "data",
    [b"T\x00", b"Q" + _u32(2) + b"T", b"S" + _u32(5) + b"abc", b"X", b"S" + _u32(1) + b"\xff"],
    ids=["trailing", "short-tuple", "short-string", "unknown-tag", "bad-utf8"],
)
def test_decoder_refuses_malformed_bytes(data: bytes) -> None:
    with pytest.raises(Malformed):
        decode_trace(data)


# --- traces, run once and shared ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    protocol: str
    seed: int
    bug: str | None
    path: Path
    trace: Trace


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Run]:
    """A seed's run with its trace file, made once per module."""
    folder = tmp_path_factory.mktemp("binary-traces")
    made: dict[tuple[str, int, str | None, str], Run] = {}

    def get(protocol: str, seed: int, bug: str | None = None, fmt: str = "ndjson") -> Run:
        key = (protocol, seed, bug, fmt)
        if key not in made:
            path = folder / f"{protocol}-{seed}-{bug or 'correct'}.{fmt}"
            run_seed(protocol, seed, bug=bug, options=SimOptions(trace_format=fmt),  # type: ignore[arg-type]
                     trace_path=path)
            made[key] = Run(protocol, seed, bug, path, read_trace(path))
        return made[key]

    return get


def _bug_cases() -> Iterator[tuple[str, str]]:
    for protocol in PROTOCOLS:
        for bug in sorted(get_protocol(protocol).bugs):
            yield protocol, bug


BUG_CASES = list(_bug_cases())


# --- a: the file's values reach TLC unchanged -----------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_trace_blob_holds_exactly_the_decoded_trace_values(
    protocol: str, traces: Callable[..., Run]
) -> None:
    shared = 0
    for seed in BLOB_SEEDS:
        run = traces(protocol, seed)
        blob = trace_blob(run.trace)
        assert decode_trace(blob) == expected_trace(run.trace), f"{protocol} seed {seed}"
        shared += references(blob)
    # Messages in flight and variables a step left alone are written once
    # and named after: the check above went through that path too.
    assert shared > 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_trace_blob_of_a_msgpack_trace_holds_its_values(
    protocol: str, traces: Callable[..., Run]
) -> None:
    run = traces(protocol, 3, fmt="msgpack")
    assert decode_trace(trace_blob(run.trace)) == expected_trace(run.trace)
    assert decode_trace(trace_blob(run.trace)) == decode_trace(
        trace_blob(traces(protocol, 3).trace)
    )


@pytest.mark.parametrize(("protocol", "bug"), BUG_CASES)
def test_trace_blob_of_a_bug_variant_run_holds_its_values(
    protocol: str, bug: str, traces: Callable[..., Run]
) -> None:
    for seed in BUG_SEEDS:
        run = traces(protocol, seed, bug)
        assert decode_trace(trace_blob(run.trace)) == expected_trace(run.trace), (
            f"{protocol} {bug} seed {seed}"
        )


def test_trace_logs_file_is_magic_version_and_each_trace_numbering_its_own_definitions(
    traces: Callable[..., Run],
) -> None:
    runs = [traces(p, 1) for p in PROTOCOLS] + [traces("twopc", 2)]
    blobs = [trace_blob(r.trace) for r in runs]
    data = trace_logs_of(blobs)
    assert data[:4] == b"TLSM"
    assert data[4] == binary.VERSION
    assert decode_file(data) == [expected_trace(r.trace) for r in runs]
    assert data == binary.trace_logs([r.trace for r in runs])


def test_trace_blob_writes_a_long_string_once_and_a_short_one_each_time() -> None:
    # A short string in params is written each time; a variable whose value
    # the line before logged is named, whatever it holds.
    long, short = "a-string-longer-than-eight-bytes", "short"
    steps = tuple(
        TraceStep(i + 1, i, i, None, "Init" if i == 0 else "Step",
                  Record({"who": long, "tag": short}), Record({"x": long, "y": short}))
        for i in range(3)
    )
    trace = Trace("t.ndjson", None, steps)
    blob = trace_blob(trace)
    assert blob.count(long.encode()) == 1
    assert blob.count(short.encode()) == 3 + 1
    assert decode_trace(blob) == expected_trace(trace)


def test_a_variable_is_named_only_while_its_value_is_the_same_value() -> None:
    # TRUE and 1 are equal in Python but not in TLA+: a variable that turns
    # from one to the other is written again.
    values = [1, True, True, 1, frozenset({1}), frozenset({True}), (1,), [1], {"a": 1}, {"a": True}]
    steps = tuple(
        TraceStep(i + 1, i, i, None, "Init" if i == 0 else "Step", Record(), Record({"x": x}))
        for i, x in enumerate(values)
    )
    trace = Trace("t.ndjson", None, steps)
    assert decode_trace(trace_blob(trace)) == expected_trace(trace)


# --- b: the recorder encodes what the file would hold ------------------------------


def _recorded(protocol: str, seed: int, bug: str | None = None) -> tuple[TLCRecorder, Any]:
    recorder = TLCRecorder()
    sim = build_simulation(protocol, seed, bug=bug, emitter=recorder)
    write_header(sim, recorder)
    result = sim.run()
    return recorder, result


def _assert_recorder_matches_file(prepared: PreparedTrace | None, run: Run, label: str) -> None:
    assert prepared is not None, label
    trace = run.trace
    # The file's bytes hold the file's values (the tests above), so the
    # recorder is held to those bytes.
    assert decode_trace(prepared.blob) == decode_trace(trace_blob(trace)), label
    assert prepared.steps == len(trace.steps), label
    assert prepared.first_action == trace.steps[0].action, label
    assert prepared.later_actions == {s.action for s in trace.steps[1:]}, label
    logged = set().union(*(s.vars.keys() for s in trace.steps))
    assert trace.header is not None
    assert prepared.variables == logged == set(trace.header["variables"]), label
    assert prepared.spec == trace.header["spec"], label
    assert tagged(prepared.constants) == tagged(trace.header["constants"]), label
    assert prepared.full_logs, label


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_recorder_prepares_the_bytes_the_trace_file_gives(
    protocol: str, traces: Callable[..., Run]
) -> None:
    for seed in RECORDER_SEEDS:
        recorder, _ = _recorded(protocol, seed)
        assert recorder.refused is None
        _assert_recorder_matches_file(recorder.prepared(), traces(protocol, seed),
                                      f"{protocol} seed {seed}")


@pytest.mark.parametrize(("protocol", "bug"), BUG_CASES)
def test_recorder_of_a_bug_variant_prepares_the_bytes_the_trace_file_gives(
    protocol: str, bug: str, traces: Callable[..., Run]
) -> None:
    for seed in BUG_SEEDS:
        recorder, _ = _recorded(protocol, seed, bug)
        _assert_recorder_matches_file(recorder.prepared(), traces(protocol, seed, bug),
                                      f"{protocol} {bug} seed {seed}")


def _recorder_with_header(constants: Mapping[str, Any] | None = None) -> TLCRecorder:
    recorder = TLCRecorder()
    recorder.header(spec="TwoPhaseCommitMsg", constants=constants or {"RM": {"r1"}},
                    variables={"x": "Int"})
    recorder.step(ts=0, node=None, action="Init", params={}, vars={"x": 0})
    return recorder


UNHOLDABLE = [
    pytest.param(2**31, "2147483648", id="int-above-int32"),
    pytest.param(-(2**31) - 1, "-2147483649", id="int-below-int32"),
    pytest.param("tick`tock", "'`'", id="backtick"),
    pytest.param(frozenset({("deep", "a`b")}), "'`'", id="backtick-in-a-set"),
]


@pytest.mark.parametrize(("value", "named"), UNHOLDABLE)
def test_recorder_refuses_a_value_tlc_cannot_hold_and_names_it(value: Any, named: str) -> None:
    recorder = _recorder_with_header()
    recorder.step(ts=1, node="tm", action="TMCommit", params={"tx": value}, vars={"x": 1})
    # Steps after the refusal are ignored, not encoded.
    recorder.step(ts=2, node="tm", action="TMCommit", params={}, vars={"x": 2})
    assert recorder.prepared() is None
    assert recorder.refused is not None
    assert "step 1 (TMCommit)" in recorder.refused
    assert "params.tx" in recorder.refused
    assert named in recorder.refused


@pytest.mark.parametrize(("value", "named"), UNHOLDABLE)
def test_recorder_refuses_a_variable_value_tlc_cannot_hold(value: Any, named: str) -> None:
    recorder = _recorder_with_header()
    recorder.step(ts=1, node="tm", action="TMCommit", params={}, vars={"x": value})
    assert recorder.prepared() is None
    assert recorder.refused is not None and "vars.x" in recorder.refused
    assert named in recorder.refused


def test_recorder_prepares_values_at_the_edges_of_what_tlc_holds() -> None:
    edges = (2**31 - 1, -(2**31), "printable ~ ascii \\ \"q\"\n\t")
    recorder = _recorder_with_header()
    for ts, x in enumerate(edges, 1):
        recorder.step(ts=ts, node=None, action="Step", params={}, vars={"x": x})
    prepared = recorder.prepared()
    assert recorder.refused is None and prepared is not None
    lines = [("Init", 0), *(("Step", x) for x in edges)]
    assert decode_trace(prepared.blob) == (
        "seq",
        tuple(tagged({"action": a, "params": {}, "vars": {"x": x}}) for a, x in lines),
    )
    assert (prepared.steps, prepared.first_action, prepared.later_actions) == (4, "Init", {"Step"})


@pytest.mark.parametrize(("value", "named"), UNHOLDABLE)
def test_recorder_refuses_a_constant_tlc_cannot_hold(value: Any, named: str) -> None:
    recorder = _recorder_with_header({"RM": value})
    assert recorder.prepared() is None
    assert recorder.refused is not None and named in recorder.refused


@pytest.mark.parametrize(("value", "named"), UNHOLDABLE)
def test_trace_blob_refuses_a_value_tlc_cannot_hold_naming_file_line_and_path(
    value: Any, named: str
) -> None:
    steps = (
        TraceStep(2, 0, 0, None, "Init", Record(), Record({"x": 0})),
        TraceStep(3, 1, 1, None, "Step", Record({"p": value}), Record({"x": 1})),
    )
    with pytest.raises(TraceFormatError) as caught:
        trace_blob(Trace("odd.ndjson", None, steps))
    message = str(caught.value)
    assert message.startswith("odd.ndjson:3: params.p")
    assert named in message


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = (value,)
    return value


@pytest.mark.parametrize(
    "value",
    [2**31 - 1, 2**31, -(2**31), "a`b", "é", "\x00", "fine\n", _nested(MAX_NESTING),
     _nested(MAX_NESTING + 1), frozenset({_nested(MAX_NESTING)}), Record({"k": "`"})],
    ids=["int-max", "int-over", "int-min", "backtick", "non-ascii", "nul", "newline",
         "nested-limit", "nested-over", "nested-over-in-set", "record-backtick"],
)
def test_trace_blob_refuses_exactly_what_the_text_modules_refuse(value: Any) -> None:
    # The validator refuses a trace with check_writable before batching; a
    # value the binary writer took but the text could not hold (or the
    # reverse) would give the two methods different verdicts.
    try:
        check_writable(value, "vars.x")
        text_refuses = False
    except TraceFormatError:
        text_refuses = True
    # A plain dict: Record would refuse the deepest values itself.
    trace = Trace("t.ndjson", None, (TraceStep(1, 0, 0, None, "Init", Record(),
                                               {"x": value}),))  # type: ignore[arg-type]
    try:
        blob = trace_blob(trace)
        binary_refuses = False
    except TraceFormatError:
        binary_refuses = True
    assert binary_refuses == text_refuses
    if not binary_refuses:
        assert decode_trace(blob) == expected_trace(trace)


def _written(steps: list[tuple[Any, Any]], *, persistent: bool) -> bytes:
    writer = binary.TraceBlobWriter(persistent=persistent)
    for i, (params, vars) in enumerate(steps):
        writer.step("Init" if i == 0 else "Step", params, vars)
    return writer.blob()


def _expected(steps: list[tuple[Any, Any]]) -> Tagged:
    return ("seq", tuple(
        tagged({"action": "Init" if i == 0 else "Step", "params": params, "vars": vars})
        for i, (params, vars) in enumerate(steps)
    ))


def test_persistent_writer_names_a_variable_built_afresh_with_its_last_value() -> None:
    # The simulator builds most variables afresh at every step; one that
    # holds exactly its last value is named, whatever object it is, by the
    # persistent writer (comparing the values) and the plain one (their
    # pickle bytes; marshal, which it used before, takes no Record).
    steps: list[tuple[Any, Any]] = [
        ({}, {"x": {"a": frozenset({Record({"c": "c1", "n": 1})}), "b": (1, 2)}, "y": 0})
        for _ in range(4)
    ]
    for persistent in (True, False):
        blob = _written(steps, persistent=persistent)
        assert decode_trace(blob) == _expected(steps)
        # Both variables, at each line after the first.
        assert references(blob) == 2 * 3


def test_persistent_writer_writes_a_variable_again_when_only_python_holds_it_equal() -> None:
    # TRUE == 1, a dict equal to a record, sets equal whatever their order:
    # a value is named only when it is the same value in the same form, so
    # 1 turning into TRUE (equal in Python, not in TLA+) is written again.
    values: list[Any] = [
        1, True, True, 1, 0, False, frozenset({1}), frozenset({True}), (1,), [1],
        {"a": 1}, {"a": True}, Record({"a": True}), {"a": True},
        {"k": frozenset({1, 2})}, {"k": frozenset({2, 1})}, {"k": (0,)}, {"k": (False,)},
    ]
    steps: list[tuple[Any, Any]] = [({}, {"x": x}) for x in values]
    assert decode_trace(_written(steps, persistent=True)) == _expected(steps)


def test_plain_params_written_again_keep_true_apart_from_one() -> None:
    params = [{"x": 1}, {"x": True}, {"x": 1}, {"x": "a-string-longer-than-eight-bytes"},
              {"x": "a-string-longer-than-eight-bytes"}, {"x": 1, "y": False},
              {"x": True, "y": 0}, {"x": 1, "y": False}]
    steps: list[tuple[Any, Any]] = [(p, {"v": 0}) for p in params]
    for persistent in (False, True):
        assert decode_trace(_written(steps, persistent=persistent)) == _expected(steps)


@pytest.mark.parametrize(
    "value",
    [2**31, "a`b", 1.5, None, ((((("x", "a`b"),),),),),
     {"k": frozenset({(1, 2**40)})}, {("a", "b"): 1, (1, 2**31): 2}, {"a": {3: [1, "`"]}}],
    ids=["int", "backtick", "float", "none", "deep-backtick", "int-in-set", "int-in-key",
         "backtick-in-function"],
)
def test_persistent_writer_refuses_with_the_plain_writer_s_message(value: Any) -> None:
    steps = [({}, {"x": 0, "y": "fine"}), ({}, {"x": {"a": 1}, "y": "fine"}),
             ({"p": {"q": value}}, {"x": {"a": 1}, "y": value})]
    messages = []
    for persistent in (False, True):
        with pytest.raises(TraceFormatError) as caught:
            _written(steps, persistent=persistent)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith("params.p.q")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_run_recorded_prepares_the_bytes_the_trace_file_gives(
    protocol: str, traces: Callable[..., Run]
) -> None:
    # run_recorded's recorder is persistent: it names what it met before by
    # identity and a variable built afresh with its last value.
    for seed in BLOB_SEEDS:
        _, prepared, refused = run_recorded(protocol, seed)
        assert refused is None
        _assert_recorder_matches_file(prepared, traces(protocol, seed), f"{protocol} seed {seed}")


@pytest.mark.parametrize(("protocol", "bug"), BUG_CASES)
def test_run_recorded_of_a_bug_variant_prepares_the_bytes_the_trace_file_gives(
    protocol: str, bug: str, traces: Callable[..., Run]
) -> None:
    for seed in BUG_SEEDS:
        _, prepared, _ = run_recorded(protocol, seed, bug=bug)
        _assert_recorder_matches_file(prepared, traces(protocol, seed, bug),
                                      f"{protocol} {bug} seed {seed}")


# --- c: the Java loader refuses malformed data ------------------------------------


def _at(data: bytes, what: bytes) -> int:
    where = data.find(what)
    assert where >= 0, f"{what!r} not in the data"
    return where


def _unknown_tag(data: bytes) -> bytes:
    # The header (5 bytes), the traces' tuple (5), the first trace's (5): the
    # first step's record tag.
    assert data[15:16] == b"R"
    return data[:15] + b"Z" + data[16:]


def _undefined_reference(data: bytes) -> bytes:
    init = _at(data, _s("Init"))
    return data[:init] + b"P" + _u32(7) + data[init + len(_s("Init")) :]


CORRUPTIONS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "truncated": (lambda d: d[: len(d) // 2], "unexpected end of file"),
    "wrong-magic": (lambda d: b"TLSX" + d[4:], "not a tlasim trace data file"),
    "wrong-version": (lambda d: d[:4] + b"\x63" + d[5:], "format version 99"),
    "unknown-tag": (_unknown_tag, "unknown tag 90"),
    "undefined-reference": (_undefined_reference, "reference to value 7"),
    "trailing-bytes": (lambda d: d + b"\x00", "bytes after the value"),
}


@dataclass(slots=True)
class CorruptRun:
    verdicts: list[Verdict] | None
    error: TLCError | None
    outputs: list[str]  # every TLC run's whole output


def _validate_corrupt(
    trace: Path, corrupt: Callable[[bytes], bytes], keep_going: bool, workdir: Path
) -> CorruptRun:
    import tlasim.tracing.validation.tlc_batch as tlc_batch
    import tlasim.tracing.validation.validator as validator

    outputs: list[str] = []
    real_tlc = validator.run_tlc
    real_logs = binary.trace_logs_of

    def spy(*args: Any, **kwargs: Any) -> TLCResult:
        result = real_tlc(*args, **kwargs)
        outputs.append(result.output)
        return result

    with pytest.MonkeyPatch.context() as patch:
        # tlc_batch imported the name, so it is replaced where it is used too.
        for module in (binary, tlc_batch):
            patch.setattr(module, "trace_logs_of", lambda blobs: corrupt(real_logs(blobs)))
        patch.setattr(validator, "run_tlc", spy)
        try:
            verdicts = validate_traces([trace], explain=False, keep_going=keep_going,
                                       workdir=workdir)
        except TLCError as exc:
            return CorruptRun(None, exc, outputs)
    return CorruptRun(verdicts, None, outputs)


@pytest.fixture(scope="module")
def corrupt_runs(
    traces: Callable[..., Run], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, CorruptRun]:
    """One TLC run per corruption (about 2 s each), and one with keep_going."""
    trace = traces("twopc", 1).path
    root = tmp_path_factory.mktemp("corrupt")
    runs = {
        name: _validate_corrupt(trace, corrupt, False, root / name)
        for name, (corrupt, _) in CORRUPTIONS.items()
    }
    runs["keep-going"] = _validate_corrupt(trace, CORRUPTIONS["unknown-tag"][0], True,
                                           root / "keep-going")
    return runs


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_corruptions_change_the_bytes_the_loader_reads(
    name: str, traces: Callable[..., Run]
) -> None:
    data = trace_logs_of([trace_blob(traces("twopc", 1).trace)])
    corrupt, _ = CORRUPTIONS[name]
    with pytest.raises(Malformed):
        decode_file(corrupt(data))


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_java_loader_stops_tlc_naming_the_malformed_byte(
    name: str, corrupt_runs: dict[str, CorruptRun]
) -> None:
    run = corrupt_runs[name]
    _, what = CORRUPTIONS[name]
    assert run.outputs, "TLC never ran"
    said = re.search(r"malformed trace data at byte \d+: (.*)", run.outputs[0])
    assert said is not None, run.outputs[0][-3000:]
    assert what in said.group(1)




@pytest.mark.parametrize("name", CORRUPTIONS)
def test_malformed_trace_data_fails_validation_with_a_clear_error_not_a_verdict(
    name: str, corrupt_runs: dict[str, CorruptRun]
) -> None:
    run = corrupt_runs[name]
    assert run.verdicts is None, [v.summary() for v in run.verdicts or ()]
    assert run.error is not None and "malformed trace data" in str(run.error)


def test_malformed_trace_data_with_keep_going_is_an_error_verdict(
    corrupt_runs: dict[str, CorruptRun],
) -> None:
    run = corrupt_runs["keep-going"]
    assert run.error is None and run.verdicts is not None
    (verdict,) = run.verdicts
    assert not verdict.accepted
    assert verdict.divergence is None, verdict.summary()
    assert verdict.error is not None and "malformed trace data" in verdict.error


# --- d: the committed jar is built from the committed sources -------------------------


def test_committed_jar_records_the_digest_of_the_committed_java_sources() -> None:
    with zipfile.ZipFile(TLASIM_JAR) as jar:
        recorded = jar.read("tlasim/source.sha256").decode("ascii").strip()
    assert recorded == java_source_digest(), (
        "tlasim-tlc.jar was built from other Java sources than the ones committed: run "
        "`make java` and commit the jar"
    )


def test_committed_jar_holds_a_class_for_every_java_source() -> None:
    with zipfile.ZipFile(TLASIM_JAR) as jar:
        names = set(jar.namelist())
    assert {"tlc2/overrides/TLCOverrides.class", "tlasim/TraceData.class"} <= names
    sources = sorted((JAVA_SOURCES / "src").rglob("*.java"))
    assert sources
    for source in sources:
        cls = source.relative_to(JAVA_SOURCES / "src").with_suffix(".class").as_posix()
        assert cls in names


def test_java_loader_and_python_writer_agree_on_magic_and_version() -> None:
    java = (JAVA_SOURCES / "src" / "tlasim" / "TraceData.java").read_text(encoding="utf-8")
    version = re.search(r"static final int VERSION = (\d+);", java)
    magic = re.search(r"static final byte\[\] MAGIC = \{ ([^}]*) \};", java)
    assert version is not None and magic is not None
    assert int(version.group(1)) == binary.VERSION
    letters = "".join(re.findall(r"'(.)'", magic.group(1)))
    assert letters.encode("ascii") == binary.MAGIC


def test_a_variable_of_sets_nested_deep_is_written_in_time_linear_in_its_size() -> None:
    # marshal, which used to tell a variable's value from the line before's,
    # sorts each set by its elements' bytes: its time doubles with each
    # level of nested sets, and a trace file may nest them 100 deep. At 60
    # levels that writer never finished.
    nested: Any = frozenset({0})
    for level in range(1, 60):
        nested = frozenset({nested, level})
    writer = binary.TraceBlobWriter()
    actions = ("Init", "Next", "Next")
    for action in actions:
        writer.step(action, {}, {"x": nested})
    lines = [tagged({"action": a, "params": {}, "vars": {"x": nested}}) for a in actions]
    assert decode_trace(writer.blob()) == ("seq", tuple(lines))
    assert references(writer.blob()) >= 2  # the later lines name the first line's value
