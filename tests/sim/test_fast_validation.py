"""The validator's two methods give the same verdict for every trace.

`method="fast"` (binary values read by tlasim's TLC override, a first TLC run
that prints only the traces reaching their end, a second for the others) and
`method="reference"` (every value as TLA+ text, one run) must agree on each
trace of a corpus that mixes simulation runs, mutations and bug variants:
accepted or not, and if not, the line, the step, the action and the reason.

The corpora are built once per module with a fixed seed, so a mismatch
reproduces: `tlasim corpus PROTOCOL --count N --seed 8128 [--partial]`.
TLASIM_EQUALITY_TRACES scales the traces per corpus (default 20); a note that
compares the methods at scale runs it at a few hundred.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from tlasim.sim.corpus import CorpusOptions, build_corpus
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import Trace, read_trace, write_trace
from tlasim.tracing.validation.explain import Divergence
from tlasim.tracing.validation.validator import Verdict, validate_traces
from tlasim.tracing.values import Record

pytestmark = pytest.mark.slow

TRACES = int(os.environ.get("TLASIM_EQUALITY_TRACES", "20"))
CORPUS_SEED = 8128
# (protocol, partial): every protocol, and partial logs on one.
CORPORA = [("twopc", False), ("shardsplit", False), ("snapshot", False), ("twopc", True)]
_SECONDS = re.compile(r"TLC(?: time:)? \d+(?:\.\d+)? s")
_SHOWN_MISMATCHES = 20


@dataclass(frozen=True, slots=True)
class Compared:
    protocol: str
    partial: bool
    manifest: dict[str, Any]
    files: list[Path]
    fast: list[Verdict]
    reference: list[Verdict]


@pytest.fixture(scope="module", params=CORPORA, ids=lambda c: f"{c[0]}{'-partial' if c[1] else ''}")
def compared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Compared:
    protocol, partial = request.param
    out = tmp_path_factory.mktemp(f"corpus-{protocol}") / "corpus"
    manifest = build_corpus(
        CorpusOptions(protocol, TRACES, seed=CORPUS_SEED, invalid_ratio=0.5, partial=partial),
        out,
        jobs=2,
    )
    files = [out / entry["file"] for entry in manifest["files"]]
    fast = validate_traces(files, explain=False, jobs=2, method="fast")
    reference = validate_traces(files, explain=False, jobs=2, method="reference")
    return Compared(protocol, partial, manifest, files, fast, reference)


def _without_seconds(text: str) -> str:
    # Summaries hold no TLC time today; reports do, and it differs by method.
    return _SECONDS.sub("TLC _ s", text)


def differences(fast: Verdict, reference: Verdict) -> list[str]:
    """What differs between two verdicts on one trace, each as `field: fast != reference`."""
    pairs: list[tuple[str, Any, Any]] = [
        ("accepted", fast.accepted, reference.accepted),
        ("path", fast.path, reference.path),
        ("steps", fast.steps, reference.steps),
        ("spec", fast.spec, reference.spec),
        ("error", fast.error, reference.error),
        ("summary", _without_seconds(fast.summary()), _without_seconds(reference.summary())),
        ("ran TLC", fast.tlc_seconds > 0, reference.tlc_seconds > 0),
    ]
    a, b = fast.divergence, reference.divergence
    pairs.append(("divergence", a is None, b is None))
    if a is not None and b is not None:
        pairs += [
            ("line", a.line, b.line),
            ("step", a.step, b.step),
            ("action", a.action, b.action),
            ("reason", a.reason, b.reason),
            ("message", a.message, b.message),
            ("params", a.params, b.params),
            ("last_line", a.last_line, b.last_line),
            ("variables", a.variables, b.variables),
            # TLC's own words name positions in the generated modules, which
            # differ by method: only whether TLC raised an error must agree.
            ("tlc_error given", a.tlc_error is not None, b.tlc_error is not None),
            ("divergence (but TLC's words)", replace(a, tlc_error=None),
             replace(b, tlc_error=None)),
        ]
        if a.tlc_error is None and b.tlc_error is None:
            pairs.append(("report", _without_seconds(fast.report()),
                          _without_seconds(reference.report())))
    return [f"{name}: {x!r} != {y!r}" for name, x, y in pairs if x != y]


def counts(verdicts: list[Verdict]) -> Counter[str]:
    """Verdicts by kind: accepted, rejected by reason, or not checked."""
    kinds: Counter[str] = Counter()
    for v in verdicts:
        if v.error is not None:
            kinds["not checked"] += 1
        elif v.divergence is None:
            kinds["accepted"] += 1
        else:
            kinds[f"rejected: {v.divergence.reason}"] += 1
    return kinds


def test_fast_and_reference_methods_give_identical_verdicts_on_every_trace(
    compared: Compared,
) -> None:
    assert len(compared.fast) == len(compared.reference) == len(compared.files) == TRACES
    mismatches = []
    for path, fast, reference in zip(
        compared.files, compared.fast, compared.reference, strict=True
    ):
        found = differences(fast, reference)
        if found:
            mismatches.append(f"{path.name}:\n    " + "\n    ".join(found))
    kinds = counts(compared.fast)
    print(f"\n{compared.protocol}{' (partial)' if compared.partial else ''}: "
          f"{len(compared.files)} traces, {dict(sorted(kinds.items()))}, "
          f"{len(mismatches)} mismatches")
    assert not mismatches, (
        f"{len(mismatches)} of {len(compared.files)} traces got different verdicts "
        f"(corpus seed {CORPUS_SEED}):\n" + "\n".join(mismatches[:_SHOWN_MISMATCHES])
    )


def test_corpus_gives_both_methods_accepted_and_rejected_traces_to_agree_on(
    compared: Compared,
) -> None:
    # Identical verdicts mean little if every trace was accepted, or every
    # one refused before TLC.
    kinds = counts(compared.reference)
    assert kinds["accepted"] > 0
    assert sum(n for kind, n in kinds.items() if kind.startswith("rejected")) > 0
    assert kinds["not checked"] == 0
    # Rejections that only TLC could find, at a line after the first.
    assert any(
        v.divergence is not None and v.divergence.step > 1 and v.tlc_seconds > 0
        for v in compared.reference
    )
    entries = compared.manifest["files"]
    assert {e["kind"] for e in entries} >= {"simulation", "mutation"}
    if compared.partial:
        assert any(e["partial"] for e in entries)


def test_corpus_labels_are_the_reference_verdicts(compared: Compared) -> None:
    # The corpus was labelled with the default method, "fast", in chunks:
    # its labels and first bad lines must be the reference method's too.
    for entry, reference in zip(compared.manifest["files"], compared.reference, strict=True):
        line = reference.divergence.line if reference.divergence else None
        assert (entry["label"] == "valid", entry["first_bad_line"]) == (
            reference.accepted, line
        ), entry["file"]


def test_differences_sees_a_changed_line_reason_or_acceptance() -> None:
    # No TLC: the comparison itself must catch what the methods could get wrong.
    rejected = Verdict(Path("t.ndjson"), False, 9, Divergence(
        5, 4, "TMCommit", Record({"tx": "t1"}), "step", "no step of the spec explains this line."
    ), 1.5, "TwoPhaseCommitMsg")
    assert differences(rejected, replace(rejected, tlc_seconds=0.5)) == []
    assert differences(rejected, replace(rejected, accepted=True, divergence=None))
    for change in ({"line": 6}, {"step": 5}, {"reason": "init"}, {"action": "TMAbort"}):
        assert rejected.divergence is not None
        other = replace(rejected, divergence=replace(rejected.divergence, **change))
        assert differences(rejected, other), change


# --- every reason, from traces made by hand -------------------------------------


def _with_step(trace: Trace, index: int, **change: Any) -> Trace:
    steps = list(trace.steps)
    steps[index] = replace(steps[index], **change)
    return replace(trace, steps=tuple(steps))


def _with_var(trace: Trace, index: int, name: str, value: Any) -> Trace:
    step = trace.steps[index]
    return _with_step(trace, index, vars=Record({**step.vars, name: value}))


def _hand_made(folder: Path) -> dict[str, Trace]:
    base = []
    for seed in (1, 2):
        path = folder / f"base-{seed}.ndjson"
        run_seed("twopc", seed, trace_path=path)
        base.append(read_trace(path))
    one = base[0]
    without_msgs = Record({k: v for k, v in one.steps[4].vars.items() if k != "msgs"})
    return {
        "valid-1": one,
        "valid-2": base[1],
        "init-values": _with_var(one, 0, "tmUp", False),
        # TLC cannot compare an integer with TRUE: an error in Init, which
        # names no trace, so the batch is halved down to this one.
        "init-eval-error": _with_var(one, 0, "tmUp", 7),
        # The same at a later line: TLC's error trace names the trace.
        "step-eval-error": _with_var(one, 3, "tmUp", "yes"),
        "step-values": _with_var(base[1], 3, "tmUp", False),
        "unknown-action": _with_step(one, 4, action="TMFly"),
        "first-not-init": replace(one, steps=one.steps[1:]),
        "extra-variable": _with_var(one, 1, "ghost", 1),
        "unholdable": _with_var(one, 1, "tmUp", 2**31),
        "action-omitted": _with_step(base[1], 4, action=None),
        "partial-line": _with_step(one, 4, vars=without_msgs),
    }


def test_fast_and_reference_agree_on_hand_made_traces_of_every_reason(tmp_path: Path) -> None:
    files = []
    for name, trace in _hand_made(tmp_path).items():
        path = tmp_path / f"{name}.ndjson"
        write_trace(trace, path, "ndjson")
        files.append(path)
    # One job: one batch holds every trace, so the error in Init halves it
    # with valid and rejected traces beside the culprit.
    fast, reference = (
        validate_traces(files, explain=False, jobs=1, keep_going=True, method=method)
        for method in ("fast", "reference")
    )
    mismatches = {
        path.name: found
        for path, a, b in zip(files, fast, reference, strict=True)
        if (found := differences(a, b))
    }
    assert not mismatches
    by_name = {path.stem: v for path, v in zip(files, reference, strict=True)}
    reasons = {
        name: (v.divergence.reason if v.divergence else "not checked" if v.error else "accepted")
        for name, v in by_name.items()
    }
    assert reasons == {
        "valid-1": "accepted",
        "valid-2": "accepted",
        "init-values": "init",
        "init-eval-error": "eval_error",
        "step-eval-error": "eval_error",
        "step-values": "step",
        "unknown-action": "unknown_action",
        "first-not-init": "first_action",
        "extra-variable": "variables",
        "unholdable": "not checked",
        "action-omitted": "accepted",
        "partial-line": "accepted",
    }
