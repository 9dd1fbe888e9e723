"""Every PlusCal spec under specs/ holds the translation of its own algorithm.

TLC checks the TLA+ between a module's BEGIN and END TRANSLATION markers,
never the algorithm in the comment above it. An algorithm edited without
re-running the translator would leave TLC checking the old one: drift. So
each test copies one PlusCal module into a fresh folder, runs the PlusCal
translator shipped in tla2tools.jar (`pcal.trans`) on the copy, and asserts
the copy comes back unchanged. Without Java or the jar the tests fail with
find_java's or find_tla2tools' message, as the project's other TLC tests do:
a missing translator must not pass for "no drift".
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from tlasim.tracing.tla.tlc import find_java, find_tla2tools, run_jar_class

SPECS = Path(__file__).resolve().parents[2] / "specs"
BEGIN, END = "\\* BEGIN TRANSLATION", "\\* END TRANSLATION"


def _is_pluscal(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    return "--algorithm" in text or "--fair algorithm" in text


PLUSCAL_SPECS = sorted(p for p in SPECS.rglob("*.tla") if _is_pluscal(p))


def translation(text: str, where: str) -> str:
    """The text between the translation markers, markers included."""
    start, end = text.find(BEGIN), text.find(END)
    assert 0 <= start < end, f"{where} has no {BEGIN} ... {END} block"
    return text[start : end + len(END)]


def retranslate(spec: Path, folder: Path) -> str:
    """What pcal.trans makes of a copy of `spec`: the copy's text after it ran."""
    copy = folder / spec.name
    shutil.copyfile(spec, copy)
    java_tmp = folder / "java-tmp"
    java_tmp.mkdir()
    # -nocfg: leave the folder's .cfg files alone; the copy needs none.
    proc = run_jar_class(
        find_java(), find_tla2tools(), "pcal.trans", ["-nocfg", copy.name],
        cwd=folder, java_tmp=java_tmp, timeout_s=120,
    )
    output = (proc.stdout + proc.stderr).decode("utf-8", errors="replace")
    assert proc.returncode == 0, f"pcal.trans failed on {spec.name}:\n{output}"
    return copy.read_text(encoding="utf-8")


def test_the_lockfree_models_are_among_the_pluscal_specs() -> None:
    # Guards the glob: a PlusCal spec it missed would never be checked.
    names = {p.name for p in PLUSCAL_SPECS}
    assert {"LockFreeQueue.tla", "TreiberStack.tla"} <= names, names


@pytest.mark.parametrize("spec", PLUSCAL_SPECS, ids=lambda p: p.relative_to(SPECS).as_posix())
def test_committed_translation_matches_the_algorithm(spec: Path, tmp_path: Path) -> None:
    committed = spec.read_text(encoding="utf-8")
    fresh = retranslate(spec, tmp_path)
    where = spec.relative_to(SPECS).as_posix()
    assert translation(fresh, f"the retranslated {where}") == translation(committed, where), (
        f"{where}: the translation is stale; re-run "
        f"`java -cp tla2tools.jar pcal.trans -nocfg {spec.name}` in {spec.parent} "
        "and commit the result\n"
        + "".join(
            difflib.unified_diff(
                committed.splitlines(keepends=True),
                fresh.splitlines(keepends=True),
                "committed",
                "retranslated",
            )
        )
    )
    # The translator touches nothing outside its block.
    assert fresh == committed


def test_an_edited_algorithm_with_a_stale_translation_is_caught(tmp_path: Path) -> None:
    # The check must bite: swap the queue's last-node compare-exchange for
    # the racy load of Bug = "last_node" and keep the old translation.
    spec = SPECS / "lockfree" / "LockFreeQueue.tla"
    committed = spec.read_text(encoding="utf-8")
    edited = committed.replace('    elsif tail = h then\n', '    elsif tail # None then\n', 1)
    assert edited != committed
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / spec.name).write_text(edited, encoding="utf-8")
    fresh = retranslate(stale / spec.name, tmp_path)
    assert translation(fresh, "fresh") != translation(edited, "stale")
