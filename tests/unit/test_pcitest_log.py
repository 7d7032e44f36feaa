"""The PCIe endpoint test's logs parsed into the data-stream study's memcpy vs DMA table."""

from __future__ import annotations

from pathlib import Path

import pytest

from boardlab.platform.pcitest import parse_pcitest, pcitest_rows

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

LOG = Path(__file__).parent.parent / "fixtures" / "pcitest" / "ep_and_rc.log"


def test_endpoint_lines_and_pcitest_statuses_are_read():
    log = parse_pcitest(LOG.read_text())
    # 8 timed EP lines (the zero-time, zero-rate one has no figure) plus the pre-5.19 format line.
    assert len(log.transfers) == 9
    first = log.transfers[0]
    assert (first.op, first.size_bytes, first.dma, first.time_ns) == ("READ", 1024000, False, 10_800_000)
    # MB/s from size and time, 1e6 B/s: 1024000 B in 10.8 ms.
    assert first.mb_s == pytest.approx(94.8148, rel=1e-4)
    assert [(s.op, s.size_bytes, s.ok) for s in log.statuses] == [
        ("READ", 1, True), ("READ", 1024, True), ("READ", 1024000, True),
        ("WRITE", 1, True), ("WRITE", 1024, True), ("WRITE", 1024000, False),
    ]  # fmt: skip


def test_the_old_format_rate_is_kib_when_the_time_is_zero():
    (t,) = parse_pcitest(
        "READ => Size: 1024 bytes\t DMA: NO\t Time: 0.000000000 seconds\tRate: 100 KB/s"
    ).transfers
    assert t.mb_s == pytest.approx(100 * 1024 / 1e6)


def test_memcpy_against_dma_table():
    rows = {(r.op, r.size_bytes): r for r in pcitest_rows(parse_pcitest(LOG.read_text()))}
    read = rows[("READ", 1024000)]
    # Medians: memcpy over 10.8/10.9/11.0 ms, DMA over 5.882/5.9 ms.
    assert read.memcpy_mb_s == pytest.approx(1024000 / 10.9e-3 / 1e6)
    assert read.dma_mb_s == pytest.approx(1024000 / ((5.882e-3 + 5.9e-3) / 2) / 1e6, rel=1e-3)
    assert read.samples == 5 and not read.rc_failed
    assert read.dma_over_memcpy == pytest.approx(read.dma_mb_s / read.memcpy_mb_s)
    write = rows[("WRITE", 1024000)]
    assert write.rc_failed  # pcitest said NOT OKAY: the row is marked, its figures kept
    assert rows[("COPY", 1024000)].memcpy_mb_s is None and rows[("COPY", 1024000)].dma_over_memcpy is None
    assert [k[0] for k in rows] == ["READ", "READ", "WRITE", "COPY"]


def test_text_without_endpoint_lines_gives_no_rows():
    assert pcitest_rows(parse_pcitest("BAR0:\t\tOKAY\nnothing else\n")) == ()


def test_io_dma_reports_a_board_log_as_the_study_table(tmp_path):
    from boardlab.analysis.studies.stream import sections, stream_study, tables
    from boardlab.report.render import render_sections
    from boardlab.workloads.io_dma import from_pcitest_log

    from helpers import host_workload_facts

    res = from_pcitest_log(str(LOG))
    assert res["ok"] and res["info"]["metrics_row"] == "READ 1024000 B"
    assert res["metrics"]["dma_over_memcpy"]["value"] == pytest.approx(
        res["metrics"]["dma_mb_s"]["value"] / res["metrics"]["memcpy_mb_s"]["value"]
    )
    bad = from_pcitest_log(str(tmp_path / "absent.log"))
    assert not bad["ok"] and bad["errors"][0].startswith("pcitest_log=")
    (tmp_path / "empty.log").write_text("BAR0:\t\tOKAY\n")
    assert "no pci-epf-test transfer lines" in from_pcitest_log(str(tmp_path / "empty.log"))["errors"][0]

    import json

    from boardlab.model.worker_result import build_worker_result

    stored = build_worker_result("boardlab.worker", "io.dma", {"pcitest_log": str(LOG)}, res).to_json()

    class Store:
        def runs(self, _cid):
            return [{"workload": "io.dma", "worker_json": stored, "valid": 1, "condition": "baseline",
                     "params_json": json.dumps({"pcitest_log": str(LOG), "size_bytes": 65536})}]  # fmt: skip

        def campaign(self, _cid):
            return {"environment_json": "{}"}

    s = stream_study(Store(), 1, {"hostname": "elsewhere"}, host_workload_facts())
    title, headers, rows = next(t for t in tables(s) if t[0].startswith("PCIe endpoint test"))
    assert headers[:5] == ("op", "size_bytes", "memcpy_mb_s", "dma_ep_mb_s", "dma_rc_mb_s")
    assert rows[0][:4] == ("read", "1024", "0.1", "-") and rows[1][:2] == ("read", "1024000")
    assert rows[1][2] == f"{1024000 / 10.9e-3 / 1e6:.1f}" and rows[1][-1] == "ok"
    assert [r[-1] for r in rows if r[0] == "write" and r[1] == "1024000"] == ["NOT OKAY"]
    assert "PCIe endpoint test" in render_sections(sections(None, s), "text")


def test_io_dma_with_a_log_needs_a_dma_engine_and_says_so_here():
    # io.dma reads a PCIe endpoint test log on the board that ran the test (an endpoint has a DMA engine):
    # on a machine without one (this VM) the run is refused with the reason, and nothing is parsed.
    import json
    import subprocess
    import sys

    from boardlab.platform.dma import dma_channels

    if dma_channels("/"):
        pytest.skip("this machine has a dmaengine channel")
    proc = subprocess.run(
        [sys.executable, "-m", "boardlab.pyrun", "io.dma", "-p", f"pcitest_log={LOG}", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["supported"] is False and doc["metrics"] == {}
    assert doc["reason"] == "no DMA engine: /sys/class/dma lists no dmaengine channel on this machine"
    assert "pcitest_rows" not in (doc.get("info") or {})
