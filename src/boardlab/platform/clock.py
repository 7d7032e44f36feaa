"""The CPU clock where cpufreq is absent (virtual machines, some boards): /proc/cpuinfo's "cpu MHz" (x86;
ARM kernels print no clock there). Used only for estimates, labelled as such."""

from __future__ import annotations

from boardlab.platform.sysroot import RootLike, SysRoot


def cpuinfo_hz(root: RootLike) -> float | None:
    """The highest "cpu MHz" of /proc/cpuinfo in Hz; None when absent (ARM kernels print none)."""
    text = SysRoot.of(root).read_text("proc/cpuinfo") or ""
    mhz = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "cpu mhz":
            try:
                mhz.append(float(value))
            except ValueError:
                continue
    return max(mhz) * 1e6 if mhz else None
