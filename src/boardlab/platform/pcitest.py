"""The PCIe endpoint test's logs: the root complex's `pcitest` output and the endpoint's kernel log.

The kernel's endpoint test (Documentation/PCI/endpoint/pci-test-howto.rst) has two halves. On the root
complex (RC), `pcitest` (tools/pci) drives the pci_endpoint_test driver and prints one status line per
transfer, e.g. ``READ (1024000 bytes):		OKAY``; `pcitest -d` asks the endpoint to use its DMA engine.
On the endpoint (EP), the pci-epf-test function driver times each transfer and logs it:

    pci_epf_test pci_epf_test.0: READ => Size: 1024000 B, DMA: YES, Time: 0.004123456 s, Rate: 248363 KB/s

(kernels before 5.19 printed
``READ => Size: 1024000 bytes	 DMA: YES	 Time: 0.004123456 seconds	Rate: 242542 KB/s``
with KB = 1024 bytes; from 5.19 KB = 1000 bytes). READ is the endpoint reading RC memory, WRITE the endpoint
writing it, COPY both; DMA: NO is the endpoint CPU's memcpy over the same mapping. MB/s here is recomputed
from size and time (1e6 B/s), so the KB unit of the kernel's rate does not matter except when the time
printed is zero.

A board's saved log (its dmesg, with or without the pcitest output) is parsed as text: this module reads no
device, so it needs no root.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

_EP = re.compile(
    r"\b(READ|WRITE|COPY)\s*=>\s*Size:\s*(\d+)\s*(B|bytes)\b,?\s*DMA:\s*(YES|NO)\b,?\s*"
    r"Time:\s*(\d+)\.(\d{1,9})\s*(?:s|seconds)\b,?\s*Rate:\s*(\d+)\s*KB/s"
)
_RC = re.compile(r"^\s*(READ|WRITE|COPY)\s*\(\s*(\d+)\s*bytes\)\s*:\s*(OKAY|NOT OKAY)\s*$")


@dataclass(frozen=True)
class EpTransfer:
    op: str  # READ, WRITE or COPY, as the endpoint names it
    size_bytes: int
    dma: bool
    time_ns: int
    mb_s: float  # 1e6 B/s


@dataclass(frozen=True)
class RcStatus:
    op: str
    size_bytes: int
    ok: bool


@dataclass(frozen=True)
class PcitestRow:
    op: str
    size_bytes: int
    memcpy_mb_s: float | None  # median of the DMA: NO transfers
    dma_mb_s: float | None  # median of the DMA: YES transfers
    samples: int
    rc_failed: bool  # pcitest reported NOT OKAY for this op and size

    @property
    def dma_over_memcpy(self) -> float | None:
        return self.dma_mb_s / self.memcpy_mb_s if self.dma_mb_s and self.memcpy_mb_s else None


@dataclass(frozen=True)
class PcitestLog:
    transfers: tuple[EpTransfer, ...]
    statuses: tuple[RcStatus, ...]


def parse_pcitest(text: str) -> PcitestLog:
    transfers, statuses = [], []
    for line in text.splitlines():
        m = _EP.search(line)
        if m:
            op, size, unit, dma, sec, frac, rate = m.groups()
            ns = int(sec) * 1_000_000_000 + int(frac.ljust(9, "0"))
            size_b = int(size)
            kb = 1024 if unit == "bytes" else 1000  # the old format's rate was KiB/s
            if not ns and not int(rate):
                continue  # too short for the endpoint's clock: no figure
            mb_s = size_b / ns * 1e3 if ns else int(rate) * kb / 1e6
            transfers.append(EpTransfer(op, size_b, dma == "YES", ns, mb_s))
            continue
        m = _RC.match(line)
        if m:
            statuses.append(RcStatus(m.group(1), int(m.group(2)), m.group(3) == "OKAY"))
    return PcitestLog(tuple(transfers), tuple(statuses))


def pcitest_rows(log: PcitestLog) -> tuple[PcitestRow, ...]:
    """The memcpy vs DMA table: one row per (op, size), medians over the repeated transfers."""
    cells: dict[tuple[str, int], dict[bool, list[float]]] = {}
    for t in log.transfers:
        cells.setdefault((t.op, t.size_bytes), {True: [], False: []})[t.dma].append(t.mb_s)
    failed = {(s.op, s.size_bytes) for s in log.statuses if not s.ok}
    order = {"READ": 0, "WRITE": 1, "COPY": 2}
    rows = []
    for (op, size), by in sorted(cells.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        rows.append(
            PcitestRow(
                op,
                size,
                statistics.median(by[False]) if by[False] else None,
                statistics.median(by[True]) if by[True] else None,
                len(by[False]) + len(by[True]),
                (op, size) in failed,
            )
        )
    return tuple(rows)
