"""One TLC per campaign, fed chunk after chunk (`tlc_stream.TraceStream`):
the same verdicts as a run per batch, and a failed run's traces still get
theirs."""

from __future__ import annotations

import time
from collections.abc import Hashable
from pathlib import Path

import pytest

from tlasim.protocols.errors import ToolNotFound
from tlasim.sim.run.runner import run_recorded
from tlasim.tracing.tla.binary import PreparedTrace, TraceBlobWriter
from tlasim.tracing.validation import tlc_stream
from tlasim.tracing.validation.tlc_batch import CheckSession, SessionResult

BUG = "abort-after-prepare"


def _prepared(seed: int, bug: str | None = None) -> PreparedTrace:
    _, prepared, refused = run_recorded("twopc", seed, bug=bug)
    assert prepared is not None, refused
    return prepared


def _verdicts(session: CheckSession, count: int) -> dict[Hashable, SessionResult]:
    got: dict[Hashable, SessionResult] = {}
    # Verdicts that never come are a hang, not a slow machine: fail, do not wait forever.
    deadline = time.monotonic() + 300
    while len(got) < count:
        assert time.monotonic() < deadline, f"no verdict for {count - len(got)} traces"
        result = session.next_result(1.0)
        if result is not None:
            assert result.tag not in got
            got[result.tag] = result
    return got


def _check(items: dict[Hashable, PreparedTrace], *, stream: bool,
           workdir: Path | None = None, runs: int = 1,
           long_run: bool = False) -> dict[Hashable, SessionResult]:
    with CheckSession(jobs=1, stream=stream, workdir=workdir, stream_runs=runs,
                      stream_long=long_run) as session:
        for tag, prepared in items.items():
            session.submit(tag, prepared)
        session.flush()
        return _verdicts(session, len(items))


# Two streams side by side; and one with Java's optimizing compiler, as a
# long campaign runs it.
@pytest.mark.parametrize(("runs", "long_run"), [(1, False), (2, False), (1, True)])
def test_the_stream_gives_each_trace_the_verdict_of_a_run_per_batch(
    monkeypatch: pytest.MonkeyPatch, runs: int, long_run: bool,
) -> None:
    # A third of the runs carry a bug TLC rejects, at lines far apart, in
    # chunks small enough that many start while others are under way.
    items: dict[Hashable, PreparedTrace] = {
        seed: _prepared(seed, BUG if seed % 3 == 0 else None) for seed in range(45)
    }
    batch = _check(items, stream=False)
    monkeypatch.setattr(tlc_stream, "STREAM_CHUNK_STEPS", 700)
    streamed = _check(items, stream=True, runs=runs, long_run=long_run)
    assert {t: r.accepted for t, r in streamed.items()} == {
        t: r.accepted for t, r in batch.items()
    }
    assert 0 < sum(r.accepted for r in streamed.values()) < len(items)
    assert all(r.unchecked is None for r in streamed.values())


def test_a_rejected_trace_settles_while_tlc_waits_for_more() -> None:
    # Its last line is levels beyond where TLC stops it; TLC, idle, says so.
    candidates = {seed: _prepared(seed, BUG) for seed in range(12)}
    batch = _check(dict(candidates), stream=False)
    rejected = [seed for seed, result in batch.items() if not result.accepted]
    assert rejected
    with CheckSession(jobs=1, stream=True) as session:
        session.submit(rejected[0], candidates[rejected[0]])
        session.flush()
        got = _verdicts(session, 1)
    assert not got[rejected[0]].accepted and got[rejected[0]].unchecked is None


def _bad_init() -> PreparedTrace:
    """A trace whose first line gives tmState an integer: comparing it with
    Init's function is an evaluation error, which stops a TLC run."""
    good = _prepared(0)
    writer = TraceBlobWriter()
    variables = {name: 1 if name == "tmState" else "x" for name in sorted(good.variables)}
    writer.step("Init", {}, variables)
    writer.step("TMCrash", {}, variables)
    return PreparedTrace(
        spec=good.spec, constants=good.constants, blob=writer.blob(), steps=2,
        first_action="Init", later_actions=frozenset({"TMCrash"}), variables=good.variables,
        full_logs=True,
    )


def test_an_evaluation_error_hands_the_streams_traces_to_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handed: list[list[Hashable]] = []
    run_now = CheckSession._run_now

    def spy(self: CheckSession, batch: list[tuple[Hashable, object]]) -> None:
        handed.append([tag for tag, _ in batch])
        run_now(self, batch)  # type: ignore[arg-type]

    monkeypatch.setattr(CheckSession, "_run_now", spy)
    items: dict[Hashable, PreparedTrace] = {seed: _prepared(seed) for seed in range(6)}
    items["bad"] = _bad_init()
    items.update({seed: _prepared(seed, BUG) for seed in (6, 9)})
    streamed = _check(items, stream=True)
    assert handed and "bad" in handed[0]
    batch = _check(items, stream=False)
    assert {t: r.accepted for t, r in streamed.items()} == {
        t: r.accepted for t, r in batch.items()
    }
    assert not streamed["bad"].accepted
    assert all(streamed[seed].accepted for seed in range(6))


def test_traces_after_a_failed_stream_go_to_a_new_one(tmp_path: Path) -> None:
    with CheckSession(jobs=1, stream=True, workdir=tmp_path) as session:
        session.submit("bad", _bad_init())
        session.flush()
        first = _verdicts(session, 1)
        session.submit(1, _prepared(1))
        session.flush()
        second = _verdicts(session, 1)
    assert not first["bad"].accepted and second[1].accepted
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("stream")]) == 2


def test_a_corrupt_chunk_leaves_its_traces_unchecked_not_judged(tmp_path: Path) -> None:
    good = _prepared(2)
    broken = PreparedTrace(
        spec=good.spec, constants=good.constants, blob=b"Q\x00\x00\x00\x01Z", steps=1,
        first_action="Init", later_actions=frozenset(), variables=good.variables,
        full_logs=True,
    )
    got = _check({"broken": broken, 2: good}, stream=True, workdir=tmp_path)
    # The chunk holding it cannot be read, so neither trace in it is judged:
    # the batch that checks them again cannot read it either.
    for tag in ("broken", 2):
        unchecked = got[tag].unchecked
        assert unchecked is not None and "malformed" in unchecked
        assert not got[tag].accepted


def test_no_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA", "/nonexistent/java")
    with pytest.raises(ToolNotFound):
        _check({1: _prepared(1)}, stream=True)
