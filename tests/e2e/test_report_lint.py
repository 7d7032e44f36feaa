"""Every report a reader gets, read the way a proof-reader reads it: each study's fixture campaign, the
demo's kind of campaign (the interference workloads with their latency cells), the simulated governor sweep
and every page of `boardlab serve`, in every format (HTML, Markdown, text). Their visible text has no number
in e-notation, no `=12.0` (a whole number written as a float), no `None`, no empty brackets, no field name
as a table header (`rss_MiB`, `cpu_pct_one_cpu`) and, in Markdown, no HTML entity (`&gt;`).

The fixes are made where the text is made (analysis/format.py and the studies), not by cleaning the output:
this test only reads what `boardlab report` and `boardlab serve` print."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from helpers import (
    entries_plan,
    full_sweep_report,
    make_ai_db,
    make_campaign_db,
    make_entries_db,
    make_rt_db,
    make_satellite_db,
    make_services_db,
    make_stream_db,
    run_cli,
)
from history_store import make_history_db

FORMATS = ("html", "md", "text")
# what a reader must not see, with the name a failure gives it
FAULTS = (
    (re.compile(r"[0-9]e[+-]?[0-9]"), "a number in e-notation"),
    (re.compile(r"=\d+\.0\b"), "a whole number written as a float"),
    (re.compile(r"\bNone\b"), "None"),
    (re.compile(r"\[\]"), "empty brackets"),
)
FIELD_NAME = re.compile(r"\b[a-z][a-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]\b")
ENTITY = re.compile(r"&(#x?[0-9a-fA-F]+|[A-Za-z]+);")


def visible(page: str) -> str:
    """An HTML page's text as a reader meets it: no style, script or markup; tooltips (<title>) kept."""
    page = re.sub(r"(?is)<(style|script)\b.*?</\1>", " ", page)
    return html.unescape(re.sub(r"(?s)<[^>]*>", " ", page))


def headers(text: str, fmt: str) -> list[str]:
    """The table headers of a report: HTML's <th>, Markdown's row above a |---| line."""
    if fmt == "html":
        return [visible(h).strip() for h in re.findall(r"(?s)<th\b[^>]*>(.*?)</th>", text)]
    if fmt == "md":
        lines = text.splitlines()
        return [
            c.strip()
            for line, rule in zip(lines, lines[1:], strict=False)
            if line.startswith("|") and re.fullmatch(r"\|[\s:|-]+\|", rule)
            for c in re.split(r"(?<!\\)\|", line)[1:-1]
        ]
    return []


def faults(text: str, fmt: str) -> list[str]:
    """What a reader must not see, each with the text around it."""
    seen = visible(text) if fmt == "html" else text
    found = [
        f"{what}: ...{seen[max(0, m.start() - 60) : m.end() + 30]!r}..."
        for pattern, what in FAULTS
        for m in pattern.finditer(seen)
    ]
    found += [f"a field name as a header: {h!r}" for h in headers(text, fmt) if FIELD_NAME.search(h)]
    if fmt == "md":
        found += [f"an HTML entity in Markdown: {m.group(0)!r}" for m in ENTITY.finditer(text)]
    return sorted(set(found))


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    return build_stores(tmp_path_factory.mktemp("lint"))


def build_stores(d: Path) -> dict[str, Path]:
    """Every study's campaign in a store of its own under `d`, by name (also test_report_geometry's pages)."""
    dbs = {
        "demo": make_campaign_db(d / "demo.db", name="quick"),
        "rt": make_rt_db(d / "rt.db"),
        "ai": make_ai_db(d / "ai.db"),
        "ai delegates": make_ai_db(d / "ai-delegates.db", n=6, delegates=("xnnpack", "none")),
        "services": make_services_db(d / "services.db"),
        "stream": make_stream_db(d / "stream.db"),
        "satellite": make_satellite_db(d / "satellite.db"),
        "entries": make_entries_db(d / "entries.db", entries_plan()),
        "history": make_history_db(d / "history.db"),
    }
    sweep = d / "sweep.db"
    proc = run_cli("governor", "sweep", "--sim", "am335x", "--db", str(sweep), "--runs", "3")
    assert proc.returncode == 0, proc.stderr
    dbs["governor sweep"] = sweep
    # two clusters, each at its lowest and highest frequency, every size: the worst-cell list has rows
    from boardlab.campaign import simulated
    from boardlab.governor.sweep import SIZES_BYTES
    from boardlab.store import Store

    from e2e.test_governor_sim_campaign import small_exynos

    with Store.open(d / "two.db", create=True) as store:
        simulated.write(store, small_exynos(), this_policy=None, sizes=SIZES_BYTES, repetitions=3)
    dbs["two-cluster sweep"] = d / "two.db"
    return dbs


# every page of `boardlab serve` over the history store
SERVE_PAGES = ("/boards", "/campaigns", "/campaign/1", "/campaign/3", "/compare", "/compare?a=c:2&b=c:3",
               "/history", "/history?plan=nightly", "/running")  # fmt: skip
STUDIES = ("demo", "rt", "ai", "ai delegates", "services", "stream", "satellite", "entries", "history",
           "governor sweep", "two-cluster sweep")  # fmt: skip


@pytest.mark.parametrize("study", STUDIES)
def test_every_report_reads_clean_in_every_format(stores, study, tmp_path):
    problems = {}
    for fmt in FORMATS:
        out = tmp_path / f"report.{fmt}"
        proc = run_cli("report", "--db", str(stores[study]), "--format", fmt, "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        text = out.read_text()
        assert text.strip(), f"{study}: an empty {fmt} report"
        if found := faults(text, fmt):
            problems[fmt] = found
    assert problems == {}, f"{study}: {problems}"


def test_every_serve_page_reads_clean(stores):
    pytest.importorskip("starlette", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")
    pytest.importorskip("uvicorn", reason="boardlab serve needs the web extra: pip install 'boardlab[web]'")
    from serve_helpers import Served

    problems = {}
    with Served(stores["history"]) as served:
        for page in SERVE_PAGES:
            status, _, body = served.get(page)
            assert status == 200, (page, body[:300])
            if found := faults(body, "html"):
                problems[page] = found
    assert problems == {}


def test_the_proof_reader_sees_each_fault():
    """The checks themselves: each fault in a page is found, and clean text passes."""
    page = (
        "<style>a{width:1e3px}</style><table><tr><th>rss_MiB</th><th>RSS [MiB]</th></tr></table>"
        "<p>1.423e+07 samples/s, threads=4.0, model None, mibench.sha1[]@baseline</p>"
    )
    found = faults(page, "html")
    assert len(found) == 5, found  # the style's 1e3 is no text
    assert faults("| p |\n|---|\n| p &lt; 0.05 |\n", "md") == ["an HTML entity in Markdown: '&lt;'"]
    assert faults("<p>14.23 Msamples/s, threads=4, link 1 Gbit/s [1.2, 3.4]</p>", "html") == []


def _section(page: str, heading: str) -> str:
    return page.split(f"<h2>{heading}</h2>")[1].split("<h2>")[0]


def test_an_empty_part_says_why_once_and_sizes_sort_as_numbers(stores, tmp_path):
    out = tmp_path / "sweep.html"
    proc = run_cli("report", "--db", str(stores["governor sweep"]), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    # no comparison: "Verdicts" says so in words, and no A/A control repeats it
    assert "No comparisons in this campaign" in visible(_section(page, "Verdicts"))
    assert "<h2>A/A control</h2>" not in page
    # no energy: the reason once, and no table of no sources under it
    energy = _section(page, "Energy")
    assert visible(energy).count("energy was not measured") == 1 and "<table" not in energy
    # the sweep's conditions in hertz, not in bare kHz
    assert "policy0@" not in visible(page.split("<h2>Plan</h2>")[0])
    assert "policy0 1 GHz" in visible(page)
    # the worst cells of each pattern in the order of their sizes, 4 KiB before 16 KiB before 1 MiB
    md = out.with_suffix(".md")
    proc = run_cli("report", "--db", str(stores["two-cluster sweep"]), "--format", "md", "-o", str(md))
    assert proc.returncode == 0, proc.stderr
    worst = re.findall(r"policy0 random (\d+ [KMG]iB): worst", md.read_text())
    sizes = [
        int(s.split()[0]) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[s.split()[1]] for s in worst
    ]
    assert len(sizes) > 3 and sizes == sorted(sizes), worst


def test_the_full_simulated_sweep_draws_its_744_curves_as_one_bounded_heatmap(tmp_path_factory):
    """The issue's 6,696-cell sweep (every OPP pair of the Exynos 5422, 3 patterns x 9 sizes): its 744
    latency curves were 744 lines in a 1.2 MB SVG under a legend taller than the plot; the figure builder
    draws them as the rows of one heatmap, sorted by frequency, with a colour scale. The sweep and its report
    are test_report_geometry's, made once for both (helpers.full_sweep_report)."""
    out, said = full_sweep_report(tmp_path_factory)
    assert "6696 cells" in said
    curves = _section(out.read_text(), "Memory-latency curves")
    svg = re.search(r"(?s)<svg\b.*?</svg>", curves).group(0)
    assert "<polyline" not in svg and "744 series, too many to tell apart as lines" in visible(svg)
    assert len(svg) < 400_000, len(svg)
    rows = re.findall(r'fill-opacity="0"><title>([^:<]*):', svg)  # each row's tooltip, in row order
    assert len(rows) == 744 and rows[0] == "pattern=random @ baseline"
    # the A15 (policy4) rises through 200 MHz ... 900 MHz, 1 GHz ... 2 GHz within the A7's 200 MHz
    assert [r.rsplit("policy4 ", 1)[1] for r in rows[1:20]][7:11] == [
        "900 MHz",
        "1 GHz",
        "1.1 GHz",
        "1.2 GHz",
    ]
    assert "ns per access [ns]" in visible(svg) and "ns_per_access" not in visible(curves)
    assert not faults(curves, "html")


def test_ai_panels_are_named_by_their_model_then_what_else_varies(stores, tmp_path):
    """Two delegates of two models: each panel says its model first, never `delegate=xnnpack` alone."""
    out = tmp_path / "ai.html"
    proc = run_cli("report", "--db", str(stores["ai delegates"]), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    panels = set(re.findall(r'<svg[^>]*aria-label="([^"]*\(delegate=[^"]*)"', out.read_text()))
    assert {"mobilenet_v1 (delegate=xnnpack)", "resnet18 (delegate=none)"} <= panels, panels
    assert not {"delegate=xnnpack", "delegate=none"} & panels


def test_the_governor_simulator_page_reads_clean(tmp_path):
    """`governor simulate --html`, and the text it prints, read like any report."""
    page = tmp_path / "simulate.html"
    proc = run_cli("governor", "simulate", "--trace", "memory-bound", "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    assert faults(page.read_text(), "html") == [] and faults(proc.stdout, "text") == []
    assert "daemon:anti-snoop" in visible(page.read_text())
