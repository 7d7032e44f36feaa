"""`governor simulate`'s comparison is one document: the HTML page, the Markdown and the text the command
prints are the report renderers' layouts of it, so every format says the same thing."""

from __future__ import annotations

import re

import pytest

from boardlab.report.render import render_document
from boardlab.report.simulation import simulation_document, simulation_html, simulation_text

from helpers import run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit


@pytest.fixture(scope="module")
def res() -> dict:
    """The simulator's real comparison on a one-cluster SoC (so anti-snoop is unsupported), as the command
    makes it."""
    from boardlab.cli.governor import _soc
    from boardlab.governor import evaluate

    out = evaluate.compare(_soc("am335x"), ["compute-bound"], slow=None, sampling_s=0.01)
    return {**out, "anti_snoop_rule": "none (single cluster)"}


def _cells(text: str, fmt: str) -> list[str]:
    if fmt == "html":
        return re.findall(r"<td[^>]*>([^<]*)</td>", text)
    if fmt == "md":
        return [
            c.strip() for line in text.splitlines() if line.startswith("| ") for c in line.split("|")[1:-1]
        ]
    return text.split()


def test_every_format_holds_every_row_of_the_comparison(res):
    document = simulation_document(res)
    assert document.title == "Governor policies on the simulator: am335x"
    for fmt in ("html", "md", "text"):
        out = render_document(document, fmt)
        cells = _cells(out, fmt)
        for r in res["rows"]:
            assert r["policy"] in cells, (fmt, r["policy"])
            if "unsupported" in r:
                assert "unsupported: anti-snoop needs two clusters and a rule" in out
                continue
            assert f"{r['time_s']:.3f}" in cells and f"{r['edp_j_s']:.4f}" in cells and r["verdict"] in out
        assert "anti-snoop rule: none (single cluster)" in out and "(< 1 is better)" in out.replace(
            "&lt;", "<"
        )


def test_the_page_draws_both_heatmaps_and_only_html_has_them(res):
    html = simulation_html(res)
    assert html.startswith("<!DOCTYPE html>") and "<title>boardlab governor simulate: am335x</title>" in html
    assert "<h1>Governor policies on the simulator: am335x</h1>" in html
    assert html.count("<svg") == 2
    assert "run time relative to ondemand" in html and "EDP relative to ondemand" in html
    assert "(&lt; 1 is better)" in html  # the prose is escaped like any report's
    powersave = next(r for r in res["rows"] if r["policy"] == "powersave")
    assert f"run time x{powersave['time_ratio_vs_ondemand']:.3f}" in html  # the cell's tooltip
    text = simulation_text(res)
    assert "<svg" not in text and "relative to ondemand" not in text


def test_the_command_prints_the_documents_text(res):
    p = run_cli("governor", "simulate", "--soc", "am335x", "--trace", "compute-bound")
    assert p.returncode == 0, p.stderr
    assert p.stdout == simulation_text(res)  # the simulator is deterministic: the same document


def test_every_format_points_to_where_the_model_disagrees_with_the_study(res):
    """The simulator's figures are read beside its documented limit: the section of docs/governor.md that
    says where and why the model ranks the policies unlike the study."""
    from pathlib import Path

    heading = "Where the model disagrees with the study"
    assert f"### {heading}\n" in (Path(__file__).parents[2] / "docs" / "governor.md").read_text()
    for fmt in ("html", "md", "text"):
        out = render_document(simulation_document(res), fmt).replace("&quot;", '"').replace("&#x27;", "'")
        assert f'docs/governor.md, "{heading}"' in " ".join(out.split()), fmt
