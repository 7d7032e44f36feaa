"""The data-stream study's report section: every table, the estimate labelled, the reasons shown."""

from __future__ import annotations

from boardlab.analysis.studies.stream import (
    Balance,
    BitCost,
    Curve,
    DmaRow,
    Gflops,
    StageCpu,
    StreamStudy,
    sections,
    tables,
)
from boardlab.report.render import render_sections

from helpers import host_workload_facts

# the stand-in stores below hold runs, not the facts a campaign stores: this host's, as a campaign run here
HOST = host_workload_facts()


def terminal_lines(s):
    return render_sections(sections(None, s), "text").splitlines()


def markdown_lines(s):
    return render_sections(sections(None, s), "md").splitlines()


def html_parts(s):
    return [render_sections(sections(None, s), "html")]


def study(**kw) -> StreamStudy:
    base = dict(
        curves=(
            Curve("io.storage", "op=read", "bit/s", ((4096, 50.0, 5), (1048576, 800.0, 5)), to_bit_s=8e6),
        ),
        dma=(),
        dma_unsupported="no DMA engine: /sys/class/dma lists no dmaengine channel on this machine",
        stages=(StageCpu("block_bytes=16384", (("receive", 0.5), ("compress", 6.0), ("sink", 0.4)), 0.998),),
        gflops=(Gflops("compute.gemm (n=512, precision=double)", 48.0, 5),),
        bit_costs=(
            BitCost(
                "stream.pipeline (block_bytes=16384)",
                2.5,
                "cycle-equivalents (estimate: CPU time x clock)",
                "this run has no counters (boardlab-kern without the counters option)",
            ),
        ),
        balance=Balance(
            2.4e9, "estimate: clock x 1 thread(s), one instruction per cycle", 1.2e10, "io.net (...)"
        ),
        searches=(("io.net_zeroloss (lo_bit_s=1e7)", 3.2e8, "transmit (1/1 runs)"),),
        clock_hz=2.4e9,
        clock_source="/proc/cpuinfo cpu MHz",
        notes=(),
    )
    return StreamStudy(**{**base, **kw})


def test_every_table_is_there_with_units_in_the_headers():
    titles = [t for t, _h, _r in tables(study())]
    assert titles == [
        "Throughput against block size",
        "CPU memcpy against DMA",
        "CPU per pipeline stage (ns per delivered input byte)",
        "GFLOPS",
        "Zero-loss rate and pipeline knee",
        "Instructions per bit",
        "Balance (compute instructions per I/O bit; about 1 is balanced)",
    ]
    t = dict((t, (h, r)) for t, h, r in tables(study()))
    # io.storage's MB/s becomes bit/s on the common axis: 800 MB/s = 6.4 Gbit/s.
    assert t["Throughput against block size"][1][1][3] == "6.40 Gbit/s"
    assert t["CPU memcpy against DMA"][1] == [(f"unsupported: {study().dma_unsupported}",)]
    (row,) = t["Balance (compute instructions per I/O bit; about 1 is balanced)"][1]
    assert row[-1] == "0.200"


def test_a_dma_table_when_measured():
    s = study(dma=(DmaRow(65536, 1000.0, 1500.0, 1.5, 5),), dma_unsupported=None)
    (_, headers, rows) = next(x for x in tables(s) if x[0] == "CPU memcpy against DMA")
    assert headers[:3] == ("size_bytes", "memcpy_mb_s", "dma_mb_s") and rows == [
        ("65536", "1000.0", "1500.0", "1.50", "5")
    ]


def test_the_estimate_is_labelled_and_its_reason_shown_in_every_format():
    for text in (
        "\n".join(terminal_lines(study())),
        "\n".join(markdown_lines(study())),
        "".join(html_parts(study())),
    ):
        assert "estimate" in text and "counters option" in text and "no DMA engine" in text


def test_html_has_a_curve_and_stage_bars_and_escapes_labels():
    evil = study(stages=(StageCpu("<script>", (("compress", 1.0),), None),))
    out = "".join(html_parts(evil))
    assert out.count("<svg") == 2 and "<script>" not in out and "&lt;script&gt;" in out


def test_pipeline_efficiency_against_the_network_ceiling():
    s = study(efficiency=(("block_bytes=16384", 6e8, 0.025),), ceiling="io.net (mode=tcp_stream): 24 Gbit/s")
    (_, headers, rows) = next(x for x in tables(s) if x[0].startswith("Pipeline goodput against io.net"))
    assert rows == [("block_bytes=16384", "600 Mbit/s", "2.5%")]


def test_a_cell_without_the_curve_metric_draws_no_point(tmp_path):
    # tcp_rr reports transactions_s, not goodput: its msg_bytes must not open an empty curve point.
    import json

    from boardlab.analysis.studies.stream import stream_study
    from boardlab.model.worker_result import build_worker_result

    class FakeStore:
        def runs(self, _cid):
            metric = {"unit": "1/s", "higher_is_better": True, "median": 7e4}
            body = {"ok": True, "metrics": {"transactions_s": metric}, "info": {"sent_bytes": 0}}
            doc = build_worker_result("boardlab-kern", "io.net", {"mode": "tcp_rr"}, body).to_json()
            return [{"workload": "io.net", "worker_json": doc, "valid": 1,
                     "params_json": json.dumps({"mode": "tcp_rr", "msg_bytes": 64}),
                     "condition": "baseline"}]  # fmt: skip

        def campaign(self, _cid):
            return {"environment_json": "{}"}

    s = stream_study(FakeStore(), 1, {"hostname": "elsewhere"}, HOST)
    assert s is not None and s.curves == ()


class _Store:
    def __init__(self, rows):
        self.rows = rows

    def runs(self, _cid):
        return self.rows

    def campaign(self, _cid):
        return {"environment_json": "{}"}

    def energy_sources(self, _cid):
        return []


def _row(workload, params, metrics, info=None):
    """A run as the store holds it: its worker result as the worker would print it (metric units aside)."""
    import json

    from boardlab.model.worker_result import build_worker_result

    metrics = {name: {"unit": "", "higher_is_better": True, **m} for name, m in metrics.items()}
    body = {"ok": True, "metrics": metrics, "info": info or {}}
    doc = build_worker_result("boardlab-kern", workload, params, body).to_json()
    return {"workload": workload, "worker_json": doc, "valid": 1,
            "params_json": json.dumps(params), "condition": "baseline"}  # fmt: skip


def test_tcp_rr_latency_table_in_every_format():
    from boardlab.analysis.studies.stream import stream_study

    m = lambda v: {"median": v}  # noqa: E731
    rows = [
        _row(
            "io.net",
            {"mode": "tcp_rr", "msg_bytes": 64},
            {
                "transactions_s": m(t),
                "latency_p50_ns": m(p50),
                "latency_p99_ns": m(p50 * 3),
                "latency_p999_ns": m(p50 * 9),
            },
        )
        for t, p50 in ((40000.0, 20000.0), (42000.0, 21000.0), (44000.0, 22000.0))
    ]
    s = stream_study(_Store(rows), 1, {"hostname": "elsewhere"}, HOST)
    (_, headers, body) = next(x for x in tables(s) if x[0] == "TCP request/response (io.net tcp_rr)")
    assert headers == (
        "parameters",
        "transactions_s",
        "latency_p50_ns",
        "latency_p99_ns",
        "latency_p999_ns",
        "runs",
    )
    # The cell's medians over its three runs.
    assert body == [("msg 64 B", "42000", "21000", "63000", "189000", "3")]
    for text in ("\n".join(terminal_lines(s)), "\n".join(markdown_lines(s)), "".join(html_parts(s))):
        assert "TCP request/response" in text and "latency p999 [ns]" in text and "189000" in text


def test_goodput_against_the_declared_link_rate_in_every_format():
    from boardlab.analysis.studies.stream import stream_study

    # The study's figure: 360 MB/s over a 500 MB/s link is 72%.
    rows = [
        _row("stream.pipeline", {"block_bytes": 16384, "link_bit_s": 4e9},
             {"goodput_bit_s": {"value": 2.88e9}, "link_efficiency_percent": {"value": 72.0}}),
        _row("stream.pipeline", {"block_bytes": 4096, "link_bit_s": 4e9}, {"goodput_bit_s": {"value": 1e9}}),
        _row("stream.pipeline", {"block_bytes": 1024}, {"goodput_bit_s": {"value": 5e8}}),
    ]  # fmt: skip
    s = stream_study(_Store(rows), 1, {"hostname": "elsewhere"}, HOST)
    (_, headers, body) = next(x for x in tables(s) if x[0] == "Goodput against the declared link rate")
    assert headers[1:4] == ("goodput_bit_s", "link_bit_s", "link_efficiency_percent")
    # Only the cells that declared a link; a run without the metric gets the same ratio from its goodput.
    assert sorted(body) == [
        ("block 16 KiB", "2.88 Gbit/s", "4.00 Gbit/s", "72.0", "1"),
        ("block 4 KiB", "1.00 Gbit/s", "4.00 Gbit/s", "25.0", "1"),
    ]
    for text in ("\n".join(terminal_lines(s)), "\n".join(markdown_lines(s)), "".join(html_parts(s))):
        assert "declared link rate" in text and "72.0" in text


def test_a_knee_says_where_the_rate_broke_from_the_first_failing_trial_above_it():
    from boardlab.analysis.studies.stream import _where_broke
    from boardlab.model.worker_result import build_worker_result

    def trial(rate, lost, sustained=True, drops=None, short=0.0):
        info = {"drops_by_stage": drops or {}, "shortfall_percent": short}
        return {"rate_bit_s": rate, "lost_percent": lost, "sustained": sustained, "info": info}

    def run(knee, trials):
        metric = {"unit": "bit/s", "higher_is_better": True, "value": knee}
        body = {"ok": True, "metrics": {"knee_bit_s": metric}, "info": {"trials": trials}}
        return build_worker_result("boardlab-kern", "io.net", {}, body)

    docs = [
        # the lowest failing trial above the knee decides, not the highest
        run(
            2e8,
            [
                trial(4e8, 3.0, drops={"compress": 9, "transmit": 0}),
                trial(3e8, 1.0, drops={"encrypt": 2}),
                trial(2e8, 0.0),
                trial(1e8, 0.0),
            ],
        ),
        # a lossless transport: no drops, the receiver held the sender back
        run(1e8, [trial(2e8, 0.0, sustained=False, short=25.0), trial(1e8, 0.0)]),
        run(5e8, [trial(5e8, 0.0)]),  # the top of the range passed: nothing broke
    ]
    where = _where_broke(docs, "knee_bit_s")
    assert where == "encrypt (1/3 runs), no drops (1/3 runs); goodput short of offered 12.5%"
    assert _where_broke([docs[2]], "knee_bit_s") == ""


def _balance_of(rows, inventory=None):
    from boardlab.analysis.studies.stream import stream_study

    return stream_study(
        _Store(rows), 1, {"cpufreq_policies": [{"max_khz": 2000000}], **(inventory or {})}, HOST
    )


NET = {"mode": "tcp_stream", "msg_bytes": 65536}
GEMM = ("compute.gemm", {"n": 512, "precision": "single", "threads": 1}, {"gflops": {"value": 10.0}})


def test_a_loopback_balance_is_marked_an_upper_bound_in_every_format():
    rows = [
        _row(*GEMM),
        _row("io.net", NET, {"goodput_bit_s": {"value": 3.89e10}}, {"peer": "127.0.0.1:40000"}),
    ]
    s = _balance_of(rows)
    assert s.balance.io_kind == "loopback" and s.balance.io_bit_s == 3.89e10
    (_, _, body) = next(x for x in tables(s) if x[0].startswith("Balance"))
    assert body[0][-2] == "loopback" and body[0][-1].endswith("(upper bound)")
    for text in ("\n".join(terminal_lines(s)), "\n".join(markdown_lines(s)), "".join(html_parts(s))):
        assert "this balance is an upper bound" in text and "--peer HOST" in text


def test_the_balance_uses_the_measured_link_then_the_declared_one_never_loopback():
    loop = _row("io.net", NET, {"goodput_bit_s": {"value": 3.89e10}}, {"peer": "127.0.0.1:40000"})
    link = _row("io.net", {**NET, "peer": "10.77.0.2:7300"}, {"goodput_bit_s": {"value": 4.7e7}},
                {"peer": "10.77.0.2:7300"})  # fmt: skip
    declared = _row("stream.pipeline", {"block_bytes": 16384, "link_bit_s": 1e9},
                    {"goodput_bit_s": {"value": 5e8}}, {"peer": "127.0.0.1:1"})  # fmt: skip
    s = _balance_of([_row(*GEMM), loop, link, declared])
    assert s.balance.io_kind == "link" and s.balance.io_bit_s == 4.7e7
    assert "measured over the link to 10.77.0.2" in s.balance.io_source and s.balance.caveat is None
    s = _balance_of([_row(*GEMM), loop, declared])
    assert s.balance.io_kind == "declared link" and s.balance.io_bit_s == 1e9
    assert s.balance.io_source == "declared link rate (link_bit_s = 1.00 Gbit/s)"


def test_gflops_per_watt_names_the_missing_sensor():
    s = _balance_of([_row(*GEMM)])
    assert not s.gflops_per_watt and "GFLOPS/W: missing: no power sensor" in s.gflops_per_watt_missing
    assert "GFLOPS/W: missing: no power sensor" in "\n".join(markdown_lines(s))
    s = _balance_of([_row(*GEMM)], {"power_sensors": [{"name": "ina231"}]})
    assert "has a power sensor but this campaign measured no energy" in s.gflops_per_watt_missing
