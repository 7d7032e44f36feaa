"""cpuidle: the idle driver and the states each CPU may enter (deep states add wake-up latency), and the
PM QoS request (/dev/cpu_dma_latency) that keeps CPUs out of the deep ones."""

from __future__ import annotations

import os

from boardlab.errors import MeasurementError
from boardlab.model.board import Cpuidle, IdleState
from boardlab.platform.sysroot import RootLike, SysRoot

CPUIDLE_DIR = "sys/devices/system/cpu/cpuidle"


def state_dir(cpu: int, index: int) -> str:
    return f"sys/devices/system/cpu/cpu{cpu}/cpuidle/state{index}"


def state_indices(root: RootLike, cpu: int) -> tuple[int, ...]:
    names = SysRoot.of(root).listdir(f"sys/devices/system/cpu/cpu{cpu}/cpuidle", r"state\d+")
    return tuple(int(n[5:]) for n in names)


def idle_usage(root: RootLike, cpu: int) -> dict[int, tuple[int | None, int | None]]:
    """{state index: (entries, residency in us)} since boot, for the monitor's before/after deltas."""
    sr = SysRoot.of(root)
    return {
        i: (sr.read_int(f"{state_dir(cpu, i)}/usage"), sr.read_int(f"{state_dir(cpu, i)}/time"))
        for i in state_indices(sr, cpu)
    }


def read_cpuidle(root: RootLike, cpus: tuple[int, ...]) -> Cpuidle | None:
    """None when the kernel has no cpuidle framework (no sys/devices/system/cpu/cpuidle)."""
    sr = SysRoot.of(root)
    if not sr.is_dir(CPUIDLE_DIR):
        return None
    governor = sr.read_str(f"{CPUIDLE_DIR}/current_governor") or sr.read_str(
        f"{CPUIDLE_DIR}/current_governor_ro"
    )
    groups: dict[tuple, tuple[list[int], list[int]]] = {}
    for cpu in cpus:
        for i in state_indices(sr, cpu):
            d = state_dir(cpu, i)
            key = (
                i,
                sr.read_str(f"{d}/name") or f"state{i}",
                sr.read_str(f"{d}/desc"),
                sr.read_int(f"{d}/latency", "an exit latency in us"),
                sr.read_int(f"{d}/residency", "a target residency in us"),
            )
            members, disabled = groups.setdefault(key, ([], []))
            members.append(cpu)
            if sr.read_int(f"{d}/disable", "0 or 1"):
                disabled.append(cpu)
    states = tuple(
        IdleState(
            index=i,
            name=name,
            desc=desc,
            exit_latency_us=latency,
            target_residency_us=residency,
            cpus=tuple(members),
            disabled_cpus=tuple(disabled),
        )
        for (i, name, desc, latency, residency), (members, disabled) in groups.items()
    )
    return Cpuidle(
        driver=sr.read_str(f"{CPUIDLE_DIR}/current_driver"),
        governor=governor,
        governors=sr.read_words(f"{CPUIDLE_DIR}/available_governors") or (),
        states=tuple(sorted(states, key=lambda s: (s.index, s.cpus))),
    )


# -- PM QoS: /dev/cpu_dma_latency ----------------------------------------------------------------------------

CPU_DMA_LATENCY = "dev/cpu_dma_latency"
NO_LATENCY_CONSTRAINT_US = (
    2_000_000_000  # PM_QOS_CPU_LATENCY_DEFAULT_VALUE, what the device reads without requests
)


def read_cpu_dma_latency_us(root: RootLike) -> int | None:
    """The CPU latency limit in force (the smallest request of any process), in us; None when absent.
    The device reads as one little-endian s32; 2000000000 means no constraint."""
    raw = SysRoot.of(root).read_bytes(CPU_DMA_LATENCY)
    if raw is None or len(raw) < 4:
        return None
    return int.from_bytes(raw[:4], "little", signed=True)


def hold_cpu_dma_latency(root: RootLike, latency_us: int) -> int:
    """Asks the kernel to keep every CPU's wake-up latency at most `latency_us` (0: no C-state exits).

    Returns the open file descriptor: the request lasts while it is open and ends when it is closed,
    which the kernel also does when the process dies, so nothing is left to restore after a crash.
    (Under a fixture root the device is a plain file: the value written stays there.)"""
    sr = SysRoot.of(root)
    path = sr.path(CPU_DMA_LATENCY)
    try:
        fd = sr.open_for_write(CPU_DMA_LATENCY, truncate=False)  # confined: no symlink out of the tree
    except OSError as exc:
        raise MeasurementError(f"cannot open {path}: {exc.strerror or exc}") from exc
    try:
        os.write(fd, int(latency_us).to_bytes(4, "little", signed=True))
    except OSError as exc:
        os.close(fd)
        raise MeasurementError(f"cannot write {latency_us} us to {path}: {exc.strerror or exc}") from exc
    return fd
