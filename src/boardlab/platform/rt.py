"""Real-time latency environment: PM QoS (/dev/cpu_dma_latency), tracefs tracers (timerlat), the
PREEMPT_DYNAMIC mode, and whether this process may use real-time scheduling at all.

Kernel flavour and isolation themselves live in `kernel.py` (read_kernel, read_isolation).
"""

from __future__ import annotations

import os
import re
import struct
import threading
from dataclasses import dataclass

from boardlab.model.board import Record
from boardlab.platform.kernel import kernel_config, parse_cmdline
from boardlab.platform.sysroot import RootLike, SysRoot

CPU_DMA_LATENCY = "dev/cpu_dma_latency"
PM_QOS_NO_CONSTRAINT_US = 2_000_000_000  # PM_QOS_CPU_LATENCY_DEFAULT_VALUE: nobody holds a request
CAP_SYS_NICE = 23
TRACEFS_DIRS = ("sys/kernel/tracing", "sys/kernel/debug/tracing")
PREEMPT_DEBUGFS = "sys/kernel/debug/sched/preempt"
TRACER_CONFIG = {
    "timerlat": "CONFIG_TIMERLAT_TRACER",
    "osnoise": "CONFIG_OSNOISE_TRACER",
    "hwlat": "CONFIG_HWLAT_TRACER",
}


@dataclass(frozen=True)
class DmaLatency(Record):
    """The CPU latency target the kernel enforces now (the minimum of all open requests), in us."""

    value_us: int | None  # None when unreadable
    reason: str | None = None  # why it could not be read

    @property
    def constrained(self) -> bool | None:
        return None if self.value_us is None else self.value_us < PM_QOS_NO_CONSTRAINT_US

    def describe(self) -> str:
        if self.value_us is None:
            return f"unreadable ({self.reason})"
        if self.value_us >= PM_QOS_NO_CONSTRAINT_US:
            return f"{self.value_us} us (no constraint)"
        return f"{self.value_us} us (held by an open request: deep idle states are avoided)"


def read_cpu_dma_latency(root: RootLike) -> DmaLatency:
    """Reads the s32 little-endian target. Opening the device adds a no-constraint request, so reading changes
    nothing; writing (holding a value) is the conditions' business, and cyclictest's (it holds 0 by
    default)."""
    sr = SysRoot.of(root)
    if not sr.exists(CPU_DMA_LATENCY):
        return DmaLatency(None, f"no {sr.show(CPU_DMA_LATENCY)} (kernel without PM QoS)")
    raw = sr.read_bytes(CPU_DMA_LATENCY)
    if raw is None:
        why = sr.unreadable_reason(CPU_DMA_LATENCY) or "unreadable"
        return DmaLatency(None, f"{sr.show(CPU_DMA_LATENCY)}: {why} (root only)")
    if len(raw) < 4:
        return DmaLatency(None, f"{sr.show(CPU_DMA_LATENCY)}: expected 4 bytes, read {len(raw)}")
    return DmaLatency(struct.unpack("<i", raw[:4])[0])


@dataclass(frozen=True)
class TracerSupport(Record):
    """Whether the kernel offers an ftrace tracer; `available` None = cannot tell (say why in `evidence`)."""

    tracer: str
    available: bool | None
    evidence: str
    tracefs: str | None = None  # the tracefs directory that answered


def tracer_support(root: RootLike, tracer: str = "timerlat") -> TracerSupport:
    """From tracefs available_tracers when mounted, else from the kernel config (/proc/config.gz, /boot)."""
    sr = SysRoot.of(root)
    for d in TRACEFS_DIRS:
        words = sr.read_words(f"{d}/available_tracers")
        if words is not None:
            return TracerSupport(
                tracer,
                tracer in words,
                f"{sr.show(d + '/available_tracers')}: {' '.join(words) or '(empty)'}",
                sr.show(d),
            )
    key = TRACER_CONFIG.get(tracer)
    config, source = kernel_config(sr), "/proc/config.gz"
    if not config:
        release = sr.read_str("proc/sys/kernel/osrelease")
        text = sr.read_text(f"boot/config-{release}") if release else None
        if text:
            source = f"/boot/config-{release}"
            config = dict(
                line.split("=", 1) for line in text.splitlines() if line.startswith("CONFIG_") and "=" in line
            )
    if key and config:
        value = config.get(key)
        if value == "y":
            return TracerSupport(tracer, True, f"{key}=y in {source} (tracefs not mounted)")
        return TracerSupport(tracer, False, f"{key} is not set in {source}")
    return TracerSupport(
        tracer,
        None,
        "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing) and no kernel config "
        "is readable",
    )


def preempt_dynamic_mode(root: RootLike) -> tuple[str | None, str]:
    """The PREEMPT_DYNAMIC mode ("none", "voluntary", "full", "lazy") and where it was read: debugfs when
    mounted ("none voluntary (full) lazy"), else the preempt= kernel parameter, else the configured boot
    default; (None, why) when the kernel is not PREEMPT_DYNAMIC or nothing says."""
    sr = SysRoot.of(root)
    text = sr.read_str(PREEMPT_DEBUGFS)
    if text:
        m = re.search(r"\((\w+)\)", text)
        if m:
            return m.group(1), f"{sr.show(PREEMPT_DEBUGFS)}: {text}"
    param = parse_cmdline(sr.read_str("proc/cmdline") or "").get("preempt")
    if param:
        return param, f"preempt={param} on the kernel command line"
    config = kernel_config(sr)
    if not config:
        return None, "debugfs not mounted, no preempt= parameter, no /proc/config.gz"
    if config.get("CONFIG_PREEMPT_DYNAMIC") != "y":
        return None, "CONFIG_PREEMPT_DYNAMIC is not set: the model is fixed at build time"
    for key, mode in (
        ("CONFIG_PREEMPT_NONE", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ("CONFIG_PREEMPT_LAZY", "lazy"),
        ("CONFIG_PREEMPT", "full"),
    ):
        if config.get(key) == "y":
            return mode, f"{key}=y is the boot default (no preempt= parameter; debugfs not mounted)"
    return None, "no CONFIG_PREEMPT_* default found in /proc/config.gz"


def rt_scheduling_refusal(root: RootLike = "/", policy: str = "fifo", priority: int = 1) -> str | None:
    """Why this process may not run a SCHED_FIFO/SCHED_RR thread, or None when it may.

    kernel.sched_rt_runtime_us = 0 leaves real-time tasks no CPU time at all. Otherwise asks the kernel
    directly, as cyclictest's check_privs() does, from a throw-away thread (the policy is per thread on
    Linux), so root, CAP_SYS_NICE, RLIMIT_RTPRIO, cgroup RT budgets and seccomp are all judged as they are.
    The thread ends right after; nothing else changes.
    """
    sr = SysRoot.of(root)
    if sr.read_int("proc/sys/kernel/sched_rt_runtime_us") == 0:
        return (
            "kernel.sched_rt_runtime_us = 0 gives real-time tasks no CPU time: "
            "`sysctl kernel.sched_rt_runtime_us=950000`"
        )
    pol = {"fifo": os.SCHED_FIFO, "rr": os.SCHED_RR}[policy]
    result: list[str | None] = []

    def probe() -> None:
        try:
            os.sched_setscheduler(0, pol, os.sched_param(priority))
        except OSError as exc:
            result.append(exc.strerror or str(exc))
            return
        try:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            pass
        result.append(None)

    t = threading.Thread(target=probe, name="boardlab-rt-probe")
    t.start()
    t.join()
    if result and result[0] is None:
        return None
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_RTPRIO)
    hard_text = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    nice = _has_cap_sys_nice()
    if nice:
        why = "a cgroup without a real-time budget or a seccomp/container policy refuses it"
    elif os.geteuid() == 0:
        why = "this root process lacks CAP_SYS_NICE (dropped by a container or a bounding set): grant it"
    else:
        why = (
            "run as root, give the tool cap_sys_nice,cap_ipc_lock (setcap), or raise rtprio in "
            "/etc/security/limits.conf"
        )
    return (
        f"sched_setscheduler(SCHED_{policy.upper()}, {priority}) is refused "
        f"({result[0] if result else 'failed'}; uid {os.geteuid()}, CAP_SYS_NICE {'yes' if nice else 'no'}, "
        f"RLIMIT_RTPRIO hard limit {hard_text}): {why}"
    )


def _has_cap_sys_nice() -> bool:
    for line in (SysRoot("/").read_text("proc/self/status") or "").splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> CAP_SYS_NICE & 1)
    return False
