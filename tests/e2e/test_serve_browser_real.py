"""`boardlab serve`'s history in a real browser over campaigns the runner really ran: four campaigns of one
plan, the third run while a CPU hog shares the worker's CPU (a real condition of the board, started by the
test and stopped by its PID). The history page names that campaign's step a regression and marks its cell, and
the page has no error. The synthetic store of test_serve_browser.py checks the rest of the page; this checks
that what the runner stores of real runs carries a step through the summaries to the page."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

import pytest

from e2e.test_report_screenshots import Browser
from e2e.test_serve_browser import _goto, _shoot, _text
from helpers import chromium, rows, run_cli, tagged_env, tagged_processes
from serve_helpers import Served

pytest.importorskip("starlette", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")
pytest.importorskip("uvicorn", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")

# quiet: the history must find the real condition's slowdown, and no step where there was none
pytestmark = [pytest.mark.slow, pytest.mark.quiet]

# SOR at size large: iterations of 50-350 ms, dozens of scheduler slices, so a hog sharing the CPU halves
# every iteration alike. The threshold is wide (15%): campaigns of other days are not interleaved, and on a
# shared machine their load differs by more than the default 2%; the hog's 2x clears it. The warm-up is cut
# to 0.5 s (at least one whole iteration before the measured ones): SOR large seldom meets the default's 2% CV
# target, so each of the 32 runs spent the whole default 2 s warming up, most of the test's minutes.
PLAN = """name = "nightly-real"
seed = 4
[runs]
repetitions = 8
iterations = 3
warmup_max_ms = 500
cpu = 1
[gates]
idle = false
temperature = false
[[workloads]]
name = "scimark.sor"
params = { size = "large" }
threshold = 0.15
"""
CAMPAIGNS = 4  # two before the hog, one beside it, one after (the suite's second-longest test: no more)
HOGGED = 3


def _campaign(plan, db, env, k: int) -> None:
    label = "cpu hog beside the worker" if k == HOGGED else ("hog gone" if k == HOGGED + 1 else "")
    args = ["run", str(plan), "--db", str(db), "--fresh", "--quiet"] + (["--label", label] if label else [])
    hog = None
    if k == HOGGED:  # equal priority, in a session of its own: it takes half of CPU 1 from the worker
        hog = subprocess.Popen(
            ["stress-ng", "--cpu", "1", "--taskset", "1", "--timeout", "0"],
            env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        proc = run_cli(*args, env=env, timeout=900)
        assert proc.returncode == 0, proc.stderr
    finally:
        if hog is not None:
            os.killpg(hog.pid, signal.SIGTERM)
            hog.wait(30)


USABLE_CV = 0.25  # above this run-to-run spread, 8 runs a campaign say more about the machine than the hog
# Below this share of its CPU before the hog, other jobs already share the worker's CPU: the hog then takes
# one share among many, not half (a fresh-machine run at load average 18 measured no step at all).
USABLE_CPU_PCT = 75.0


def _skip_if_too_noisy(db) -> None:
    """Where other jobs spread a campaign's runs this much (a load average many times the core count), eight
    runs cannot be expected to call even a 2x step against a 15% threshold; where they already share the
    worker's CPU, the hog is no 2x step: measured (the runs' spread, the worker's CPU share), and said."""
    from boardlab.analysis.core import analyze
    from boardlab.store import Store

    with Store.open(db, create=False) as store:
        summaries = {k: analyze(store, k).cells[0].summary for k in range(1, CAMPAIGNS + 1)}
    cvs = {k: s.cv if s else float("inf") for k, s in summaries.items()}
    said = ", ".join(f"#{k}: CV {cv:.0%}" for k, cv in cvs.items())
    if max(cvs[HOGGED - 1], cvs[HOGGED]) > USABLE_CV:
        pytest.skip(f"this machine is too busy to test the claim: the campaigns' runs spread by {said}")
    ((share,),) = rows(
        db, f"SELECT avg(worker_cpu_pct) FROM runs WHERE campaign_id = {HOGGED - 1} AND valid = 1"
    )
    if share is not None and share < USABLE_CPU_PCT:
        pytest.skip(
            f"this machine is too busy to test the claim: before the hog the worker had {share:.0f}% of its "
            f"CPU (other jobs shared it), so the hog took one share among many ({said})"
        )


def _history(db) -> str:
    """What `boardlab history` says of the store, for a failure's message."""
    proc = run_cli("history", "--db", str(db), "--plan", "nightly-real", "--format", "md", "-o", "-")
    return proc.stdout + proc.stderr


def test_a_history_of_real_campaigns_marks_the_one_a_real_condition_slowed(tmp_path):
    chromium()  # skips, saying why, where there is no browser
    if shutil.which("stress-ng") is None:
        pytest.skip("needs stress-ng (apt-get install stress-ng): the hog that slows one campaign")
    if not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1: the worker and its hog share CPU 1, the runner keeps to CPU 0")
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    db = tmp_path / "lab.db"
    tag = f"history-real-{os.getpid()}"
    env = tagged_env(tag, BOARDLAB_STATE_DIR=str(tmp_path / "state"))
    try:
        for k in range(1, CAMPAIGNS + 1):
            _campaign(plan, db, env, k)
    finally:
        for pid in tagged_processes(tag):  # a failed campaign leaves no hog behind
            os.kill(pid, signal.SIGKILL)
    with Served(db) as served:
        browser = Browser(tmp_path / "profile")
        try:
            browser.open(served.url + "/boards")
            _goto(browser, served.url + "/history")
            browser.evaluate(
                "document.getElementById('plan').value = 'nightly-real'; "
                "document.getElementById('go').click(); true"
            )
            browser.wait_event("Page.loadEventFired")
            text = _text(browser)
            if "1 regression(s)" not in text:
                _skip_if_too_noisy(db)
            assert "1 regression(s)" in text and "cpu hog beside the worker" in text, _history(db)
            marked = browser.evaluate(
                "[...document.querySelectorAll('td.v-slowdown')].map(td => td.innerText)"
            )
            assert len(marked) == 1 and "[REGRESSION]" in marked[0], marked
            _shoot(browser, tmp_path, "history-real")
            assert browser.page_errors() == []
        finally:
            browser.close()
