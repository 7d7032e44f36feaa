"""cpufreq policies: what each frequency domain can do, how it is set, and where it spent its time.

Reading functions serve `info` and the monitor (current frequency, time_in_state); writing functions serve
the DVFS condition. They decide what to write and in which order, and hand every write to a `Writer`: the
condition passes one that journals the old value first (`RestoreJournal.set`); the default writes at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from boardlab.errors import InputError
from boardlab.model.board import BoardInfo, CpufreqPolicy, FrequencyTime
from boardlab.platform.sysroot import RootLike, SysRoot

CPUFREQ_DIR = "sys/devices/system/cpu/cpufreq"
# cpufreq stats count in clock ticks of USER_HZ, which is 100 on every Linux architecture.
TIME_IN_STATE_UNIT_MS = 10
# CPUFREQ_ETERNAL: the driver does not know its transition latency.
_ETERNAL = (2**32 - 1, -1)
# The mainline governors (research/governors.md 3).
GOVERNORS = ("ondemand", "conservative", "performance", "powersave", "schedutil", "userspace")
_U32 = 2**32 - 1
# Tunables of the governors that have them, with the range the kernel's store functions accept
# (drivers/cpufreq/cpufreq_{ondemand,conservative}.c, kernel/sched/cpufreq_schedutil.c). sampling_rate is
# also bounded below by two scheduler ticks (CPUFREQ_DBS_MIN_SAMPLING_INTERVAL), which depends on CONFIG_HZ;
# conservative also needs down_threshold < up_threshold.
GOVERNOR_TUNABLES: dict[str, dict[str, tuple[int, int]]] = {
    "ondemand": {
        "sampling_rate": (1, _U32),
        "up_threshold": (1, 100),
        "sampling_down_factor": (1, 100_000),
        "ignore_nice_load": (0, 1),
        "powersave_bias": (0, 1000),
        "io_is_busy": (0, 1),
    },
    "conservative": {
        "sampling_rate": (1, _U32),
        "up_threshold": (1, 100),
        "down_threshold": (1, 99),
        "freq_step": (0, 100),
        "sampling_down_factor": (1, 10),
        "ignore_nice_load": (0, 1),
    },
    "schedutil": {"rate_limit_us": (0, _U32)},
}

# (rel, value, what): writes one attribute; `what` names the setting for the restore journal's messages.
Writer = Callable[[str, str, str], None]


def _direct(sr: SysRoot) -> Writer:
    return lambda rel, value, what: sr.write_text(rel, value)


def min_sampling_rate_us(config_hz: int | None) -> int | None:
    """CPUFREQ_DBS_MIN_SAMPLING_INTERVAL: two scheduler ticks in us (20000 at HZ=100); None: HZ unknown."""
    return None if not config_hz else 2 * 1_000_000 // config_hz


def policy_dir(name: str) -> str:
    return f"{CPUFREQ_DIR}/{name}"


def list_policies(root: RootLike) -> tuple[str, ...]:
    """Policy names ("policy0", "policy4") in natural order; () when the kernel has no cpufreq driver."""
    return tuple(SysRoot.of(root).listdir(CPUFREQ_DIR, r"policy\d+"))


def _khz(sr: SysRoot, rel: str) -> int | None:
    return sr.read_int(rel, "a frequency in kHz (an integer)")


def current_frequency_khz(root: RootLike, policy: str) -> int | None:
    """scaling_cur_freq: the frequency the kernel last set (or measured, on x86) for this policy."""
    return _khz(SysRoot.of(root), f"{policy_dir(policy)}/scaling_cur_freq")


def time_in_state_ms(root: RootLike, policy: str) -> dict[int, int]:
    """Cumulative time per frequency since boot, in ms; {} without CONFIG_CPU_FREQ_STAT."""
    sr = SysRoot.of(root)
    rows = sr.read_table(
        f"{policy_dir(policy)}/stats/time_in_state", "lines of '<kHz> <time in 10 ms units>'"
    )
    return {khz: ticks * TIME_IN_STATE_UNIT_MS for khz, ticks in rows or ()}


def total_transitions(root: RootLike, policy: str) -> int | None:
    return SysRoot.of(root).read_int(f"{policy_dir(policy)}/stats/total_trans")


def read_policy(root: RootLike, name: str) -> CpufreqPolicy:
    sr = SysRoot.of(root)
    d = policy_dir(name)
    tis = time_in_state_ms(sr, name)
    freqs = sr.read_ints(f"{d}/scaling_available_frequencies", "frequencies in kHz separated by spaces")
    boost_freqs = sr.read_ints(f"{d}/scaling_boost_frequencies", "frequencies in kHz separated by spaces")
    if freqs is None:
        # intel_pstate and some DT drivers publish no table; stats still list the states they used.
        freqs = tuple(tis)
    latency = sr.read_int(f"{d}/cpuinfo_transition_latency", "a latency in ns (an integer)")
    boost = sr.read_int(f"{d}/boost", "0 or 1")
    return CpufreqPolicy(
        name=name,
        cpus=sr.read_cpulist(f"{d}/affected_cpus") or (),
        related_cpus=sr.read_cpulist(f"{d}/related_cpus") or (),
        driver=sr.read_str(f"{d}/scaling_driver"),
        governor=sr.read_str(f"{d}/scaling_governor"),
        governors=sr.read_words(f"{d}/scaling_available_governors") or (),
        frequencies_khz=tuple(sorted(set(freqs) | set(boost_freqs or ()))),
        cur_khz=_khz(sr, f"{d}/scaling_cur_freq"),
        scaling_min_khz=_khz(sr, f"{d}/scaling_min_freq"),
        scaling_max_khz=_khz(sr, f"{d}/scaling_max_freq"),
        cpuinfo_min_khz=_khz(sr, f"{d}/cpuinfo_min_freq"),
        cpuinfo_max_khz=_khz(sr, f"{d}/cpuinfo_max_freq"),
        transition_latency_ns=None if latency in _ETERNAL else latency,
        time_in_state=tuple(FrequencyTime(khz, ms) for khz, ms in sorted(tis.items())),
        total_transitions=total_transitions(sr, name),
        boost=None if boost is None else bool(boost),
    )


def read_policies(root: RootLike) -> tuple[CpufreqPolicy, ...]:
    sr = SysRoot.of(root)
    return tuple(read_policy(sr, name) for name in list_policies(sr))


def missing_reason(info: BoardInfo) -> str | None:
    """Why `info`'s board has no cpufreq policy to set or sweep (the inventory's reason where it found one);
    None when it has a policy. The governor kinds and the sweep say the same thing of the same board."""
    if info.cpufreq_policies:
        return None
    cap = info.capabilities.get("cpufreq")
    return cap.reason if cap and cap.reason else "no cpufreq policy on this board"


def global_boost(root: RootLike) -> bool | None:
    """cpufreq/boost (acpi-cpufreq, cpufreq-dt with boost OPPs) or not intel_pstate/no_turbo; None if
    absent."""
    sr = SysRoot.of(root)
    boost = sr.read_int(f"{CPUFREQ_DIR}/boost", "0 or 1")
    if boost is not None:
        return bool(boost)
    no_turbo = sr.read_int("sys/devices/system/cpu/intel_pstate/no_turbo", "0 or 1")
    return None if no_turbo is None else not no_turbo


# -- writing (the DVFS condition journals the old values first) ----------------------------------------------


def set_governor(root: RootLike, policy: str, governor: str, *, write: Writer | None = None) -> None:
    """Writes scaling_governor after checking the policy offers it (InputError otherwise)."""
    sr = SysRoot.of(root)
    available = sr.read_words(f"{policy_dir(policy)}/scaling_available_governors") or ()
    if governor not in available:
        raise InputError(
            f"governor {governor!r} is not offered by {sr.show(policy_dir(policy))}: "
            f"expected one of {', '.join(available) or '(none)'}"
        )
    (write or _direct(sr))(f"{policy_dir(policy)}/scaling_governor", governor, f"{policy} cpufreq governor")


def set_frequency_limits(
    root: RootLike,
    policy: str,
    *,
    min_khz: int | None = None,
    max_khz: int | None = None,
    write: Writer | None = None,
) -> None:
    """Writes scaling_min/max_freq in the order that never makes min > max on the way.

    Undoing the writes in reverse order (as the restore journal does) never crosses them either."""
    sr = SysRoot.of(root)
    d = policy_dir(policy)
    writes = []
    if min_khz is not None:
        writes.append(("scaling_min_freq", min_khz))
    if max_khz is not None:
        writes.append(("scaling_max_freq", max_khz))
    current_max = _khz(sr, f"{d}/scaling_max_freq")
    if min_khz is not None and current_max is not None and min_khz > current_max:
        writes.reverse()  # raise max first
    out = write or _direct(sr)
    for attr, khz in writes:
        out(f"{d}/{attr}", str(khz), f"{policy} {attr}")


def set_speed(root: RootLike, policy: str, khz: int, *, write: Writer | None = None) -> None:
    """Fixed frequency under the userspace governor (scaling_setspeed)."""
    sr = SysRoot.of(root)
    if sr.read_str(f"{policy_dir(policy)}/scaling_governor") != "userspace":
        raise InputError(f"{sr.show(policy_dir(policy))}: scaling_setspeed needs the userspace governor")
    (write or _direct(sr))(f"{policy_dir(policy)}/scaling_setspeed", str(khz), f"{policy} scaling_setspeed")


def tunables_dir(root: RootLike, policy: str, governor: str) -> str | None:
    """Where `governor`'s tunables live for `policy`: policyN/<gov>/ when the driver keeps them per policy
    (CPUFREQ_HAVE_GOVERNOR_PER_POLICY), else the global cpufreq/<gov>/. None while the governor runs on no
    policy: the kernel creates the directory when the governor starts and removes it when it stops."""
    sr = SysRoot.of(root)
    for rel in (f"{policy_dir(policy)}/{governor}", f"{CPUFREQ_DIR}/{governor}"):
        if sr.is_dir(rel):
            return rel
    return None


def set_tunables(
    root: RootLike, policy: str, governor: str, values: Mapping[str, int], *, write: Writer | None = None
) -> str:
    """Writes governor tunables (the governor must be running on `policy`); returns the directory used.

    conservative refuses an up_threshold at or below its down_threshold (and the reverse), so when both
    change the one that keeps them apart on the way is written first."""
    sr = SysRoot.of(root)
    d = tunables_dir(sr, policy, governor)
    if d is None:
        raise InputError(
            f"no {sr.show(f'{policy_dir(policy)}/{governor}')} or {sr.show(f'{CPUFREQ_DIR}/{governor}')}: "
            f"the {governor} governor is not running on {policy}, or has no tunables"
        )
    names = list(values)
    missing = [n for n in names if not sr.exists(f"{d}/{n}")]
    if missing:
        valid = ", ".join(sr.listdir(d)) or "(none)"
        raise InputError(f"{sr.show(d)} has no tunable {missing[0]!r}; tunables here: {valid}")
    if "up_threshold" in values and "down_threshold" in values:
        current_down = sr.read_int(f"{d}/down_threshold")
        if current_down is not None and values["up_threshold"] <= current_down:
            names.sort(key=lambda n: n != "down_threshold")  # lower down_threshold first
        else:
            names.sort(key=lambda n: n != "up_threshold")  # raise up_threshold first
    out = write or _direct(sr)
    scope = policy if d.startswith(policy_dir(policy) + "/") else "global"
    for name in names:
        out(f"{d}/{name}", str(values[name]), f"{governor} tunable {name} ({scope})")
    return d
