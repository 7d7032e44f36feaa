"""DMA engines and the kernel's dmatest module (io.dma): channels under /sys/class/dma, dmatest's parameters
under /sys/module/dmatest/parameters, its results in the kernel log (/dev/kmsg).

dmatest (Documentation/driver-api/dmaengine/dmatest.rst): with noverify=1 every test moves test_buf_size
bytes; a thread's result line is "dmatest: dma0chan0-copy0: summary 1000 tests, 0 failures 1000.00 iops
100000 KB/s (0)". KB is 1024 bytes before Linux 6.3 and 1000 after (the 2023 pci-epf/dmatest series).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from boardlab.platform.sysroot import RootLike, SysRoot

DMA_CLASS = "sys/class/dma"
DMATEST = "sys/module/dmatest/parameters"
KMSG = "dev/kmsg"
_SUMMARY = re.compile(
    r"dmatest: (?P<thread>\S+): summary (?P<tests>\d+) tests?, (?P<failures>\d+) failures? "
    r"(?P<iops>[\d.]+) iops (?P<kb_s>[\d.]+) KB/s"
)


@dataclass(frozen=True)
class DmaChannel:
    name: str  # dma0chan0
    device: str | None  # the DMA controller's device name
    in_use: bool | None
    bytes_transferred: int | None


@dataclass(frozen=True)
class DmatestSummary:
    thread: str  # dma0chan0-copy0
    tests: int
    failures: int
    iops: float
    kb_s: float


def dma_channels(root: RootLike) -> list[DmaChannel]:
    sr = SysRoot.of(root)
    out = []
    for name in sr.listdir(DMA_CLASS):
        base = f"{DMA_CLASS}/{name}"
        in_use = sr.read_int(f"{base}/in_use")
        out.append(
            DmaChannel(
                name=name,
                device=sr.link_name(f"{base}/device"),
                in_use=None if in_use is None else bool(in_use),
                bytes_transferred=sr.read_int(f"{base}/bytes_transferred"),
            )
        )
    return out


def dmatest_loaded(root: RootLike) -> bool:
    return SysRoot.of(root).is_dir(DMATEST)


def dmatest_configure(root: RootLike, channel: str, size_bytes: int, iterations: int) -> None:
    """One copy thread on `channel`, `iterations` tests of exactly `size_bytes` (noverify), not yet
    started."""
    sr = SysRoot.of(root)
    for name, value in (
        ("noverify", "1"),
        ("test_buf_size", str(size_bytes)),
        ("iterations", str(iterations)),
        ("threads_per_chan", "1"),
        ("max_channels", "1"),
        ("channel", channel),
    ):
        sr.write_text(f"{DMATEST}/{name}", value)


def dmatest_start(root: RootLike) -> None:
    SysRoot.of(root).write_text(f"{DMATEST}/run", "1")


def dmatest_running(root: RootLike) -> bool:
    return (SysRoot.of(root).read_str(f"{DMATEST}/run") or "N").strip().upper() in ("Y", "1")


def kmsg_open(root: RootLike) -> int:
    """A descriptor on the kernel log positioned at its end, so that only new lines are read."""
    fd = os.open(SysRoot.of(root).path(KMSG), os.O_RDONLY | os.O_NONBLOCK)
    os.lseek(fd, 0, os.SEEK_END)
    return fd


def kmsg_read(fd: int) -> list[str]:
    """New messages since the last read ("prio,seq,usec,flags;text" records: the text part)."""
    lines = []
    while True:
        try:
            rec = os.read(fd, 8192)
        except BlockingIOError:
            break
        except OSError:  # EPIPE: the ring overwrote records we had not read; go on with the next
            continue
        if not rec:
            break
        for line in rec.decode(errors="replace").splitlines():
            lines.append(line.split(";", 1)[1] if ";" in line else line)
    return lines


def parse_dmatest_summaries(lines: list[str]) -> list[DmatestSummary]:
    out = []
    for line in lines:
        m = _SUMMARY.search(line)
        if m:
            out.append(
                DmatestSummary(
                    m["thread"], int(m["tests"]), int(m["failures"]), float(m["iops"]), float(m["kb_s"])
                )
            )
    return out
