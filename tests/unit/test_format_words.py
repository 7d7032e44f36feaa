"""Names and values as a reader reads them: a field name in words with its unit, a parameter in the unit its
name declares, one unit for the values shown together, sizes sorted as numbers."""

from __future__ import annotations

import pytest

from boardlab.analysis import document as doc
from boardlab.analysis.format import (
    common_unit,
    field_words,
    fmt_in,
    metric_words,
    param_sort_key,
    param_text,
    params_text,
)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("cpu_pct_one_cpu", "CPU [% of one CPU]"),
        ("rss_MiB", "RSS [MiB]"),
        ("build_p50_us", "build p50 [µs]"),
        ("latency_p50_ns", "latency p50 [ns]"),
        ("throughput_bit_s", "throughput [bit/s]"),
        ("transactions_s", "transactions per second"),  # a count per second, not a time
        ("duration_s", "duration [s]"),
        ("reader_cpu_ms_per_s", "reader CPU [ms/s]"),
        ("mb_s", "MB/s"),
        ("mflops", "MFLOPS"),
        ("dma / memcpy", "dma / memcpy"),  # already words
    ],
)
def test_a_field_name_reads_as_words_with_its_unit(name, words):
    assert field_words(name) == words


def test_a_column_header_says_its_unit_once():
    assert doc.Column("rss_MiB", "MiB").header == "RSS [MiB]"
    assert doc.Column("median", "ms").header == "median [ms]"
    assert doc.Column("cpu_pct_one_cpu", "%").header == "CPU [% of one CPU]"  # the share says of what
    assert doc.Column("goodput_bit_s").header == "goodput [bit/s]"


def test_a_metric_that_only_repeats_its_unit_has_no_words():
    assert metric_words("mflops", "MFLOPS") == ""
    assert metric_words("ns_per_byte", "ns") == "ns per byte"
    assert metric_words("cpu_pct_one_cpu", "%") == "CPU (% of one CPU)"


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("link_bit_s", 1e9, "link 1 Gbit/s"),
        ("rate_bit_s", 500000000.0, "rate 500 Mbit/s"),
        ("size_bytes", 4096, "size 4 KiB"),
        ("freq_khz", 1400000, "freq 1.4 GHz"),
        ("duration_s", 12.0, "duration 12 s"),
        ("threads", 4.0, "threads=4"),  # no ".0" on a whole number
        ("pattern", "random", "pattern=random"),
    ],
)
def test_a_parameter_reads_in_the_unit_its_name_declares(name, value, text):
    assert param_text(name, value) == text


def test_unset_parameters_are_left_out():
    assert (
        params_text({"size_bytes": 65536, "mode": None, "pattern": "random"}) == "size 64 KiB, pattern=random"
    )


def test_values_shown_together_share_one_unit_from_the_smallest():
    div, label = common_unit("ns", [70e3, 1563e3])
    assert (label, fmt_in(70e3, div), fmt_in(1563e3, div)) == ("µs", "70.00", "1563")
    assert fmt_in(70.0, 1.0) == "70"  # a whole number in its own unit stays whole
    # a range too wide for the smallest's unit is written in the median's
    assert common_unit("ns", [3, 5e9, 6e9])[1] == "s"


def test_sizes_sort_as_numbers_and_words_after_them():
    values = [1048576, 16384, "auto", 262144, 4096, 16777216]
    assert sorted(values, key=param_sort_key) == [4096, 16384, 262144, 1048576, 16777216, "auto"]


def test_a_progress_line_names_the_cell_as_reports_do():
    import io
    from types import SimpleNamespace

    from boardlab.cli.progress import TerminalProgress
    from boardlab.model.campaign import Cell

    out = io.StringIO()
    progress = TerminalProgress(out)
    result = SimpleNamespace(
        ok=True, valid=True, value=1.423e7, metrics=(SimpleNamespace(name="rate", unit="samples/s"),)
    )
    for params in ((), (("pattern", "random"), ("size_bytes", 4096))):
        run = SimpleNamespace(cell=Cell("mem.latency", params, "baseline", "rate"), repetition=1)
        progress.finished(run, result, 1, 2)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[1/2] mem.latency @ baseline rep 1: 14.23 Msamples/s (ok)"), lines
    assert lines[1].startswith("[1/2] mem.latency (pattern=random, size 4 KiB) @ baseline rep 1:"), lines
    assert "[]" not in out.getvalue() and "e+" not in out.getvalue()


def test_a_sweep_condition_reads_in_hertz_from_its_parts_not_its_name():
    from boardlab.analysis.format import condition_text
    from boardlab.model.facts import ConditionPart

    from helpers import sweep_parts

    both = sweep_parts({"policy0": 1400000, "policy4": 200000})
    assert condition_text("policy0@1400000+policy4@200000", both) == "policy0 1.4 GHz + policy4 200 MHz"
    assert condition_text("policy0@600000", sweep_parts({"policy0": 600000})) == "policy0 600 MHz"
    # a name the plan gave is the reader's, whatever the parts fix
    assert condition_text("low-clocks", both) == "low-clocks"
    # a name that reads like a sweep's is not one without the sweep's parts
    assert condition_text("policy0@1400000", ()) == "policy0@1400000"
    stress = (ConditionPart("stressor", {"stressor": "cpu"}),)
    assert condition_text("policy0@1400000", stress) == "policy0@1400000"
    assert condition_text("cpu-stress", stress) == "cpu-stress"


def test_a_report_without_a_comparison_with_data_adjusted_no_p():
    from types import SimpleNamespace

    from boardlab.analysis.records import CampaignAnalysis

    def text(size):
        a = SimpleNamespace(family_size=size, family_adjustment="holm")
        a.family_text = CampaignAnalysis.family_text.fget(a)
        return CampaignAnalysis.adjusted_text.fget(a)

    assert text(0) == "no p adjusted: no comparison has valid runs on both sides"  # never "over all 0"
    assert text(18).startswith("p adjusted by Holm") and "over all 18 comparisons" in text(18)
