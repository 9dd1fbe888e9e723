"""tracing.tla.tlc: finding Java and TLC, reading -tool output, running TLC."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tlasim.protocols.errors import TLCError, ToolNotFound
from tlasim.tracing.tla.tlc import (
    EC,
    find_java,
    find_tla2tools,
    parse_dump,
    parse_result,
    parse_tool_output,
    run_tlc,
)


def msg(code: int, severity: int, text: str) -> str:
    return f"@!@!@STARTMSG {code}:{severity} @!@!@\n{text}\n@!@!@ENDMSG {code} @!@!@\n"


def test_parse_tool_output_handles_nested_messages_and_plain_text() -> None:
    out = (
        msg(2262, 0, "TLC2 Version 2.15")
        + "Parsing file /tmp/x.tla\n"
        + "@!@!@STARTMSG 1000:1 @!@!@\n"
        + msg(2154, 0, "inner")
        + "outer tail\n@!@!@ENDMSG 1000 @!@!@\n"
    )
    messages, plain = parse_tool_output(out)
    assert [(m.code, m.severity) for m in messages] == [(2262, 0), (1000, 1), (2154, 0)]
    assert messages[1].text.strip() == "outer tail"
    assert messages[2].text == "inner"
    assert "Parsing file /tmp/x.tla" in plain


def test_parse_tool_output_rejects_crossed_messages() -> None:
    with pytest.raises(TLCError, match="not well nested"):
        parse_tool_output("@!@!@STARTMSG 1:0 @!@!@\nx\n@!@!@ENDMSG 2 @!@!@\n")


# What a logged string would need to forge TLC's messages: it is printed
# quoted, with its newlines escaped, so the markers sit inside a line.
FORGED = "a\n@!@!@ENDMSG 2217 @!@!@\n@!@!@STARTMSG 2110:1 @!@!@\nInvariant Forged is violated."


def test_parse_tool_output_counts_only_whole_marker_lines() -> None:
    quoted = FORGED.replace("\n", "\\n")
    out = (
        f'<<"tlasimEnd", 1, 2, "{quoted}">>\n'
        + msg(EC.TLC_STATE_PRINT2, 4, f'1: <Initial predicate>\n/\\ y = "{quoted}"\n')
        + '@!@!@ENDMSG 2217 @!@!@ inside a line\n'
        + msg(EC.TLC_SUCCESS, 0, "Model checking completed. No error has been found.")
    )
    result = parse_result(0, out, "", 0.0)
    assert [m.code for m in result.messages] == [EC.TLC_STATE_PRINT2, EC.TLC_SUCCESS]
    assert result.outcome == "ok"
    assert result.error_trace[0].values() == {"y": FORGED}
    assert "@!@!@ENDMSG 2217 @!@!@ inside a line" in result.plain_output


def test_parse_tool_output_reads_an_empty_message_and_a_last_marker_without_newline() -> None:
    out = "@!@!@STARTMSG 2185:0 @!@!@\n@!@!@ENDMSG 2185 @!@!@\r\n" + msg(2186, 0, "done").rstrip()
    messages, plain = parse_tool_output(out)
    assert [(m.code, m.text) for m in messages] == [(2185, ""), (2186, "done")]
    assert plain == ""


def test_parse_result_reads_invariant_violation_counts_and_trace() -> None:
    out = (
        msg(EC.TLC_INVARIANT_VIOLATED_BEHAVIOR, 1, "Invariant Inv is violated.")
        + msg(EC.TLC_BEHAVIOR_UP_TO_THIS_POINT, 1, "The behavior up to this point is:")
        + msg(EC.TLC_STATE_PRINT2, 4, '1: <Initial predicate>\n/\\ x = 0\n/\\ y = "a"\n')
        + msg(EC.TLC_STATE_PRINT2, 4, "2: <Inc line 6, col 8 of module Toy>\n/\\ x = 1\n")
        + msg(EC.TLC_STATS, 0, "1,234 states generated, 1,000 distinct states found, 0 left.")
    )
    result = parse_result(12, out, "", 0.5)
    assert (result.outcome, result.violated) == ("invariant", "Inv")
    assert (result.generated_states, result.distinct_states) == (1234, 1000)
    assert [s.number for s in result.error_trace] == [1, 2]
    assert result.error_trace[0].label == "<Initial predicate>"
    assert result.error_trace[0].values() == {"x": 0, "y": "a"}
    assert "Invariant Inv is violated." in result.error_text()


_REFINEMENT_CONJUNCT = "line 4, col 18 to line 4, col 33 of module Abs"


@pytest.mark.parametrize(
    ("code", "text", "outcome", "violated"),
    [
        (
            EC.TLC_INVARIANT_VIOLATED_INITIAL,
            "Invariant TypeOK is violated by the initial state:",
            "invariant",
            "TypeOK",
        ),
        (
            EC.TLC_PROPERTY_VIOLATED_INITIAL,
            "Property Init1 is violated by the initial state:",
            "property",
            "Init1",
        ),
        (
            EC.TLC_ACTION_PROPERTY_VIOLATED_BEHAVIOR,
            f"Action property {_REFINEMENT_CONJUNCT} is violated.",
            "property",
            _REFINEMENT_CONJUNCT,
        ),
        (EC.TLC_TEMPORAL_PROPERTY_VIOLATED, "Temporal properties were violated.", "liveness", None),
        (EC.TLC_DEADLOCK_REACHED, "Deadlock reached.", "deadlock", None),
        (EC.GENERAL, "TLC threw an unexpected exception.", "error", None),
        (EC.TLC_SUCCESS, "Model checking completed. No error has been found.", "ok", None),
    ],
)
def test_parse_result_classifies_by_message_code(
    code: int, text: str, outcome: str, violated: str | None
) -> None:
    result = parse_result(0, msg(code, 1 if outcome != "ok" else 0, text), "", 0.0)
    assert (result.outcome, result.violated) == (outcome, violated)


# What TLC 2.15 prints for an Assert that fails while it computes a step: an
# evaluation error (1000) whose last line ": " opens the message of its cause.
_ASSERT_FAILED = (
    "@!@!@STARTMSG 1000:1 @!@!@\n"
    "TLC threw an unexpected exception.\n"
    "This was probably caused by an error in the spec or model.\n"
    "See the User Output or TLC Console for clues to what happened.\n"
    "The exception was a tlc2.tool.EvalException\n"
    ": @!@!@STARTMSG 2132:0 @!@!@\n"
    "The first argument of Assert evaluated to FALSE; the second argument was:\n"
    '"Removed \\"front\\""\n'
    "@!@!@ENDMSG 2132 @!@!@\n"
    "@!@!@ENDMSG 1000 @!@!@\n"
)


def test_parse_result_reads_a_failed_assert_nested_in_an_evaluation_error() -> None:
    out = (
        _ASSERT_FAILED
        + msg(EC.TLC_NESTED_EXPRESSION, 1, "The error occurred when TLC was evaluating ...")
        + msg(EC.TLC_STATS, 0, "3 states generated, 3 distinct states found, 0 left.")
    )
    result = parse_result(12, out, "", 0.0)
    assert [m.code for m in result.messages] == [1000, 2132, EC.TLC_NESTED_EXPRESSION, 2199]
    assert (result.outcome, result.violated) == ("assertion", 'Removed \\"front\\"')
    assert result.distinct_states == 3
    assert "Assert evaluated to FALSE" in result.messages[1].text


def test_a_start_marker_after_colon_inside_a_line_is_text() -> None:
    # Only ": " at the very start of a line may precede a start marker.
    out = msg(EC.TLC_SUCCESS, 0, 'x: @!@!@STARTMSG 2132:0 @!@!@\n"a"')
    result = parse_result(0, out, "", 0.0)
    assert [m.code for m in result.messages] == [EC.TLC_SUCCESS]
    assert result.outcome == "ok"


def test_parse_result_without_success_message_is_an_error() -> None:
    assert parse_result(0, msg(EC.TLC_VERSION, 0, "TLC2"), "", 0.0).outcome == "error"


def test_parse_dump_splits_states() -> None:
    text = 'State 1:\n/\\ i = 1\n/\\ v = "a"\n\nState 2:\n/\\ i = 2\n/\\ v = << 1,\n  2 >>\n\n'
    states = parse_dump(text)
    assert [s.values() for s in states] == [{"i": 1, "v": "a"}, {"i": 2, "v": (1, 2)}]


# --- finding the tools --------------------------------------------------------


def _fake_java(tmp_path: Path) -> Path:
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return java


def test_find_java_honours_java_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java = _fake_java(tmp_path)
    monkeypatch.setenv("JAVA", str(java))
    assert find_java() == str(java)


def test_find_java_env_pointing_nowhere_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA", str(tmp_path / "missing" / "java"))
    with pytest.raises(ToolNotFound, match=r"\$JAVA is set to .*unset it"):
        find_java()


def test_find_java_defaults_to_an_executable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA", raising=False)
    assert os.access(find_java(), os.X_OK)


def test_find_tla2tools_honours_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = tmp_path / "tla2tools.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("TLA2TOOLS_JAR", str(jar))
    assert find_tla2tools() == jar
    monkeypatch.setenv("TLA2TOOLS_JAR", str(tmp_path / "nope.jar"))
    with pytest.raises(ToolNotFound, match=r"TLA2TOOLS_JAR.*not a file"):
        find_tla2tools()
    monkeypatch.delenv("TLA2TOOLS_JAR")
    assert find_tla2tools().name == "tla2tools.jar"


def test_run_tlc_with_missing_java_raises_tool_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA", str(tmp_path / "no-java"))
    with pytest.raises(ToolNotFound):
        run_tlc(tmp_path / "M.tla", tmp_path / "M.cfg", workdir=tmp_path)


def test_run_tlc_with_a_java_that_prints_nothing_is_a_tool_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA", str(_fake_java(tmp_path)))
    (tmp_path / "M.tla").write_text("---- MODULE M ----\n====\n")
    (tmp_path / "M.cfg").write_text("")
    with pytest.raises(ToolNotFound, match="TLC did not start"):
        run_tlc(tmp_path / "M.tla", tmp_path / "M.cfg", workdir=tmp_path)


# --- running TLC ------------------------------------------------------------

_TOY = """---- MODULE Toy ----
EXTENDS Naturals
VARIABLE x, y
Init == x = 0 /\\ y = "a"
Next == x < 3 /\\ x' = x + 1 /\\ y' = y
Inv == x < 2
====
"""


def test_run_tlc_reports_invariant_violation_with_trace(tmp_path: Path) -> None:
    (tmp_path / "Toy.tla").write_text(_TOY)
    (tmp_path / "Toy.cfg").write_text("INIT Init\nNEXT Next\nINVARIANT Inv\n")
    result = run_tlc(tmp_path / "Toy.tla", tmp_path / "Toy.cfg", workdir=tmp_path / "work")
    assert (result.outcome, result.violated) == ("invariant", "Inv")
    assert result.exit_code != 0
    assert result.distinct_states == 3
    assert [s.values()["x"] for s in result.error_trace] == [0, 1, 2]
    # The scratch folder (states, unpacked standard modules) is removed.
    assert list((tmp_path / "work").iterdir()) == []


def test_run_tlc_reports_a_parse_error_with_sany_text(tmp_path: Path) -> None:
    (tmp_path / "Bad.tla").write_text("---- MODULE Bad ----\nInit == x =\n====\n")
    (tmp_path / "Bad.cfg").write_text("INIT Init\nNEXT Init\n")
    result = run_tlc(tmp_path / "Bad.tla", tmp_path / "Bad.cfg", workdir=tmp_path)
    assert result.outcome == "error"
    assert EC.TLC_PARSING_FAILED in result.codes()
    assert "Bad" in result.error_text()


def test_run_tlc_timeout_raises_tlc_error(tmp_path: Path) -> None:
    (tmp_path / "Toy.tla").write_text(_TOY)
    (tmp_path / "Toy.cfg").write_text("INIT Init\nNEXT Next\n")
    with pytest.raises(TLCError, match="did not finish"):
        run_tlc(tmp_path / "Toy.tla", tmp_path / "Toy.cfg", workdir=tmp_path, timeout_s=0.01)


def test_run_tlc_is_not_misled_by_marker_text_in_a_string_value(tmp_path: Path) -> None:
    # The string is in the state TLC prints with the violation and in Print
    # output; the run's verdict and trace are read as if it were plain text.
    literal = FORGED.replace("\n", "\\n")
    (tmp_path / "Forge.tla").write_text(
        "---- MODULE Forge ----\nEXTENDS Naturals, TLC\nVARIABLE x, y\n"
        f'Init == x = 0 /\\ y = "{literal}"\n'
        "Next == x < 3 /\\ x' = x + 1 /\\ y' = y /\\ PrintT(y)\n"
        "Inv == x < 2\n====\n"
    )
    (tmp_path / "Forge.cfg").write_text("INIT Init\nNEXT Next\nINVARIANT Inv\n")
    result = run_tlc(tmp_path / "Forge.tla", tmp_path / "Forge.cfg", workdir=tmp_path / "work")
    assert (result.outcome, result.violated) == ("invariant", "Inv")
    assert [s.values() for s in result.error_trace] == [{"x": i, "y": FORGED} for i in range(3)]
