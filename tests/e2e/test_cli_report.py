"""`boardlab report`: what a report of a stored campaign shows, in HTML, Markdown and text.

Most tests build campaigns with known values straight through the Store (several conditions, a drifting
cell, memory-latency cells, monitor series), so the expected verdicts are known; one runs a real campaign.
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
from pathlib import Path

import pytest

from boardlab.store import Store

from helpers import EVIL, make_campaign_db, run_cli


@pytest.fixture(scope="module")
def synthetic_db(tmp_path_factory) -> Path:
    return make_campaign_db(tmp_path_factory.mktemp("report") / "s.db")


@pytest.fixture(scope="module")
def html_report(synthetic_db) -> str:
    out = synthetic_db.parent / "report.html"
    proc = run_cli("report", "--db", str(synthetic_db), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert str(out.resolve()) in proc.stdout
    return out.read_text()


def test_the_html_report_is_one_self_contained_file(html_report):
    assert html_report.startswith("<!DOCTYPE html>")
    assert "<script" not in html_report.lower()  # no JavaScript at all
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html_report)  # nothing fetched
    assert "@import" not in html_report and "@font-face" not in html_report
    assert html_report.count("<svg") >= 6
    for svg_el in re.findall(r"<svg[^>]*>", html_report):
        assert "viewBox=" in svg_el and "width=" in svg_el


def test_the_html_report_shows_every_section(html_report):
    for heading in (
        "Verdicts",
        "Environment",
        "A/A control",
        "Run values per workload",
        "Slowdown heatmap",
        "Memory-latency curves",
        "Run-order drift",
        "Monitor",
        "Cells",
        "Comparisons",
    ):
        assert f"<h2>{heading}</h2>" in html_report, heading
    for plot in ("CPU load", "CPU frequency", "Temperature"):
        assert f"<title>{plot}</title>" in html_report


def test_the_header_counts_runs_invalid_failed_and_reruns(html_report):
    # 12 repetitions of 6 cells + 28 latency cells = 34 cells x 12 = 408 runs; one invalid, one failed
    assert "408 stored: 406 valid, 1 invalid (1 throttled), 1 failed; 1 re-runs" in html_report  # by reason
    assert "board-a" in html_report and "boardlab</dt><dd>0.1.0" in html_report


def test_known_effects_get_their_verdicts(synthetic_db):
    proc = run_cli("report", "--db", str(synthetic_db), "--format", "md")
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    verdicts = md.split("## Verdicts")[1].split("##")[0]
    # fft is 25% slower under cpu-stress, at a lower CPU frequency: a confounded slowdown (its one size is
    # not named: a label shows only the parameters that vary in its table)
    assert re.search(r"▲ slowdown ⚠ confounded — scimark.fft: cpu-stress vs baseline", verdicts)
    # crc32 is 20% faster under memcpy (against a baseline median raised by its drift: about 0.76)
    assert re.search(r"▼ speedup — crc32: memcpy vs baseline: cost ratio 0\.7\d*×", verdicts)
    assert re.search(r"= no change — scimark.fft: memcpy vs baseline", verdicts)


def test_warnings_fixes_and_unsupported_capabilities_are_shown(html_report):
    assert '<span class="status st-FAIL">FAIL</span>' in html_report
    assert "let the board cool down" in html_report
    assert "<td>perf</td><td>no PMU</td>" in html_report


def test_board_and_plan_strings_are_escaped(html_report):
    assert EVIL not in html_report
    assert html.escape(EVIL) in html_report


def test_every_table_header_names_its_unit(synthetic_db, html_report):
    headers = set(re.findall(r"<th>([^<]*)</th>", html_report))
    quantities = [h for h in headers if re.search(r"median|CI|MAD|p5|ratio|CV|^n |runs", h)]
    assert len(quantities) >= 12
    assert all(re.search(r"\[[^\]]+\]", h) for h in quantities), quantities
    # the unit column names the row's unit, scaled to its median: crc32 ~1.6 ns stays in ns
    row = re.search(r"<tr class=\"[^\"]*\"><td>crc32</td><td></td><td>baseline</td>.*?</tr>", html_report)
    assert row and "<td>ns</td>" in row.group(0)


def test_the_drifting_cell_is_flagged_and_plotted_first(html_report):
    drift = html_report.split("<h2>Run-order drift</h2>")[1]
    first = drift.split("</svg>")[0]
    assert re.search(r"<svg[^>]*><title>crc32</title>", first)
    assert re.search(r"ρ = \+0\.9\d, p (=|&lt;) [^<]* DRIFT · baseline", first)
    assert 'class="flagged"' in html_report


def test_markdown_has_the_same_tables_and_no_images(synthetic_db):
    md = run_cli("report", "--db", str(synthetic_db), "--format", "md").stdout
    assert "<svg" not in md and "![" not in md
    assert "| workload | parameters | condition | n [runs] |" in md
    assert "| ratio cond/base (95% CI) [×] |" in md
    assert EVIL not in md and "\\<script>" in md and "&lt;" not in md


def test_text_format_is_a_compact_table(synthetic_db):
    proc = run_cli("report", "--db", str(synthetic_db), "--format", "text")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("campaign 'synthetic' (id 1): complete")
    assert any(line.startswith("crc32: memcpy vs baseline") and "speedup" in line for line in lines)
    assert max(len(line) for line in lines if "@" in line) < 200


def test_a_running_campaign_can_be_reported(tmp_path):
    db = make_campaign_db(tmp_path / "r.db", name=EVIL, status="running", n=10, with_latency=False)
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT status FROM campaigns").fetchone()[0] == "running"
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    out = tmp_path / "r.html"
    proc = run_cli("report", "--db", str(db), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "is <b>running</b>: the report covers the" in text
    assert EVIL not in text and html.escape(EVIL) in text


def test_a_report_reads_while_another_connection_holds_a_write_transaction(tmp_path):
    db = make_campaign_db(tmp_path / "w.db", status="running", n=10, with_latency=False)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE campaigns SET notes_json='{}'")
    try:
        proc = run_cli("report", "--db", str(db), "--format", "text", timeout=60)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert proc.returncode == 0, proc.stderr
    assert "running" in proc.stdout.splitlines()[0]


def test_html_needs_an_output_and_dash_means_stdout(synthetic_db):
    proc = run_cli("report", "--db", str(synthetic_db))
    assert proc.returncode == 2 and "-o report.html" in proc.stderr
    proc = run_cli("report", "--db", str(synthetic_db), "-o", "-")
    assert proc.returncode == 0 and proc.stdout.startswith("<!DOCTYPE html>")


def test_the_report_is_written_atomically_over_an_old_one(synthetic_db, tmp_path):
    out = tmp_path / "r.md"
    out.write_text("old")
    proc = run_cli("report", "--db", str(synthetic_db), "--format", "md", "-o", str(out))
    assert proc.returncode == 0
    assert out.read_text().startswith("# boardlab report: synthetic")
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]  # no temporary left behind


def test_the_output_suffix_chooses_the_format_and_a_contradiction_is_refused(synthetic_db, tmp_path):
    md, txt = tmp_path / "r.md", tmp_path / "r.txt"
    assert run_cli("report", "--db", str(synthetic_db), "-o", str(md)).returncode == 0
    assert md.read_text().startswith("# boardlab report: synthetic")  # Markdown, not the HTML default
    assert run_cli("report", "--db", str(synthetic_db), "-o", str(txt)).returncode == 0
    assert not txt.read_text().startswith(("#", "<"))
    clash = tmp_path / "clash.html"
    proc = run_cli("report", "--db", str(synthetic_db), "--format", "md", "-o", str(clash))
    assert proc.returncode == 2 and "names a html file but --format is md" in proc.stderr
    assert "Traceback" not in proc.stderr and not clash.exists()


def test_a_missing_database_or_campaign_is_a_usage_error(synthetic_db, tmp_path):
    proc = run_cli("report", "--db", str(tmp_path / "nope.db"), "--format", "text")
    assert proc.returncode == 2 and "no such results database" in proc.stderr
    proc = run_cli("report", "--db", str(synthetic_db), "--campaign", "99", "--format", "text")
    assert proc.returncode == 2 and "no campaign with id 99" in proc.stderr
    empty = tmp_path / "empty.db"
    Store.open(empty).close()
    proc = run_cli("report", "--db", str(empty), "--format", "text")
    assert proc.returncode == 2 and "no campaign" in proc.stderr
    proc = run_cli("report", "--db", str(synthetic_db), "-o", str(tmp_path / "no" / "dir.html"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_the_latest_campaign_is_the_default(tmp_path):
    db = make_campaign_db(tmp_path / "two.db", name="first", with_latency=False, n=10)
    make_campaign_db(db, name="second", with_latency=False, n=10, seed=2)
    assert "'second' (id 2)" in run_cli("report", "--db", str(db), "--format", "text").stdout
    assert (
        "'first' (id 1)" in run_cli("report", "--db", str(db), "--format", "text", "--campaign", "1").stdout
    )


PLAN = """\
name = "noop-steps"
[runs]
repetitions = 10
iterations = 3
warmup_max_iterations = 0
[gates]
idle = false
[[workloads]]
name = "noop"
params = { steps = [1000, 4000] }
compare = "steps"
"""


@pytest.mark.slow
def test_a_real_campaign_with_a_compared_parameter_is_reported(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    db = tmp_path / "r.db"
    proc = run_cli("run", str(plan), "--db", str(db), "--quiet", timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "r.html"
    proc = run_cli("report", "--db", str(db), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "<h2>Slowdown heatmap</h2>" in text and "steps=4000" in text
    assert "<title>CPU load</title>" in text  # the monitor's real series
    doc = json.loads(run_cli("export", "--db", str(db)).stdout)
    assert len(doc["runs"]) == 20
