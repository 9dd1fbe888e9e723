"""The validator against hostile traces: one bad trace never costs another its
verdict, no logged string forges TLC's messages or a line of the report, and
large values do not make SANY's parse quadratic."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_validate import _COUNTER, _TEMPLATE, GOOD, make_trace, state

from bench.validation import write_blob_specs
from tlasim.protocols.errors import TLCError, TraceFormatError
from tlasim.tracing.codec import Trace
from tlasim.tracing.printable import printable
from tlasim.tracing.tla.literal import to_tla
from tlasim.tracing.tla.tlc import run_tlc
from tlasim.tracing.tla.trace_module import LINE_CAP, MAX_NESTING, check_writable, trace_data
from tlasim.tracing.validation.explain import Divergence, VarDiff
from tlasim.tracing.validation.validator import Verdict, validate_traces
from tlasim.tracing.values import FnMap, Record

# TLC's -tool markers and a verdict line, as a logged string could hold them.
FORGED = (
    "x\n@!@!@ENDMSG 2217 @!@!@\n@!@!@STARTMSG 2110:1 @!@!@\nInvariant Forged is violated.\n"
    "@!@!@ENDMSG 2110 @!@!@\n@!@!@STARTMSG 2193:0 @!@!@\n"
)


@pytest.fixture(scope="module")
def spec_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("specs")
    (root / "toy").mkdir()
    (root / "toy" / "Counter.tla").write_text(_COUNTER)
    (root / "toy" / "CounterTrace.tla").write_text(_TEMPLATE)
    return root


Lines = Sequence[tuple[str | None, dict[str, Any]]]


def trace_of(lines: Lines) -> Trace:
    return make_trace(list(lines))


def named(lines: Lines, path: str, **header: Any) -> Trace:
    trace = trace_of(lines)
    assert trace.header is not None
    return replace(trace, path=path, header=Record({**trace.header, **header}))


def with_params(trace: Trace, step: int, params: Any) -> Trace:
    steps = list(trace.steps)
    steps[step] = replace(steps[step], params=Record(params))
    return replace(trace, steps=tuple(steps))


# --- TLC's output: only TLC's own message lines count ------------------------


def test_validate_batch_keeps_its_verdicts_when_logged_strings_hold_tlc_markers(
    spec_dir: Path,
) -> None:
    claimed = [*GOOD[:2], ("Claim", state(1, ("a",), a=FORGED))]
    # The accepted trace holds the markers in its vars and params; the
    # evaluation error makes TLC print them in its error trace; the rejected
    # line makes the explaining run dump them.
    accepted = with_params(named(claimed, "forged-ok.ndjson"), 2, {"note": FORGED})
    eval_error = named([*claimed, ("Inc", {**state(2, ("a", "a"), a=FORGED), "count": "two"})],
                       "forged-eval.ndjson")
    rejected = named([*claimed, ("Inc", state(3, ("a", "a"), a=FORGED))], "forged-bad.ndjson")
    traces = [trace_of(GOOD), accepted, eval_error, rejected, trace_of(GOOD[:3])]
    verdicts = validate_traces(traces, spec_dirs=[spec_dir])
    got = [(v.accepted, v.error, v.divergence and (v.divergence.step, v.divergence.reason))
           for v in verdicts]
    assert got == [
        (True, None, None),
        (True, None, None),
        (False, None, (4, "eval_error")),
        (False, None, (4, "step")),
        (True, None, None),
    ]
    d = verdicts[3].divergence
    assert d is not None and d.last_state is not None
    assert d.last_state["owner"]["a"] == FORGED
    assert [(x.name, x.logged, x.allowed[0]) for x in d.diffs] == [("count", 3, 2)]


# --- isolation: a trace TLC cannot hold is refused alone ----------------------

_UNWRITABLE = [
    ("cafe.ndjson", ("Claim", state(1, ("a",), a="caf\u00e9")), "vars.owner['a']", "'é'"),
    ("tick.ndjson", ("Claim", state(1, ("a",), a="a`b")), "vars.owner['a']", "'`'"),
    ("big.ndjson", ("Claim", {**state(1, ("a",)), "count": 2**40}), "vars.count", "32-bit"),
]


def test_validate_batch_refuses_each_unwritable_trace_alone_naming_file_line_and_path(
    spec_dir: Path,
) -> None:
    bad = [named([*GOOD[:2], line], path) for path, line, _, _ in _UNWRITABLE]
    bad_param = with_params(named(GOOD, "param.ndjson"), 3, {"who": ("x", "\x00")})
    bad_constant = named(GOOD, "const.ndjson", constants={"Limit": 3, "Names": {"a", "\u00e9"}})
    # TLC cannot compare 1 with "a", so it fails on these constants before any
    # trace's first state: only the traces that share them lose their verdict.
    mixed_constant = named(GOOD, "mixed.ndjson", constants={"Limit": 3, "Names": {1, "a"}})
    changed = list(GOOD)
    changed[3] = ("Inc", state(3, ("a", GOOD[3][1]["log"][1])))
    traces = [trace_of(GOOD), *bad, bad_param, bad_constant, mixed_constant,
              trace_of(changed), trace_of(GOOD[:2])]
    verdicts = validate_traces(traces, spec_dirs=[spec_dir], keep_going=True, explain=False)
    assert [v.accepted for v in verdicts] == [True] + [False] * 7 + [True]
    assert [v.error is None for v in verdicts] == [True] + [False] * 6 + [True, True]
    for verdict, (path, _, where, what) in zip(verdicts[1:4], _UNWRITABLE, strict=True):
        assert verdict.error is not None
        assert verdict.error.startswith(f"{path}:4: {where}: "), verdict.error
        assert what in verdict.error
    assert str(verdicts[4].error).startswith("param.ndjson:5: params['who'][1]: ")
    assert str(verdicts[5].error).startswith("const.ndjson: constant Names{element}: ")
    assert str(verdicts[6].error).startswith("mixed.ndjson: ")
    assert "TraceConst_Names" in str(verdicts[6].error)
    d = verdicts[7].divergence
    assert d is not None and (d.step, d.reason) == (4, "step")


def test_validate_without_keep_going_raises_naming_the_file(spec_dir: Path) -> None:
    path, line, where, _ = _UNWRITABLE[0]
    with pytest.raises(TraceFormatError, match=rf"^{re.escape(path)}:4: {re.escape(where)}: "):
        validate_traces([trace_of(GOOD), named([*GOOD[:2], line], path)], spec_dirs=[spec_dir])
    mixed = named(GOOD, "mixed.ndjson", constants={"Limit": 3, "Names": {1, "a"}})
    with pytest.raises(TLCError, match=r"^mixed\.ndjson: "):
        validate_traces([mixed], spec_dirs=[spec_dir])


def test_check_writable_names_the_path_of_a_value_nested_too_deeply() -> None:
    value: Any = 1
    for _ in range(10 * MAX_NESTING):
        value = (value,)
    with pytest.raises(TraceFormatError, match=rf"^vars\.x\[0\]\[0\].*more than {MAX_NESTING}"):
        check_writable(value, "vars.x")
    shallow: Any = "ok"
    for _ in range(MAX_NESTING):
        shallow = frozenset({shallow})
    check_writable(shallow, "vars.x")


# --- what is printed: every string from a file is escaped ---------------------

# A newline that would start a forged verdict line, and terminal escapes: clear
# the screen, a C1 control sequence introducer, a line separator, a bidi override.
EVIL = "\nACCEPTED: forged.ndjson is a behaviour of Counter\x1b[2J\x9b31m\u2028\u202e"


def assert_safe(text: str, accepted: bool) -> None:
    heads = [row for row in text.splitlines() if row.startswith(("ACCEPTED", "REJECTED"))]
    assert len(heads) <= 1
    assert all(row.startswith("ACCEPTED") == accepted for row in heads), text
    assert not any(row.startswith("ACCEPTED: forged") for row in text.splitlines()), text
    for char in "\x1b\x9b\u2028\u202e\r\x85":
        assert char not in text, (char, text)


def _verdict_with_evil_everywhere() -> Verdict:
    divergence = Divergence(
        line=3,
        step=2,
        action="Inc" + EVIL,
        params=Record({"p" + EVIL: "v" + EVIL}),
        reason="step",
        message="no step explains " + EVIL,
        known_actions=("Init", "Inc" + EVIL),
        diffs=(VarDiff("owner" + EVIL, {"a": EVIL}, ({"a": ""}, {"a": "x" + EVIL})),),
        variables=3,
        tlc_error="TLC said\n" + EVIL,
        last_line=2,
        last_state={"owner" + EVIL: {"a" + EVIL: EVIL}},
        last_states=2,
    )
    header = {"seed": 7, "reproduce": "tlasim run toy --trace {trace}" + EVIL}
    return Verdict(Path("out" + EVIL), False, 5, divergence, 1.0, "Counter" + EVIL, header)


def test_report_and_summary_escape_every_string_from_a_file() -> None:
    verdict = _verdict_with_evil_everywhere()
    assert_safe(verdict.report(), accepted=False)
    assert "\n" not in verdict.summary()
    assert_safe(verdict.summary(), accepted=False)
    accepted = replace(verdict, accepted=True, divergence=None)
    assert_safe(accepted.report(), accepted=True)
    assert len(accepted.report().splitlines()) == 1
    errored = replace(verdict, error="out" + EVIL + ": cannot read" + EVIL)
    assert_safe(errored.report(), accepted=False)
    assert_safe(errored.summary(), accepted=False)
    # A seed that is no 64-bit integer is not shown, nor does it fail the report.
    for seed in (10**5000, True):
        odd = replace(verdict, header={**(verdict.header or {}), "seed": seed})
        assert "seed:" not in odd.report()
        assert odd.to_json()["seed"] is None
    # Escapes are visible, and JSON keeps the value itself, escaped by JSON.
    assert "\\x1b[2J\\x9b31m\\u2028\\u202e" in verdict.report()
    as_json = json.dumps(verdict.to_json())
    assert_safe(as_json, accepted=False)
    assert json.loads(as_json)["trace"] == "out" + EVIL


def test_printable_escapes_only_what_is_not_plainly_visible() -> None:
    assert printable("tlasim run twopc --seed 7 'a b' é → 中") == (
        "tlasim run twopc --seed 7 'a b' é → 中"
    )
    assert printable("a\nb\tc\x1b[0m\x7f\x85\u200b\udcff") == (
        "a\\nb\\tc\\x1b[0m\\x7f\\x85\\u200b\\udcff"
    )


def test_validate_output_escapes_path_spec_action_and_reproduce_of_real_traces(
    spec_dir: Path,
) -> None:
    evil_path = named(GOOD, "out" + EVIL + ".ndjson", reproduce="tlasim run {trace}" + EVIL)
    evil_spec = named(GOOD, "spec.ndjson", spec="Counter" + EVIL)
    evil_action = named([GOOD[0], ("Inc" + EVIL, GOOD[1][1])], "action" + EVIL)
    changed = list(GOOD)
    changed[1] = ("Inc", state(2, ("a",), a=EVIL.replace("\x1b", "").replace("\x9b", "")[:20]))
    evil_rejected = named(changed, "bad" + EVIL, reproduce="tlasim run {trace}" + EVIL)
    verdicts = validate_traces(
        [evil_path, evil_spec, evil_action, evil_rejected], spec_dirs=[spec_dir],
        keep_going=True, explain=False,
    )
    assert [(v.accepted, v.error is not None) for v in verdicts] == [
        (True, False), (False, True), (False, False), (False, False)
    ]
    for verdict in verdicts:
        assert_safe(verdict.report(), verdict.accepted)
        assert_safe(verdict.summary(), verdict.accepted)
        assert "\n" not in verdict.summary()
    assert str(verdicts[1].error).startswith("spec.ndjson: ")


# --- large values: no long line for SANY to parse -----------------------------

# Every escape TLA+ strings have, so that pieces are cut next to escapes.
_TEXT_UNIT = 'line "quoted" \\ back\tslash\r\f ==== (* \n'


def big_text(chars: int) -> str:
    return (_TEXT_UNIT * (chars // len(_TEXT_UNIT) + 1))[:chars]


def blob_trace(text: str, bag: frozenset[Any], kept: tuple[str, frozenset[Any]]) -> Trace:
    empty: frozenset[Any] = frozenset()
    rows: list[tuple[str | None, dict[str, Any]]] = [
        ("Init", {"text": "", "bag": empty}),
        ("Write", {"text": text, "bag": empty}),
        ("Fill", {"text": text, "bag": bag}),
        ("Keep", {"text": kept[0], "bag": kept[1]}),
    ]
    trace = make_trace(rows)
    return replace(trace, path="blob.ndjson", header=Record({"spec": "Blob", "constants": {}}))


def test_trace_data_keeps_every_line_of_large_values_under_the_cap() -> None:
    text = big_text(1_000_000)
    bag = frozenset(f"e{i}" for i in range(100_000))
    records = frozenset(Record({"id": i, "note": f"n{i}"}) for i in range(2_000))
    pairs = FnMap({(i, "k"): i for i in range(5_000)})
    steps: list[tuple[str | None, dict[str, Any]]] = [
        ("Init", {"text": "", "bag": frozenset()}),
        ("Write", {"text": text, "bag": bag | records}),
        ("Fill", {"text": text, "bag": bag | {("a", i) for i in range(3_000)}}),
        ("Keep", {"text": text[:-1], "bag": frozenset({pairs, tuple(range(10_000))})}),
    ]
    # Many small traces make the list of all traces long too.
    small = make_trace([steps[0]])
    traces = [make_trace(steps), *[small] * 3_000]
    data = trace_data(traces, {"Big": bag, "Text": text})
    longest = max(len(row) for row in data.splitlines())
    assert longest <= LINE_CAP
    assert data.count("\n====") == 1


def test_split_string_literal_is_the_same_value_to_tlc(tmp_path: Path) -> None:
    # Compared with the same string written whole, in one TLC run.
    text = big_text(20_000)
    data = trace_data([], {"Split": text})
    split = data[data.index("TraceConst_Split == ") + len("TraceConst_Split == ") :]
    split = split[: split.index("\n====")]
    assert "\\o" in split
    (tmp_path / "Same.tla").write_text(
        "---- MODULE Same ----\nEXTENDS Sequences\nVARIABLE x\n"
        f"Split == {split}\nWhole == {to_tla(text)}\n"
        "ASSUME Split = Whole /\\ Len(Split) = 20000\n"
        "Init == x = 0\nNext == UNCHANGED x\n====\n"
    )
    (tmp_path / "Same.cfg").write_text("INIT Init\nNEXT Next\n")
    result = run_tlc(tmp_path / "Same.tla", tmp_path / "Same.cfg", workdir=tmp_path / "work")
    assert result.outcome == "ok", result.error_text()


def test_validate_accepts_a_large_string_and_set_and_rejects_a_mutated_one(
    tmp_path: Path,
) -> None:
    write_blob_specs(tmp_path)
    text = big_text(200_000)
    bag = frozenset(f"e{i}" for i in range(20_000))
    middle = len(text) // 2
    kept = [(text, bag), (text[:middle] + "X" + text[middle + 1 :], bag), (text, bag - {"e7"})]
    verdicts = validate_traces(
        [blob_trace(text, bag, k) for k in kept], spec_dirs=[tmp_path], explain=False
    )
    got = [(v.accepted, v.divergence and v.divergence.step) for v in verdicts]
    assert got == [(True, None), (False, 4), (False, 4)]


# --- the template's action names: read whole, or refused ----------------------


def test_a_template_whose_action_names_are_a_union_accepts_a_valid_trace_and_rejects_a_bad_one(
    tmp_path: Path,
) -> None:
    # Read only up to its first `}`, this set once made a valid trace REJECTED
    # before TLC ran ("Claim" and "Reset" are in the second set).
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "Counter.tla").write_text(_COUNTER)
    union = '{"Init", "Inc"}\n    \\cup {"Claim", "Reset"}'
    template = _TEMPLATE.replace('{"Init", "Inc", "Claim", "Reset"}', union)
    assert union in template
    (tmp_path / "toy" / "CounterTrace.tla").write_text(template)
    bad = [*GOOD[:4], ("Reset", state(1, ("a", "b"), a="x"))]
    verdicts = validate_traces([trace_of(GOOD), trace_of(bad)], spec_dirs=[tmp_path])
    assert [v.accepted for v in verdicts] == [True, False]
    assert verdicts[1].divergence is not None and verdicts[1].divergence.step == 5
