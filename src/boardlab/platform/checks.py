"""Environment checks (docs/method.md "Environment checks"): one small function per check, each a pure
function of the inventory returning OK, WARN or FAIL with the value read and a one-line fix.

WARN means "results are still valid but noisier or less comparable"; FAIL means "a run now would be
invalid" (the runner invalidates throttled runs). Neither changes the exit code of `boardlab info`.
"""

from __future__ import annotations

from collections.abc import Callable

from boardlab.model.board import BoardInfo, Check, CpufreqPolicy
from boardlab.platform.sysroot import format_cpulist
from boardlab.platform.thermal import is_cpufreq_cooling

GOOD_CLOCKSOURCES = ("tsc", "arch_sys_counter")
SLOW_CLOCKSOURCES = ("jiffies", "refined-jiffies", "acpi_pm", "hpet")
FIXED_FREQUENCY_GOVERNORS = ("performance", "userspace")
DEVFREQ_FOLLOWERS = ("performance", "userspace", "passive")  # passive follows a parent device's governor
THROTTLING_TRIPS = ("passive", "hot", "critical")  # active trips switch fans on, nothing slows down
TRIP_MARGIN_MC = 5000
DEEP_IDLE_EXIT_LATENCY_US = 10
LOAD_PER_CPU = 0.1
LOAD_FLOOR = 0.5


def _label(p: CpufreqPolicy) -> str:
    return f"{p.name} (CPUs {format_cpulist(p.related_cpus or p.cpus)})"


def _sysfs_policy(p: CpufreqPolicy, attr: str) -> str:
    return f"/sys/devices/system/cpu/cpufreq/{p.name}/{attr}"


def _c(mc: int) -> str:
    return f"{mc / 1000:.1f} C"


def check_virtualization(info: BoardInfo) -> Check:
    v = info.virtualization
    if not v.virtualized:
        return Check("virtualization", "OK", "bare metal: no hypervisor evidence")
    return Check(
        "virtualization",
        "WARN",
        f"running under a hypervisor ({v.hypervisor or 'unnamed'}): {v.evidence[0]}; steal time and the "
        "host's frequency decisions move timings",
        "measure on the board itself; in a VM compare only interleaved runs of one session",
    )


def check_governor(info: BoardInfo) -> Check:
    policies = info.cpufreq_policies
    if not policies:
        return Check(
            "governor",
            "WARN",
            "no cpufreq policy: the CPU frequency can be neither fixed nor recorded",
            "use a board or host that exposes cpufreq; meanwhile compare only interleaved runs of "
            "one session",
        )
    loose = [p for p in policies if p.governor not in FIXED_FREQUENCY_GOVERNORS]
    if not loose:
        return Check("governor", "OK", "; ".join(f"{_label(p)}: {p.governor}" for p in policies))
    return Check(
        "governor",
        "WARN",
        "; ".join(f"{_label(p)}: {p.governor}" for p in loose) + " (frequency follows load, so runs differ)",
        "echo performance | tee " + " ".join(_sysfs_policy(p, "scaling_governor") for p in loose),
    )


def check_frequency_limits(info: BoardInfo) -> Check:
    if not info.cpufreq_policies:
        return Check("frequency_limits", "OK", "not applicable: no cpufreq policy")
    capped = [
        p
        for p in info.cpufreq_policies
        if p.scaling_max_khz is not None
        and p.cpuinfo_max_khz is not None
        and p.scaling_max_khz < p.cpuinfo_max_khz
    ]
    if not capped:
        return Check("frequency_limits", "OK", "every policy may reach its hardware maximum")
    return Check(
        "frequency_limits",
        "WARN",
        "; ".join(
            f"{_label(p)}: scaling_max_freq {p.scaling_max_khz} kHz < cpuinfo_max_freq "
            f"{p.cpuinfo_max_khz} kHz"
            for p in capped
        ),
        "; ".join(f"echo {p.cpuinfo_max_khz} > {_sysfs_policy(p, 'scaling_max_freq')}" for p in capped),
    )


def check_boost(info: BoardInfo) -> Check:
    on = info.boost is True or any(p.boost for p in info.cpufreq_policies)
    if on:
        return Check(
            "boost",
            "WARN",
            "boost (turbo) is on: the top frequency depends on temperature and on what other cores do",
            "echo 0 > /sys/devices/system/cpu/cpufreq/boost (intel_pstate: echo 1 > "
            "/sys/devices/system/cpu/intel_pstate/no_turbo)",
        )
    if info.boost is None and all(p.boost is None for p in info.cpufreq_policies):
        return Check("boost", "OK", "no boost control exposed")
    return Check("boost", "OK", "boost off")


def check_devfreq(info: BoardInfo) -> Check:
    if not info.devfreq:
        return Check(
            "devfreq", "OK", "no devfreq device (memory and bus clocks are not scaled by the kernel)"
        )
    loose = [d for d in info.devfreq if d.governor not in DEVFREQ_FOLLOWERS]
    if not loose:
        return Check("devfreq", "OK", "; ".join(f"{d.name}: {d.governor}" for d in info.devfreq))
    return Check(
        "devfreq",
        "WARN",
        "; ".join(f"{d.name} ({d.kind}): {d.governor}" for d in loose)
        + " (memory/bus frequency follows load: bandwidth and latency kernels vary)",
        "echo performance | tee " + " ".join(f"/sys/class/devfreq/{d.name}/governor" for d in loose),
    )


def check_cpuidle(info: BoardInfo) -> Check:
    idle = info.cpuidle
    if idle is None or not idle.states:
        driver = idle.driver if idle else None
        return Check(
            "cpuidle", "OK", f"no idle states (cpuidle driver: {driver or 'absent'}): idle CPUs only halt"
        )
    deep = [
        s
        for s in idle.states
        if (s.exit_latency_us or 0) >= DEEP_IDLE_EXIT_LATENCY_US and set(s.cpus) - set(s.disabled_cpus)
    ]
    if not deep:
        return Check(
            "cpuidle",
            "OK",
            f"{idle.driver}: no enabled state with exit latency >= {DEEP_IDLE_EXIT_LATENCY_US} us",
        )
    return Check(
        "cpuidle",
        "WARN",
        "; ".join(
            f"{s.name} (exit {s.exit_latency_us} us) enabled on CPUs "
            f"{format_cpulist(set(s.cpus) - set(s.disabled_cpus))}"
            for s in deep
        )
        + ": wake-up latency adds to short timings",
        f"cpupower idle-set -D {DEEP_IDLE_EXIT_LATENCY_US - 1}, or hold /dev/cpu_dma_latency at 0 "
        "during runs",
    )


def check_isolation(info: BoardInfo) -> Check:
    iso = info.isolation
    if iso.isolated_cpus:
        parts = [f"isolated CPUs {format_cpulist(iso.isolated_cpus)}"]
        for name, cpus in (("nohz_full", iso.nohz_full), ("rcu_nocbs", iso.rcu_nocbs)):
            parts.append(f"{name} {format_cpulist(cpus) if cpus else 'none'}")
        return Check("isolation", "OK", "; ".join(parts))
    if len(info.online_cpus) < 2:
        return Check(
            "isolation",
            "WARN",
            "single online CPU: the workload shares it with every interrupt and daemon",
            "stop background services and keep the network quiet during runs",
        )
    cpu = info.online_cpus[-1]
    return Check(
        "isolation",
        "WARN",
        "no isolated CPU: the scheduler, timers and RCU callbacks run on every CPU",
        f"add isolcpus={cpu} nohz_full={cpu} rcu_nocbs={cpu} to the kernel command line and reboot",
    )


def check_preempt_rt(info: BoardInfo) -> Check:
    k = info.kernel
    if k.preempt_rt:
        return Check("preempt_rt", "OK", f"PREEMPT_RT kernel ({k.preempt_rt_evidence})")
    return Check(
        "preempt_rt",
        "OK",
        f"not a PREEMPT_RT kernel (preemption model: {k.preempt_model or 'unknown'}); fine for throughput, "
        "real-time latency results describe a general-purpose kernel",
        "for real-time latency studies boot a kernel with CONFIG_PREEMPT_RT=y",
    )


def check_aslr(info: BoardInfo) -> Check:
    # docs/method.md repeats fresh processes so that runs sample memory layouts; with ASLR off every run gets
    # the same layout, and one lucky or unlucky layout biases all of them (Kalibera & Jones; pyperf's advice).
    aslr = info.system.aslr
    if aslr is None:
        return Check("aslr", "OK", "randomize_va_space not exposed")
    if aslr == 0:
        return Check(
            "aslr",
            "WARN",
            "ASLR off (randomize_va_space = 0): every run sees the same memory layout, so runs cannot sample "
            "layout effects and one layout's luck biases them all",
            "echo 2 > /proc/sys/kernel/randomize_va_space",
        )
    kind = "full" if aslr == 2 else "partial"
    return Check(
        "aslr",
        "OK",
        f"ASLR on (randomize_va_space = {aslr}, {kind}): each run samples a memory layout, as fresh "
        "processes should",
    )


def check_thp(info: BoardInfo) -> Check:
    thp = info.system.thp_enabled
    if thp is None:
        return Check("thp", "OK", "transparent huge pages not built into this kernel")
    if thp == "always":
        return Check(
            "thp",
            "WARN",
            "transparent huge pages: always (page size and khugepaged work vary between runs)",
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
        )
    return Check("thp", "OK", f"transparent huge pages: {thp}")


def check_swap(info: BoardInfo) -> Check:
    m = info.memory
    if not m.swap_total_kib and not m.swap_devices:
        return Check("swap", "OK", "no swap")
    where = ", ".join(d.name for d in m.swap_devices) or "unnamed"
    return Check(
        "swap",
        "WARN",
        f"swap on: {(m.swap_total_kib or 0) // 1024} MiB ({where}); a run that swaps is invalid",
        "swapoff -a",
    )


def check_clocksource(info: BoardInfo) -> Check:
    s = info.system
    if s.clocksource is None:
        return Check("clocksource", "OK", "clocksource not exposed")
    if s.clocksource in GOOD_CLOCKSOURCES:
        return Check("clocksource", "OK", f"{s.clocksource} (read in user space, constant rate)")
    better = [c for c in GOOD_CLOCKSOURCES if c in s.clocksources]
    if better:
        fix = f"echo {better[0]} > /sys/devices/system/clocksource/clocksource0/current_clocksource"
    elif s.clocksource in SLOW_CLOCKSOURCES:
        fix = "boot with clocksource=tsc tsc=reliable if the TSC is stable on this machine"
    else:
        fix = (
            f"none better available ({' '.join(s.clocksources) or s.clocksource}); boardlab measures the "
            "timer's resolution and overhead and sizes iterations to them"
        )
    return Check(
        "clocksource",
        "WARN",
        f"clocksource {s.clocksource}: not {' or '.join(GOOD_CLOCKSOURCES)}, timer reads may be "
        "slower or coarser",
        fix,
    )


def check_thermal(info: BoardInfo) -> Check:
    throttling = [d for d in info.cooling_devices if is_cpufreq_cooling(d) and (d.cur_state or 0) > 0]
    if throttling:
        return Check(
            "thermal",
            "FAIL",
            "; ".join(f"{d.type} at state {d.cur_state} of {d.max_state}" for d in throttling)
            + ": the CPU frequency is capped by thermal throttling now",
            "let the board cool down and improve its cooling (heatsink, fan) before measuring",
        )
    worst: tuple[int, str] | None = None  # (margin_mc, text)
    for zone in info.thermal_zones:
        if zone.temp_mc is None:
            continue
        trips = [t for t in zone.trips if t.type in THROTTLING_TRIPS and t.temp_mc is not None]
        if not trips:
            continue
        trip = min(trips, key=lambda t: t.temp_mc or 0)
        margin = (trip.temp_mc or 0) - zone.temp_mc
        text = f"{zone.type or zone.name} {_c(zone.temp_mc)}, {trip.type} trip at {_c(trip.temp_mc or 0)}"
        if worst is None or margin < worst[0]:
            worst = (margin, text)
    if not info.thermal_zones:
        return Check("thermal", "OK", "no thermal zone: temperature cannot be watched")
    if worst is None:
        hottest = max(
            (z for z in info.thermal_zones if z.temp_mc is not None),
            key=lambda z: z.temp_mc or 0,
            default=None,
        )
        if hottest is None:
            return Check("thermal", "OK", "no zone reads a temperature")
        return Check(
            "thermal",
            "OK",
            f"hottest {hottest.type or hottest.name} {_c(hottest.temp_mc or 0)}, no throttling trip",
        )
    margin, text = worst
    fix = "let the board cool down and improve its cooling (heatsink, fan) before measuring"
    if margin <= 0:
        return Check("thermal", "FAIL", f"{text}: at or above the trip, the kernel throttles now", fix)
    if margin < TRIP_MARGIN_MC:
        return Check("thermal", "WARN", f"{text}: within {_c(TRIP_MARGIN_MC)} of throttling", fix)
    return Check("thermal", "OK", f"{text} ({_c(margin)} of headroom)")


def check_load(info: BoardInfo) -> Check:
    s = info.system
    if s.load_1min is None:
        return Check("load", "OK", "load average not exposed")
    limit = max(LOAD_FLOOR, LOAD_PER_CPU * len(info.online_cpus))
    detail = (
        f"load average {s.load_1min:.2f} (1 min), {s.runnable} runnable, online CPUs "
        f"{format_cpulist(info.online_cpus)}"
    )
    if s.load_1min <= limit:
        return Check("load", "OK", detail)
    return Check(
        "load",
        "WARN",
        detail + f": above {limit:.2f}, other work competes with the measurement",
        f"stop background work (top -o %CPU shows it) and wait until the 1-minute load is below {limit:.2f}",
    )


def check_perf(info: BoardInfo) -> Check:
    cap = info.capabilities.get("perf")
    if cap is None or cap.supported:
        how = "cycles counter opens" if info.perf.cycles_opened else "CPU PMU registered"
        return Check("perf", "OK", f"{how}: {', '.join(info.perf.core_pmus) or 'cpu'}")
    if "paranoid" in (cap.reason or ""):
        fix = "sysctl kernel.perf_event_paranoid=1 (or run as root)"
    else:
        fix = (
            "hardware counters will be missing from results; measure on a board (or a VM with a virtual PMU)"
        )
    return Check("perf", "WARN", cap.reason or "perf unavailable", fix)


CHECKS: tuple[Callable[[BoardInfo], Check], ...] = (
    check_virtualization,
    check_governor,
    check_frequency_limits,
    check_boost,
    check_devfreq,
    check_cpuidle,
    check_isolation,
    check_preempt_rt,
    check_aslr,
    check_thp,
    check_swap,
    check_clocksource,
    check_thermal,
    check_load,
    check_perf,
)


def run_checks(info: BoardInfo) -> tuple[Check, ...]:
    return tuple(check(info) for check in CHECKS)
