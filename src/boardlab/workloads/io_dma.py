"""io.dma: a DMA engine's memory-to-memory copy (the kernel's dmatest module, noverify, fixed size) against
the same-size CPU memcpy (boardlab-kern mem.bandwidth op=memcpy): the data-stream study's memcpy vs DMA table.

Needs root (module parameters, the kernel log) and a dmaengine channel able to copy; on machines without one
(virtual machines, most x86 desktops) it says unsupported and why.
"""

from __future__ import annotations

from boardlab.model.worker_result import spec_metrics
from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec

SPEC = WorkloadSpec(
    name="io.dma",
    family="io",
    summary="DMA engine copy (dmatest, noverify) against CPU memcpy of the same size",
    runner="python",
    params=(
        ParamSpec("size_bytes", "int", "65536", 4096, 4 * 1024 * 1024, unit="bytes", help="bytes per copy"),
        ParamSpec("iterations", "int", "1000", 1, 1_000_000, help="dmatest tests (copies) per run"),
        ParamSpec("channel", "str", "", help="dmaengine channel (e.g. dma0chan0); empty: the first one"),
        ParamSpec("timeout_s", "int", "60", 1, 3600, unit="s", help="longest wait for dmatest to finish"),
        ParamSpec(
            "pcitest_log",
            "str",
            "",
            help="a saved PCIe endpoint test log (the endpoint's dmesg with pci-epf-test's timed transfers, "
            "with or without pcitest's output): its memcpy vs DMA table instead of a dmatest run",
        ),
    ),
    metrics=(
        MetricSpec("dma_mb_s", "MB/s", True, "value", help="dmatest's copy throughput, 1e6 B/s"),
        MetricSpec(
            "memcpy_mb_s", "MB/s", True, "value", help="CPU memcpy of the same size, 1e6 B/s (bytes copied)"
        ),
        MetricSpec("dma_over_memcpy", "ratio", True, "value", help="dma_mb_s / memcpy_mb_s"),
    ),
    roles=("dma",),
)


def supported() -> str | None:
    import os

    from boardlab.platform.dma import dma_channels

    if not dma_channels("/"):
        return "no DMA engine: /sys/class/dma lists no dmaengine channel on this machine"
    if os.geteuid() != 0:
        return "needs root: loading dmatest, writing its parameters and reading /dev/kmsg"
    return None


def _kb_unit_bytes() -> int:
    """dmatest's KB: 1024 bytes before Linux 6.3, 1000 from 6.3 on."""
    import platform

    try:
        major, minor = (int(x) for x in platform.release().split(".")[:2])
    except ValueError:
        return 1000
    return 1000 if (major, minor) >= (6, 3) else 1024


def from_pcitest_log(path: str) -> dict:
    """The result of a board's PCIe endpoint test log: every (op, size) row of memcpy vs DMA in info, and the
    largest READ (else any) row's figures as the metrics."""
    from boardlab.platform.pcitest import parse_pcitest, pcitest_rows

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        return {"ok": False, "errors": [f"pcitest_log={path}: {exc.strerror}"], "metrics": {}}
    rows = pcitest_rows(parse_pcitest(text))
    if not rows:
        return {"ok": False, "metrics": {},
                "errors": [f"pcitest_log={path}: no pci-epf-test transfer lines "
                           "('READ => Size: ... Rate: ... KB/s')"]}  # fmt: skip
    both = [r for r in rows if r.dma_mb_s and r.memcpy_mb_s]
    head = max(both or rows, key=lambda r: (r.op == "READ", r.size_bytes))
    values = {
        "dma_mb_s": head.dma_mb_s,
        "memcpy_mb_s": head.memcpy_mb_s,
        "dma_over_memcpy": head.dma_over_memcpy,
    }
    return {
        "ok": True,
        "errors": [],
        "metrics": spec_metrics(SPEC, {k: v for k, v in values.items() if v is not None}),
        "info": {
            "source": f"PCIe endpoint test log {path}",
            "metrics_row": f"{head.op} {head.size_bytes} B",
            "pcitest_rows": [
                {
                    "op": r.op,
                    "size_bytes": r.size_bytes,
                    "memcpy_mb_s": r.memcpy_mb_s,
                    "dma_mb_s": r.dma_mb_s,
                    "samples": r.samples,
                    "rc_failed": r.rc_failed,
                }
                for r in rows
            ],
        },
    }


def run(params: dict, iterations: int | None = None) -> dict:
    import subprocess
    import time

    from boardlab.platform import dma
    from boardlab.workloads.ratesearch import kern_trial, trial_metric

    if params.get("pcitest_log"):
        return from_pcitest_log(params["pcitest_log"])
    reason = supported()
    if reason:
        return {"ok": False, "supported": False, "reason": reason, "errors": [], "metrics": {}}
    channels = dma.dma_channels("/")
    channel = params["channel"] or channels[0].name
    if channel not in {c.name for c in channels}:
        return {
            "ok": False,
            "errors": [f"channel={channel}: not one of {[c.name for c in channels]}"],
            "metrics": {},
        }
    loaded_here = False
    if not dma.dmatest_loaded("/"):
        proc = subprocess.run(["modprobe", "dmatest"], capture_output=True, text=True)
        if proc.returncode != 0:
            return {"ok": False, "supported": False, "errors": [], "metrics": {},
                    "reason": f"dmatest module unavailable: {proc.stderr.strip()}"}  # fmt: skip
        loaded_here = True
    try:
        fd = dma.kmsg_open("/")
        dma.dmatest_configure("/", channel, params["size_bytes"], params["iterations"])
        dma.dmatest_start("/")
        deadline = time.monotonic() + params["timeout_s"]
        lines: list[str] = []
        summaries = []
        while time.monotonic() < deadline:
            time.sleep(0.1)
            lines += dma.kmsg_read(fd)
            summaries = dma.parse_dmatest_summaries(lines)
            if summaries and not dma.dmatest_running("/"):
                break
    finally:
        if loaded_here:
            subprocess.run(["modprobe", "-r", "dmatest"], capture_output=True)
    if not summaries:
        return {"ok": False, "errors": [f"dmatest printed no summary within {params['timeout_s']} s"],
                "metrics": {}, "info": {"kmsg": lines[-20:]}}  # fmt: skip
    s = summaries[0]
    if s.failures:
        return {"ok": False, "errors": [f"dmatest: {s.failures} of {s.tests} copies failed"], "metrics": {}}
    dma_mb_s = s.kb_s * _kb_unit_bytes() / 1e6
    mem = kern_trial("mem.bandwidth", {"op": "memcpy", "array_bytes": params["size_bytes"]}, iterations=10)
    # STREAM counts memcpy as two arrays (read + write); dmatest counts the bytes copied once.
    memcpy_mb_s = trial_metric(mem, "mb_s") / 2
    return {
        "ok": True,
        "errors": [],
        "metrics": spec_metrics(
            SPEC,
            {"dma_mb_s": dma_mb_s, "memcpy_mb_s": memcpy_mb_s, "dma_over_memcpy": dma_mb_s / memcpy_mb_s},
        ),
        "info": {
            "channel": channel,
            "dmatest_thread": s.thread,
            "tests": s.tests,
            "iops": s.iops,
            "kb_unit_bytes": _kb_unit_bytes(),
        },
    }
