"""Trace corpora for testing trace validators: valid and invalid traces, labelled by TLC.

Theory of operation. A corpus of `count` files is planned from its seed
before anything runs: `count * invalid_ratio` files (rounded half up) are
made to be invalid, cycling through the mutations of `tracing.mutation.mutate` and (when the
protocol has any) its bug variants; the rest are simulation runs. The plan
is shuffled, so a file's name says nothing of its label. Each file then gets
its own `random.Random`, drawn from one master stream in file order (as
`sim.kernel.rng` does for a run's parts), which draws the run's seed and the
mutation's place. So the same seed, count, ratio and options give the same
bytes, in any process and under any `PYTHONHASHSEED`.

- A simulation file is one swarm run of the correct protocol.
- A mutation file is a swarm run with one mutation applied.
- A bug-variant file is a run of a bug variant that broke a safety oracle:
  seeds are scanned from a seed the plan draws, and the first failing one
  not yet used is taken (without a trace, so the scan costs little).

With `partial`, about half of the files are then stripped into a partial log
(`tracing.mutation.partial`). No label is guessed: files are written CHUNK_FILES at
a time, each chunk is checked by one batched `validate_traces` call (a few
TLC runs), and TLC's verdict is the label. A mutation TLC accepts is
labelled valid and keeps its mutation's name, so the share of invalid
labels can fall below `invalid_ratio`; the manifest's summary counts them.
The manifest is written last, so a corpus with a manifest is a corpus
whose every label TLC confirmed.

The manifest, `DIR/manifest.json` (docs/corpus.md shows an example):

    schema     1
    corpus     the parameters: protocol, spec, seed, count, invalid_ratio,
               partial, format, protocol_options, tool_version, mutations,
               bug_variants, and the command that builds it again
    summary    label counts: valid, invalid, and per source (simulation,
               bug-variant, each mutation) {"valid": n, "invalid": n}
    files      one entry per file, in file order:
      file            the file's name in DIR
      label           "valid" or "invalid": TLC's verdict
      kind            "simulation", "mutation" or "bug-variant"
      mutation        the mutation's name, or null
      detail          what the mutation did, in words, or null
      bug             the bug variant, or null
      partial         the partial-log shape (tracing.mutation.partial.STRIPPINGS), or null
      source_seed     the seed of the run the file comes from
      run_outcome     that run's oracle outcome: "ok", "safety" or "liveness"
      oracle_failure  the broken property the oracle named, or null
      spec            the TLA+ module the file was checked against
      steps           the number of step lines
      mutated_line    the file line the mutation touched, or null (for a
                      dropped line: the line now in its place)
      first_bad_line  the first file line no spec step explains, or null
                      when valid; the header, if any, is line 1 (msgpack:
                      record numbers, counted the same way)
      first_bad_step  the same line as a 1-based index among step lines
      tlc_reason      why TLC rejected that line (tracing.validation.explain.Reason), or null
      tlc_action      the action that line names, or null
"""

from __future__ import annotations

import json
import math
import random
import shlex
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tlasim.protocols import command_name, get_protocol
from tlasim.protocols.definition import ProtocolDefinition
from tlasim.protocols.errors import ConfigError, InternalError
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.kernel.simulation import OUTCOME_SAFETY
from tlasim.sim.run.runner import TOOL_VERSION, run_seed
from tlasim.tracing.codec import Trace, TraceFormat, read_trace, write_trace
from tlasim.tracing.mutation.mutate import MUTATIONS, mutate, renumbered
from tlasim.tracing.mutation.partial import STRIPPINGS, strip
from tlasim.tracing.outputs import write_output
from tlasim.tracing.tla.speccheck import load_trace_spec
from tlasim.tracing.tla.tlc import find_java, find_tla2tools
from tlasim.tracing.validation.validator import Verdict, validate_traces
from tlasim.tracing.values import Record

__all__ = [
    "BUG_VARIANT",
    "MANIFEST_NAME",
    "MANIFEST_SCHEMA",
    "CorpusOptions",
    "build_corpus",
    "reproduce_command",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_SCHEMA = 1
SIMULATION, MUTATION, BUG_VARIANT = "simulation", "mutation", "bug-variant"
# The variable that holds messages in flight, in every shipped protocol's spec.
NETWORK_VARIABLE = "msgs"
# Seeds a bug-variant file scans for a safety failure. Every shipped variant
# fails within its first 45 swarm seeds (tests/quality/test_bug_zoo.py).
BUG_SEED_BUDGET = 1000
# Source runs a mutation tries before giving up on finding a place for it.
MUTATION_ATTEMPTS = 20
# Files written, then checked, at a time: one validator call per chunk keeps
# memory flat (the validator holds every trace it is given), and a chunk is
# many TLC batches, so few JVM starts are added.
CHUNK_FILES = 250
PARTIAL_SHARE = 0.5  # with `partial`, the share of files stripped into partial logs
_SEED_LIMIT = 1 << 32  # source seeds are drawn below this


@dataclass(frozen=True, slots=True)
class CorpusOptions:
    """What a corpus is built from; the same options give the same corpus."""

    protocol: str
    count: int  # files in the corpus
    seed: int = 0
    invalid_ratio: float = 0.5  # share of files made to be invalid, before TLC has its say
    partial: bool = False
    trace_format: TraceFormat = "ndjson"
    protocol_overrides: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        get_protocol(self.protocol).make_options(self.protocol_overrides)
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ConfigError(f"--count {self.count!r}: must be an integer of at least 1")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"--seed {self.seed!r}: must be a non-negative integer")
        ratio = self.invalid_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 <= ratio <= 1:
            raise ConfigError(f"--invalid-ratio {ratio!r}: must be a number in [0, 1]")
        if self.trace_format not in ("ndjson", "msgpack"):
            raise ConfigError(f"--format {self.trace_format!r}: must be 'ndjson' or 'msgpack'")

    @property
    def invalid_count(self) -> int:
        """How many files are made to be invalid (half up, so 0.5 of 3 is 2)."""
        return math.floor(self.count * self.invalid_ratio + 0.5)


@dataclass(slots=True)
class _File:
    """One corpus file on its way to its manifest entry."""

    name: str
    kind: str
    rng: random.Random
    mutation: str | None = None
    bug: str | None = None
    source_seed: int = 0
    run_outcome: str = ""
    oracle_failure: str | None = None
    detail: str | None = None
    partial: str | None = None
    mutated_line: int | None = None
    checked: Trace | None = None  # the trace as written, for TLC to check

    def entry(self, spec: str, verdict: Verdict) -> dict[str, Any]:
        divergence = verdict.divergence
        return {
            "file": self.name,
            "label": "valid" if verdict.accepted else "invalid",
            "kind": self.kind,
            "mutation": self.mutation,
            "detail": self.detail,
            "bug": self.bug,
            "partial": self.partial,
            "source_seed": self.source_seed,
            "run_outcome": self.run_outcome,
            "oracle_failure": self.oracle_failure,
            "spec": spec,
            "steps": verdict.steps,
            "mutated_line": self.mutated_line,
            "first_bad_line": divergence.line if divergence else None,
            "first_bad_step": divergence.step if divergence else None,
            "tlc_reason": divergence.reason if divergence else None,
            "tlc_action": (divergence.action or None) if divergence else None,
        }


def build_corpus(
    options: CorpusOptions,
    out: Path,
    *,
    force: bool = False,
    jobs: int = 2,
    on_phase: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Write the corpus and its manifest into `out`; return the manifest.

    Refuses (ConfigError) an `out` that holds anything, unless `force`, which
    removes an earlier corpus there (its manifest and trace files) and
    nothing else. Java, TLC and the spec are looked for before any run
    (ToolNotFound, SpecError). `on_phase` hears what is being done.
    """
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs}: must be at least 1")
    definition = get_protocol(options.protocol)
    find_java()
    find_tla2tools()
    load_trace_spec(definition.spec_module, None)
    _prepare_out(out, force)
    tell = on_phase or (lambda _message: None)
    files = _plan(options, definition)
    entries: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tlasim-corpus-") as scratch:
        maker = _Maker(options, definition, out, Path(scratch))
        if any(f.bug is not None for f in files):
            tell("finding failing seeds of the bug variants")
            maker.find_bug_seeds(files)
        for start in range(0, len(files), CHUNK_FILES):
            chunk = files[start : start + CHUNK_FILES]
            span = f"traces {start + 1}-{start + len(chunk)} of {len(files)}"
            tell(f"writing {span}")
            for f in chunk:
                maker.make(f)
            tell(f"checking {span} with TLC")
            checked = [f.checked for f in chunk if f.checked is not None]
            if len(checked) != len(chunk):
                raise InternalError("a corpus file was not written")
            verdicts = validate_traces(checked, jobs=jobs, explain=False)
            for f, verdict in zip(chunk, verdicts, strict=True):
                entries.append(f.entry(definition.spec_module, verdict))
                f.checked = None
    manifest = _manifest(options, definition, entries)
    _write_json(out / MANIFEST_NAME, manifest)
    return manifest


# --- planning ---------------------------------------------------------------


def _plan(options: CorpusOptions, definition: ProtocolDefinition) -> list[_File]:
    """Every file's kind and random stream, decided before anything runs."""
    bugs = sorted(definition.bugs)
    invalid_kinds = [*MUTATIONS, *([BUG_VARIANT] if bugs else [])]
    kinds = [invalid_kinds[j % len(invalid_kinds)] for j in range(options.invalid_count)]
    kinds += [SIMULATION] * (options.count - options.invalid_count)
    master = random.Random(options.seed)
    master.shuffle(kinds)
    width = max(4, len(str(options.count)))
    files = []
    bug_files = 0
    for number, kind in enumerate(kinds, start=1):
        f = _File(
            name=f"trace-{number:0{width}d}.{options.trace_format}",
            kind=MUTATION if kind in MUTATIONS else kind,
            rng=random.Random(master.getrandbits(64)),
        )
        if kind in MUTATIONS:
            f.mutation = kind
        elif kind == BUG_VARIANT:
            f.bug = bugs[bug_files % len(bugs)]
            bug_files += 1
        files.append(f)
    return files


def _prepare_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise ConfigError(
                f"--out {out}: the folder is not empty; give a new or empty folder, or "
                "--force to replace the corpus in it"
            )
        for path in sorted(out.iterdir()):
            if path.is_file() and (path.name == MANIFEST_NAME or _is_corpus_trace(path.name)):
                path.unlink()
    out.mkdir(parents=True, exist_ok=True)


def _is_corpus_trace(name: str) -> bool:
    stem, _, suffix = name.partition(".")
    return stem.startswith("trace-") and stem[6:].isdigit() and suffix in ("ndjson", "msgpack")


# --- making the files -------------------------------------------------------


class _Maker:
    """Runs, mutates, strips and writes corpus files."""

    def __init__(
        self, options: CorpusOptions, definition: ProtocolDefinition, out: Path, scratch: Path
    ) -> None:
        self.options = options
        self.definition = definition
        self.out = out
        self.scratch = scratch
        self.sim_options = SimOptions(trace_format=options.trace_format)
        self.actions = sorted(definition.trace_actions)

    def _run(self, seed: int, bug: str | None, path: Path | None) -> Any:
        return run_seed(
            self.definition,
            seed,
            bug=bug,
            protocol_overrides=dict(self.options.protocol_overrides),
            options=self.sim_options,
            trace_path=path,
        ).result

    def find_bug_seeds(self, files: list[_File]) -> None:
        """Give each bug-variant file a seed whose run breaks a safety oracle.

        Each file scans from a seed its stream draws, skipping seeds another
        file of the same variant took. A variant that fails on no seed of
        the budget gets the scan's first seed, and TLC labels what it did.
        """
        taken: set[tuple[str, int]] = set()
        for f in files:
            if f.bug is None:
                continue
            start = f.rng.randrange(_SEED_LIMIT)
            f.source_seed = start
            for seed in range(start, start + BUG_SEED_BUDGET):
                if (f.bug, seed) in taken:
                    continue
                if self._run(seed, f.bug, None).outcome == OUTCOME_SAFETY:
                    f.source_seed = seed
                    break
            taken.add((f.bug, f.source_seed))

    def make(self, f: _File) -> None:
        """Write the file and set what TLC is to check of it."""
        final = self.out / f.name
        if self.options.partial and f.rng.random() < PARTIAL_SHARE:
            f.partial = f.rng.choice(STRIPPINGS)
        if f.mutation is not None:
            trace = self._mutant(f)
        else:
            if f.bug is None:
                f.source_seed = f.rng.randrange(_SEED_LIMIT)
            path = self.scratch / f.name
            result = self._run(f.source_seed, f.bug, path)
            f.run_outcome, f.oracle_failure = result.outcome, result.failure
            trace = read_trace(path)
        # Every file is written by one writer, so no file's layout (its header's
        # key order, an empty params) tells a made-up trace from a pristine one.
        if f.partial is not None:
            trace = strip(trace, f.partial, network=(NETWORK_VARIABLE,), seed=f.rng.getrandbits(32))
        trace = renumbered(replace(trace, header=_blind(trace.header)))
        write_trace(trace, final, self.options.trace_format, what="--out")
        f.checked = Trace(str(final), trace.header, trace.steps)

    def _mutant(self, f: _File) -> Trace:
        """A mutant of the file's kind, or, when the protocol's runs give that
        kind no place (a protocol without messages has none to deliver before
        its send), of the next kind that has one: a corpus of any protocol can
        be made. `f.mutation` ends naming the kind used."""
        assert f.mutation is not None
        kinds = [f.mutation, *(m for m in MUTATIONS if m != f.mutation)]
        for how in kinds:
            for _ in range(MUTATION_ATTEMPTS):
                f.source_seed = f.rng.randrange(_SEED_LIMIT)
                path = self.scratch / f.name
                result = self._run(f.source_seed, None, path)
                mutant = mutate(
                    read_trace(path),
                    how,
                    f.rng,
                    network=NETWORK_VARIABLE,
                    lose_actions=tuple(
                        a for a in (self.definition.net_lose_action,) if a is not None
                    ),
                    actions=self.actions,
                )
                if mutant is not None:
                    f.mutation = how
                    f.run_outcome, f.oracle_failure = result.outcome, result.failure
                    f.detail, f.mutated_line = mutant.detail, mutant.line
                    return mutant.trace
        raise ConfigError(
            f"{MUTATION_ATTEMPTS} runs of {self.options.protocol} gave no place for any "
            f"mutation ({', '.join(MUTATIONS)})"
        )


# --- the manifest -----------------------------------------------------------


def _manifest(
    options: CorpusOptions, definition: ProtocolDefinition, entries: list[dict[str, Any]]
) -> dict[str, Any]:
    sources: dict[str, dict[str, int]] = {
        name: {"valid": 0, "invalid": 0} for name in (SIMULATION, BUG_VARIANT, *MUTATIONS)
    }
    for e in entries:
        sources[e["mutation"] or e["kind"]][e["label"]] += 1
    valid = sum(e["label"] == "valid" for e in entries)
    return {
        "schema": MANIFEST_SCHEMA,
        "corpus": {
            "protocol": options.protocol,
            "spec": definition.spec_module,
            "seed": options.seed,
            "count": options.count,
            "invalid_ratio": options.invalid_ratio,
            "partial": options.partial,
            "format": options.trace_format,
            "protocol_options": dict(sorted(options.protocol_overrides.items())),
            "tool_version": TOOL_VERSION,
            "mutations": list(MUTATIONS),
            "bug_variants": sorted(definition.bugs),
            "reproduce": reproduce_command(options),
        },
        "summary": {"valid": valid, "invalid": len(entries) - valid, "by_source": sources},
        "files": entries,
    }


def reproduce_command(options: CorpusOptions) -> str:
    """The `tlasim corpus` command that builds this corpus again (into DIR)."""
    parts = [
        "tlasim", "corpus", command_name(options.protocol), "--count", str(options.count),
        "--seed", str(options.seed), "--invalid-ratio", str(options.invalid_ratio),
    ]
    if options.partial:
        parts.append("--partial")
    if options.trace_format != "ndjson":
        parts += ["--format", options.trace_format]
    for key, value in sorted(options.protocol_overrides.items()):
        parts += ["--set", f"{key}={value}"]
    return shlex.join(parts) + " --out DIR"


def _write_json(path: Path, document: Any) -> None:
    """Write whole or not at all: a reader never sees half a manifest."""
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    write_output(path, "--out", text.encode("utf-8"))


# What a validator needs from a header. The rest (options naming a bug
# variant, the seed, the command that regenerates the run) would tell a
# validator under test the label; the manifest keeps it instead.
_HEADER_KEPT = ("schema", "protocol", "spec", "constants", "variables")


def _blind(header: Record | None) -> Record | None:
    if header is None:
        return None
    return Record({k: v for k, v in header.items() if k in _HEADER_KEPT})
