"""Generated reports in a real browser: headless Chromium loads them from file://,
the tests assert on the DOM the page's script built, and take screenshots."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.browser import CHROMIUM, chromium_page
from tlasim.faults.plan import FaultPlan
from tlasim.sim.kernel.options import SimOptions
from tlasim.sim.run.runner import run_seed
from tlasim.sim.view.html import run_page, write_page
from tlasim.sim.view.model import RunView, build_run_view, mark_tlc
from tlasim.tracing.codec import read_trace
from tlasim.tracing.validation.validator import validate_trace

# `make test` installs Chromium first and says so (TLASIM_BROWSER=required):
# there a missing browser fails these tests instead of skipping them.
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() and os.environ.get("TLASIM_BROWSER") != "required",
    reason="no /usr/bin/chromium: run `make test`, which installs it",
)


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, RunView]:
    """A failing run's trace and its report, TLC's verdict included."""
    folder = tmp_path_factory.mktemp("report")
    trace_path = folder / "96.ndjson"
    run_seed("twopc", 96, bug="abort-after-prepare", trace_path=trace_path)
    trace = read_trace(trace_path)
    view = build_run_view(trace)
    mark_tlc(view, trace, validate_trace(trace))
    page = folder / "96.html"
    write_page(page, run_page(view))
    return page, folder, view


def test_report_draws_lanes_arrows_and_the_marked_steps(
    failing: tuple[Path, Path, RunView],
) -> None:
    page_path, folder, view = failing
    delivered = sum(m.delivered is not None and m.src in view.lanes
                    for m in view.messages)
    with chromium_page() as page:
        page.goto(page_path.as_uri())
        page.wait_for_selector("body[data-rendered='1']")
        lanes = page.locator("g.lane")
        assert lanes.count() == len(view.lanes) == 4
        assert [lanes.nth(i).get_attribute("data-node") for i in range(4)] == ["tm", "r1", "r2",
                                                                              "r3"]
        assert page.locator("line.msg.delivered").count() == delivered
        timed = sum(s.timer is not None for s in view.steps)
        assert page.locator("g.step.timer .timer-mark").count() == timed > 0
        tlc = page.locator("g.step.mark-tlc")
        oracle = page.locator("g.step.mark-oracle")
        assert tlc.count() == 1 and oracle.count() == 1
        assert tlc.get_attribute("data-step") == str(view.tlc.step)
        assert oracle.get_attribute("data-step") == str(view.oracle.step)
        # The page opens on TLC's rejected step, with the validator's report beside it.
        assert "RMChooseToAbort" in page.inner_text("#step-title")
        assert "REJECTED" in page.inner_text("#step-marks")
        page.screenshot(path=str(folder / "opened.png"))
        # Following the oracle's link selects its step; the panel lists what it changed.
        page.click("#link-oracle")
        assert page.locator("g.step.selected").get_attribute("data-step") == str(
            view.oracle.step
        )
        # Clicking a step shows exactly the variables it changed.
        step = next(s for s in view.steps if s.action == "RMRcvPrepare")
        page.locator(f"#step-{step.index} rect.row-hit").click()
        paths = [page.locator("#diff tr.change").nth(i).get_attribute("data-path")
                 for i in range(page.locator("#diff tr.change").count())]
        assert paths == [c.path for c in step.changes] and paths
        assert any(p.startswith("rmState.") for p in paths)
        fired = page.locator("#plan tr.fired").count()
        assert fired == sum(1 for e in view.plan if e.fired)
        assert page.locator("#plan tr.unfired").count() == sum(
            1 for e in view.plan if not e.fired and e.name != "heal"
        )
        page.screenshot(path=str(folder / "clicked.png"), full_page=False)
        assert page.errors == []
    assert (folder / "opened.png").stat().st_size > 10_000


def test_a_value_holding_a_closing_script_tag_stays_text(tmp_path: Path) -> None:
    trace_path = tmp_path / "85.ndjson"
    run_seed("twopc", 85, trace_path=trace_path)
    # No double quote: the page shows strings in TLA+ notation, which escapes one.
    hostile = "</script><img id=injected src=x onerror=document.title='pwned'>"
    lines = trace_path.read_text().splitlines()
    step = json.loads(lines[2])
    step["params"] = {**step["params"], "note": hostile}
    lines[2] = json.dumps(step)
    trace_path.write_text("\n".join(lines) + "\n")
    page_path = tmp_path / "hostile.html"
    write_page(page_path, run_page(build_run_view(read_trace(trace_path))))
    with chromium_page() as page:
        page.goto(page_path.as_uri())
        page.wait_for_selector("body[data-rendered='1']")
        assert page.locator("#injected").count() == 0
        page.locator("#step-1 rect.row-hit").click()
        assert hostile in page.inner_text("#step-title")
        assert page.title() != "pwned" and page.errors == []


def test_a_databases_report_draws_each_campaigns_coverage_growth_and_its_unreached_actions(
    tmp_path: Path,
) -> None:
    from tlasim.sim.campaign.sweep import run_campaign
    from tlasim.sim.coverage.campaign import campaign_coverage
    from tlasim.sim.view.campaign import database_page, summarize

    db = tmp_path / "r.db"
    ran = run_campaign("twopc", range(0, 12), validate="none", db=db)
    # A second campaign under a plan without faults: its crash, recovery
    # and loss actions are never reached, and the report must name them.
    calm = run_campaign("twopc", range(0, 5), validate="none", db=db,
                        options=SimOptions(faults=FaultPlan()))
    page_path = tmp_path / "r.html"
    write_page(page_path, database_page(summarize(db)))
    with chromium_page() as page:
        page.goto(page_path.as_uri())
        sections = page.locator("div.coverage")
        assert sections.count() == 2
        for i, outcomes in enumerate((ran, calm)):
            united = campaign_coverage(frozenset(), ((o.seed, o.coverage) for o in outcomes))
            plot = sections.nth(i).locator("svg.growth")
            assert plot.get_attribute("data-runs") == str(len(outcomes))
            assert plot.get_attribute("data-states") == str(united.growth[-1])
            points = plot.locator("polyline.curve").get_attribute("points").split()
            assert len(points) == len(outcomes)
            heights = [float(p.split(",")[1]) for p in points]
            assert heights == sorted(heights, reverse=True)  # SVG's y grows downwards
            box = plot.bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 50
        items = sections.nth(1).locator("ul.unreached li").all_inner_texts()
        unreached = [t.strip() for t in items]
        assert {"RMCrash", "RMRecover", "TMCrash", "NetLose"} <= set(unreached)
        reached = set().union(*(o.coverage.actions for o in calm))
        assert not reached & set(unreached)
        assert "spec coverage:" in sections.nth(0).locator("p.coverage-line").inner_text()
        page.screenshot(path=str(tmp_path / "coverage.png"), full_page=True)
        assert not page.errors
