"""The board inventory as typed, frozen records: what `platform.inventory()` returns and the store keeps.

Units are in field names (`frequencies_khz`, `temp_mc` = millidegrees Celsius, `energy_uj`, `mem_total_kib`).
`None` means "not exposed by this kernel"; an empty tuple means "exposed, and empty".
Every record has `to_dict()` (plain JSON-safe dicts and lists) and `from_dict()` (the inverse, tolerant of
keys added by later schema versions), so an inventory stored today still loads tomorrow.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

CheckStatus = Literal["OK", "WARN", "FAIL"]
R = TypeVar("R", bound="Record")


def _to_plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_to_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_plain(v) for k, v in value.items()}
    return value


def _from_plain(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin is types.UnionType or origin is typing.Union:
        for arg in typing.get_args(tp):
            if arg is not type(None):
                return _from_plain(arg, value)
        return value
    if origin is tuple:
        (item_tp, *_rest) = typing.get_args(tp)
        return tuple(_from_plain(item_tp, v) for v in value)
    if origin is dict:
        key_tp, val_tp = typing.get_args(tp)
        return {key_tp(k): _from_plain(val_tp, v) for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_dict(value)
    return value


class Record:
    """Mixin for the frozen dataclasses below: JSON-safe conversion both ways."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _to_plain(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls: type[R], data: dict[str, Any]) -> R:
        hints = typing.get_type_hints(cls)
        known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        # Unknown keys come from newer writers; missing keys take the field default.
        return cls(**{k: _from_plain(hints[k], v) for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Capability(Record):
    """Whether boardlab can do one kind of thing here; `reason` says why not (None when supported)."""

    supported: bool
    reason: str | None = None


@dataclass(frozen=True)
class Check(Record):
    """One environment check (docs/method.md "Environment checks"); `fix` is one line telling the user what to
    do."""

    name: str
    status: CheckStatus
    detail: str
    fix: str | None = None


@dataclass(frozen=True)
class CpuCore(Record):
    """One logical CPU: identity from /proc/cpuinfo (MIDR on ARM), topology and capacity from sysfs."""

    cpu: int
    online: bool
    model_name: str | None = None
    core_name: str | None = None  # decoded MIDR part ("Cortex-A15") or the model name
    midr_implementer: str | None = None  # "0x41"
    midr_part: str | None = None  # "0xc0f"
    midr_variant: str | None = None
    midr_revision: int | None = None
    core_id: int | None = None
    package_id: int | None = None
    cluster_id: int | None = None
    thread_siblings: tuple[int, ...] = ()
    features: tuple[str, ...] = ()  # cpuinfo "Features" (ARM) or "flags" (x86), as the kernel prints them
    capacity: int | None = None  # sysfs cpu_capacity, 1024 = the biggest core at its top frequency


@dataclass(frozen=True)
class Cache(Record):
    level: int
    type: str  # Data, Instruction, Unified
    size_kib: int | None
    line_size_b: int | None
    ways: int | None
    sets: int | None
    cpus: tuple[int, ...]


@dataclass(frozen=True)
class FrequencyTime(Record):
    """One row of cpufreq stats/time_in_state (the kernel counts in 10 ms units; stored in ms)."""

    frequency_khz: int
    time_ms: int


@dataclass(frozen=True)
class CpufreqPolicy(Record):
    name: str  # "policy4"
    cpus: tuple[int, ...]  # affected_cpus (online)
    related_cpus: tuple[int, ...]
    driver: str | None
    governor: str | None
    governors: tuple[str, ...]
    frequencies_khz: tuple[int, ...]  # available frequencies, ascending
    cur_khz: int | None
    scaling_min_khz: int | None
    scaling_max_khz: int | None
    cpuinfo_min_khz: int | None
    cpuinfo_max_khz: int | None
    transition_latency_ns: int | None
    time_in_state: tuple[FrequencyTime, ...] = ()
    total_transitions: int | None = None
    boost: bool | None = None  # per-policy boost file (Linux >= 6.x), None when absent

    def time_in_state_ms(self) -> dict[int, int]:
        return {row.frequency_khz: row.time_ms for row in self.time_in_state}


@dataclass(frozen=True)
class Cluster(Record):
    """CPUs sharing one frequency domain (cpufreq related_cpus), or one core type when there is no cpufreq."""

    id: int
    cpus: tuple[int, ...]
    name: str  # core name: "Cortex-A15", or the model name on x86
    model_name: str | None
    midr_implementer: str | None
    midr_part: str | None
    capacity: int | None
    policy: str | None  # cpufreq policy name, None without cpufreq
    driver: str | None
    governor: str | None
    governors: tuple[str, ...]
    frequencies_khz: tuple[int, ...]
    min_khz: int | None  # hardware limits (cpuinfo_min/max_freq)
    max_khz: int | None
    transition_latency_ns: int | None
    # What the cores can execute that a kernel's speed depends on: "NEON", "ASIMD", "AES", "SHA2", "CRC32"...
    # decoded from the cpuinfo features (an armhf userland on an ARMv8 core sees the 32-bit names).
    extensions: tuple[str, ...] = ()


@dataclass(frozen=True)
class DevfreqDevice(Record):
    name: str  # "10c20000.memory-controller"
    kind: str  # memory, gpu, bus, other (guessed from the name)
    governor: str | None
    governors: tuple[str, ...]
    frequencies_hz: tuple[int, ...]
    cur_hz: int | None
    min_hz: int | None
    max_hz: int | None
    polling_interval_ms: int | None


@dataclass(frozen=True)
class IdleState(Record):
    """One cpuidle state, grouped over the CPUs that have it with the same parameters."""

    index: int
    name: str
    desc: str | None
    exit_latency_us: int | None
    target_residency_us: int | None
    cpus: tuple[int, ...]
    disabled_cpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class Cpuidle(Record):
    driver: str | None  # "none" when the kernel has no idle driver
    governor: str | None
    governors: tuple[str, ...]
    states: tuple[IdleState, ...]


@dataclass(frozen=True)
class SwapDevice(Record):
    name: str
    type: str
    size_kib: int
    used_kib: int
    priority: int


@dataclass(frozen=True)
class Memory(Record):
    mem_total_kib: int | None
    mem_free_kib: int | None
    mem_available_kib: int | None
    swap_total_kib: int | None
    swap_free_kib: int | None
    hugepage_size_kib: int | None
    hugepages_total: int | None
    swap_devices: tuple[SwapDevice, ...] = ()


@dataclass(frozen=True)
class Kernel(Record):
    release: str | None  # uname -r
    version: str | None  # uname -v
    proc_version: str | None
    cmdline: str | None
    preempt_model: str | None  # PREEMPT_RT, PREEMPT, PREEMPT_DYNAMIC, or none (voluntary/no preemption)
    preempt_rt: bool
    preempt_rt_evidence: str | None
    config_hz: int | None  # CONFIG_HZ from /proc/config.gz when present
    sched_rt_runtime_us: int | None  # -1 = no RT throttling
    timer_migration: int | None


@dataclass(frozen=True)
class Isolation(Record):
    isolcpus: tuple[int, ...]  # from the command line
    isolcpus_flags: tuple[str, ...]  # nohz, domain, managed_irq
    isolated: tuple[int, ...] | None  # sys/devices/system/cpu/isolated; None when the file is absent
    nohz_full: tuple[int, ...]  # sysfs when present, else the command line
    rcu_nocbs: tuple[int, ...]  # command line only (no sysfs file exists)
    irqaffinity: tuple[int, ...]

    @property
    def isolated_cpus(self) -> tuple[int, ...]:
        return self.isolated if self.isolated is not None else self.isolcpus


@dataclass(frozen=True)
class TripPoint(Record):
    index: int
    type: str  # active, passive, hot, critical
    temp_mc: int | None
    hyst_mc: int | None = None


@dataclass(frozen=True)
class ThermalZone(Record):
    name: str  # "thermal_zone0"
    type: str | None  # "cpu0-thermal"
    temp_mc: int | None
    mode: str | None
    policy: str | None
    trips: tuple[TripPoint, ...] = ()


@dataclass(frozen=True)
class CoolingDevice(Record):
    name: str  # "cooling_device1"
    type: str | None  # "thermal-cpufreq-0", "pwm-fan", "Processor"
    cur_state: int | None
    max_state: int | None


@dataclass(frozen=True)
class SensorInput(Record):
    """One hwmon `*_input` attribute with the unit the hwmon ABI defines for it."""

    attribute: str  # "power1_input"
    kind: str  # voltage, current, power, energy
    value: int | None
    unit: str  # mV, mA, uW, uJ
    label: str | None = None


@dataclass(frozen=True)
class PowerSensor(Record):
    name: str  # "hwmon0"
    chip: str | None  # hwmon `name`: "ina231"
    device: str | None  # the bus device behind it: "0-0040" (i2c bus 0, address 0x40)
    label: str | None  # what it measures: sysfs label, or the board table in platform/power.py
    power_uw: int | None  # power1_input, the total for single-channel monitors
    inputs: tuple[SensorInput, ...] = ()


@dataclass(frozen=True)
class PowercapZone(Record):
    name: str  # "intel-rapl:0"
    zone: str | None  # "package-0"
    energy_uj: int | None
    max_energy_range_uj: int | None
    enabled: bool | None


@dataclass(frozen=True)
class Pmu(Record):
    name: str
    type: int | None


@dataclass(frozen=True)
class PerfEvent(Record):
    """One generic hardware event (PERF_TYPE_HARDWARE) tried with perf_event_open for this process."""

    name: str  # "cycles", "instructions"
    opened: bool | None  # None: not tried (root is not the live system)
    reason: str | None = None  # why it did not open: the errno and what it means here


@dataclass(frozen=True)
class Perf(Record):
    paranoid: int | None  # kernel.perf_event_paranoid
    pmus: tuple[Pmu, ...]
    core_pmus: tuple[str, ...]  # PMUs that count CPU cycles
    cycles_opened: bool | None  # None: not tried (root is not the live system)
    cycles_error: str | None  # errno text when the open failed
    events: tuple[PerfEvent, ...] = ()  # cycles and instructions, each opened or with its reason


@dataclass(frozen=True)
class Virtualization(Record):
    virtualized: bool
    hypervisor: str | None  # when the kernel or DMI names it
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class SystemSettings(Record):
    aslr: int | None  # randomize_va_space: 0 off, 1 partial, 2 full
    thp_enabled: str | None  # always, madvise, never
    thp_defrag: str | None
    clocksource: str | None
    clocksources: tuple[str, ...]
    load_1min: float | None
    load_5min: float | None
    load_15min: float | None
    runnable: int | None
    threads: int | None


# Raw rate per lane (GT/s) -> PCIe generation; the encoding (8b/10b up to 5 GT/s, 128b/130b from 8 GT/s)
# sets how much of it carries data.
PCIE_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


@dataclass(frozen=True)
class PcieLink(Record):
    """One PCIe device's link as trained (current) and as both ends allow (max): speed per lane and lanes."""

    address: str  # "0000:01:00.0"
    vendor: str | None  # "0x144d"
    device: str | None
    class_code: str | None  # "0x010802" (NVMe)
    driver: str | None
    current_speed_gts: float | None  # None: the link is down ("Unknown")
    current_width: int | None
    max_speed_gts: float | None
    max_width: int | None

    @property
    def generation(self) -> int | None:
        return PCIE_GENERATIONS.get(self.current_speed_gts) if self.current_speed_gts else None

    @property
    def data_bit_s(self) -> float | None:
        """What the trained link carries per direction after line encoding (8b/10b to gen 2, 128b/130b from
        gen 3), before packet overhead: the ceiling of anything streamed through it."""
        if self.current_speed_gts is None or self.current_width is None:
            return None
        efficiency = 0.8 if self.current_speed_gts <= 5.0 else 128 / 130
        return self.current_speed_gts * 1e9 * efficiency * self.current_width

    @property
    def degraded(self) -> bool:
        """Trained below what both ends allow (speed or width)."""
        slower = None not in (self.current_speed_gts, self.max_speed_gts) and (
            self.current_speed_gts < self.max_speed_gts  # type: ignore[operator]
        )
        narrower = None not in (self.current_width, self.max_width) and (
            self.current_width < self.max_width  # type: ignore[operator]
        )
        return bool(slower or narrower)


@dataclass(frozen=True)
class BoardInfo(Record):
    """Everything `boardlab info` knows about one board: what it is, how it is set, what it can do."""

    root: str
    live: bool  # root is this running system ("/")
    machine: str | None  # x86_64, armv7l, aarch64
    model: str | None  # device-tree model, DMI product, or cpuinfo Hardware
    compatible: tuple[str, ...]
    hardware: str | None  # cpuinfo "Hardware" line on ARM
    hostname: str | None
    cpus: tuple[CpuCore, ...]
    online_cpus: tuple[int, ...]
    clusters: tuple[Cluster, ...]
    caches: tuple[Cache, ...]
    cpufreq_policies: tuple[CpufreqPolicy, ...]
    boost: bool | None  # global cpufreq boost (or not intel_pstate/no_turbo)
    devfreq: tuple[DevfreqDevice, ...]
    cpuidle: Cpuidle | None
    memory: Memory
    kernel: Kernel
    isolation: Isolation
    system: SystemSettings
    thermal_zones: tuple[ThermalZone, ...]
    cooling_devices: tuple[CoolingDevice, ...]
    power_sensors: tuple[PowerSensor, ...]
    powercap: tuple[PowercapZone, ...]
    perf: Perf
    virtualization: Virtualization
    capabilities: dict[str, Capability] = field(default_factory=dict)
    checks: tuple[Check, ...] = ()
    pcie_links: tuple[PcieLink, ...] = ()

    def cluster_of(self, cpu: int) -> Cluster | None:
        return next((c for c in self.clusters if cpu in c.cpus), None)

    def policy(self, name: str) -> CpufreqPolicy | None:
        return next((p for p in self.cpufreq_policies if p.name == name), None)
