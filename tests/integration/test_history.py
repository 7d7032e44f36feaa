"""`boardlab history`: five campaigns of one plan on one board, one of them with a planted 10% slowdown of one
cell. The history names that campaign and that cell (a regression into it, an improvement out of it), no step
anywhere else, what changed in the environment, and the same document over SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import make_campaign_db, run_cli
from history_store import PLANTED, SLOW, make_history_db

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def history_db(tmp_path_factory) -> Path:
    return make_history_db(tmp_path_factory.mktemp("history") / "lab.db")


def _history(db: str, *extra: str):
    return run_cli("history", "--db", db, "--plan", "nightly", *extra)


def _check(d: dict) -> None:
    (board,) = d["boards"]
    ids = [c["campaign_id"] for c in board["campaigns"]]
    assert len(ids) == 5
    (reg,) = d["regressions"]
    assert (reg["from"], reg["to"], reg["workload"]) == (ids[SLOW - 2], ids[SLOW - 1], PLANTED)
    assert 1.08 < 1 / reg["ratio"] < 1.12  # throughput: B/A = 1/1.1
    (imp,) = d["improvements"]
    assert (imp["from"], imp["to"], imp["workload"]) == (ids[SLOW - 1], ids[SLOW], PLANTED)
    judged = [c for s in board["steps"] for c in s["cells"] if c["verdict"]]
    assert len(judged) == d["family_size"] == 4 * len(board["cells"])  # every cell judged at every step
    others = [c for c in judged if c["workload"] != PLANTED]
    assert others and all(c["verdict"] in ("no_change", "inconclusive") for c in others)
    assert (
        sum(c["verdict"] == "no_change" for c in others) >= len(others) // 2
    )  # shown unchanged, not just unjudged
    third = board["campaigns"][SLOW - 1]
    assert third["label"] == "kernel 6.6 -> 6.12"
    assert "kernel: 6.6.0-test → 6.12.0-test" in third["changed"]
    assert board["campaigns"][SLOW]["changed"] == []  # nothing changed into the fourth


def test_history_names_the_slowed_campaign_and_cell_and_nothing_else(history_db):
    r = _history(str(history_db), "--json")
    assert r.returncode == 0, r.stderr
    _check(json.loads(r.stdout))


def test_fail_on_regression_exits_3_and_the_text_names_the_step(history_db):
    r = _history(str(history_db), "--fail-on", "regression")
    assert r.returncode == 3, r.stderr
    assert "1 regression(s) and 1 improvement(s)" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if "regression" in ln and PLANTED in ln)
    assert re.search(r"2 → 3\s+planted\.ops\s+baseline\s+0\.(89|90|91|92)", line), line  # B / A about 1/1.1
    assert "kernel 6.6 -> 6.12" in r.stdout


def test_markdown_and_html_render_the_same_document(history_db, tmp_path):
    md = _history(str(history_db), "--format", "md")
    assert md.returncode == 0 and "| board-a |" in md.stdout and "[REGRESSION]" in md.stdout
    out = tmp_path / "h.html"
    r = _history(str(history_db), "--format", "html", "-o", str(out))
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "<svg" in html and "v-slowdown" in html
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt; rebuilt" in html and "<script>" not in html
    )  # a hostile label


def test_no_regression_exit_0_and_an_unknown_plan_exit_2(tmp_path):
    db = tmp_path / "two.db"
    for k in (1, 2):
        make_campaign_db(db, name="nightly", seed=k, n=10, with_latency=False, conditions=("baseline",))
    r = _history(str(db), "--fail-on", "regression", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["regressions"] == []
    bad = run_cli("history", "--db", str(db), "--plan", "nope")
    assert bad.returncode == 2 and "no campaign of a plan named 'nope'" in bad.stderr


def test_the_same_history_over_postgresql(history_db, pg_url):
    assert run_cli("ingest", str(history_db), "--db", pg_url).returncode == 0
    from boardlab import summary
    from boardlab.store import Store

    with Store.open(pg_url, create=False) as store:  # ingest stored each campaign's summary and step there
        ids = [int(c["id"]) for c in store.campaigns()]
        assert len(ids) == 5 and all(summary.stored(store, cid) is not None for cid in ids)
        assert all(store.step_summary(a, b) is not None for a, b in zip(ids, ids[1:], strict=False))
    pg = _history(pg_url, "--json")  # read from those; the SQLite file's history is computed from its runs
    lite = _history(str(history_db), "--json")
    assert pg.returncode == lite.returncode == 0, pg.stderr
    got, want = json.loads(pg.stdout), json.loads(lite.stdout)
    _check(got)
    for d in (got, want):  # ids differ between stores; everything else is the same
        for b in d["boards"]:
            for c in b["campaigns"]:
                c.pop("campaign_id")
            for s in b["steps"]:
                s.pop("from"), s.pop("to")
        for s in d["regressions"] + d["improvements"]:
            s.pop("from"), s.pop("to")
    assert got == want


@pytest.fixture(scope="module")
def clock_set_back_db(tmp_path_factory) -> Path:
    """Five campaigns of "nightly" on one board, the third with the planted cell 25% slower, and the board's
    clock set a year back from the fourth on (a board without a battery-backed clock, before NTP answers):
    by their wall-clock starts the fourth and fifth would come first."""
    import time
    import types

    import boardlab.store.campaigns as db  # where a campaign takes its start time

    path = tmp_path_factory.mktemp("clock") / "lab.db"
    real = db.time
    try:
        for k in range(1, 6):
            offset = 365 * 86400.0 if k >= 4 else 0.0
            db.time = types.SimpleNamespace(time=lambda o=offset: time.time() - o)  # type: ignore[assignment]
            make_campaign_db(path, name="nightly", board="board-a", seed=200 + k, n=10, with_latency=False,
                             conditions=("baseline", "cpu-stress"),
                             extra_cells=((PLANTED, 1000.0 / (1.25 if k == 3 else 1.0)),))  # fmt: skip
    finally:
        db.time = real
    return path


def test_a_board_clock_set_back_leaves_the_order_and_names_the_regression_and_the_clock(clock_set_back_db):
    r = _history(str(clock_set_back_db), "--json", "--fail-on", "regression")
    assert r.returncode == 3, r.stderr  # the regression status, of its own
    d = json.loads(r.stdout)
    (board,) = d["boards"]
    ids = [c["campaign_id"] for c in board["campaigns"]]
    assert ids == sorted(ids)  # arrival order, though the fourth and fifth "started" a year earlier
    (reg,) = d["regressions"]
    assert (reg["from"], reg["to"], reg["workload"]) == (ids[1], ids[2], PLANTED)
    (imp,) = d["improvements"]
    assert (imp["from"], imp["to"]) == (ids[2], ids[3])
    (went_back,) = d["clock_went_back"]
    assert (
        went_back.startswith(f"board clock went back: campaign {ids[3]}")
        and f"campaign {ids[2]}" in went_back
    )
    assert board["campaigns"][3]["clock_went_back"] == went_back
    assert board["campaigns"][4]["clock_went_back"] is None  # the fifth follows the fourth by the same clock
    text = _history(str(clock_set_back_db))
    assert "board clock went back" in text.stdout and "REGRESSION" in text.stdout


def test_history_on_a_damaged_store_never_exits_with_the_regression_status(clock_set_back_db, tmp_path):
    damaged = tmp_path / "damaged.db"
    data = bytearray(clock_set_back_db.read_bytes())
    data[4096:8192] = b"\xa5" * 4096  # a page of the file overwritten
    damaged.write_bytes(bytes(data))
    r = _history(str(damaged), "--fail-on", "regression")
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr, (r.returncode, r.stderr)
