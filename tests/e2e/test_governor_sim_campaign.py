"""`boardlab governor sweep --sim SOC --db FILE`: the simulated snoop sweep stored as a campaign that `report`
renders with the governor study's heatmaps, and that says it is simulated in every format (HTML, Markdown,
text, the JSON and CSV exports). The Exynos grid is cut to each cluster's lowest and highest OPP so that the
campaign and its reports take seconds; the AM335x (one cluster, 5 OPPs) goes through the command itself."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

from boardlab.campaign import simulated as sim_campaign
from boardlab.governor import opp
from boardlab.store import Store

from helpers import run_cli

SIZES = (65536, 16777216)


def small_exynos() -> opp.SocSpec:
    return dataclasses.replace(
        opp.EXYNOS5422,
        clusters=tuple(dataclasses.replace(c, opps=(c.opps[0], c.opps[-1])) for c in opp.EXYNOS5422.clusters),
    )


def test_the_command_writes_a_campaign_every_format_marks_simulated(tmp_path):
    db = tmp_path / "sim sweep.db"
    p = run_cli("governor", "sweep", "--sim", "am335x", "--db", str(db), "--runs", "3", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    # 5 OPPs + the implied baseline, x 3 patterns x 9 sizes, 3 runs each
    assert out["simulated"] == "am335x" and out["conditions"] == 6 and out["cells"] == 6 * 27
    assert out["runs"] == 6 * 27 * 3
    for fmt in ("html", "md", "text"):
        target = tmp_path / f"r.{fmt}"
        p = run_cli("report", "--db", str(db), "--format", fmt, "-o", str(target))
        assert p.returncode == 0, p.stderr
        text = target.read_text()
        assert (
            "Simulated: every figure of this campaign comes from boardlab's memory-latency model"
            in text.replace("&#x27;", "'")
        )
        assert "BeagleBone Black (simulated AM335x)" in text
    html = (tmp_path / "r.html").read_text()
    for pattern in ("random", "seq", "stride"):  # a heatmap per pattern and size, its title marked
        assert f"simulated am335x: policy0 {pattern} 16 MiB" in html
    for fmt in ("json", "csv"):
        p = run_cli("export", "--db", str(db), "--format", fmt)
        assert p.returncode == 0, p.stderr
        if fmt == "json":
            rows = json.loads(p.stdout)["runs"]
        else:  # after the schema line
            rows = list(csv.DictReader(io.StringIO(p.stdout.split("\n", 1)[1])))
        assert len(rows) == out["runs"]
        assert all("simulated" in r["board"] and "simulated" in r["campaign"] for r in rows)
    # --db belongs to --sim; on a board the plan runs under `boardlab run`
    p = run_cli("governor", "sweep", "--db", str(db))
    assert p.returncode == 2 and "--db: the sweep is stored as a campaign with --sim" in p.stderr


def test_the_report_shows_the_heatmaps_with_the_labels_of_the_stored_campaign(tmp_path):
    db = tmp_path / "sweep.db"
    store = Store.open(db, create=True)
    try:
        w = sim_campaign.write(store, small_exynos(), this_policy=None, sizes=SIZES, repetitions=6)
    finally:
        store.close()
    assert w.grid.this_policy == "policy0" and w.conditions == 5 and w.cells == 5 * 3 * len(SIZES)
    p = run_cli("governor", "label", "--db", str(db), "--out", str(tmp_path / "labels.json"), "--json")
    assert p.returncode == 0, p.stderr
    labels = json.loads((tmp_path / "labels.json").read_text())["cells"]
    slow = {
        (c["pattern"], c["size_bytes"], c["this_khz"], c["other_khz"]) for c in labels if c["label"] == "slow"
    }
    # DRAM-bound chases (16 MiB) slow down with the A15 at 200 MHz, below its 700 MHz knee, in every pattern;
    # a 64 KiB chase lives in the A7's L2 and never crosses the CCI.
    assert slow == {(p, 16777216, k, 200000) for p in ("random", "seq", "stride") for k in (200000, 1400000)}
    for fmt in ("html", "md"):
        p = run_cli("report", "--db", str(db), "--format", fmt, "-o", str(tmp_path / f"r.{fmt}"))
        assert p.returncode == 0, p.stderr
    html, md = (tmp_path / "r.html").read_text(), (tmp_path / "r.md").read_text()
    for pattern in ("random", "seq", "stride"):  # the heatmaps (HTML), titled simulated, slow cells marked
        assert f"simulated exynos5422: policy0 {pattern} 16 MiB (columns: policy4 MHz)" in html
    import re

    assert len(re.findall(r"\d× ▲<", html)) == len(slow)  # a cell's ratio with the slow mark
    assert "labels: 6 of 12 cells slow" in md and "labels: 6 of 12 cells slow" in html
    assert "- policy0 random 16 MiB: worst +" in md and "with policy4 200 MHz (vs policy4 at 2000 MHz)" in md
    assert "boardlab-sim-" not in md  # the simulator's scratch tree is named nowhere
