"""The text of the TLA+ modules and config the validator generates for traces.

Theory of operation. `TraceData` holds a batch of traces: `TraceLogs[t]` is
trace t's sequence of `[action |-> ..., params |-> ..., vars |-> ...]`
records, one per step line, and `TraceConst_<name>` the constants they share.
A line's `vars` holds only the variables it logged; `action` is "" when it
logged none.

SANY's parse time is nearly all of a batch's cost, so the text is kept
small. Every long compound part of a value (a message, a transaction's
record) is a definition of its own, written once per batch, and each line's
`vars` is a definition written as what changed since the line before
(`[prev EXCEPT !.x = ...]`, with `(k :> v) @@ f`, `(s \\ {..}) \\cup {..}`
or `q \\o <<..>>` where that is shorter than the new value). The text grows
with the changes, not with the state's size. TLC evaluates these constant
definitions once, before the search, to exactly the logged values. No line
is long (LINE_CAP), since SANY's parse time grows with the square of a
line's length: lists break between items, long strings are pieces joined by
`\\o`.

`TraceCheck` walks every trace of the batch at once: Init picks the trace
(`TRACE_VAR`) and binds line 1; each step binds the next line's logged
variables and conjoins the template's `TraceAction`. A variable the line
did not log is left to the action (partial logs), and a line without an
action may be any action the template knows. When a state has no next step,
because its trace ended or because nothing explains the next line,
`tlasimEnd` prints `<<"tlasimEnd", trace, line>>` and stutters, so the run
never deadlocks and ends with one such print per dead end. A trace whose
furthest print is its last line is accepted; otherwise the line after the
furthest is the one nothing explains. A trace with no print at all has no
initial state. With partial logs a trace is a tree of candidate states, and
"furthest" is over all of them.

`TraceExplain` follows one trace to a given line, then takes one step of
the next line's action with every variable left free (`FREE_VAR` marks
those states), so the validator can set the logged values beside the ones
the spec allowed.

Safety: a trace's values reach TLA+ text only through `tla_literal.to_tla`,
and its names (variables, constants) only after the validator has checked
them to be the spec's own identifiers, so no trace can change what the
generated modules mean. Nothing from a trace is written into a comment. This
module only builds text; writing files and running TLC are the validator's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tlasim.protocols.errors import TraceFormatError
from tlasim.tracing.codec import Trace
from tlasim.tracing.tla.literal import is_field_name, to_tla
from tlasim.tracing.tla.speccheck import TraceSpec
from tlasim.tracing.values import MAX_DEPTH, FnMap, Record

__all__ = [
    "END_MARK",
    "FREE_VAR",
    "GENERATED",
    "LINE_CAP",
    "LINE_VAR",
    "LOADER_MODULE",
    "MAX_NESTING",
    "TRACE_VAR",
    "WriteCheckMemo",
    "check_writable",
    "config",
    "parse_end_marks",
    "trace_check",
    "trace_data",
    "trace_data_loaded",
    "trace_explain",
]

# Names the generated modules define; a spec that defines one too cannot be checked.
TRACE_VAR, LINE_VAR, FREE_VAR = "tlasimTrace", "tlasimLine", "tlasimFree"
END_MARK = "tlasimEnd"
# The module that declares TlasimLoad, read with tlasim's Java (tracing/tla/java).
LOADER_MODULE = "TlasimIO"
GENERATED = ("TraceData", "TraceCheck", "TraceExplain", "TraceStream", LOADER_MODULE)
_END_PRINT = re.compile(r'^<<"tlasimEnd", (\d+), (\d+)>>\r?$', re.MULTILINE)
# A compound part whose text is longer than this gets a definition of its own.
_NAMED_LENGTH = 12
_ATOMS = (str, int, bool)
# SANY's parse time grows with the square of a line's length (a 1 MB value on
# one line took minutes), so no line of the generated text is long: a list
# breaks after the separator that passes _BREAK_AT characters, and a string
# longer than _PIECE characters is written as pieces joined by `\o`, one
# piece a line. No line is longer than LINE_CAP.
_BREAK_AT = 400
_PIECE = 200
LINE_CAP = 1000
_SMALL_INT = 2**31 - 1


# Levels of sequences, sets and functions within one value: the readers'
# limit (tracing.values.MAX_DEPTH). The writers here and in
# `tracing.tla.literal` recurse once or more per level, so a deeper value
# would exhaust Python's stack; `check_writable` refuses it first.
MAX_NESTING = MAX_DEPTH


class WriteCheckMemo:
    """What `check_writable` has walked already: compound values by identity
    (each kept alive, with the depth it was walked from) and strings by value,
    since a trace repeats the same few strings thousands of times."""

    __slots__ = ("strings", "values")

    def __init__(self) -> None:
        self.values: dict[int, tuple[Any, int]] = {}
        self.strings: set[str] = set()


def check_writable(value: Any, where: str, seen: WriteCheckMemo | None = None) -> None:
    """Raise TraceFormatError, naming `where` and the path to the part, when the
    generated modules cannot hold `value`: a string or an integer TLC cannot
    hold, a type that is no TLA+ value, or nesting past MAX_NESTING levels.

    Walked without recursion, so any depth gets an error, not a crash. `seen`
    (a WriteCheckMemo) lets one trace's lines share the walk of the values
    they share; a value met again no deeper than before needs no second walk.
    """
    walked = WriteCheckMemo() if seen is None else seen
    memo, strings = walked.values, walked.strings
    # Most calls are for a variable the line before logged as this very object.
    hit = memo.get(id(value))
    if hit is not None and hit[0] is value:
        return
    # Each entry: a value, its depth, and its path as (segment, parent path).
    stack: list[tuple[Any, int, tuple[str, Any]]] = [(value, 0, (where, None))]
    while stack:
        v, depth, path = stack.pop()
        t = type(v)
        if t is bool or (t is int and 0 <= v <= _SMALL_INT) or (t is str and v in strings):
            continue
        hit = memo.get(id(v))
        if hit is not None and hit[0] is v and depth <= hit[1]:
            continue
        try:
            if t is tuple or t is frozenset or t is Record or t is FnMap:
                if depth >= MAX_NESTING:
                    raise TraceFormatError(
                        f"nested more than {MAX_NESTING} levels deep (sequences, sets and "
                        "functions within each other)"
                    )
                if t is tuple:
                    stack.extend((x, depth + 1, (f"[{i}]", path)) for i, x in enumerate(v))
                elif t is frozenset:
                    stack.extend((x, depth + 1, ("{element}", path)) for x in v)
                else:
                    for k, x in v.items():
                        stack.append((k, depth + 1, ("{key}", path)))
                        stack.append((x, depth + 1, (f"[{k!r:.60}]", path)))
            else:
                to_tla(v)
                if t is str:
                    strings.add(v)
                    continue
        except TraceFormatError as exc:
            segments = []
            node: tuple[str, Any] | None = path
            while node is not None:
                segments.append(node[0])
                node = node[1]
            # to_tla names the value itself "value"; the path says where it is.
            reason = str(exc).removeprefix("value: ")
            raise TraceFormatError(f"{''.join(reversed(segments))}: {reason}") from None
        memo[id(v)] = (v, depth)


def _wrap(items: Sequence[str], sep: str) -> str:
    """The items joined by `sep`, the line broken after a separator once it
    passes _BREAK_AT characters. Breaks fall between whole items, so never
    inside a literal, and whitespace means nothing in these expressions."""
    out: list[str] = []
    width = 0
    for i, item in enumerate(items):
        if i:
            if width >= _BREAK_AT:
                out.append(sep.rstrip() + "\n    ")
                width = 4
            else:
                out.append(sep)
                width += len(sep)
        out.append(item)
        last = item.rfind("\n")
        width = len(item) - last - 1 if last >= 0 else width + len(item)
    return "".join(out)


def _string(value: str) -> str:
    """A string literal; a long one as pieces joined by `\\o`, one piece a
    line, in a balanced tree so TLC copies each character only log(n) times.

    The string is cut before it is escaped, so no escape is ever split, and
    `\\o` of strings is the string of their characters in order: the text
    means the same value."""
    if len(value) <= _PIECE:
        return to_tla(value)
    parts = [to_tla(value[i : i + _PIECE]) for i in range(0, len(value), _PIECE)]
    while len(parts) > 1:
        paired = [f"({a} \\o\n    {b})" for a, b in zip(parts[::2], parts[1::2], strict=False)]
        if len(parts) % 2:
            paired.append(parts[-1])
        parts = paired
    return parts[0]


def _module(name: str, extends: Sequence[str], body: Sequence[str]) -> str:
    rule = "-" * 20
    return "\n".join(
        [f"{rule} MODULE {name} {rule}", f"EXTENDS {', '.join(extends)}", "", *body, "=" * 60, ""]
    )


class _Encoder:
    """Writes values as TLA+ text in which every long compound sub-value is a
    definition of its own, written once per batch.

    A batch's states share most of their parts (the same message, the same
    record per transaction), so naming them shrinks the text SANY must parse
    several times over. Equal values always get equal text, sets sorted by
    their elements' text, so comparing texts is TLA+ equality (where Python
    would hold TRUE equal to 1).
    """

    def __init__(self) -> None:
        self.defs: list[str] = []
        self._names: dict[str, str] = {}
        # Keyed by identity, with the value kept alive so its id stays unique:
        # the codec hands unchanged values on from line to line as one object.
        self._memo: dict[int, tuple[Any, str]] = {}
        self._strings: dict[str, str] = {}

    def expr(self, value: Any) -> str:
        """The value's text, its long compound parts by name."""
        t = type(value)
        if t is str:
            text = self._strings.get(value)
            if text is None:
                text = self._strings[value] = _string(value)
            return text
        if t is bool:
            return "TRUE" if value else "FALSE"
        if t is int and 0 <= value <= _SMALL_INT:
            return str(value)
        hit = self._memo.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        if t is tuple:
            text = "<<" + _wrap([self.part(x) for x in value], ", ") + ">>"
        elif t is frozenset:
            text = "{" + _wrap(sorted([self.part(x) for x in value]), ", ") + "}"
        elif t is Record or t is FnMap:
            text = self._function(value)
        else:
            text = to_tla(value)
        self._memo[id(value)] = (value, text)
        return text

    def _function(self, value: Mapping[Any, Any]) -> str:
        if not value:
            # TLC equates <<>> with every function on the empty domain.
            return "<<>>"
        if all(is_field_name(k) for k in value):
            return "[" + _wrap([f"{k} |-> {self.part(x)}" for k, x in value.items()], ", ") + "]"
        pairs = [f"{self.part(k)} :> {self.part(x)}" for k, x in value.items()]
        return "(" + _wrap(pairs, " @@ ") + ")"

    def part(self, value: Any) -> str:
        """The value's text as a part of a bigger one: a name when it is long."""
        text = self.expr(value)
        if len(text) <= _NAMED_LENGTH or type(value) in _ATOMS:
            return text
        name = self._names.get(text)
        if name is None:
            name = f"tlasimV{len(self._names) + 1}"
            self._names[text] = name
            self.defs.append(f"{name} == {text}")
        return name

    def delta(self, new: Any, old: Any, ref: str) -> str | None:
        """The text of `new` as a change of `old` (which `ref` names), or None
        when it is the same value."""
        if new is old:
            return None
        full = self.expr(new)
        if full == self.expr(old):
            return None
        best = full
        if isinstance(new, Mapping) and isinstance(old, Mapping) and new and old:
            new_keys = {self.part(k): k for k in new}
            old_keys = {self.part(k): k for k in old}
            removed = sorted(old_keys.keys() - new_keys.keys())
            changes = [
                f"{text} :> {self.part(new[key])}"
                for text, key in new_keys.items()
                if text not in old_keys or self.expr(old[old_keys[text]]) != self.expr(new[key])
            ]
            base = f"tlasimWithout({ref}, {{{_wrap(removed, ', ')}}})" if removed else ref
            candidate = "(" + _wrap([*changes, base], " @@ ") + ")"
            best = min(best, candidate, key=len)
        elif isinstance(new, frozenset) and isinstance(old, frozenset):
            new_items = {self.part(x) for x in new}
            old_items = {self.part(x) for x in old}
            candidate = ref
            if old_items - new_items:
                gone = _wrap(sorted(old_items - new_items), ", ")
                candidate = f"({candidate} \\ {{{gone}}})"
            if new_items - old_items:
                added = _wrap(sorted(new_items - old_items), ", ")
                candidate = f"({candidate} \\cup {{{added}}})"
            best = min(best, candidate, key=len)
        elif (
            isinstance(new, tuple)
            and isinstance(old, tuple)
            and len(new) > len(old) > 0
            and all(self.expr(a) == self.expr(b) for a, b in zip(new, old, strict=False))
        ):
            tail = _wrap([self.part(x) for x in new[len(old) :]], ", ")
            best = min(best, f"({ref} \\o <<{tail}>>)", key=len)
        return best


def trace_data(traces: Sequence[Trace], constants: Mapping[str, Any]) -> str:
    """The module TraceData: the batch's step lines and the constants they share."""
    encoder = _Encoder()
    states: list[str] = []
    logs: list[str] = []
    for t, trace in enumerate(traces, start=1):
        lines = []
        previous: tuple[str, Mapping[str, Any]] | None = None
        for k, step in enumerate(trace.steps, start=1):
            name = f"tlasimS{t}_{k}"
            try:
                states.append(f"{name} == {_vars_expr(step.vars, previous, encoder)}")
                action = to_tla(step.action or "")
                params = encoder.part(step.params)
            except TraceFormatError as exc:
                raise TraceFormatError(f"{trace.path}:{step.line}: {exc}") from None
            lines.append(f"tlasimL({action}, {params}, {name})")
            previous = (name, step.vars)
        logs.append(f"tlasimT{t} == <<" + ",\n    ".join(lines) + ">>")
    # Written by the encoder too, so a long constant breaks its lines; its
    # parts' definitions must come before it.
    consts = [f"TraceConst_{name} == {encoder.expr(value)}" for name, value in constants.items()]
    body = [
        "(* A function without some keys; partial functions are what `@@` extends. *)",
        "tlasimWithout(f, keys) == [k \\in DOMAIN f \\ keys |-> f[k]]",
        "tlasimL(a, p, v) == [action |-> a, params |-> p, vars |-> v]",
        "",
        *encoder.defs,
        *states,
        *logs,
        "TraceLogs == <<" + _wrap([f"tlasimT{t}" for t in range(1, len(traces) + 1)], ", ") + ">>",
    ]
    body.extend(consts)
    # TLC is extended for `:>` and `@@`, Integers for negative numbers.
    return _module("TraceData", ["Integers", "Sequences", "TLC"], body)


def trace_data_loaded(constants: Mapping[str, Any], data_file: str | None) -> str:
    """The module TraceData for a batch whose `TraceLogs` TLC reads from
    `data_file` (`tracing.tla.binary`) rather than from this text, so SANY
    parses only the constants. Means the same as `trace_data` of the traces.
    Without a file, the constants alone (for `trace_stream`)."""
    encoder = _Encoder()
    consts = [f"TraceConst_{name} == {encoder.expr(value)}" for name, value in constants.items()]
    logs = [] if data_file is None else [f"TraceLogs == TlasimLoad({to_tla(data_file)})"]
    body = [*encoder.defs, *logs, *consts]
    return _module("TraceData", ["Integers", "Sequences", "TLC", LOADER_MODULE], body)


def _vars_expr(
    logged: Mapping[str, Any], previous: tuple[str, Mapping[str, Any]] | None, encoder: _Encoder
) -> str:
    if previous is not None and list(previous[1]) == list(logged):
        ref, old = previous
        changes = []
        for v, value in logged.items():
            changed = encoder.delta(value, old[v], f"{ref}.{v}")
            if changed is not None:
                changes.append(f"!.{v} = {changed}")
        return f"[{ref} EXCEPT {_wrap(changes, ', ')}]" if changes else ref
    if not logged:
        return "<<>>"
    fields = [f"{v} |-> {encoder.part(value)}" for v, value in logged.items()]
    return "[" + _wrap(fields, ", ") + "]"


def _bind(variables: Sequence[str], line: str, primed: bool, every: bool = False) -> list[str]:
    """Bind each variable the line logged; leave the others to the spec.

    With `every` (each line of the batch logs every variable, as a
    simulator's traces do) the test for whether the line logged it is left
    out: it always holds, and building `DOMAIN` of each line's record for
    each variable was a large part of TLC's work per step.
    """
    prime = "'" if primed else ""
    if every:
        return [f"    /\\ {v}{prime} = {line}.vars.{v}" for v in variables]
    return [
        f"    /\\ IF {to_tla(v)} \\in DOMAIN {line}.vars THEN {v}{prime} = {line}.vars.{v} "
        "ELSE TRUE"
        for v in variables
    ]


# A line without an action may be any action the template knows but Init.
_STEP_OF = [
    "tlasimAction(e) ==",
    "    IF e.action = \"\"",
    "    THEN \\E name \\in TraceActionNames \\ {\"Init\"} :",
    "             TraceAction([e EXCEPT !.action = name])",
    "    ELSE TraceAction(e)",
    "",
]


def trace_check(spec: TraceSpec, *, full_logs: bool = False, ends_only: bool = False) -> str:
    """The module TraceCheck, whose behaviours follow each trace of the batch.

    `full_logs`: every line of the batch logs every variable (see `_bind`).
    `ends_only`: print `tlasimEnd` only for a state on its trace's last line,
    not for every dead end. TLC then evaluates each step once rather than
    twice (`ENABLED` evaluates the step again), and a trace is accepted
    exactly when it prints; the line that rejects any other trace needs the
    full module, run on just those traces.
    """
    variables = spec.decls.variables
    all_vars = ", ".join([TRACE_VAR, LINE_VAR, *variables])
    log = f"TraceLogs[{TRACE_VAR}]"
    end_condition = f"{LINE_VAR} = Len({log})" if ends_only else "~ENABLED tlasimStep"
    body = [
        f"VARIABLES {TRACE_VAR}, {LINE_VAR}",
        "",
        *_STEP_OF,
        "tlasimInit ==",
        f"    /\\ {TRACE_VAR} \\in 1..Len(TraceLogs)",
        f"    /\\ {LINE_VAR} = 1",
        f"    /\\ {log}[1].action \\in {{\"\", \"Init\"}}",
        *_bind(variables, f"{log}[1]", primed=False, every=full_logs),
        "    /\\ Init",
        "",
        "tlasimStep ==",
        f"    /\\ {LINE_VAR} < Len({log})",
        f"    /\\ {LINE_VAR}' = {LINE_VAR} + 1",
        f"    /\\ {TRACE_VAR}' = {TRACE_VAR}",
        *_bind(variables, f"{log}[{LINE_VAR} + 1]", primed=True, every=full_logs),
        f"    /\\ tlasimAction({log}[{LINE_VAR} + 1])",
        "",
        "(* A state with no next step is a dead end: its trace ended, or nothing",
        "   explains its next line. It says so once and stutters, so TLC never",
        "   deadlocks and every trace of the batch gets its verdict. *)",
        "tlasimEnd ==",
        f"    /\\ {end_condition}",
        f"    /\\ PrintT(<<{to_tla(END_MARK)}, {TRACE_VAR}, {LINE_VAR}>>)",
        f"    /\\ UNCHANGED <<{all_vars}>>",
        "",
        "tlasimNext == tlasimStep \\/ tlasimEnd",
    ]
    return _module("TraceCheck", [spec.template.stem, "TraceData"], body)


# A spec variable's value in the stream's cursor states, which belong to no trace.
CURSOR_VALUE = "tlasimCursor"
STREAM_MODULE = "TraceStream"


def trace_stream(spec: TraceSpec) -> str:
    """The module TraceStream: one TLC run that checks a campaign's traces
    chunk after chunk as tlasim sends them (`tlasim.TraceStream`, the Java
    that answers `TlasimPoll` and `TlasimChunk`, says how).

    A trace is `<<k, i>>`, the i-th of chunk k; `<<k, 0>>` is the cursor
    waiting for chunk k, its line counting its polls. Every line logs every
    variable (the stream takes only such traces) and the module is the
    ends-only `trace_check`: a trace is accepted exactly when its last line
    prints the end mark. Init is checked on the first line as a state
    predicate, since the cursor, not Init, starts each trace.
    """
    variables = spec.decls.variables
    spec_vars = ", ".join(variables)
    all_vars = ", ".join([TRACE_VAR, LINE_VAR, *variables])
    cursor = f"{TRACE_VAR}[2] = 0"
    chunk = f"TlasimChunk({TRACE_VAR}[1])"
    log = f"{chunk}[{TRACE_VAR}[2]]"
    body = [
        f"VARIABLES {TRACE_VAR}, {LINE_VAR}",
        "",
        *_STEP_OF,
        "tlasimInit ==",
        f"    /\\ {TRACE_VAR} = <<0, 0>>",
        f"    /\\ {LINE_VAR} = 0",
        *[f"    /\\ {v} = {to_tla(CURSOR_VALUE)}" for v in variables],
        "",
        "tlasimPoll ==",
        f"    TlasimPoll({TRACE_VAR}[1], {LINE_VAR}, TLCGet(\"level\"), TLCGet(\"queue\"))",
        "",
        "(* The cursor: polls again one level later, or starts chunk k's traces",
        "   and moves on to chunk k + 1. *)",
        "tlasimFeed ==",
        f"    /\\ {cursor}",
        "    /\\ \\/ /\\ tlasimPoll = \"wait\"",
        f"          /\\ {LINE_VAR}' = {LINE_VAR} + 1",
        f"          /\\ UNCHANGED <<{TRACE_VAR}, {spec_vars}>>",
        "       \\/ /\\ tlasimPoll = \"ready\"",
        f"          /\\ \\/ /\\ {TRACE_VAR}' = <<{TRACE_VAR}[1] + 1, 0>>",
        f"                /\\ {LINE_VAR}' = 0",
        f"                /\\ UNCHANGED <<{spec_vars}>>",
        f"             \\/ \\E i \\in 1..Len({chunk}) :",
        f"                   /\\ {chunk}[i][1].action \\in {{\"\", \"Init\"}}",
        f"                   /\\ {TRACE_VAR}' = <<{TRACE_VAR}[1], i>>",
        f"                   /\\ {LINE_VAR}' = 1",
        *[f"                   /\\ {v}' = {chunk}[i][1].vars.{v}" for v in variables],
        "",
        "(* LET: TLC evaluates each definition once per step, however often used. *)",
        "tlasimStep ==",
        f"    /\\ ~({cursor})",
        f"    /\\ LET log == {log}",
        f"       IN /\\ {LINE_VAR} < Len(log)",
        f"          /\\ {LINE_VAR} = 1 => Init",
        f"          /\\ LET e == log[{LINE_VAR} + 1]",
        f"             IN /\\ {LINE_VAR}' = {LINE_VAR} + 1",
        f"                /\\ {TRACE_VAR}' = {TRACE_VAR}",
        *[f"                /\\ {v}' = e.vars.{v}" for v in variables],
        "                /\\ tlasimAction(e)",
        "",
        "tlasimEnd ==",
        f"    /\\ ~({cursor})",
        f"    /\\ {LINE_VAR} = Len({log})",
        f"    /\\ {LINE_VAR} = 1 => Init",
        f"    /\\ PrintT(<<{to_tla(END_MARK)}, {TRACE_VAR}, {LINE_VAR}>>)",
        f"    /\\ UNCHANGED <<{all_vars}>>",
        "",
        "tlasimNext == tlasimFeed \\/ tlasimStep \\/ tlasimEnd",
        "",
        f"tlasimView == <<{TRACE_VAR}, {LINE_VAR}>>",
    ]
    return _module(STREAM_MODULE, [spec.template.stem, "TraceData"], body)


def stream_config(constants: Mapping[str, Any]) -> str:
    """The TLC config of TraceStream. Its VIEW is the trace and line alone:
    each line logs every variable, so those two name one state, and TLC
    fingerprints two integers per state instead of the whole state."""
    return config(constants) + "VIEW tlasimView\n"


def trace_explain(spec: TraceSpec, matched: int) -> str:
    """The module TraceExplain: trace 1 followed to line `matched`, then one
    step of the next line's action with every variable left free.

    With `matched` = 0 the free step is Init itself.
    """
    variables = spec.decls.variables
    all_vars = ", ".join([TRACE_VAR, LINE_VAR, FREE_VAR, *variables])
    log = "TraceLogs[1]"
    if matched == 0:
        body = [
            f"VARIABLES {TRACE_VAR}, {LINE_VAR}, {FREE_VAR}",
            "",
            f"tlasimInit == {TRACE_VAR} = 1 /\\ {LINE_VAR} = 1 /\\ {FREE_VAR} = TRUE /\\ Init",
            f"tlasimNext == UNCHANGED <<{all_vars}>>",
        ]
        return _module("TraceExplain", [spec.template.stem, "TraceData"], body)
    body = [
        f"VARIABLES {TRACE_VAR}, {LINE_VAR}, {FREE_VAR}",
        "",
        *_STEP_OF,
        "tlasimInit ==",
        f"    /\\ {TRACE_VAR} = 1",
        f"    /\\ {LINE_VAR} = 1",
        f"    /\\ {FREE_VAR} = FALSE",
        *_bind(variables, f"{log}[1]", primed=False),
        "    /\\ Init",
        "",
        "tlasimFollow ==",
        f"    /\\ {LINE_VAR} < {matched}",
        *_bind(variables, f"{log}[{LINE_VAR} + 1]", primed=True),
        f"    /\\ tlasimAction({log}[{LINE_VAR} + 1])",
        "",
        "tlasimFreeStep ==",
        f"    /\\ {LINE_VAR} = {matched}",
        f"    /\\ tlasimAction({log}[{LINE_VAR} + 1])",
        "",
        "tlasimNext ==",
        f"    \\/ /\\ ~{FREE_VAR}",
        f"       /\\ {LINE_VAR}' = {LINE_VAR} + 1",
        f"       /\\ {TRACE_VAR}' = {TRACE_VAR}",
        f"       /\\ {FREE_VAR}' = ({LINE_VAR} = {matched})",
        "       /\\ tlasimFollow \\/ tlasimFreeStep",
        f"    \\/ {FREE_VAR} /\\ UNCHANGED <<{all_vars}>>",
    ]
    return _module("TraceExplain", [spec.template.stem, "TraceData"], body)


def config(constants: Mapping[str, Any]) -> str:
    """The TLC config shared by TraceCheck and TraceExplain."""
    rows = [f"CONSTANT {name} <- TraceConst_{name}" for name in constants]
    return "\n".join([*rows, "INIT tlasimInit", "NEXT tlasimNext", ""])


def parse_end_marks(plain_output: str) -> dict[int, int]:
    """The furthest line each trace of a batch reached, from TLC's Print output."""
    furthest: dict[int, int] = {}
    for m in _END_PRINT.finditer(plain_output):
        trace, line = int(m.group(1)), int(m.group(2))
        furthest[trace] = max(furthest.get(trace, 0), line)
    return furthest
