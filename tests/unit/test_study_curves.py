"""The curves study (the worked example of docs/extending.md "Add a report study"): a sweep over
`size_bytes` becomes one line per pattern against a log2 size axis, decided from the cells, not a name."""

from __future__ import annotations

import importlib

import pytest

from boardlab.analysis import analyze
from boardlab.analysis.records import Study, StudyContext
from boardlab.analysis.studies import STUDIES, curves
from boardlab.report.render import render_sections
from boardlab.store import Store

from helpers import make_campaign_db


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    db = make_campaign_db(tmp_path_factory.mktemp("curves") / "c.db", n=6)
    with Store.open(db, create=False) as store:
        return analyze(store, 1)


def test_every_registered_study_follows_the_plugin_protocol():
    assert len(STUDIES) == len(set(STUDIES))
    for name in STUDIES:
        module = importlib.import_module(name)
        assert isinstance(module, Study), name  # the contract of analysis/records.py: every member present
        assert isinstance(module.TITLE, str) and module.TITLE
        for hook in ("applies", "analyze", "sections"):
            assert callable(getattr(module, hook)), (name, hook)


def test_curves_apply_to_a_size_sweep_and_not_to_single_sizes(analysis):
    ctx = StudyContext(None, 1, analysis.cells, {}, {})
    assert curves.applies(ctx)
    plain = tuple(c for c in analysis.cells if "size_bytes" not in c.params)
    assert not curves.applies(StudyContext(None, 1, plain, {}, {}))


def test_one_line_per_pattern_and_condition_in_size_order(analysis):
    record = analysis.study(curves.__name__)
    (group,) = record.groups
    assert group.workload == "mem.latency" and group.unit == "ns"
    assert sorted(c.label for c in group.curves) == [
        "pattern=random @ baseline",
        "pattern=random @ cpu-stress",
        "pattern=sequential @ baseline",
        "pattern=sequential @ cpu-stress",
    ]
    for c in group.curves:
        sizes = [p.size_bytes for p in c.points]
        assert sizes == sorted(sizes) and len(sizes) == 7
        assert all(p.ci_low <= p.median <= p.ci_high for p in c.points)
    # the generic boxplots point to the curves instead of drawing 28 boxes
    assert set(curves.shows(record)) == {c.cell_id for c in analysis.cells if c.workload == "mem.latency"}


def test_the_section_is_a_figure_in_html_only(analysis):
    sections = curves.sections(analysis, analysis.study(curves.__name__))
    html = render_sections(sections, "html")
    assert "<h2>Memory-latency curves</h2>" in html and html.count("<svg") == 1
    assert "working-set size (log2 scale)" in html and "16 MiB" in html
    assert render_sections(sections, "md").strip() == "" and render_sections(sections, "text").strip() == ""
