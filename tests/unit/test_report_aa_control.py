"""The A/A control end to end: labels from the schedule stored with the runs, the A1/A2 comparison per
reference cell, unstable marking with its reason and remedy in every report format, and the decision
interval named in each. Campaigns are written with the store's API (as bench_verdicts does)."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_verdicts  # noqa: E402

from boardlab.analysis.core import analyze  # noqa: E402
from boardlab.export import run_records  # noqa: E402
from boardlab.report.html import render_html  # noqa: E402
from boardlab.report.markdown import render_markdown  # noqa: E402
from boardlab.report.terminal import render_text  # noqa: E402
from boardlab.store import Store  # noqa: E402


def write_campaign(db: Path, *, a2_factor: float, effect: float = 1.0, seed: int = 3) -> int:
    """One campaign of the bench's plan: 10 runs per arm at CV 1%; the baseline's A2 runs `a2_factor`
    times slower (a board that changed half way, in the alternating pattern the labels catch)."""
    plan, cells, runs, metric = bench_verdicts._plan_and_schedule()
    rng = random.Random(seed)
    sigma = math.sqrt(math.log1p(0.01**2))
    with Store.open(db) as store:
        board = store.upsert_board("t", "test board", {})
        cid = store.create_campaign(
            name="aa",
            plan_hash=f"h{seed}",
            plan_source="test",
            plan_text=plan.source,
            board_id=board,
            boardlab_version="test",
            kern_version=None,
            root="/",
            environment={"kern_build": {"compiler": "gcc 12.2.0", "flags": "-std=c17 -O3"}},
        )
        ids = store.ensure_cells(
            cid, cells, {c.name: c for c in plan.conditions}, {c.key: ("ns", False) for c in cells}
        )
        for sr in runs:
            v = 1000.0 * math.exp(rng.gauss(0.0, sigma))
            if sr.cell.condition == "cond":
                v *= effect
            elif sr.aa_arm == "A2":
                v *= a2_factor
            store.record_run(
                cid, ids[sr.cell.key], bench_verdicts._run_result(sr, v, [v] * 3, metric, sr.seq)
            )
        store.set_campaign_status(cid, "complete")
    return cid


def test_the_schedule_labels_are_stored_and_exported(tmp_path):
    db = tmp_path / "r.db"
    write_campaign(db, a2_factor=1.0)
    with Store.open(db, create=False) as store:
        records = run_records(store)
    base = [r for r in records if r["condition"] == "baseline"]
    assert sorted(r["aa_arm"] for r in base) == ["A1"] * 5 + ["A2"] * 5
    assert all(r["aa_arm"] == ("A1" if r["repetition"] % 2 else "A2") for r in base)
    assert all(r["aa_arm"] is None for r in records if r["condition"] == "cond")


def test_a_quiet_board_passes_its_aa_control(tmp_path):
    db = tmp_path / "r.db"
    cid = write_campaign(db, a2_factor=1.0, effect=1.10)
    with Store.open(db, create=False) as store:
        a = analyze(store, cid)
    (ctl,) = a.aa_controls
    assert (ctl.n_a1, ctl.n_a2) == (5, 5) and ctl.kind in ("no_change", "inconclusive") and not ctl.unstable
    (comp,) = a.comparisons
    assert comp.comparison.verdict.kind == "slowdown" and comp.unstable is None
    assert a.family_size == 1 and a.family_adjustment == "holm"


def test_a_drifting_baseline_marks_the_workload_unstable_in_every_format(tmp_path):
    db = tmp_path / "r.db"
    cid = write_campaign(db, a2_factor=1.08, effect=1.10)
    with Store.open(db, create=False) as store:
        a = analyze(store, cid)
    (ctl,) = a.aa_controls
    assert ctl.unstable and ctl.comparison.verdict.kind == "slowdown"
    assert "drifted or was not quiet" in ctl.remedy and "run the campaign again" in ctl.remedy
    (comp,) = a.comparisons
    assert comp.unstable == ctl.remedy
    html, md, text = render_html(a), render_markdown(a), render_text(a)
    for doc in (html, md, text):
        assert "90% decision interval" in doc
        assert "UNSTABLE" in doc
        assert "gcc 12.2.0 -std=c17 -O3" in doc  # the native kernels' compiler and flags
    assert "<h2>A/A control</h2>" in html and "## A/A control" in md
    assert "(unstable)" in html and "95% CI (shown, not decided on)" in html


@pytest.mark.parametrize("factor", [0.92])
def test_a_speedup_between_the_halves_is_unstable_too(tmp_path, factor):
    db = tmp_path / "r.db"
    cid = write_campaign(db, a2_factor=factor)
    with Store.open(db, create=False) as store:
        (ctl,) = analyze(store, cid).aa_controls
    assert ctl.comparison.verdict.kind == "speedup" and ctl.unstable
