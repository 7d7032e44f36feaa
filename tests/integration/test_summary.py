"""Campaign summaries (store migration 8, `boardlab.summary`): what `boardlab serve` and `boardlab history`
read instead of a campaign's runs. A page built from stored summaries is the page built from the runs; a
summary stale against its campaign (more runs since) is not used; a store without summaries (written before
them) still gives the same pages; and no page's query scans the runs table (EXPLAIN QUERY PLAN)."""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from pathlib import Path

import pytest

from boardlab import summary
from boardlab.store import Store
from boardlab.store import db as store_db
from boardlab.web import pages

from helpers import make_campaign_db_bulk
from history_store import PLANTED, SLOW, make_history_db

pytestmark = pytest.mark.integration


def _keep_all(db: Path) -> list[int]:
    with Store.open(db) as store:
        ids = [int(c["id"]) for c in store.campaigns()]
        for cid in ids:
            summary.keep(store, cid)
    return ids


def _pages(db: Path, cid: int) -> tuple[dict, pages.Rendered, dict]:
    pages._CACHE.clear()  # nothing kept by an earlier read: every page from the store
    with Store.open(db, create=False) as store, store.snapshot():
        history = pages.history(store, "nightly", None)[1]
        campaign = pages.campaign(store, cid)
        compare = pages.compare(store, f"c:{cid - 1}", f"c:{cid}")[1]
    return history, campaign, compare


@pytest.fixture
def lab(tmp_path) -> Path:
    return make_history_db(tmp_path / "lab.db")


def test_pages_from_stored_summaries_are_the_pages_from_the_runs(lab):
    with Store.open(lab, create=False) as store:
        ids = [int(c["id"]) for c in store.campaigns()]
        assert all(summary.stored(store, cid) is None for cid in ids)
    slowed = ids[SLOW - 1]
    from_runs = _pages(lab, slowed)
    _keep_all(lab)
    with Store.open(lab, create=False) as store:
        assert all(summary.stored(store, cid) is not None for cid in ids)
        steps = [store.step_summary(a, b) for a, b in zip(ids, ids[1:], strict=False)]
        assert all(s is not None and s["schema"] == summary.code_fingerprint() for s in steps)
    from_summaries = _pages(lab, slowed)
    history, campaign, compare = from_summaries
    assert json.dumps(history) == json.dumps(from_runs[0])
    assert campaign.html == from_runs[1].html and campaign.twin_json == from_runs[1].twin_json
    assert json.dumps(compare, default=str) == json.dumps(from_runs[2], default=str)
    # and they still say what the runs say: the planted step, into the slowed campaign, and no other
    (reg,) = history["regressions"]
    assert (reg["to"], reg["workload"]) == (slowed, PLANTED)
    assert f"campaign {slowed}" in campaign.html or f"{slowed} — plan" in campaign.html
    assert json.loads(campaign.twin_json)["document"]["type"] == "Document"


def test_a_summary_stale_after_more_runs_is_not_used(lab):
    ids = _keep_all(lab)
    last = ids[-1]
    with Store.open(lab) as store:
        cell = store.cells(last)[0]
        before = store.count_runs(last)
        store.record_value_runs(last, (cell["metric"], cell["unit"], bool(cell["higher_is_better"])),
                                [(cell["id"], 99, 999, 1.7e9, 10**9, 123456.0, None)])  # fmt: skip
    with Store.open(lab, create=False) as store:
        assert store.campaign_summary(last)["runs_stored"] == before
        assert summary.stored(store, last) is None  # stale: one run more than it was computed from
        fresh = summary.summary_of(store, last)
        assert not fresh.stored and fresh.runs_stored == before + 1
        values = next(c.values for c in fresh.view().cells if c.workload == cell["workload"]
                      and c.condition == cell["condition"])  # fmt: skip
        assert 123456.0 in values
        rows, _, _ = summary.step(store, summary.analysis_view(store, ids[-2]), fresh.view())
        assert rows  # the stored step (computed at the old count) is not used either: computed again
    with Store.open(lab) as store:  # a writer stores it again
        assert summary.keep(store, last).runs_stored == before + 1
        assert store.campaign_summary(last)["runs_stored"] == before + 1
        assert store.step_summary(ids[-2], last)["runs_to"] == before + 1


def test_a_store_from_before_summaries_gives_the_same_pages(lab, tmp_path, monkeypatch):
    old = tmp_path / "old.db"
    with monkeypatch.context() as m:  # a store written by a boardlab before migration 8
        m.setattr(
            store_db, "MIGRATIONS", [x for x in store_db.MIGRATIONS if x[0] < summary.FIRST_SUMMARY_STORE]
        )
        m.setattr(store_db, "STORE_SCHEMA", summary.FIRST_SUMMARY_STORE - 1)
        make_history_db(old)
    with Store.open(old, create=False) as store:
        assert store.schema_version() < summary.FIRST_SUMMARY_STORE
        cid = int(store.campaigns()[SLOW - 1]["id"])
    history, campaign, _ = _pages(old, cid)  # read-only: computed from the runs
    assert history["regressions"][0]["workload"] == PLANTED and "<h1>" in campaign.html
    with Store.open(old) as store:  # a writer migrates it; its campaigns' summaries can then be kept
        assert store.schema_version() == store_db.STORE_SCHEMA
        assert len(summary.keep_missing(store)) == 5 and summary.keep_missing(store) == []
    again = _pages(old, cid)
    assert json.dumps(again[0]) == json.dumps(history) and again[1].html == campaign.html


def test_a_kept_analysis_is_read_as_the_analysis_it_was(lab):
    """A summary keeps the analysis' own records (`KeptAnalysis`): compare, the history's points and its steps
    read the same cells and A/A controls from a summary read back as from the analysis computed now."""
    from boardlab.analysis.compare import compare_campaigns, plain
    from boardlab.analysis.core import analyze
    from boardlab.analysis.history import step_pair

    with Store.open(lab, create=False) as store:
        a, b = (int(c["id"]) for c in store.campaigns()[SLOW - 2 : SLOW])
        live = analyze(store, a), analyze(store, b)
        kept = summary.compute(store, a).view(), summary.compute(store, b).view()
    for now, back in zip(live, kept, strict=True):
        assert back.cells == now.cells and back.aa_controls == now.aa_controls
        assert (back.campaign_id, back.name, back.board_label) == (now.campaign_id, now.name, now.board_label)
    assert json.dumps(plain(compare_campaigns(*kept))) == json.dumps(plain(compare_campaigns(*live)))
    assert step_pair(*kept)[0] == step_pair(*live)[0]


def _scans_of_runs(conn: sqlite3.Connection, sql: str) -> list[str]:
    """The plan lines of `sql` that scan the runs table (under its name or an alias), not search it."""
    aliases = {"runs", *re.findall(r"\bruns\s+(?:AS\s+)?(?!WHERE|JOIN|ORDER|ON|GROUP|LIMIT)(\w+)", sql, re.I)}
    plan = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    return [p for p in plan if re.match(r"SCAN (\w+)", p) and re.match(r"SCAN (\w+)", p).group(1) in aliases]


def test_no_page_scans_the_runs_table(lab):
    ids = _keep_all(lab)
    with Store.open(lab) as store:
        store.set_campaign_status(ids[-1], "running")  # the running page lists one
    pages._CACHE.clear()
    seen: list[str] = []
    with Store.open(lab, create=False) as store:
        store.conn.set_trace_callback(seen.append)
        with store.snapshot():
            pages.boards(store)
            pages.campaigns(store)
            pages.campaigns(store, 0, 1)
            pages.campaign(store, ids[1])
            pages.compare(store, f"c:{ids[0]}", "b:1")
            pages.compare_choices(store)
            pages.history(store, "nightly", "board-a")
            pages.plan_choices(store)
            pages.running(store)
        store.conn.set_trace_callback(None)
        selects = [s for s in seen if s.lstrip().upper().startswith(("SELECT", "WITH"))]
        assert any("runs" in s for s in selects)  # the pages do ask about runs: counts, by campaign
        scans = {s: _scans_of_runs(store.conn, s) for s in selects}
    assert not {s: p for s, p in scans.items() if p}


def test_the_bulk_insert_is_what_record_run_stores(tmp_path):
    db = make_history_db(tmp_path / "one.db", campaigns=1)
    with Store.open(db) as store:
        cid = int(store.campaigns()[0]["id"])
        cell = store.cells(cid)[0]
        n = store.record_value_runs(cid, ("ops", "ops/s", True), [
            (cell["id"], 50 + k, 500 + k, 1.7e9 + k, 2 * 10**9, 10.0 + k, "A1" if k % 2 else None)
            for k in range(3)
        ])  # fmt: skip
        assert n == 3
        runs = [r for r in store.runs(cid) if r["repetition"] >= 50]
        assert [(r["value"], r["valid"], r["ok"], r["attempt"], r["aa_arm"]) for r in runs] == [
            (10.0, 1, 1, 1, None), (11.0, 1, 1, 1, "A1"), (12.0, 1, 1, 1, None)]  # fmt: skip
        assert [m["median"] for m in store.run_metrics(runs[1]["id"])] == [11.0]
        assert store.run_values(runs[1]["id"], "ops") == [11.0]
        assert store.run_values(runs[1]["id"], "iteration_ns") == [2e9]
    with Store.open(db, create=False):  # the reader's verification accepts what it wrote
        pass


def test_the_bulk_insert_stores_each_runs_result_where_record_run_keeps_it(tmp_path):
    db = make_history_db(tmp_path / "one.db", campaigns=1)
    with Store.open(db) as store:
        cid = int(store.campaigns()[0]["id"])
        cell = store.cells(cid)[0]
        runs = [(cell["id"], 50 + k, 500 + k, 1.7e9 + k, 10**9, 1.0, None) for k in range(3)]
        results = itertools.cycle(['{"a": 1}', '{"b": 2}'])  # taken as long as there are runs
        assert store.record_value_runs(cid, ("ops", "ops/s", True), runs, results=results) == 3
        got = [r["worker_json"] for r in store.runs(cid) if r["repetition"] >= 50]
    assert got == ['{"a": 1}', '{"b": 2}', '{"a": 1}']


def test_the_bulk_insert_stores_each_runs_monitor_series_as_record_run_packs_them(tmp_path):
    db = make_history_db(tmp_path / "one.db", campaigns=1)
    series = [(("cpu0.busy_pct", 0, 3.5), ("temp.zone0_mc", 0, 45000.0), ("cpu0.busy_pct", 10**8, 4.0)),
              (("cpu0.busy_pct", 0, 7.0),)]  # fmt: skip
    with Store.open(db) as store:
        cid = int(store.campaigns()[0]["id"])
        cell = store.cells(cid)[0]
        runs = [(cell["id"], 50 + k, 500 + k, 1.7e9 + k, 10**9, 1.0, None) for k in range(3)]
        # series taken as long as there are runs (an endless cycle of templates is fine), in the runs' order
        assert store.record_value_runs(cid, ("ops", "ops/s", True), runs, series=iter(series * 5)) == 3
        ids = [r["id"] for r in store.runs(cid) if r["repetition"] >= 50]
        got = {(run_id, src): (list(t), list(v)) for run_id, src, t, v in store.run_series(ids)}
    assert got == {
        (ids[0], "cpu0.busy_pct"): ([0, 10**8], [3.5, 4.0]), (ids[0], "temp.zone0_mc"): ([0], [45000.0]),
        (ids[1], "cpu0.busy_pct"): ([0], [7.0]),
        (ids[2], "cpu0.busy_pct"): ([0, 10**8], [3.5, 4.0]), (ids[2], "temp.zone0_mc"): ([0], [45000.0]),
    }  # fmt: skip
    with Store.open(
        db, create=False
    ):  # the reader's verification accepts the packed rows and their summaries
        pass


NOOP_PLAN = """\
name = "noop-summary"
[runs]
repetitions = 3
iterations = 3
[gates]
idle = false
[[workloads]]
name = "noop"
"""


def test_run_and_ingest_store_the_summary_of_a_real_campaign(tmp_path):
    from helpers import run_cli

    plan = tmp_path / "plan.toml"
    plan.write_text(NOOP_PLAN)
    board = tmp_path / "board.db"
    proc = run_cli("run", str(plan), "--db", str(board), "--quiet")
    assert proc.returncode == 0, proc.stderr
    with Store.open(board, create=False) as store:
        (cid,) = [int(c["id"]) for c in store.campaigns()]
        got = summary.stored(store, cid, with_document=True)
        assert got is not None and got.runs_stored == store.count_runs(cid) == 3 and got.status == "complete"
        assert summary.document_of(got).title == "boardlab report: noop-summary"
        (cell,) = got.view().cells
        assert cell.workload == "noop" and len(cell.values) == 3 and all(v > 0 for v in cell.values)
    lab = tmp_path / "lab.db"
    proc = run_cli("ingest", str(board), "--db", str(lab))
    assert proc.returncode == 0, proc.stderr
    with Store.open(lab, create=False) as store:
        (cid,) = [int(c["id"]) for c in store.campaigns()]
        got = summary.stored(store, cid)
        assert got is not None and got.runs_stored == 3
        assert got.view().cells[0].values == cell.values


def _verdict_words(markdown: str) -> list[str]:
    """The verdict column's words of a report's comparison rows, in order."""
    return re.findall(r"\b(slowdown|speedup|no change|inconclusive|insufficient)\b", markdown)


def test_a_summary_of_another_build_is_recomputed_so_serve_and_report_agree(lab, monkeypatch):
    """A summary stored by a build whose verdict rule differed (here: every comparison "inconclusive", with
    its own code fingerprint) is stale for this build: `boardlab serve` (a server of this build) shows the
    verdicts `boardlab report` computes from the runs, not the stored ones."""
    import dataclasses
    import importlib

    from boardlab.analysis.document import from_plain
    from boardlab.report.render import render_document
    from boardlab.web.pages import figure_twin

    from helpers import run_cli
    from serve_helpers import Served

    compare_module = importlib.import_module("boardlab.stats.compare")  # the module, not the function
    ids = _keep_all(lab)
    slowed = ids[SLOW - 1]
    decide = compare_module.decide

    def other_rule(*args, **kw):  # an older build's rule: never a verdict
        return dataclasses.replace(decide(*args, **kw), kind="inconclusive")

    monkeypatch.setattr(compare_module, "decide", other_rule)
    monkeypatch.setattr(summary, "code_fingerprint", lambda: 12345)
    with Store.open(lab) as store:
        stale = summary.compute(store, slowed)
        store.put_campaign_summary(slowed, schema=12345, runs_stored=stale.runs_stored, status=stale.status,
                                   cells_json=stale.cells_json,
                                   document_json=stale.document_json or "")  # fmt: skip
        assert summary.stored(store, slowed, with_document=True) is not None  # fresh for that build
    monkeypatch.undo()
    with Store.open(lab, create=False) as store:
        assert summary.stored(store, slowed) is None  # stale for this one
        stale_words = _verdict_words(render_document(summary.document_of(stale), "md"))
    report = run_cli("report", "--db", str(lab), "--campaign", str(slowed), "--format", "md", "-o", "-")
    assert report.returncode == 0, report.stderr
    words = _verdict_words(report.stdout)
    assert words != stale_words and words.count("slowdown") > stale_words.count("slowdown")  # they disagree
    with Served(lab) as server:
        doc = server.json(f"/campaign/{slowed}.json")["document"]
        status, _, html = server.get(f"/campaign/{slowed}")
    assert status == 200
    with Store.open(lab, create=False) as store:
        fresh = json.loads(summary.compute(store, slowed).document_json)
    # the twin is the fresh document, its figures said as before they were typed specs (web.pages.figure_twin)
    assert doc == figure_twin(fresh)
    assert _verdict_words(render_document(from_plain(fresh), "md")) == words
    assert html.count("slowdown") > 0


def test_a_stored_document_renders_as_the_document_it_was_in_every_format(tmp_path):
    from boardlab.analysis.core import analyze
    from boardlab.analysis.document import from_plain
    from boardlab.analysis.sections import build_document
    from boardlab.model.records import to_plain
    from boardlab.report.render import render_document

    from helpers import make_campaign_db

    db = make_campaign_db(tmp_path / "c.db")  # latencies, tails, a drifting cell, an invalid and a failed run
    with Store.open(db, create=False) as store:
        document = build_document(analyze(store, store.campaigns()[-1]["id"]), None)
    back = from_plain(json.loads(json.dumps(to_plain(document))))
    for fmt in ("html", "md", "text"):
        assert render_document(back, fmt) == render_document(document, fmt)
    with pytest.raises(ValueError, match="unknown type 'Script'"):
        from_plain({"type": "Script", "src": "x"})


def test_a_damaged_stored_summary_is_computed_again_not_an_error(lab):
    ids = _keep_all(lab)
    with Store.open(lab) as store:
        good = summary.stored(store, ids[0], with_document=True)
        assert good is not None
        for cells, document in (("{not json", good.document_json), (good.cells_json, '{"type": "Nope"}'),
                                ("[]", good.document_json)):  # fmt: skip
            store.put_campaign_summary(ids[0], schema=summary.code_fingerprint(),
                                       runs_stored=good.runs_stored, status=good.status, cells_json=cells,
                                       document_json=document or "")  # fmt: skip
            assert summary.stored(store, ids[0], with_document=True) is None
            assert summary.summary_of(store, ids[0], with_document=True).cells_json == good.cells_json


def test_a_summary_of_the_former_layout_is_computed_again_and_its_tally_still_listed(lab):
    """A summary stored by a boardlab of STORE_SCHEMA 11 and SUMMARY_SCHEMA 3 (cells as StoredCell's fields)
    is never read as this layout: even under this build's fingerprint it does not read back, so it is computed
    again; the lists of campaigns, which read its verdict tally whatever its layout, still show it."""
    ids = _keep_all(lab)
    with Store.open(lab) as store:
        good = summary.stored(store, ids[0], with_document=True)
        tally = json.loads(good.cells_json)["verdicts"]
        cell = {"workload": "noop", "params": {}, "condition": "baseline", "metric": "ops", "unit": "ops/s",
                "higher_is_better": True, "summary": None, "summary_reason": "one run", "values": [1.0],
                "freq_khz": [None], "max_temp_mc": [None], "throttled": [None], "threshold": 0.02,
                "tail_threshold": 0.1, "thresholds_derived": False}  # fmt: skip
        former = {"schema": 3, "campaign": {"campaign_id": ids[0], "name": "nightly"}, "cells": [cell],
                  "aa_controls": [], "verdicts": tally}  # fmt: skip
        store.put_campaign_summary(ids[0], schema=summary.code_fingerprint(), runs_stored=good.runs_stored,
                                   status=good.status, cells_json=json.dumps(former),
                                   document_json=good.document_json or "")  # fmt: skip
        assert summary.stored(store, ids[0]) is None
        assert summary.summary_of(store, ids[0]).cells_json == good.cells_json  # computed again from the runs
        assert summary.stored_tally(store, ids[0]) == tally
        assert summary.listed_tally(store, ids[0])[0] == tally


def test_a_step_from_a_large_campaign_reads_a_spread_sample_kept_in_its_summary(tmp_path):
    """A cell of more than COMPARED_RUNS measured runs is kept in the campaign's summary as that many runs
    spread over it, every run still counted; a step against it judges the same rows from the summary as from
    the runs, and says the test read a sample."""
    from boardlab.analysis.core import analyze
    from boardlab.analysis.history import step_pair
    from boardlab.analysis.records import COMPARED_RUNS

    db = make_campaign_db_bulk(tmp_path / "two sizes.db", 34 * (COMPARED_RUNS + 150), seed=1)
    make_campaign_db_bulk(db, 34 * 20, seed=2)
    with Store.open(db) as store:
        big, small = (int(c["id"]) for c in store.campaigns())
        live = analyze(store, big), analyze(store, small)
        for cid in (big, small):
            summary.keep(store, cid)
    with Store.open(db, create=False) as store:
        kept = summary.stored_view(store, big), summary.stored_view(store, small)
    assert kept[0] is not None and kept[1] is not None
    large = [c for c in kept[0].cells if c.n_valid > COMPARED_RUNS]
    assert len(large) >= 30 and all(len(c.values) == COMPARED_RUNS for c in large)
    by_key = {c.key: c for c in live[0].cells}
    assert all(c.n_valid == by_key[c.key].n_valid and c.n_failed == by_key[c.key].n_failed for c in large)
    rows = step_pair(*kept)[0]
    assert rows == step_pair(*live)[0]
    assert {r.a.tested for r in rows if r.a.n > COMPARED_RUNS} == {COMPARED_RUNS}
    assert all(r.b.tested is None for r in rows)
