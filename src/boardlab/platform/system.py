"""System-wide knobs that move timings: ASLR, transparent huge pages, clocksource, and load."""

from __future__ import annotations

from boardlab.errors import InputError
from boardlab.model.board import SystemSettings
from boardlab.platform.sysroot import RootLike, SysRoot

CLOCKSOURCE_DIR = "sys/devices/system/clocksource/clocksource0"
THP_DIR = "sys/kernel/mm/transparent_hugepage"


def read_loadavg(root: RootLike) -> tuple[float, float, float, int, int] | None:
    """(1, 5, 15 min load, runnable, total threads) from /proc/loadavg: "0.10 0.07 0.02 1/79 3477"."""
    sr = SysRoot.of(root)
    text = sr.read_str("proc/loadavg")
    if text is None:
        return None
    try:
        one, five, fifteen, sched = text.split()[:4]
        runnable, threads = sched.split("/")
        return float(one), float(five), float(fifteen), int(runnable), int(threads)
    except ValueError:
        raise InputError(
            f"{sr.show('proc/loadavg')}: expected '<1min> <5min> <15min> <runnable>/<threads> <pid>', "
            f"found {text!r}"
        ) from None


def read_system(root: RootLike) -> SystemSettings:
    sr = SysRoot.of(root)
    load = read_loadavg(sr)
    thp, _ = sr.read_bracketed(f"{THP_DIR}/enabled")
    defrag, _ = sr.read_bracketed(f"{THP_DIR}/defrag")
    return SystemSettings(
        aslr=sr.read_int("proc/sys/kernel/randomize_va_space", "0, 1 or 2"),
        thp_enabled=thp,
        thp_defrag=defrag,
        clocksource=sr.read_str(f"{CLOCKSOURCE_DIR}/current_clocksource"),
        clocksources=sr.read_words(f"{CLOCKSOURCE_DIR}/available_clocksource") or (),
        load_1min=load[0] if load else None,
        load_5min=load[1] if load else None,
        load_15min=load[2] if load else None,
        runnable=load[3] if load else None,
        threads=load[4] if load else None,
    )
