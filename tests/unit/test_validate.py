"""tracing.validation.validator on a toy spec: which traces it accepts, and where and why it
rejects the others."""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tlasim.protocols.errors import SpecError, ToolNotFound, TraceFormatError
from tlasim.tracing.codec import Trace, TraceStep
from tlasim.tracing.validation.validator import validate_trace, validate_traces
from tlasim.tracing.values import FnMap, Record, freeze, to_json

# A counter that logs who incremented it, and a name per owner that any
# string may be claimed into: enough to exercise sets, sequences, records,
# constants, parameters taken from the logged state, and strings.
_COUNTER = r"""---------------- MODULE Counter ----------------
EXTENDS Naturals, Sequences
CONSTANTS Limit, Names
VARIABLES count, log, owner
Init == count = 0 /\ log = <<>> /\ owner = [n \in Names |-> ""]
Inc(n) == count < Limit /\ count' = count + 1 /\ log' = Append(log, n) /\ UNCHANGED owner
Claim(n, s) == owner' = [owner EXCEPT ![n] = s] /\ UNCHANGED <<count, log>>
Reset == count > 0 /\ count' = 0 /\ UNCHANGED <<log, owner>>
================================================
"""

_TEMPLATE = r"""---------------- MODULE CounterTrace ----------------
EXTENDS Counter
TraceActionNames == {"Init", "Inc", "Claim", "Reset"}
TraceAction(e) ==
    CASE e.action = "Inc" -> \E n \in Names : Inc(n)
      [] e.action = "Claim" -> \E n \in Names : Claim(n, e.vars.owner[n])
      [] e.action = "Reset" -> Reset
      [] OTHER -> FALSE
=====================================================
"""

NASTY = 'say "hi" \\ back\nslash ==== \\* not a comment (* nor this *) ---- MODULE X'
# A name that is no identifier, so records keyed by it are written with `:>`,
# and that holds what could end a module or open a comment.
B = 'b "1" \\ ==== (*'
CONSTANTS = {"Limit": 3, "Names": frozenset({"a", B})}


@pytest.fixture(scope="module")
def spec_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("specs")
    (root / "toy").mkdir()
    (root / "toy" / "Counter.tla").write_text(_COUNTER)
    (root / "toy" / "CounterTrace.tla").write_text(_TEMPLATE)
    return root


def state(count: int, log: tuple[str, ...], a: str = "", b: str = "") -> dict[str, Any]:
    return {"count": count, "log": log, "owner": {"a": a, B: b}}


def steps(*lines: tuple[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return list(lines)


GOOD = steps(
    ("Init", state(0, ())),
    ("Inc", state(1, ("a",))),
    ("Claim", state(1, ("a",), a=NASTY)),
    ("Inc", state(2, ("a", B), a=NASTY)),
    ("Reset", state(0, ("a", B), a=NASTY)),
)


def make_trace(lines: list[tuple[str | None, dict[str, Any]]], header: bool = True) -> Trace:
    head = (
        Record(
            {
                "spec": "Counter",
                "constants": CONSTANTS,
                "variables": {"count": "Nat", "log": "Seq(Names)", "owner": "[Names -> STRING]"},
            }
        )
        if header
        else None
    )
    built = tuple(
        TraceStep(
            line=i + 2,
            seq=i,
            ts=i,
            node=None,
            action=action,
            params=Record(),
            vars=freeze(values),
        )
        for i, (action, values) in enumerate(lines)
    )
    return Trace("toy.ndjson", head, built)


def check(trace: Trace, spec_dir: Path, **kw: Any) -> Any:
    return validate_trace(trace, spec_dirs=[spec_dir], **kw)


def no_tlc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Make any TLC run fail loudly, to show a verdict needed none."""
    monkeypatch.setenv("JAVA", str(tmp_path / "no-java-here"))


def test_validate_accepts_a_valid_trace_read_from_a_file(spec_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "good.ndjson"
    header = {
        "event": "tla_trace_header",
        "schema": 1,
        "spec": "Counter",
        "constants": to_json(CONSTANTS),
        "variables": {"count": "Nat", "log": "Seq(Names)", "owner": "[Names -> STRING]"},
    }
    rows = [json.dumps(header)] + [
        json.dumps({"event": "tla_trace", "seq": i, "ts": i, "action": a, "vars": to_json(v)})
        for i, (a, v) in enumerate(GOOD)
    ]
    path.write_text("\n".join(rows) + "\n")
    verdict = validate_trace(path, spec_dirs=[spec_dir], workdir=tmp_path / "work")
    assert verdict.accepted, verdict.report()
    assert verdict.steps == len(GOOD)
    assert verdict.divergence is None
    assert verdict.tlc_seconds > 0
    assert "ACCEPTED" in verdict.report()
    assert verdict.summary() == "accepted by Counter (5 steps)"
    # The generated module holds the nasty string only as an escaped literal.
    data = (tmp_path / "work" / "batch1" / "TraceData.tla").read_text()
    assert "\n==== \\* not" not in data
    assert data.count("\n====") == 1


def test_validate_accepts_a_prefix_since_a_prefix_is_a_behaviour(spec_dir: Path) -> None:
    # Cut short before the Reset (and before a second Inc): still a behaviour.
    assert check(make_trace(GOOD[:2]), spec_dir).accepted
    assert check(make_trace(GOOD[:1]), spec_dir).accepted


def test_validate_rejects_swapped_lines_at_the_first_unexplained_line(spec_dir: Path) -> None:
    swapped = [GOOD[0], GOOD[2], GOOD[1], *GOOD[3:]]
    verdict = check(make_trace(swapped), spec_dir)
    assert not verdict.accepted
    d = verdict.divergence
    assert d is not None
    # Line 2 of the file is the Init step; the Claim moved up to line 3
    # changes only owner, but the logged count and log are those after Inc.
    assert (d.step, d.line, d.action, d.reason) == (2, 3, "Claim", "step")
    assert d.enabled is True
    assert [(x.name, x.logged, x.allowed) for x in d.diffs] == [
        ("count", 1, (0,)),
        ("log", ("a",), ((),)),
    ]
    report = verdict.report()
    assert "line 3 (step 2 of 5): action Claim" in report
    assert "differs in 2 of 3 variables" in report


def test_validate_rejects_a_changed_value_and_shows_what_was_allowed(spec_dir: Path) -> None:
    bad = list(GOOD)
    bad[3] = ("Inc", state(3, ("a", B), a=NASTY))
    verdict = check(make_trace(bad), spec_dir)
    d = verdict.divergence
    assert d is not None
    assert (d.step, d.line, d.action) == (4, 5, "Inc")
    assert d.enabled is True
    assert d.successors == 2  # Inc("a") and Inc(B)
    assert [(x.name, x.logged, x.allowed[0]) for x in d.diffs] == [("count", 3, 2)]
    assert verdict.summary().startswith("rejected by Counter at line 5 (step 4 of 5), action Inc:")
    report = verdict.report()
    assert "logged:  3" in report
    assert "allowed: 2" in report
    assert "2 states" in report


def test_validate_rejects_an_action_renamed_to_another_known_action(spec_dir: Path) -> None:
    bad = list(GOOD)
    bad[1] = ("Reset", GOOD[1][1])
    verdict = check(make_trace(bad), spec_dir)
    d = verdict.divergence
    assert d is not None
    assert (d.step, d.line, d.action) == (2, 3, "Reset")
    assert d.enabled is False
    assert d.successors == 0
    assert "Reset was not enabled in the state of line 2" in verdict.report()


def test_validate_rejects_an_unknown_action_without_running_tlc(
    spec_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_tlc(monkeypatch, tmp_path)
    bad = list(GOOD)
    bad[2] = ("Steal", GOOD[2][1])
    verdict = check(make_trace(bad), spec_dir)
    d = verdict.divergence
    assert d is not None
    assert (d.step, d.line, d.action, d.reason) == (3, 4, "Steal", "unknown_action")
    assert d.known_actions == ("Init", "Inc", "Claim", "Reset")
    assert verdict.tlc_seconds == 0
    assert "known actions: Init, Inc, Claim, Reset" in verdict.report()


@pytest.mark.parametrize(
    ("vars_", "match"),
    [
        ({**state(0, ()), "extra": 1}, "logs extra, which are not variables of Counter"),
        ({**state(0, ()), "x\n====": 1}, "not TLA+ identifiers"),
    ],
)
def test_validate_rejects_wrong_variables_without_running_tlc(
    spec_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    vars_: dict[str, Any],
    match: str,
) -> None:
    no_tlc(monkeypatch, tmp_path)
    trace = make_trace([("Init", vars_)], header=False)
    verdict = check(trace, spec_dir, spec="Counter", constants=CONSTANTS)
    d = verdict.divergence
    assert d is not None
    assert d.reason == "variables"
    assert d.line == 2
    assert pytest.approx(0) == verdict.tlc_seconds
    assert match in d.message


def test_validate_rejects_a_first_line_that_is_not_init(
    spec_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_tlc(monkeypatch, tmp_path)
    d = check(make_trace(GOOD[1:]), spec_dir).divergence
    assert d is not None
    assert (d.line, d.reason) == (2, "first_action")


def test_validate_rejects_a_first_line_that_violates_init(spec_dir: Path) -> None:
    verdict = check(make_trace([("Init", state(1, ()))]), spec_dir)
    d = verdict.divergence
    assert d is not None
    assert (d.step, d.line, d.reason) == (1, 2, "init")
    assert d.successors == 1
    assert [(x.name, x.logged, x.allowed) for x in d.diffs] == [("count", 1, (0,))]


def test_validate_reports_an_evaluation_error_at_its_line(spec_dir: Path) -> None:
    bad = list(GOOD)
    # A string where the spec compares with a number: TLC cannot evaluate it.
    bad[1] = ("Inc", {**state(1, ("a",)), "count": "one"})
    verdict = check(make_trace(bad), spec_dir)
    d = verdict.divergence
    assert d is not None
    assert (d.step, d.line, d.reason) == (2, 3, "eval_error")
    assert d.tlc_error and "one" in d.tlc_error
    assert [x.name for x in d.diffs] == ["count"]


def test_validate_rejects_a_nasty_string_that_differs_without_tlc_errors(spec_dir: Path) -> None:
    bad = list(GOOD)
    bad[3] = ("Inc", state(2, ("a", B), a=NASTY + "\\"))
    verdict = check(make_trace(bad), spec_dir)
    d = verdict.divergence
    assert d is not None
    assert (d.step, d.reason) == (4, "step")
    assert d.tlc_error is None
    assert [x.name for x in d.diffs] == ["owner"]
    assert '["a"]: logged' in verdict.report()


def test_validate_unreadable_values_are_a_trace_format_error(spec_dir: Path) -> None:
    bad = list(GOOD)
    bad[1] = ("Inc", {**state(1, ("a",)), "count": "caf\u00e9"})
    with pytest.raises(TraceFormatError, match="printable ASCII"):
        check(make_trace(bad), spec_dir)


def test_validate_constants_argument_overrides_the_header(spec_dir: Path) -> None:
    trace = make_trace(GOOD[:2])
    with pytest.raises(TraceFormatError, match="no value for Names"):
        check(trace, spec_dir, constants={"Limit": 3})
    verdict = check(trace, spec_dir, constants={**CONSTANTS, "Limit": 0})
    d = verdict.divergence
    assert d is not None
    assert (d.step, d.enabled) == (2, False)


def test_validate_missing_spec_or_template_is_a_spec_error(spec_dir: Path, tmp_path: Path) -> None:
    trace = make_trace(GOOD[:1])
    with pytest.raises(SpecError, match=r"Nope\.tla not found"):
        check(trace, spec_dir, spec="Nope")
    # Without a template beside it, one is derived from Next; without a Next, none can be.
    (tmp_path / "Counter.tla").write_text(_COUNTER)
    with pytest.raises(SpecError, match=r"cannot derive a trace template.*CounterTrace\.tla"):
        check(trace, tmp_path)
    with pytest.raises(TraceFormatError, match="not a TLA\\+ module name"):
        check(trace, spec_dir, spec="../Counter")


def test_validate_header_variables_must_be_the_specs(spec_dir: Path) -> None:
    trace = make_trace(GOOD[:1])
    assert trace.header is not None
    header = Record({**trace.header, "variables": {"count": "Nat"}})
    with pytest.raises(TraceFormatError, match="header declares variables"):
        check(replace(trace, header=header), spec_dir)


def test_validate_without_java_raises_tool_not_found(
    spec_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_tlc(monkeypatch, tmp_path)
    with pytest.raises(ToolNotFound, match="JAVA"):
        check(make_trace(GOOD), spec_dir)


# --- the real two-phase commit spec ------------------------------------------

# The installed `specs` package, which validate_trace searches by default.
_TWOPC_SPECS = Path(str(importlib.resources.files("tlasim.specs")))


def _twopc_lines() -> list[tuple[str, dict[str, Any]]]:
    idle = {"r1": "working", "r2": "working"}
    begin = Record({"kind": "begin", "tx": "t1"})
    prepare = Record({"type": "Prepare", "tx": "t1", "rm": "r1"})
    base = {
        "tmState": {"t1": "init"},
        "tmPrepared": {"t1": frozenset()},
        "tmLog": frozenset(),
        "tmUp": True,
        "rmState": {"t1": idle},
        "rmLog": {"r1": frozenset(), "r2": frozenset()},
        "rmUp": {"r1": True, "r2": True},
        "msgs": FnMap(),
    }
    begun = {**base, "tmState": {"t1": "preparing"}, "tmLog": frozenset({begin})}
    sent = {**begun, "msgs": FnMap({prepare: 1})}
    voted = {
        **begun,
        "rmState": {"t1": {**idle, "r1": "prepared"}},
        "rmLog": {"r1": frozenset({Record({"kind": "prepared", "tx": "t1"})}), "r2": frozenset()},
    }
    return [("Init", base), ("TMBegin", begun), ("TMSendPrepare", sent), ("RMRcvPrepare", voted)]


def _twopc_trace(lines: list[tuple[str, dict[str, Any]]]) -> Trace:
    header = Record({"spec": "TwoPhaseCommitMsg", "constants": {"RM": {"r1", "r2"}, "Tx": {"t1"}}})
    trace = make_trace(lines)
    return replace(trace, path="twopc.ndjson", header=header)


@pytest.fixture
def twopc_specs() -> None:
    if not (_TWOPC_SPECS / "twopc" / "TwoPhaseCommitMsgTrace.tla").is_file():
        pytest.skip("specs/twopc/TwoPhaseCommitMsgTrace.tla is not written yet")


@pytest.mark.usefixtures("twopc_specs")
def test_validate_accepts_a_hand_written_twopc_trace() -> None:
    verdict = validate_trace(_twopc_trace(_twopc_lines()))
    assert verdict.accepted, verdict.report()
    assert verdict.steps == 4


@pytest.mark.usefixtures("twopc_specs")
def test_validate_rejects_a_twopc_vote_that_skips_the_log() -> None:
    lines = _twopc_lines()
    action, voted = lines[-1]
    lines[-1] = (action, {**voted, "rmLog": {"r1": frozenset(), "r2": frozenset()}})
    verdict = validate_trace(_twopc_trace(lines))
    d = verdict.divergence
    assert d is not None
    assert (d.step, d.action, d.enabled) == (4, "RMRcvPrepare", True)
    assert [x.name for x in d.diffs] == ["rmLog"]
    assert "logged lacks it" in verdict.report()


# --- many traces in one TLC run ---------------------------------------------


def test_validate_traces_gives_each_trace_of_a_batch_its_own_verdict(spec_dir: Path) -> None:
    changed = list(GOOD)
    changed[3] = ("Inc", state(3, ("a", B), a=NASTY))
    renamed = list(GOOD)
    renamed[1] = ("Reset", GOOD[1][1])
    eval_error = list(GOOD)
    eval_error[1] = ("Inc", {**state(1, ("a",)), "count": "one"})
    bad_init = [("Init", state(1, ()))]
    unknown = [GOOD[0], ("Steal", GOOD[1][1])]
    traces = [GOOD, changed, GOOD[:2], eval_error, renamed, bad_init, unknown, GOOD]
    heard: list[int] = []
    verdicts = validate_traces(
        [make_trace(t) for t in traces],
        spec_dirs=[spec_dir],
        on_verdict=lambda index, _verdict: heard.append(index),
    )
    assert sorted(heard) == list(range(len(traces)))
    got = [
        (v.accepted, v.divergence and (v.divergence.step, v.divergence.reason)) for v in verdicts
    ]
    assert got == [
        (True, None),
        (False, (4, "step")),
        (True, None),
        (False, (2, "eval_error")),
        (False, (2, "step")),
        (False, (1, "init")),
        (False, (2, "unknown_action")),
        (True, None),
    ]
    # The batch's verdicts are the ones each trace gets alone.
    for trace, verdict in zip(traces, verdicts, strict=True):
        alone = check(make_trace(trace), spec_dir)
        assert alone.accepted == verdict.accepted
        assert alone.divergence == verdict.divergence


def test_validate_traces_in_several_batches_and_jobs_agree_with_one_batch(spec_dir: Path) -> None:
    changed = list(GOOD)
    changed[2] = ("Claim", state(1, ("a",), a="x"))
    traces = [make_trace(t) for t in (GOOD, changed, GOOD[:3], changed, GOOD)]
    one = validate_traces(traces, spec_dirs=[spec_dir], explain=False)
    many = validate_traces(traces, spec_dirs=[spec_dir], explain=False, jobs=2, batch_steps=4)
    assert [v.accepted for v in one] == [True, False, True, False, True]
    assert [(v.accepted, v.divergence) for v in one] == [(v.accepted, v.divergence) for v in many]


# --- partial logs -----------------------------------------------------------


def _without(values: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k not in names}


def test_validate_leaves_omitted_variables_to_the_spec(spec_dir: Path) -> None:
    # The template reads a Claim's owner from the line, so owner stays logged.
    partial = [(a, _without(v, "log")) for a, v in GOOD]
    assert check(make_trace(partial), spec_dir).accepted
    # Only the count on every line but the first: still a behaviour.
    counts = [GOOD[0]] + [
        (a, _without(v, "log") if a == "Claim" else {"count": v["count"]}) for a, v in GOOD[1:]
    ]
    assert check(make_trace(counts), spec_dir).accepted


def test_validate_partial_log_still_rejects_what_the_logged_variables_show(
    spec_dir: Path,
) -> None:
    bad = [(a, _without(v, "log")) for a, v in GOOD]
    bad[3] = ("Inc", {"count": 3})
    verdict = check(make_trace(bad), spec_dir)
    d = verdict.divergence
    assert d is not None
    assert (d.step, d.action, d.reason) == (4, "Inc", "step")
    assert [(x.name, x.logged, x.allowed[0]) for x in d.diffs] == [("count", 3, 2)]
    assert d.variables == 1


def test_validate_partial_log_follows_every_candidate_state(spec_dir: Path) -> None:
    # Line 2 leaves out who incremented: both Inc("a") and Inc(B) fit, and
    # only the second candidate explains line 3. Following one candidate and
    # giving up at its dead end would reject a behaviour.
    lines = [
        GOOD[0],
        ("Inc", {"count": 1}),
        ("Claim", state(1, (B,), a="x")),
    ]
    assert check(make_trace(lines), spec_dir).accepted


def test_validate_partial_log_reports_all_candidates_of_the_last_matched_line(
    spec_dir: Path,
) -> None:
    lines = [GOOD[0], ("Inc", {"count": 1}), ("Claim", state(1, ("zzz",), a="x"))]
    verdict = check(make_trace(lines), spec_dir)
    d = verdict.divergence
    assert d is not None and d.step == 3
    assert d.last_states == 2
    assert "one of 2 candidates" in verdict.report()


def test_validate_line_without_an_action_may_be_any_action(spec_dir: Path) -> None:
    anonymous = [(a if i in (0, 3) else None, v) for i, (a, v) in enumerate(GOOD)]
    assert check(make_trace(anonymous), spec_dir).accepted
    bad = list(anonymous)
    bad[2] = (None, state(5, ("a",), a=NASTY))
    verdict = check(make_trace(bad), spec_dir)
    assert verdict.divergence is not None and verdict.divergence.step == 3
    assert "(any action)" in verdict.report()


# --- the report -------------------------------------------------------------


def test_validate_report_shows_the_last_matched_state_and_the_regenerate_command(
    spec_dir: Path,
) -> None:
    bad = list(GOOD)
    bad[3] = ("Inc", state(3, ("a", B), a=NASTY))
    trace = make_trace(bad)
    assert trace.header is not None
    command = "tlasim run toy --seed 7 --trace {trace}"
    header = Record({**trace.header, "seed": 7, "reproduce": command})
    trace = replace(trace, header=header, path="out dir/toy.ndjson")
    verdict = check(trace, spec_dir)
    report = verdict.report()
    assert "last matched state, line 4:" in report
    assert "    count = 1" in report
    assert "seed: 7" in report
    assert "regenerate: tlasim run toy --seed 7 --trace 'out dir/toy.ndjson'" in report
    data = json.loads(json.dumps(verdict.to_json()))
    assert data["accepted"] is False
    assert data["seed"] == 7
    assert data["divergence"]["line"] == 5
    assert data["divergence"]["action"] == "Inc"
    assert data["divergence"]["last_line"] == 4
    assert data["divergence"]["last_state"]["count"] == 1
    assert data["divergence"]["enabled"] is True
    assert data["divergence"]["diffs"][0]["variable"] == "count"
    assert data["divergence"]["diffs"][0]["logged"] == 3
    assert data["divergence"]["diffs"][0]["allowed"] == 2


def test_validate_traces_isolates_an_evaluation_error_in_init(spec_dir: Path) -> None:
    # An error while computing initial states names no trace, so the batch
    # is halved until the culprit is alone; the other traces keep their verdicts.
    bad_init = [("Init", {**state(0, ()), "count": "zero"}), *GOOD[1:]]
    traces = [GOOD, GOOD[:3], bad_init, GOOD]
    verdicts = validate_traces([make_trace(t) for t in traces], spec_dirs=[spec_dir])
    assert [v.accepted for v in verdicts] == [True, True, False, True]
    d = verdicts[2].divergence
    assert d is not None and (d.step, d.reason) == (1, "eval_error")
    assert d.tlc_error


def test_a_spec_assert_that_fails_on_one_trace_rejects_that_trace_alone(
    tmp_path: Path,
) -> None:
    # A failed Assert (which a PlusCal `assert` becomes) stops TLC for the
    # whole batch, printing no state; the trace it belongs to is found as an
    # evaluation error's is, and the others keep their verdicts.
    toy = tmp_path / "toy"
    toy.mkdir()
    asserting = 'Reset == count > 0 /\\ Assert(count # 2, "reset from two") /\\'
    (toy / "Counter.tla").write_text(
        _COUNTER.replace("EXTENDS Naturals, Sequences", "EXTENDS Naturals, Sequences, TLC")
        .replace("Reset == count > 0 /\\", asserting)
    )
    (toy / "CounterTrace.tla").write_text(_TEMPLATE)
    from_one = [GOOD[0], GOOD[1], ("Reset", state(0, ("a",)))]
    traces = [from_one, GOOD, GOOD[:3]]
    verdicts = validate_traces([make_trace(t) for t in traces], spec_dirs=[tmp_path])
    got = [
        (v.accepted, v.divergence and (v.divergence.step, v.divergence.reason)) for v in verdicts
    ]
    # Reset is line 5 of GOOD, from a count of two.
    assert got == [(True, None), (False, (5, "eval_error")), (True, None)]
    assert "reset from two" in (verdicts[1].divergence.tlc_error or "")
