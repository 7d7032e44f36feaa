"""What boardlab can do on this board, each "no" with the concrete reason and, where one exists, the way out.

Keys other layers rely on: cpufreq, thermal, energy, perf, rt_priority, isolation (and cpu_dma_latency).
"""

from __future__ import annotations

import resource

from boardlab.model.board import BoardInfo, Capability
from boardlab.platform.cpufreq import CPUFREQ_DIR
from boardlab.platform.perf import EVENT_SOURCE_DIR
from boardlab.platform.power import HWMON_DIR, POWERCAP_DIR
from boardlab.platform.sysroot import RootLike, SysRoot
from boardlab.platform.thermal import THERMAL_DIR

CAP_SYS_NICE = 23
YES = Capability(True, None)


def _vm_note(info: BoardInfo) -> str:
    return " (typical of VMs)" if info.virtualization.virtualized else ""


def cpufreq(sr: SysRoot, info: BoardInfo) -> Capability:
    if info.cpufreq_policies:
        return YES
    return Capability(
        False,
        f"no {sr.show(CPUFREQ_DIR)}/policy*: the kernel exposes no cpufreq driver{_vm_note(info)}, "
        "so frequencies can be neither fixed nor recorded",
    )


def thermal(sr: SysRoot, info: BoardInfo) -> Capability:
    if any(z.temp_mc is not None for z in info.thermal_zones):
        return YES
    if info.thermal_zones:
        zone = info.thermal_zones[0].name
        why = sr.unreadable_reason(f"{THERMAL_DIR}/{zone}/temp") or "no temp file"
        return Capability(False, f"thermal zones exist but none reads a temperature ({zone}/temp: {why})")
    return Capability(
        False,
        f"no {sr.show(THERMAL_DIR)}/thermal_zone*: the kernel exposes no temperature sensor{_vm_note(info)}",
    )


def energy(sr: SysRoot, info: BoardInfo) -> Capability:
    if any(
        i.kind in ("power", "energy") and i.value is not None for s in info.power_sensors for i in s.inputs
    ):
        return YES
    if any(z.energy_uj is not None for z in info.powercap):
        return YES
    if info.powercap:
        zone = info.powercap[0].name
        why = sr.unreadable_reason(f"{POWERCAP_DIR}/{zone}/energy_uj")
        return Capability(
            False, f"{sr.show(POWERCAP_DIR)}/{zone}/energy_uj does not read ({why}): run as root"
        )
    return Capability(
        False,
        f"no power or energy sensor: no hwmon device with power*/energy* inputs under {sr.show(HWMON_DIR)} "
        f"and no powercap zone with energy_uj under {sr.show(POWERCAP_DIR)}{_vm_note(info)}; "
        "an external meter (INA219/INA231 board, USB power meter) is needed",
    )


def perf(sr: SysRoot, info: BoardInfo) -> Capability:
    p = info.perf
    if not sr.is_dir(EVENT_SOURCE_DIR):
        return Capability(
            False, f"no {sr.show(EVENT_SOURCE_DIR)}: the kernel is built without CONFIG_PERF_EVENTS"
        )
    if p.cycles_opened:
        return YES
    found = ", ".join(pmu.name for pmu in p.pmus) or "none"
    if p.cycles_opened is None:  # not the live system: judge from the registered PMUs
        if p.core_pmus:
            return YES
        return Capability(False, f"no CPU PMU among {sr.show(EVENT_SOURCE_DIR)} (found: {found})")
    err = p.cycles_error or "unknown error"
    if err.startswith(("EACCES", "EPERM")):
        hint = (
            f"kernel.perf_event_paranoid = {p.paranoid} (or a seccomp/container policy) forbids it for this "
            "user: run as root or `sysctl kernel.perf_event_paranoid=1`"
        )
    elif err.startswith(("ENOENT", "EOPNOTSUPP", "ENODEV")):
        hint = f"no hardware PMU counts CPU cycles here{_vm_note(info)}; registered PMUs: {found}"
    elif err.startswith("ENOSYS"):
        hint = "the kernel is built without CONFIG_PERF_EVENTS"
    else:
        hint = f"registered PMUs: {found}"
    return Capability(False, f"perf_event_open(PERF_TYPE_HARDWARE, CPU_CYCLES) failed with {err}: {hint}")


def _has_cap(sr: SysRoot, bit: int) -> bool:
    for line in (sr.read_text("proc/self/status") or "").splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def rt_priority(sr: SysRoot, info: BoardInfo) -> Capability:
    runtime = info.kernel.sched_rt_runtime_us
    if runtime == 0:
        return Capability(
            False,
            "kernel.sched_rt_runtime_us = 0 gives real-time tasks no CPU time: `sysctl "
            "kernel.sched_rt_runtime_us=950000`",
        )
    if runtime is None:
        return Capability(
            False, "no proc/sys/kernel/sched_rt_runtime_us: the kernel's real-time budget is unknown"
        )
    if not sr.live:
        return YES  # the privileges of whoever runs on that board are unknown here; the kernel allows it
    _soft, hard = resource.getrlimit(resource.RLIMIT_RTPRIO)
    if _has_cap(sr, CAP_SYS_NICE) or hard == resource.RLIM_INFINITY or hard > 0:
        return YES
    return Capability(
        False,
        "this process has neither CAP_SYS_NICE nor an RLIMIT_RTPRIO above 0: run as root, or raise rtprio in "
        "/etc/security/limits.conf",
    )


def isolation(sr: SysRoot, info: BoardInfo) -> Capability:
    if info.isolation.isolated_cpus:
        return YES
    online = info.online_cpus
    if len(online) < 2:
        return Capability(False, "only one CPU is online: isolating a CPU needs at least two")
    # Isolate the last CPU: on big.LITTLE boards it belongs to the big cluster.
    cpu = online[-1]
    return Capability(
        False,
        f"no isolated CPU (no isolcpus in {sr.show('proc/cmdline')}, "
        f"{sr.show('sys/devices/system/cpu/isolated')} empty): "
        f"add isolcpus={cpu} nohz_full={cpu} rcu_nocbs={cpu} to the kernel command line",
    )


def cpu_dma_latency(sr: SysRoot, info: BoardInfo) -> Capability:
    rel = "dev/cpu_dma_latency"
    if not sr.exists(rel):
        return Capability(False, f"no {sr.show(rel)} (kernel without PM QoS, or root is not a live system)")
    if sr.live and not sr.writable(rel):
        return Capability(False, f"{sr.show(rel)} is not writable by this user: run as root")
    return YES


PROBES = {
    "cpufreq": cpufreq,
    "thermal": thermal,
    "energy": energy,
    "perf": perf,
    "rt_priority": rt_priority,
    "isolation": isolation,
    "cpu_dma_latency": cpu_dma_latency,
}


def capabilities(root: RootLike, info: BoardInfo) -> dict[str, Capability]:
    sr = SysRoot.of(root)
    return {name: probe(sr, info) for name, probe in PROBES.items()}
