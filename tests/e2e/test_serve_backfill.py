"""`boardlab serve`'s backfill on loopback: the summaries a store lacks are computed and stored in the
background after serve starts, yielding to a campaign that holds the store, said on every page and on
/backfill; off with --no-backfill; a serve killed mid-backfill leaves the store valid."""

from __future__ import annotations

import os
import signal
import sqlite3
import time

import pytest

from helpers import alive, make_campaign_db
from serve_helpers import Served

pytest.importorskip("starlette", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")
pytest.importorskip("uvicorn", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")

BANNER = "campaigns summarized; the rest are being computed in the background (newest first)."


def _unsummarized(path, campaigns: int):
    """`campaigns` ended campaigns of one plan on one board, stored without summaries (as a store written
    before summaries were kept)."""
    for k in range(campaigns):
        make_campaign_db(path, name="nightly", seed=10 + k, n=4, with_latency=False, conditions=("baseline",))
    return path


def _said(s: Served, prefix: str, timeout_s: float = 10.0) -> str:
    """The first line of serve's output (after its first) that starts with `prefix`, or "" at the timeout."""
    import select

    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0 and select.select([s.proc.stdout], [], [], left)[0]:
        line = s.proc.stdout.readline().strip()
        if line.startswith(prefix) or not line:
            return line
    return ""


def _backfill(s: Served, until, timeout_s: float = 120.0) -> dict:
    """/backfill.json's state once `until(state)` holds (or as it stands at the timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = s.json("/backfill.json")["backfill"]
        if until(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def test_a_campaign_holding_the_store_is_waited_for_then_every_summary_and_step_is_stored(tmp_path):
    import boardlab.summary as summary
    from boardlab.store import Store

    db = _unsummarized(tmp_path / "lab.db", 2)
    holder = Store.open(db)  # a campaign's writer lock, as `boardlab run` holds it for the whole campaign
    try:
        with Served(db, backfill=True) as s:
            assert _said(s, "storing the summaries").endswith("newest campaign first (its state: /backfill)")
            got = _backfill(s, lambda b: b["state"] == "waiting" and "another writer" in (b["why"] or ""))
            assert got["state"] == "waiting" and f"pid {os.getpid()}" in got["why"], got
            assert got["campaigns_ended"] == 2 and got["campaigns_summarized"] == 0, got
            status, _, page = s.get("/boards")
            assert status == 200 and f"0 of 2 {BANNER}" in page and 'href="/backfill"' in page
            status, _, page = s.get("/backfill")
            assert status == 200 and "0 of 2 campaigns summarized; 2 left, waiting: the store is held" in page
            holder.close()  # the campaign ended: the backfill's next try writes
            done = _backfill(s, lambda b: b["state"] == "done")
            assert done["state"] == "done" and done["campaigns_summarized"] == 2 and done["failed"] == 0, done
            assert BANNER not in s.get("/boards")[2]
            t0 = time.monotonic()
            status, _, _ = s.get("/campaign/2", wait_computed=False)
            assert status == 200, status  # read from the store: no 202, nothing computed
            assert time.monotonic() - t0 < 5.0  # a hang guard, not a timing check
    finally:
        holder.close()
    with Store.open(db, create=False) as store:  # the full check: the store as a writer leaves it
        for cid in (1, 2):
            assert summary.stored(store, cid, with_document=True) is not None, cid
        step = store.step_summary(1, 2)
        assert step is not None and step["schema"] == summary.code_fingerprint()


def test_no_backfill_is_said_and_writes_nothing(tmp_path):
    db = _unsummarized(tmp_path / "lab.db", 1)
    with Served(db, backfill=False) as s:  # --no-backfill
        got = s.json("/backfill.json")["backfill"]
        assert got["state"] == "off" and got["why"] == "turned off (serve --no-backfill)", got
        assert _said(s, "summaries backfill") == "summaries backfill off: turned off (serve --no-backfill)"
        status, _, page = s.get("/backfill")
        assert status == 200 and "Off: turned off (serve --no-backfill)." in page
        assert BANNER not in s.get("/boards")[2]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM campaign_summaries").fetchone()[0] == 0


def test_a_serve_killed_mid_backfill_leaves_the_store_valid_and_its_worker_ends(tmp_path):
    from boardlab.store import Store

    # 24 campaigns: six were at times all summarized before the first look (of 16, up to 8 were)
    db = _unsummarized(tmp_path / "lab.db", 24)
    s = Served(db, backfill=True)
    try:
        got = _backfill(s, lambda b: b["campaigns_summarized"] >= 1 or b["state"] in ("done", "off"))
        assert got["state"] == "computing" and got["campaigns_left"] >= 1, got  # killed mid-backfill
        worker = [int(p) for t in os.listdir(f"/proc/{s.proc.pid}/task")
                  for p in open(f"/proc/{s.proc.pid}/task/{t}/children").read().split()]  # fmt: skip
    finally:
        os.kill(s.proc.pid, signal.SIGKILL)
        s.proc.wait()
    deadline = time.monotonic() + 10
    while any(alive(w) for w in worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker and not [w for w in worker if alive(w)], "serve's worker outlived it"
    with Store.open(db, create=False) as store:  # the full check of every value
        stored = [cid for cid in range(1, 25) if store.campaign_summary(cid) is not None]
        assert stored, "nothing was stored before the kill"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_serve_stopped_mid_backfill_ends_at_once_with_its_worker(tmp_path):
    """SIGTERM (Ctrl-C, systemd's stop): serve does not wait for the analysis its worker is running."""
    db = _unsummarized(tmp_path / "lab.db", 24)  # as the test above: the first look finds it computing
    s = Served(db, backfill=True)
    try:
        got = _backfill(s, lambda b: b["state"] == "computing" and b["current_campaign"] is not None)
        assert got["state"] == "computing", got
        worker = [int(p) for t in os.listdir(f"/proc/{s.proc.pid}/task")
                  for p in open(f"/proc/{s.proc.pid}/task/{t}/children").read().split()]  # fmt: skip
        t0 = time.monotonic()
        os.kill(s.proc.pid, signal.SIGTERM)
        code = s.proc.wait(timeout=30)
        took_s = time.monotonic() - t0
    finally:
        if s.proc.poll() is None:
            s.stop()
    assert code == 0 and took_s < 10.0, (code, took_s)  # a hang guard, not a timing check
    assert "leaked semaphore" not in s.proc.stderr.read()  # the worker's queues released, not left behind
    deadline = time.monotonic() + 10
    while any(alive(w) for w in worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker and not [w for w in worker if alive(w)], "serve's worker outlived it"
