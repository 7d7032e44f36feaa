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


def start_evidence(root: RootLike) -> dict:
    """What places a campaign in its board's history without trusting the board's wall clock (a board with
    no battery-backed clock boots in 2000 until NTP answers): the boot it ran in (the kernel's random
    boot_id, new at every boot) and the monotonic clock, which no one sets, beside the wall clock. `root`
    is the machine that runs boardlab: its own clocks are what it reads."""
    import time

    boot = SysRoot.of(root).read_str("proc/sys/kernel/random/boot_id")
    return {"boot_id": boot or None, "monotonic_ns": time.monotonic_ns(), "wall_unix_s": time.time()}
