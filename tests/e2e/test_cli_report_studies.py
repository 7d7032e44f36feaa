"""`boardlab report` for the interference study's two parts: real-time latency (rt.cyclictest) and AI
inference.

The campaigns are built through the Store (tests/helpers.py make_rt_db, make_ai_db) with known histograms and
per-frame latencies, shaped as the two workloads store them, so the percentiles, the censored tail and the
verdicts are known in advance.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from helpers import EVIL, make_ai_db, make_rt_db, run_cli

# --- fixtures -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rt_db(tmp_path_factory) -> Path:
    return make_rt_db(tmp_path_factory.mktemp("rt") / "rt.db")


@pytest.fixture(scope="module")
def ai_db(tmp_path_factory) -> Path:
    return make_ai_db(tmp_path_factory.mktemp("ai") / "ai.db")


def _report(db: Path, fmt: str) -> str:
    args = ["report", "--db", str(db), "--format", fmt] + (["-o", "-"] if fmt == "html" else [])
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def rt_html(rt_db) -> str:
    return _report(rt_db, "html")


@pytest.fixture(scope="module")
def ai_html(ai_db) -> str:
    return _report(ai_db, "html")


def md_rows(md: str, section: str) -> dict[str, dict[str, str]]:
    """The Markdown table under `## section`: first column -> {header: cell}; several rows with the same
    first column are keyed 'first | second'."""
    block = md.split(f"## {section}\n")[1].split("\n## ")[0]
    lines = [ln for ln in block.splitlines() if ln.startswith("|")]
    split = [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in lines]
    headers, rows = split[0], split[2:]
    keyed = {}
    for r in rows:
        keyed[f"{r[0]} | {r[1]}"] = dict(zip(headers, r, strict=True))
    return keyed


# --- real-time latency --------------------------------------------------------------------------------------


def test_rt_section_shows_boxplots_by_load_and_mode_and_log_histograms(rt_html):
    assert "<h2>Real-time latency</h2>" in rt_html
    assert "<h2>AI inference</h2>" not in rt_html
    section = rt_html.split("<h2>Real-time latency</h2>")[1].split("<h2>")[0]
    box = section.split("</svg>")[0]
    assert "max latency per run, lower is better" in box
    # loads on the axis in condition order, named by their condition parts (never by the condition's name),
    # one box per isolation mode with a legend
    assert box.index(">none<") < box.index(">ai.inference (model=mobilenet_v1)<")
    assert ">shared<" in box and ">isolated<" in box
    assert "max latency [µs]" in box
    assert "<h3>Latency histograms</h3>" in section
    hists = re.findall(r"<svg[^>]*>.*?</svg>", section.split("<h3>Latency histograms</h3>")[1], re.S)
    assert len(hists) == 4
    assert all("(log)" in h and "latency [µs]" in h for h in hists)
    # the overflow is a bar of its own, labelled with the limit, in every panel (shared layout)
    assert all("&gt;= 1000" in h for h in hists)
    overflowing = next(h for h in hists if "<title>mobilenet_v1/shared</title>" in h)
    assert "overflow: 30 samples at or beyond 1000 µs (values unknown)" in overflowing
    # the rt cells are not drawn a second time with the other workloads
    assert "rt.cyclictest: 4 cells, shown by load and mode" in rt_html


def test_rt_percentiles_are_nearest_rank_of_the_merged_histogram(rt_db):
    md = _report(rt_db, "md")
    rows = md_rows(md, "Real-time latency")
    iso = next(r for k, r in rows.items() if k.startswith("none/isolated"))
    assert [iso[f"{p} [µs]"] for p in ("p50", "p90", "p99", "p99.9", "p99.99")] == ["5", "6", "7", "22", "22"]
    assert iso["min [µs]"] == "5" and iso["max [µs]"] == "22"
    assert iso["samples [samples]"] == "5000" and iso["overflow [samples]"] == "0"
    assert iso["runs [runs]"] == "10"
    assert "p99.99 from 5000 samples, fewer than 10000" in iso["note"]
    shared = next(r for k, r in rows.items() if k.startswith("mobilenet_v1/shared"))
    assert shared["overflow [samples]"] == "30" and shared["samples [samples]"] == "50000"
    assert shared["p99.99 [µs]"] == ">= 1000"  # censored: only the bound, never a number
    assert re.fullmatch(r"\d+", shared["p99.9 [µs]"])  # rank 49950 of 49970 in range: measured
    assert "p99.99 in the overflow" in shared["note"]
    assert int(shared["max [µs]"]) >= 1000
    # the 50000-sample cells need no note on the sample count
    assert "fewer than" not in shared["note"]


def test_rt_percentile_table_in_html_and_text(rt_db, rt_html):
    section = rt_html.split("<h3>Percentiles</h3>")[1].split("<h2>")[0]
    headers = re.findall(r"<th>([^<]*)</th>", section)
    assert headers[:4] == ["condition", "runs [runs]", "samples [samples]", "overflow [samples]"]
    assert all("[" in h for h in headers[1:]), headers
    assert '<td class="num censored">&gt;= 1000</td>' in section
    text = _report(rt_db, "text")
    block = text.split("real-time latency:")[1]
    line = next(ln for ln in block.splitlines() if ln.startswith("mobilenet_v1/shared"))
    assert ">= 1000" in line
    assert "p99.99 [µs]" in block


def test_a_cell_without_valid_runs_shows_dashes_and_why(tmp_path):
    db = make_rt_db(tmp_path / "inv.db", n=6, invalid="mobilenet_v1/isolated")
    rows = md_rows(_report(db, "md"), "Real-time latency")
    row = next(r for k, r in rows.items() if k.startswith("mobilenet_v1/isolated"))
    assert row["runs [runs]"] == "0" and row["samples [samples]"] == "0"
    assert row["p99 [µs]"] == "–" and row["max [µs]"] == "–"
    assert "no latency histogram stored for a valid run" in row["note"]
    page = _report(db, "html")
    assert "mobilenet_v1/isolated: no histogram" in page
    assert 'title="invalid run"' in page or "<title>invalid run</title>" in page  # hollow dots in the boxplot
    assert "mobilenet_v1/isolated" in _report(db, "text")


def test_a_campaign_without_the_studies_has_no_study_sections(tmp_path):
    from helpers import make_campaign_db

    db = make_campaign_db(tmp_path / "plain.db", n=6, with_latency=False)
    page = _report(db, "html")
    assert "Real-time latency" not in page and "AI inference" not in page
    md = _report(db, "md")
    assert "## Real-time latency" not in md and "## AI inference" not in md


# --- AI inference -------------------------------------------------------------------------------------------


def test_ai_section_has_one_panel_per_model_with_a_box_per_condition(ai_html):
    assert "<h2>AI inference</h2>" in ai_html and "<h2>Real-time latency</h2>" not in ai_html
    section = ai_html.split("<h2>AI inference</h2>")[1].split("<h2>")[0]
    panels = re.findall(r"<svg[^>]*>.*?</svg>", section, re.S)
    assert len(panels) == 2
    assert [re.search(r"<title>([^<]*)</title>", p).group(1) for p in panels] == ["mobilenet_v1", "resnet18"]
    for p in panels:
        assert "per-frame latency [ms]" in p
        assert ">baseline<" in p and ">cpu<" in p
    assert EVIL not in ai_html and html.escape(EVIL) in ai_html
    assert "ai.inference: 6 cells, shown per model" in ai_html


def test_the_p99_verdict_finds_a_tail_slowdown_that_the_median_does_not(ai_db, ai_html):
    md = _report(ai_db, "md")
    rows = md_rows(md, "AI inference")
    mobile = rows["mobilenet_v1 | cpu"]
    assert "slowdown" in mobile["p99 verdict"]
    assert "slowdown" not in mobile["median verdict"] and "no change" in mobile["median verdict"]
    assert float(mobile["p99: cost ratio (90% decision interval) [×]"].split()[0]) == pytest.approx(
        1.2, abs=0.03
    )
    assert float(mobile["p99 [ms]"]) == pytest.approx(16.8, rel=0.02)
    assert float(mobile["p50 [ms]"]) == pytest.approx(10.0, rel=0.02)
    resnet = rows["resnet18 | cpu"]
    assert "slowdown" in resnet["median verdict"] and "slowdown" in resnet["p99 verdict"]
    base = rows["mobilenet_v1 | baseline"]
    assert base["median verdict"] == "–" and base["p99 verdict"] == "–"
    assert base["n [runs]"] == "12" and base["frames per run [frames]"] == "89"
    assert "Runs of 89 frames: a per-run p99 needs at least 100" in md.split("## AI inference")[1]
    assert "pooled" in md.split("## AI inference")[1]
    unchanged = rows["mobilenet_v1 | memcpy\\<script>alert(1)\\</script>"]  # escaped in Markdown too
    assert "no change" in unchanged["median verdict"] and "no change" in unchanged["p99 verdict"]
    # HTML: both verdict columns, colored per cell
    table = ai_html.split("<h2>AI inference</h2>")[1].split("<h2>")[0]
    assert "<th>median verdict</th>" in table and "<th>p99 verdict</th>" in table
    assert re.search(r'<td class="verdict v-slowdown">▲ slowdown</td>', table)
    assert "Holm over all 8 comparisons of this report (medians and tails together)" in table


def test_the_primary_verdicts_are_unchanged_by_the_tail_family(ai_db):
    md = _report(ai_db, "md")
    verdicts = md.split("## Verdicts")[1].split("##")[0]
    assert re.search(r"▲ slowdown — ai.inference \(model=resnet18\): cpu vs baseline", verdicts)
    assert not re.search(r"slowdown — ai.inference \(model=mobilenet_v1\): cpu", verdicts)
    text = _report(ai_db, "text")
    block = text.split("AI inference:")[1]
    line = next(ln for ln in block.splitlines() if ln.startswith("mobilenet_v1") and " cpu " in ln)
    assert "no change" in line and "slowdown" in line


def test_the_study_report_renders_in_a_browser(rt_db, ai_db, tmp_path):
    from e2e.test_report_browser import ElementCounter, run_browser

    for db in (rt_db, ai_db):
        out = tmp_path / f"{db.stem}.html"
        out.write_text(_report(db, "html"))
        proc = run_browser(tmp_path, "--dump-dom", out.as_uri())
        assert proc.returncode == 0, proc.stderr[-2000:]
        parser = ElementCounter()
        parser.feed(proc.stdout)
        assert parser.tags.get("script", 0) == 0
        assert parser.tags.get("svg", 0) >= 3
        assert ("Real-time latency" if db is rt_db else "AI inference") in proc.stdout
