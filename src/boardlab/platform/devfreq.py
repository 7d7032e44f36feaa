"""devfreq devices (memory controller, GPU, buses): their governor and frequency table, in Hz.

Memory-controller DVFS changes the result of bandwidth and latency kernels, and x86-centric tools do not
look at it (research/anchors-methodology.md 10.1).
"""

from __future__ import annotations

from boardlab.errors import InputError
from boardlab.model.board import DevfreqDevice
from boardlab.platform.sysroot import RootLike, SysRoot

DEVFREQ_DIR = "sys/class/devfreq"


def devfreq_kind(name: str) -> str:
    lowered = name.lower()
    if any(word in lowered for word in ("memory", "dmc", "ddr", "emc", "mif")):
        return "memory"
    if any(word in lowered for word in ("gpu", "mali", "g3d", "kgsl")):
        return "gpu"
    if "bus" in lowered or "noc" in lowered or "cci" in lowered:
        return "bus"
    return "other"


def list_devices(root: RootLike) -> tuple[str, ...]:
    return tuple(SysRoot.of(root).listdir(DEVFREQ_DIR))


def current_frequency_hz(root: RootLike, name: str) -> int | None:
    return SysRoot.of(root).read_int(f"{DEVFREQ_DIR}/{name}/cur_freq", "a frequency in Hz (an integer)")


def read_device(root: RootLike, name: str) -> DevfreqDevice:
    sr = SysRoot.of(root)
    d = f"{DEVFREQ_DIR}/{name}"
    hz = "a frequency in Hz (an integer)"
    return DevfreqDevice(
        name=name,
        kind=devfreq_kind(name),
        governor=sr.read_str(f"{d}/governor"),
        governors=sr.read_words(f"{d}/available_governors") or (),
        frequencies_hz=tuple(sorted(sr.read_ints(f"{d}/available_frequencies", "frequencies in Hz") or ())),
        cur_hz=sr.read_int(f"{d}/cur_freq", hz),
        min_hz=sr.read_int(f"{d}/min_freq", hz),
        max_hz=sr.read_int(f"{d}/max_freq", hz),
        polling_interval_ms=sr.read_int(f"{d}/polling_interval", "an interval in ms"),
    )


def read_devfreq(root: RootLike) -> tuple[DevfreqDevice, ...]:
    sr = SysRoot.of(root)
    return tuple(read_device(sr, name) for name in list_devices(sr))


def set_governor(root: RootLike, name: str, governor: str) -> None:
    sr = SysRoot.of(root)
    d = f"{DEVFREQ_DIR}/{name}"
    available = sr.read_words(f"{d}/available_governors") or ()
    if governor not in available:
        raise InputError(
            f"devfreq governor {governor!r} is not offered by {sr.show(d)}: "
            f"expected one of {', '.join(available) or '(none)'}"
        )
    sr.write_text(f"{d}/governor", governor)
