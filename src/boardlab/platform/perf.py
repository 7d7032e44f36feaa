"""perf_event availability: paranoia level, the PMUs the kernel registered, and (on the live system only)
whether a hardware cycle counter really opens for this process.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Mapping

from boardlab.model.board import Perf, PerfEvent, Pmu
from boardlab.platform.sysroot import RootLike, SysRoot

EVENT_SOURCE_DIR = "sys/bus/event_source/devices"
PERF_TYPE_HARDWARE = 0
PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
# the generic hardware events `boardlab info` tries, as perf names them
PROBED_EVENTS = (("cycles", PERF_COUNT_HW_CPU_CYCLES), ("instructions", PERF_COUNT_HW_INSTRUCTIONS))
PERF_TYPE_RAW = 4
PERF_ATTR_SIZE_VER0 = 64  # the oldest perf_event_attr layout, accepted by every kernel since 2.6.31
PERF_FLAG_FD_CLOEXEC = 1 << 3
# perf_event_attr bit flags (offset 40): disabled, exclude_kernel, exclude_hv. Excluding the kernel keeps
# the probe legal at perf_event_paranoid = 2 for unprivileged users.
_ATTR_FLAGS = (1 << 0) | (1 << 5) | (1 << 6)
# __NR_perf_event_open per `uname -m`.
SYSCALL_NUMBERS = {
    "x86_64": 298,
    "i386": 336,
    "i686": 336,
    "armv6l": 364,
    "armv7l": 364,
    "armv8l": 364,
    "aarch64": 241,
    "riscv64": 241,
    "loongarch64": 241,
    "ppc64": 319,
    "ppc64le": 319,
    "s390x": 331,
}
_CORE_PMU_PREFIXES = ("armv6", "armv7", "armv8", "armv9", "arm_cortex", "arm_v8")


def is_core_pmu(pmu: Pmu) -> bool:
    """PMUs that count this CPU's cycles: x86 "cpu" (hybrid: cpu_core/cpu_atom), ARM "armv7_cortex_a15"."""
    return pmu.name in ("cpu", "cpu_core", "cpu_atom") or pmu.name.startswith(_CORE_PMU_PREFIXES)


def read_pmus(root: RootLike) -> tuple[Pmu, ...]:
    sr = SysRoot.of(root)
    return tuple(
        Pmu(name=name, type=sr.read_int(f"{EVENT_SOURCE_DIR}/{name}/type", "a PMU type number"))
        for name in sr.listdir(EVENT_SOURCE_DIR)
    )


def _perf_event_open(
    type_: int, config: int, *, pid: int, cpu: int, read_format: int = 0, flags: int = 0
) -> tuple[int | None, str | None]:
    """perf_event_open(2) of one event in the oldest attr layout, `read_format` at offset 32 and the bit
    `flags` at 40 (0: enabled, counting user and kernel); (fd, None) or (None, "ENOENT (...)")."""
    nr = SYSCALL_NUMBERS.get(os.uname().machine)
    if nr is None:
        return None, f"perf_event_open syscall number unknown for {os.uname().machine}"
    attr = bytearray(PERF_ATTR_SIZE_VER0)
    struct.pack_into("=IIQ", attr, 0, type_, PERF_ATTR_SIZE_VER0, config)
    struct.pack_into("=QQ", attr, 32, read_format, flags)
    buf = (ctypes.c_char * len(attr)).from_buffer(attr)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(
        ctypes.c_long(nr), buf, ctypes.c_int(pid), ctypes.c_int(cpu), ctypes.c_int(-1),
        ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC),
    )  # fmt: skip
    if fd < 0:
        err = ctypes.get_errno()
        return None, f"{errno.errorcode.get(err, str(err))} ({os.strerror(err)})"
    return fd, None


def open_hardware_counter(config: int = PERF_COUNT_HW_CPU_CYCLES) -> tuple[bool, str | None]:
    """Opens (and closes) the generic hardware event `config` (PERF_TYPE_HARDWARE) for this process;
    (False, "ENOENT (...)") on failure."""
    fd, error = _perf_event_open(PERF_TYPE_HARDWARE, config, pid=0, cpu=-1, flags=_ATTR_FLAGS)
    if fd is None:
        return False, error
    os.close(fd)
    return True, None


def open_cycles_counter() -> tuple[bool, str | None]:
    """Opens (and closes) PERF_COUNT_HW_CPU_CYCLES for this process; (False, "ENOENT (...)") on failure."""
    return open_hardware_counter(PERF_COUNT_HW_CPU_CYCLES)


def event_reason(error: str, core_pmus: tuple[str, ...]) -> str:
    """What a failed open of a generic hardware event means, from its errno text."""
    if error.startswith("ENOENT"):
        if core_pmus:
            return f"{error}: the CPU PMU ({', '.join(core_pmus)}) does not map this generic event"
        return f"{error}: no CPU PMU is registered (no PMU in the device tree, or a VM without a virtual PMU)"
    if error.startswith(("EACCES", "EPERM")):
        return f"{error}: kernel.perf_event_paranoid (or a seccomp/container policy) forbids it for this user"
    if error.startswith(("EOPNOTSUPP", "ENODEV")):
        return f"{error}: the PMU cannot count this event for one process"
    if error.startswith("ENOSYS"):
        return f"{error}: the kernel is built without CONFIG_PERF_EVENTS"
    return error


def probe_events(core_pmus: tuple[str, ...]) -> tuple[PerfEvent, ...]:
    """Each of PROBED_EVENTS opened for this process, or the reason it did not open."""
    events = []
    for name, config in PROBED_EVENTS:
        opened, error = open_hardware_counter(config)
        events.append(
            PerfEvent(name, opened, None if opened else event_reason(error or "unknown error", core_pmus))
        )
    return tuple(events)


def read_perf(root: RootLike) -> Perf:
    sr = SysRoot.of(root)
    pmus = read_pmus(sr)
    core = tuple(p.name for p in pmus if is_core_pmu(p))
    opened, error = open_cycles_counter() if sr.live else (None, None)
    events = (
        probe_events(core)
        if sr.live
        else tuple(
            PerfEvent(name, None, "not tried: the tree is not the live system") for name, _ in PROBED_EVENTS
        )
    )
    return Perf(
        paranoid=sr.read_int("proc/sys/kernel/perf_event_paranoid"),
        pmus=pmus,
        core_pmus=core,
        cycles_opened=opened,
        cycles_error=error,
        events=events,
    )


# -- counting for the governor daemon: system-wide per CPU (core PMU) and the CCI-400 uncore PMU ----------

CCI_PMU_NAMES = ("CCI_400_r1", "CCI_400")
# CCI-400 slave-interface events (drivers/perf/arm-cci.c): config = source << 5 | code.
CCI_EVENTS = {
    "CCI_400_r1": {"read_requests": 0x00, "read_stalls": 0x09},  # si_rrq_hs_any, si_rrq_stall_tt_full
    "CCI_400": {"read_requests": 0x00, "read_stalls": 0x09},
}
ARM_BUS_ACCESS = 0x19
ARM_CPU_CYCLES = 0x11
PERF_FORMAT_TIMES = 1 | 2  # TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING


def cci_pmu(root: RootLike) -> tuple[str, int] | None:
    """(name, perf type) of the CCI-400 PMU where the kernel registered one (needs a DT pmu node)."""
    sr = SysRoot.of(root)
    for name in CCI_PMU_NAMES:
        t = sr.read_int(f"{EVENT_SOURCE_DIR}/{name}/type", "a PMU type number")
        if t is not None:
            return name, t
    return None


def core_pmu_for_cpu(root: RootLike, cpu: int) -> tuple[str, int] | None:
    """The core PMU counting `cpu` (big.LITTLE has one per cluster; its `cpus` file lists them)."""
    sr = SysRoot.of(root)
    for pmu in read_pmus(sr):
        if not is_core_pmu(Pmu(pmu.name, pmu.type)):
            continue
        cpus = sr.read_cpulist(f"{EVENT_SOURCE_DIR}/{pmu.name}/cpus")
        if (cpus is None or cpu in cpus) and pmu.type is not None:  # no type: perf_event_open cannot name it
            return pmu.name, pmu.type
    return None


def open_event(type_: int, config: int, *, pid: int, cpu: int) -> tuple[int | None, str | None]:
    """perf_event_open (enabled, counting user and kernel); (fd, None) or (None, "ENOENT (...)")."""
    return _perf_event_open(type_, config, pid=pid, cpu=cpu, read_format=PERF_FORMAT_TIMES)


def read_event(fd: int) -> int:
    """The count, scaled for multiplexing (count x enabled / running)."""
    count, enabled, running = struct.unpack("=QQQ", os.read(fd, 24))
    return count if running in (0, enabled) else count * enabled // running


# -- counters requested by a plan ([runs] counters): boardlab-kern --counters items and derived metrics ------

COUNTER_NAMES = ("instructions", "cycles", "memory_access", "cci_congestion")


def counter_request(root: RootLike, names: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """boardlab-kern --counters items for `names`, and {name: reason} for those this board cannot count.

    memory_access = BUS_ACCESS / CPU_CYCLES of the worker's threads (ARMv7/v8 events 0x19, 0x11);
    cci_congestion = CCI-400 read-request stalls per read request over both cluster ports (S3, S4 as on the
    Exynos 5422), counted system-wide on CPU 0 with the PMU type read here from sysfs."""
    items: list[str] = []
    unsupported: dict[str, str] = {}
    for name in names:
        if name in ("instructions", "cycles"):
            items.append(name)
        elif name == "memory_access":
            items += ["bus_access", "cpu_cycles"]
        elif name == "cci_congestion":
            cci = cci_pmu(root)
            if cci is None:
                unsupported[name] = (
                    "no CCI-400 PMU in /sys/bus/event_source/devices (needs an arm,cci-400-pmu "
                    "device-tree node)"
                )
                continue
            codes = CCI_EVENTS[cci[0]]
            for src in (3, 4):
                items.append(f"cci_rrq_s{src}={cci[1]}:{src << 5 | codes['read_requests']}@0")
                items.append(f"cci_stall_s{src}={cci[1]}:{src << 5 | codes['read_stalls']}@0")
    return items, unsupported


def derive_counters(names: tuple[str, ...], counted: Mapping) -> tuple[dict[str, float], dict[str, str]]:
    """boardlab-kern's "counters" object -> ({metric: value}, {metric: reason unsupported})."""
    values: dict[str, float] = {}
    reasons: dict[str, str] = {}

    def get(key: str) -> int | None:
        c = counted.get(key) or {}
        if "unsupported" in c:
            reasons.setdefault(current, f"{key}: {c['unsupported']}")
            return None
        return c.get("count")

    for current in names:
        if current in ("instructions", "cycles"):
            v = get(current)
            if v is not None:
                values[current] = float(v)
        elif current == "memory_access":
            bus, cyc = get("bus_access"), get("cpu_cycles")
            if bus is not None and cyc:
                values[current] = bus / cyc
        elif current == "cci_congestion":
            rrq3, rrq4, stall3, stall4 = (get(f"cci_{k}_s{s}") for k in ("rrq", "stall") for s in (3, 4))
            if rrq3 is not None and rrq4 is not None and stall3 is not None and stall4 is not None:
                if rrq3 + rrq4 > 0:
                    values[current] = (stall3 + stall4) / (rrq3 + rrq4)
    return values, reasons
