"""The specs on disk: find a spec and its trace template, and run TLC on every
model in specs/manifest.json to compare with what the manifest expects.

Theory of operation: a trace names its spec module; `find_spec` looks for
`<spec>.tla` and the template `<spec>Trace.tla` beside it, and
`load_trace_spec` reads what the validator needs from their source (the
variables, the constants, the template's TraceActionNames).

The manifest records, for each model, the outcome TLC must reach (a clean
run, or the named invariant or property violated, or the named Assert
failed, or a deadlock or liveness failure) and, when given, the exact number
of distinct states. TLC runs with one worker, so the counts are
deterministic, and a changed count is the first sign that a spec drifted.
This module reads specs and runs TLC; it never edits a spec.

Manifest schema (paths relative to the manifest's folder):

    {"schema": 1, "checks": [{"name": "twopc-msg", "module": "twopc/MC.tla",
      "config": "twopc/MC.cfg", "expect": "ok", "distinct_states": 1234,
      "violated": "Consistent", "slow": false}]}
"""

from __future__ import annotations

import importlib.resources
import json
import re
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from tlasim.protocols.checked import load_json
from tlasim.protocols.errors import SpecError, TraceFormatError
from tlasim.protocols.trace_template import known_spec_dirs, read_name_set
from tlasim.tracing.tla.derive_template import derived_template
from tlasim.tracing.tla.source import ModuleDecls, read_module
from tlasim.tracing.tla.tlc import Outcome, TLCResult, TLCTimeout, run_tlc
from tlasim.tracing.tla.tlc_progress import TLCProgress

__all__ = [
    "ManifestCheck",
    "SpecCheckResult",
    "TraceSpec",
    "check_specs",
    "find_spec",
    "load_trace_spec",
    "protocol_checks",
    "read_manifest",
]

_IDENT = re.compile(r"[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*")

_EXPECTABLE = frozenset(o for o in get_args(Outcome) if o != "error")
_KEYS = frozenset({"name", "module", "config", "expect", "violated", "distinct_states", "slow"})


@dataclass(frozen=True, slots=True)
class ManifestCheck:
    """One entry of the manifest, its paths resolved against the manifest's folder."""

    name: str
    module: Path
    config: Path
    expect: Outcome
    violated: str | None
    distinct_states: int | None
    slow: bool


@dataclass(frozen=True, slots=True)
class SpecCheckResult:
    """One check run: what TLC found beside what the manifest expected."""

    check: ManifestCheck
    outcome: Outcome
    violated: str | None
    distinct_states: int | None
    seconds: float
    problems: tuple[str, ...]  # empty when the check passed
    tlc_error: str  # TLC's error text when the outcome is "error"
    unfinished: str | None = None  # "did not finish in S s (...)" when stopped by --time

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def name(self) -> str:
        return self.check.name

    @property
    def expected(self) -> str:
        """What the manifest expects, e.g. "invariant Consistent, 1234 states"."""
        c = self.check
        return _describe(c.expect, c.violated, c.distinct_states)

    @property
    def actual(self) -> str:
        """What TLC found, in the same words as `expected`."""
        if self.unfinished is not None:
            return self.unfinished
        return _describe(self.outcome, self.violated, self.distinct_states)

    def summary(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        text = f"{verdict} {self.name}: expected {self.expected}; got {self.actual}"
        text += f" ({self.seconds:.1f} s)"
        for problem in self.problems:
            text += f"\n  {problem}"
        if self.tlc_error:
            text += "\n  TLC said: " + self.tlc_error.strip().replace("\n", "\n    ")
        return text


def _describe(outcome: str, violated: str | None, distinct: int | None) -> str:
    text = outcome + (f" {violated}" if violated else "")
    return text + (f", {distinct} distinct states" if distinct is not None else "")


# --- finding a spec and its trace template ----------------------------------


@dataclass(frozen=True, slots=True)
class TraceSpec:
    """A spec module and its trace template, read for the trace validator."""

    name: str
    module: Path
    template: Path
    decls: ModuleDecls  # the spec's, merged over the local modules it EXTENDS
    definitions: frozenset[str]  # the spec's and the template's
    actions: tuple[str, ...]


def _default_spec_dirs() -> list[Path]:
    # The shipped specs and those of every protocol loaded (a user's own).
    return list(known_spec_dirs())


def find_spec(name: str, spec_dirs: Sequence[Path] | None = None) -> tuple[Path, Path]:
    """Find `<name>.tla` and its trace template `<name>Trace.tla` under spec_dirs.

    The first folder (searched recursively) that holds the module wins; the
    template must be in the module's own folder, or it is derived from the
    spec (tracing.tla.derive_template). Raises SpecError.
    """
    if _IDENT.fullmatch(name) is None:
        raise TraceFormatError(f"spec name {name!r} is not a TLA+ module name")
    dirs = list(spec_dirs) if spec_dirs is not None else _default_spec_dirs()
    for folder in dirs:
        found = sorted(Path(folder).rglob(f"{name}.tla"))
        if len(found) > 1:
            raise SpecError(f"{name}.tla is in more than one place under {folder}: {found}")
        if found:
            template = found[0].with_name(f"{name}Trace.tla")
            if not template.is_file():
                template = derived_template(found[0])
            return found[0], template
    hint = ("; the specs of a protocol of your own are found once tlasim knows the "
            "protocol (its tlasim.protocols entry point, or TLASIM_PROTOCOLS), or give "
            "--spec-dir" if spec_dirs is None else "")
    raise SpecError(f"spec module {name}.tla not found under {', '.join(map(str, dirs))}{hint}")


def _read_decls(path: Path, seen: set[str] | None = None) -> ModuleDecls:
    """Read a module's declarations, merged with those of the modules it
    EXTENDS that live in its folder (standard modules declare none we need)."""
    seen = seen if seen is not None else set()
    decls = read_module(path.read_text(encoding="utf-8"), str(path))
    seen.add(decls.name)
    constants, variables = list(decls.constants), list(decls.variables)
    definitions = set(decls.definitions)
    for parent in decls.extends:
        local = path.with_name(f"{parent}.tla")
        if parent not in seen and local.is_file():
            inherited = _read_decls(local, seen)
            constants.extend(inherited.constants)
            variables.extend(inherited.variables)
            definitions |= inherited.definitions
    return ModuleDecls(
        decls.name,
        decls.extends,
        tuple(dict.fromkeys(constants)),
        tuple(dict.fromkeys(variables)),
        frozenset(definitions),
    )


def load_trace_spec(name: str, spec_dirs: Sequence[Path] | None) -> TraceSpec:
    """Find and read the spec `name` and its template; SpecError if unusable."""
    module, template = find_spec(name, spec_dirs)
    decls = _read_decls(module)
    template_text = template.read_text(encoding="utf-8")
    template_decls = _read_decls(template)
    if template_decls.name != f"{name}Trace":
        raise SpecError(f"{template} declares module {template_decls.name}, not {name}Trace")
    definitions = decls.definitions | template_decls.definitions
    for needed in ("Init", "TraceAction"):
        if needed not in definitions:
            raise SpecError(f"{name} and its template define no {needed}")
    clashes = sorted(
        d
        for d in definitions | set(decls.variables) | {c for c, _ in decls.constants}
        if d in ("TraceLog", "TraceLogs") or d.startswith(("TraceConst_", "tlasim"))
    )
    if clashes:
        raise SpecError(f"{name} uses names the validator generates: {', '.join(clashes)}")
    if any(arity for _, arity in decls.constants):
        raise SpecError(f"{name} declares operator constants, which a trace cannot give")
    actions = read_name_set(template_text, "TraceActionNames", str(template))
    return TraceSpec(name, module, template, decls, definitions, actions)


def _default_manifest() -> Path:
    return Path(str(importlib.resources.files("tlasim.specs"))) / "manifest.json"


def protocol_checks(protocol: str, spec_dirs: Sequence[Path]) -> tuple[Path, list[str]]:
    """The manifest that holds a protocol's TLC checks, and their names.

    A protocol's manifest is the `manifest.json` in its spec folders. A
    user's protocol owns its manifest, so every check in it is the
    protocol's. The manifest shipped with tlasim holds all of tlasim's
    protocols, each check named after its protocol (`twopc-safety`), so
    there the protocol's are those named `PROTOCOL` or `PROTOCOL-...`.
    Raises SpecError when there is no manifest, or no check of the protocol.
    """
    found = [folder / "manifest.json" for folder in spec_dirs
             if (folder / "manifest.json").is_file()]
    if not found:
        folders = ", ".join(str(folder) for folder in spec_dirs)
        raise SpecError(f"protocol {protocol} has no manifest.json in its spec folders "
                        f"({folders}): write one (see README, How to add a protocol) "
                        "or name it with --manifest")
    manifest = found[0]
    checks = read_manifest(manifest)
    if manifest.resolve() == _default_manifest().resolve():
        names = [c.name for c in checks
                 if c.name == protocol or c.name.startswith(f"{protocol}-")]
    else:
        names = [c.name for c in checks]
    if not names:
        raise SpecError(f"{manifest} holds no check of protocol {protocol}")
    return manifest, names


def _field(entry: dict[str, Any], key: str, kind: type, where: str, required: bool = True) -> Any:
    if key not in entry:
        if required:
            raise SpecError(f"{where}: missing {key!r}")
        return None
    value = entry[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SpecError(f"{where}: {key!r} must be a {kind.__name__}, not {value!r}")
    return value


def read_manifest(manifest: Path | None = None) -> list[ManifestCheck]:
    """Read and check the manifest; SpecError names what is wrong and where."""
    path = Path(manifest) if manifest is not None else _default_manifest()
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise SpecError(f"spec manifest {path} does not exist") from None
    except OSError as exc:
        raise SpecError(f"spec manifest {path} is not readable: {exc}") from None
    data = load_json(text, f"spec manifest {path}", error=SpecError, problem="not readable JSON")
    if not isinstance(data, dict) or data.get("schema") != 1:
        raise SpecError(f'{path}: expected an object with "schema": 1')
    entries = data.get("checks")
    if not isinstance(entries, list):
        raise SpecError(f'{path}: "checks" must be a list')
    checks: list[ManifestCheck] = []
    for i, entry in enumerate(entries):
        where = f"{path}: checks[{i}]"
        if not isinstance(entry, dict):
            raise SpecError(f"{where} must be an object")
        unknown = sorted(set(entry) - _KEYS)
        if unknown:
            raise SpecError(f"{where}: unknown keys {unknown}")
        name = _field(entry, "name", str, where)
        expect = _field(entry, "expect", str, where)
        if expect not in _EXPECTABLE:
            raise SpecError(f"{where}: expect must be one of {sorted(_EXPECTABLE)}, not {expect!r}")
        module = path.parent / _field(entry, "module", str, where)
        config = path.parent / _field(entry, "config", str, where)
        for file in (module, config):
            if not file.is_file():
                raise SpecError(f"{where} ({name}): {file} does not exist")
        distinct = _field(entry, "distinct_states", int, where, required=False)
        checks.append(
            ManifestCheck(
                name=name,
                module=module,
                config=config,
                expect=expect,
                violated=_field(entry, "violated", str, where, required=False),
                distinct_states=distinct,
                slow=bool(_field(entry, "slow", bool, where, required=False)),
            )
        )
    names = [c.name for c in checks]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SpecError(f"{path}: check names repeated: {duplicates}")
    return checks


def _compare(check: ManifestCheck, result: TLCResult) -> tuple[str, ...]:
    problems = []
    if result.outcome != check.expect:
        problems.append(f"outcome: expected {check.expect}, got {result.outcome}")
    elif check.violated is not None and result.violated != check.violated:
        problems.append(f"violated: expected {check.violated}, got {result.violated}")
    if check.distinct_states is not None and result.distinct_states != check.distinct_states:
        problems.append(
            f"distinct states: expected {check.distinct_states}, got {result.distinct_states}"
        )
    return tuple(problems)


def check_specs(
    manifest: Path | None = None,
    *,
    names: Sequence[str] | None = None,
    include_slow: bool = True,
    timeout_s: float | None = None,
    jobs: int = 1,
    on_event: Callable[[str, ManifestCheck, SpecCheckResult | None], None] | None = None,
    on_progress: Callable[[ManifestCheck, TLCProgress], None] | None = None,
) -> list[SpecCheckResult]:
    """Run the manifest's checks (those named, or all; slow ones unless told
    not to) and return one result per check, in manifest order.

    `jobs` TLC processes run at once, each with one worker: the checks are
    independent, and one TLC per core beats one TLC with many workers on
    models this small.

    Raises SpecError for a missing or corrupt manifest, a missing file, or a
    name the manifest does not hold; ToolNotFound without Java or TLC.
    `on_event("start", check, None)` and `on_event("done", check, result)`
    are called (from the threads that run TLC) as each check starts and ends;
    `on_progress(check, figures)` about once a second while TLC searches.
    """
    checks = read_manifest(manifest)
    if names is not None:
        unknown = sorted(set(names) - {c.name for c in checks})
        if unknown:
            raise SpecError(
                f"no check named {', '.join(unknown)}; known: {', '.join(c.name for c in checks)}"
            )
        checks = [c for c in checks if c.name in set(names)]
    if not include_slow:
        checks = [c for c in checks if not c.slow]
    if jobs < 1:
        raise SpecError(f"jobs={jobs}: must be at least 1")
    with tempfile.TemporaryDirectory(prefix="tlasim-speccheck-") as tmp:

        def run(check: ManifestCheck) -> SpecCheckResult:
            if on_event is not None:
                on_event("start", check, None)
            result = run_one(check)
            if on_event is not None:
                on_event("done", check, result)
            return result

        def run_one(check: ManifestCheck) -> SpecCheckResult:
            try:
                result = run_tlc(
                    check.module, check.config, workdir=Path(tmp), timeout_s=timeout_s,
                    on_progress=None if on_progress is None
                    else (lambda figures: on_progress(check, figures)))
            except TLCTimeout as stopped:
                # Too large for the time given: a result to show (with the
                # last figures TLC printed), not an error that hides the rest.
                unfinished = f"did not finish in {stopped.seconds:g} s" + (
                    f" ({stopped.figures})" if stopped.figures else "")
                return SpecCheckResult(
                    check=check, outcome="error", violated=None, distinct_states=None,
                    seconds=stopped.seconds, problems=(unfinished,), tlc_error="",
                    unfinished=unfinished)
            return SpecCheckResult(
                check=check,
                outcome=result.outcome,
                violated=result.violated,
                distinct_states=result.distinct_states,
                seconds=result.seconds,
                problems=_compare(check, result),
                tlc_error=result.error_text() if result.outcome == "error" else "",
            )

        # Threads suffice: each check is a TLC subprocess. map keeps manifest order.
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(run, checks))


def record_counts(manifest: Path | None, results: Sequence[SpecCheckResult]) -> list[str]:
    """Write each finished check's measured distinct-state count into the
    manifest it came from (`check-specs --record`); return the names written.

    Only a check that TLC finished with the outcome the manifest expects is
    recorded: a count is worth keeping only for the model the manifest
    describes. A check expected to find a violation gets a count only if its
    entry already holds one: where TLC stops depends on its search order, so
    pinning it is the author's choice, not a side effect of sizing the rest.
    The file is edited in place, entry by entry, so its layout, order and
    every other key stay as the user wrote them.
    """
    path = Path(manifest) if manifest is not None else _default_manifest()
    text = path.read_text(encoding="utf-8")
    recorded = []
    for result in results:
        check = result.check
        if (result.unfinished is not None or result.distinct_states is None
                or result.outcome != check.expect
                or (check.violated is not None and result.violated != check.violated)
                or (check.expect != "ok" and check.distinct_states is None)):
            continue
        text, changed = _set_count(text, check.name, result.distinct_states)
        if changed:
            recorded.append(check.name)
    if recorded:
        json.loads(text)  # never write a manifest that does not read back
        scratch = path.with_name(f".{path.name}.tmp")
        scratch.write_text(text, encoding="utf-8")
        scratch.replace(path)
    return recorded


def _set_count(text: str, name: str, count: int) -> tuple[str, bool]:
    """`text` with the entry named `name` holding `"distinct_states": count`.
    Entries are flat objects, so an entry runs from its name to the next `}`."""
    found = re.search(r'"name"\s*:\s*' + re.escape(json.dumps(name)) + r'[^}]*\}', text)
    if found is None:
        raise SpecError(f"cannot find the check {name} in the manifest text to record its count")
    entry = found.group(0)
    if re.search(r'"distinct_states"\s*:\s*\d+', entry):
        updated = re.sub(r'("distinct_states"\s*:\s*)\d+', rf"\g<1>{count}", entry)
    else:
        updated = entry[:-1].rstrip() + f', "distinct_states": {count}' + "}"
    return text[:found.start()] + updated + text[found.end():], updated != entry
