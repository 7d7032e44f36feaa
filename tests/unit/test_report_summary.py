"""The summary card: the board's headline figures with their CIs, first in every report format."""

from __future__ import annotations

import dataclasses
import statistics
from types import SimpleNamespace

import pytest

from boardlab.analysis import analyze
from boardlab.analysis.headline import composite, headlines
from boardlab.report.html import render_html
from boardlab.report.markdown import render_markdown
from boardlab.report.terminal import render_text
from boardlab.store import Store

from helpers import make_campaign_db

CACHES = [
    {"level": 1, "type": "Data", "size_kib": 32},
    {"level": 1, "type": "Instruction", "size_kib": 32},
    {"level": 2, "type": "Unified", "size_kib": 512},
    {"level": 3, "type": "Unified", "size_kib": 4096},
]


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    db = make_campaign_db(tmp_path_factory.mktemp("summary") / "s.db", n=6)
    with Store.open(db, create=False) as store:
        a = analyze(store, 1)
    return dataclasses.replace(a, inventory={**a.inventory, "caches": CACHES})


def test_a_latency_sweep_gives_one_figure_per_cache_level_and_dram(analysis):
    labels = [h.label for h in headlines(analysis) if h.label.startswith("mem.latency (pattern=random)")]
    assert labels == [
        "mem.latency (pattern=random) L1 (16 KiB)",
        "mem.latency (pattern=random) L2 (256 KiB)",
        "mem.latency (pattern=random) L3 (4 MiB)",
        "mem.latency (pattern=random) DRAM (16 MiB)",
    ]
    dram = next(h for h in headlines(analysis) if h.label.endswith("DRAM (16 MiB)") and "random" in h.label)
    cell = next(c for c in analysis.cells if c.cell_id == dram.cell_ids[0])
    assert cell.condition == "baseline" and cell.params["size_bytes"] == 16 << 20
    assert dram.median == cell.summary.median and dram.ci_low <= dram.median <= dram.ci_high


def test_the_card_comes_first_with_cis_in_every_format(analysis):
    html = render_html(analysis)
    assert html.index("<h2>Summary</h2>") < html.index("<h2>Verdicts</h2>")
    card = html.split("<h2>Summary</h2>")[1].split("<h2>")[0]
    assert 'class="cards"' in card and "crc32: ns per byte" in card and "[" in card
    md = render_markdown(analysis)
    assert md.index("## Summary") < md.index("## Verdicts")
    assert "- crc32: ns per byte: 1.6" in md
    text = render_text(analysis)
    assert (
        text.index("Summary") < text.index("Verdicts") and "mem.latency (pattern=random) L1 (16 KiB)" in text
    )


def test_a_composite_is_the_mean_of_its_members_medians_with_a_bootstrap_ci():
    def cell(i, values, ci=True):
        return SimpleNamespace(
            cell_id=i,
            values=tuple(values),
            summary=SimpleNamespace(median=statistics.median(values), median_ci=object() if ci else None),
            unit="MFLOPS",
            metric="mflops",
            condition="baseline",
        )

    runs = ([100, 101, 99, 100, 102, 100], [300, 310, 290, 305, 295, 300])
    h = composite("SciMark composite", [cell(1, runs[0]), cell(2, runs[1])])
    assert h.median == pytest.approx((100 + 300) / 2)
    assert h.ci_low < h.median < h.ci_high
    assert h.ci_high - h.ci_low < 20  # the members' spread, not the spread between members
    assert h.cell_ids == (1, 2) and h.n_runs == 6
    # a member with too few runs for a CI of its own: the composite gives none either
    few = composite("SciMark composite", [cell(1, runs[0]), cell(2, runs[1][:3], ci=False)])
    assert few.ci_low is None and few.ci_high is None and few.n_runs == 3
