"""`boardlab serve` in a real browser (headless Chromium through the DevTools protocol, the report screenshot
harness): the board list, a campaign, a comparison picked through the page's own form, a history with a
planted regression, and a real campaign running beside the server whose progress advances on the page
without a reload. No page error or console error (a Content-Security-Policy violation is one); the
screenshots are kept in the test's directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from e2e.test_report_screenshots import WIDTH, Browser, drawn_fraction
from helpers import chromium
from history_store import PLANTED, make_history_db
from serve_helpers import Served

pytest.importorskip("starlette", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")
pytest.importorskip("uvicorn", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")

LIVE_PLAN = """name = "live"
seed = 1
[runs]
repetitions = 40
iterations = 2
[gates]
idle_window_s = 0.1
timeout_s = 1
[[workloads]]
name = "mibench.crc32"
"""


def _goto(browser: Browser, url: str) -> None:
    browser.call("Page.navigate", {"url": url}, session=True)
    browser.wait_event("Page.loadEventFired")


def _settled(browser: Browser) -> None:
    """A page whose analysis serve computes first says so and reloads itself (its Refresh header): waited for,
    as a user waits, until the page itself is there."""
    for _ in range(60):
        if browser.evaluate("document.title") != "boardlab: computing":
            return
        browser.wait_event("Page.loadEventFired")
    raise AssertionError("the page was still being computed after 60 reloads")


def _shoot(browser: Browser, tmp_path, name: str) -> None:
    height = browser.evaluate("document.documentElement.scrollHeight")
    png = browser.screenshot({"x": 0, "y": 0, "width": WIDTH, "height": min(height, 12000)})
    (tmp_path / f"{name}.png").write_bytes(png)
    assert drawn_fraction(png) > 0.01, f"{name}: blank page"


def _text(browser: Browser) -> str:
    return browser.evaluate("document.body.innerText")


@pytest.fixture
def lab(tmp_path):
    chromium()  # skips, saying why, where there is no browser
    db = make_history_db(tmp_path / "lab.db")
    with Served(db) as served:
        browser = Browser(tmp_path / "profile")
        try:
            browser.open(served.url + "/boards")
            yield served, browser, db
        finally:
            browser.close()


def test_boards_campaign_compare_and_history_in_a_browser(lab, tmp_path):
    served, browser, _ = lab
    assert "board-a" in _text(browser) and "nightly" in _text(browser)
    _shoot(browser, tmp_path, "boards")

    browser.evaluate("document.querySelector('table a[href^=\"/campaign/\"]').click(); true")
    browser.wait_event("Page.loadEventFired")
    _settled(browser)
    assert browser.evaluate("location.pathname") == "/campaign/5"
    headings = browser.evaluate("[...document.querySelectorAll('h2')].map(h => h.innerText)")
    assert "Verdicts" in headings and browser.evaluate("document.querySelectorAll('svg.plot').length") > 0
    _shoot(browser, tmp_path, "campaign")

    _goto(browser, served.url + "/compare")
    browser.evaluate(
        "document.getElementById('a').value = 'c:2'; document.getElementById('b').value = 'c:3'; "
        "document.getElementById('go').click(); true"
    )
    browser.wait_event("Page.loadEventFired")
    _settled(browser)
    assert browser.evaluate("location.search") == "?a=c%3A2&b=c%3A3"
    rows = browser.evaluate("[...document.querySelectorAll('tr.v-slowdown')].map(r => r.innerText)")
    assert len(rows) == 1 and PLANTED in rows[0] and "slowdown" in rows[0]
    _shoot(browser, tmp_path, "compare")

    _goto(browser, served.url + "/history")
    browser.evaluate(
        "document.getElementById('plan').value = 'nightly'; document.getElementById('go').click(); true"
    )
    browser.wait_event("Page.loadEventFired")
    _settled(browser)
    text = _text(browser)
    assert "1 regression(s) and 1 improvement(s)" in text and "kernel 6.6 -> 6.12" in text
    marked = browser.evaluate("[...document.querySelectorAll('td.v-slowdown')].map(td => td.innerText)")
    assert len(marked) == 1 and "[REGRESSION]" in marked[0]
    assert browser.evaluate("document.querySelectorAll('svg.plot').length") >= 5  # one per cell
    _shoot(browser, tmp_path, "history")
    assert browser.page_errors() == []


def test_a_running_campaign_advances_without_a_reload(lab, tmp_path):
    served, browser, db = lab
    plan = tmp_path / "live.toml"
    plan.write_text(LIVE_PLAN)
    run = subprocess.Popen([sys.executable, "-m", "boardlab", "run", str(plan), "--db", str(db), "--quiet",
                            "--label", "live test"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not [c for c in served.json("/running.json")["campaigns"] if c["runs_done"] >= 1]:
            assert run.poll() is None, run.stderr.read().decode()
            assert time.monotonic() < deadline, "the campaign stored no run in 120 s"
            time.sleep(0.5)
        (live,) = served.json("/running.json")["campaigns"]
        assert (live["label"], live["runs_planned"], live["status"]) == (
            "live test",
            40,
            "running",
        )  # run --label
        assert live["heartbeat_age_s"] < 60 and live["eta_s"] > 0
        _goto(browser, served.url + "/running")
        browser.evaluate("window.notReloaded = true; true")
        runs = "document.querySelector('table tbody tr td:nth-child(4)').innerText"
        first = browser.evaluate(runs)
        assert first.endswith(" of 40"), first
        deadline = time.monotonic() + 120
        while browser.evaluate(runs) == first:
            assert time.monotonic() < deadline, f"the page still says {first!r} after 120 s"
            time.sleep(1)
        later = browser.evaluate(runs)
        assert int(later.split()[0]) > int(first.split()[0])
        assert browser.evaluate("window.notReloaded === true")  # the same page, its rows rewritten
        assert "updated" in browser.evaluate("document.getElementById('live').innerText")
        _shoot(browser, tmp_path, "running")
        assert browser.page_errors() == []
    finally:
        if run.poll() is None:
            os.kill(run.pid, signal.SIGINT)  # the campaign's orderly stop: settings restored, runs kept
            run.wait(timeout=60)
        run.stderr.close()
