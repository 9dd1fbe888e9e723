"""The run model behind `tlasim show` and `tlasim report`, and the trace facts it reads:
the faults that fired, the oracles' end record, messages matched send to delivery."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlasim.faults.plan import Crash, FaultPlan, Window
from tlasim.protocols.errors import TraceFormatError
from tlasim.sim import exitcodes
from tlasim.sim.cli.main import main
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.kernel.simulation import RunResult
from tlasim.sim.run.runner import run_seed
from tlasim.sim.view.html import embed_json, run_page
from tlasim.sim.view.model import build_run_view, diff_values
from tlasim.tracing.codec import END_EVENT, read_trace
from tlasim.tracing.values import Record


def _run(
    tmp_path: Path, protocol: str, seed: int, *, bug: str | None = None,
    options: SimOptions | None = None,
) -> tuple[Path, RunResult]:
    path = tmp_path / f"{protocol}-{seed}.ndjson"
    return path, run_seed(protocol, seed, bug=bug, options=options, trace_path=path).result


@pytest.mark.parametrize(("protocol", "seed"), [("twopc", 85), ("twopc", 3), ("shardsplit", 2),
                                                ("snapshot", 5)])
def test_messages_match_the_networks_own_counts(
    tmp_path: Path, protocol: str, seed: int
) -> None:
    path, result = _run(tmp_path, protocol, seed)
    view = build_run_view(read_trace(path))
    stats = result.stats
    delivered = [m for m in view.messages if m.delivered is not None]
    assert len(delivered) == stats.messages_delivered
    assert sum(m.lost is not None for m in view.messages) == stats.messages_lost
    assert sum(m.duplicate for m in view.messages) == stats.messages_duplicated
    for m in delivered:
        assert m.sent < m.delivered
        assert view.steps[m.delivered].node == m.dst
        assert m.src is not None and view.steps[m.sent].node in (m.src, "net")


def test_fired_faults_are_named_on_their_steps_and_the_rest_stay_unfired(tmp_path: Path) -> None:
    plan = FaultPlan(
        heal_tick=400,
        crashes=(Crash("tm", 0, restart_ticks=10, after_steps=2),),
        windows=(
            Window("loss", 0, 400, 1.0, links=(("tm", "r1"),), seed=1),
            # r1 never sends to r2 in two-phase commit: this window cannot fire.
            Window("loss", 0, 400, 1.0, links=(("r1", "r2"),), seed=2),
        ),
    )
    path, _ = _run(tmp_path, "twopc", 1, options=SimOptions(faults=plan))
    trace = read_trace(path)
    named = {name: [s for s in trace.steps if name in s.faults] for name in
             ("crashes/0", "windows/0", "windows/1")}
    assert [s.action for s in named["crashes/0"]] == ["TMCrash"]
    assert named["windows/0"] and all(s.action == "NetLose" for s in named["windows/0"])
    assert named["windows/1"] == []
    fired = {e.name: bool(e.fired) for e in build_run_view(trace).plan or ()}
    assert fired == {"heal": False, "crashes/0": True, "windows/0": True, "windows/1": False}
    view = build_run_view(trace)
    assert [(d.node, trace.steps[d.crashed].action) for d in view.downtimes] == [("tm", "TMCrash")]


def test_a_step_answering_a_timer_names_it(tmp_path: Path) -> None:
    path, _ = _run(tmp_path, "twopc", 96, bug="abort-after-prepare")
    steps = read_trace(path).steps
    timed = [s for s in steps if s.timer is not None]
    assert timed and all(s.node not in (None, "net") for s in timed)
    # A delivery answers a message, never a timer.
    assert not any(s.action.startswith(("RMRcv", "TMRcv")) for s in timed if s.action)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert sum("timer" in line for line in lines) == len(timed)


def test_a_failing_runs_end_record_places_the_oracles_failure(tmp_path: Path) -> None:
    path, result = _run(tmp_path, "twopc", 96, bug="abort-after-prepare")
    trace = read_trace(path)
    assert trace.end is not None
    assert trace.end.failing_step == result.failing_step
    view = build_run_view(trace)
    assert view.kind == "run" and "<h1>tlasim run: twopc seed 96</h1>" in run_page(view)
    assert view.oracle is not None
    assert view.steps[view.oracle.step].seq == result.failing_step
    assert view.oracle.text == result.failure


def test_a_trace_from_before_the_end_record_and_fault_names_still_reads(tmp_path: Path) -> None:
    path, _ = _run(tmp_path, "twopc", 85)
    old = tmp_path / "old.ndjson"
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["event"] == END_EVENT:
            continue
        record.pop("faults", None)
        lines.append(json.dumps(record))
    old.write_text("\n".join(lines) + "\n")
    view = build_run_view(read_trace(old))
    assert view.oracle is None and view.oracle_verdict is None
    assert not view.faults_recorded
    assert any("end record" in note for note in view.notes)


@pytest.mark.parametrize(("record", "problem"), [
    ({"event": "tla_trace", "seq": 0, "ts": 0, "action": "Init", "vars": {}, "faults": "x"},
     "faults must be a list"),
    ({"event": END_EVENT, "outcome": 3}, "outcome must be a string"),
    ({"event": END_EVENT, "outcome": "safety", "failing_step": -1}, "must not be negative"),
])
def test_malformed_fault_names_or_end_records_are_refused(
    tmp_path: Path, record: dict[str, object], problem: str
) -> None:
    path = tmp_path / "bad.ndjson"
    first = {"event": "tla_trace", "seq": 0, "ts": 0, "action": "Init", "vars": {}}
    path.write_text(json.dumps(first) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(TraceFormatError, match=problem):
        read_trace(path)


def test_no_step_may_follow_the_end_record(tmp_path: Path) -> None:
    path = tmp_path / "bad.ndjson"
    step = {"event": "tla_trace", "seq": 0, "ts": 0, "action": "Init", "vars": {}}
    end = {"event": END_EVENT, "outcome": "ok", "failure": None, "failing_step": None}
    path.write_text("\n".join(json.dumps(r) for r in (step, end, step)) + "\n")
    with pytest.raises(TraceFormatError, match="after the end record"):
        read_trace(path)


def test_diff_names_the_changed_field_and_the_set_elements() -> None:
    before = Record({"t1": Record({"r1": "working"}), "log": frozenset({"a"})})
    after = Record({"t1": Record({"r1": "prepared"}), "log": frozenset({"b"})})
    changes = diff_values(before, after, "v")
    assert [(c.path, c.old, c.new, c.is_set) for c in changes] == [
        ("v.log", '{"a"}', '{"b"}', True),
        ("v.t1.r1", '"working"', '"prepared"', False),
    ]


def test_embedded_json_cannot_end_its_script_element() -> None:
    hostile = {"s": "</script><script>alert(1)</script><!--", "t": "\u2028&"}
    text = embed_json(hostile)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == hostile


def test_a_report_page_needs_nothing_from_the_network(tmp_path: Path) -> None:
    path, _ = _run(tmp_path, "twopc", 85)
    page = run_page(build_run_view(read_trace(path)))
    for reference in ("http:", "https:", "src=", "href=", "@import", "url(http"):
        assert reference not in page.replace("http://www.w3.org/2000/svg", "")


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_show_prints_changes_and_marks_the_oracles_failing_step(tmp_path: Path) -> None:
    path, result = _run(tmp_path, "twopc", 96, bug="abort-after-prepare")
    code, output = _invoke("show", str(path), "--no-tlc", "--node", "r1")
    assert code == 0, output
    step = result.failing_step
    assert f"#{step} " in output and "<<< oracle: safety failure" in output
    assert "rmState." in output and " -> " in output
    assert all(line.split()[2] == "r1" for line in output.splitlines()
               if line.startswith("#") and f"#{step} " not in line)


@pytest.mark.parametrize("args", [
    ("show", "{missing}"),
    ("show", "{trace}", "--no-tlc", "--node", "nobody"),
    ("show", "{trace}", "--no-tlc", "--from", "9", "--to", "3"),
    ("report", "{trace}", "--no-tlc", "-o", "{trace}"),
    ("report", "{db}", "-o", "{out}"),
    ("campaign", "twopc", "--seeds", "0:1", "--report", "{out}"),
    ("run", "twopc", "--seed", "1", "--trace", "{out}", "--report", "{out}"),
])
def test_bad_input_to_show_and_report_is_a_usage_error(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    trace, _ = _run(tmp_path, "twopc", 85)
    db = tmp_path / "broken.db"
    db.write_bytes(b"SQLite format 3\x00" + b"\x07" * 200)
    names = {"missing": str(tmp_path / "none.ndjson"), "trace": str(trace), "db": str(db),
             "out": str(tmp_path / "r.html")}
    code, output = _invoke(*(a.format(**names) for a in args))
    assert code == exitcodes.USAGE, output
    assert "Traceback" not in output


def test_run_writes_its_report_with_tlcs_verdict_when_it_validated(tmp_path: Path) -> None:
    page = tmp_path / "96.html"
    code, output = _invoke("run", "twopc", "--seed", "96", "--bug", "abort-after-prepare",
                           "--validate", "--report", str(page))
    assert code == exitcodes.SAFETY, output
    assert f"report={page.resolve()}" in output
    text = page.read_text()
    # The oracles' and TLC's verdicts are in the page's data; TLC ran once.
    assert "agreement: t5 is aborted at r1" in text and "rejected by TwoPhaseCommitMsg" in text
    assert output.count("REJECTED") == 1
    # Without --validate the page says TLC was not asked, and nothing is left behind.
    quiet = tmp_path / "85.html"
    code, output = _invoke("run", "twopc", "--seed", "85", "--report", str(quiet))
    assert code == exitcodes.OK, output
    assert "TLC was not asked" in quiet.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["85.html", "96.html"]


def test_show_of_a_headerless_trace_says_why_tlc_did_not_run(tmp_path: Path) -> None:
    path, _ = _run(tmp_path, "twopc", 85)
    bare = tmp_path / "bare.ndjson"
    bare.write_text("\n".join(path.read_text().splitlines()[1:]) + "\n")
    code, output = _invoke("show", str(bare), "--to", "2")
    assert code == 0, output
    assert "TLC was not run: the trace has no header" in output


def test_report_of_a_database_groups_failures_by_property(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    code, output = _invoke("campaign", "twopc", "--seeds", "0:6", "--bug", "tm-forgets-decision",
                           "--db", str(db), "--validate", "none", "--shrink", "1",
                           "--trace-dir", str(tmp_path / "t"), "--report", str(tmp_path / "c.html"))
    assert code == exitcodes.SAFETY, output
    assert f"report:   {(tmp_path / 'c.html').resolve()}" in output
    page = (tmp_path / "c.html").read_text()
    failures = sqlite3.connect(db).execute("select count(*) from runs where outcome != 'ok'")
    assert f"durability ({failures.fetchone()[0]})" in page
    assert 'class="kind"' in page
