"""Thermal zones, cooling devices, power sensors, devfreq, cpuidle, memory and system knobs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from boardlab.platform import cpuidle, devfreq, memory, perf, power, system, thermal, virt

from helpers import SYSFS


def test_exynos_tmu_zones_with_their_trip_points():
    zones = thermal.read_zones(SYSFS / "odroid-xu3")
    assert [z.type for z in zones] == [
        "cpu0-thermal",
        "cpu1-thermal",
        "cpu2-thermal",
        "cpu3-thermal",
        "gpu-thermal",
    ]
    cpu1 = zones[1]
    assert cpu1.temp_mc == 53_000 and cpu1.policy == "step_wise"
    assert [(t.type, t.temp_mc) for t in cpu1.trips] == [
        ("active", 50_000),
        ("active", 60_000),
        ("active", 70_000),
        ("critical", 120_000),
        ("passive", 70_000),
        ("passive", 85_000),
    ]
    assert thermal.read_temperatures_mc(SYSFS / "odroid-xu3")["gpu-thermal"] == 46_000


def test_beaglebone_black_has_one_zone_with_a_critical_trip():
    (z,) = thermal.read_zones(SYSFS / "bbb")
    assert z.type == "cpu_thermal" and z.temp_mc == 45_000
    assert [(t.type, t.temp_mc, t.hyst_mc) for t in z.trips] == [("critical", 125_000, 2_000)]
    assert thermal.read_zones(SYSFS / "vm") == ()


def test_cpufreq_cooling_devices_are_recognised():
    devices = thermal.read_cooling_devices(SYSFS / "odroid-xu3")
    assert [d.type for d in devices if thermal.is_cpufreq_cooling(d)] == [
        "thermal-cpufreq-0",
        "thermal-cpufreq-1",
    ]
    assert devices[0].type == "pwm-fan" and (devices[0].cur_state, devices[0].max_state) == (1, 3)


def test_ina231_rails_of_the_odroid_xu3_in_hwmon_units():
    compat = ("hardkernel,odroid-xu3", "samsung,exynos5800", "samsung,exynos5")
    sensors = power.read_power_sensors(SYSFS / "odroid-xu3", compat)
    assert [s.name for s in sensors] == ["hwmon0", "hwmon1", "hwmon2", "hwmon3"]  # hwmon4 is the fan
    assert all(s.chip == "ina231" for s in sensors)
    assert [s.device for s in sensors] == ["0-0040", "0-0041", "0-0044", "0-0045"]
    assert [s.label for s in sensors] == [
        "A15 cluster (VDD_ARM)",
        "memory (VDD_MEM)",
        "GPU (VDD_G3D)",
        "A7 cluster (VDD_KFC)",
    ]
    a15 = sensors[0]
    units = {i.attribute: (i.kind, i.unit, i.value) for i in a15.inputs}
    assert units["in1_input"] == ("voltage", "mV", 903)
    assert units["curr1_input"] == ("current", "mA", 86)
    assert units["power1_input"] == ("power", "uW", 77_500)
    assert a15.power_uw == 77_500
    assert power.read_power_uw(SYSFS / "odroid-xu3", "hwmon3") == 35_000


def test_without_the_board_compatible_a_rail_has_no_label():
    (first, *_) = power.read_power_sensors(SYSFS / "odroid-xu3")
    assert first.label is None and first.device == "0-0040"


def test_powercap_rapl_zones_give_energy_in_uj(tmp_path):
    zone = tmp_path / "sys/class/powercap/intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").write_text("123456789\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    (zone / "enabled").write_text("1\n")
    (tmp_path / "sys/class/powercap/intel-rapl").mkdir()  # the control type carries no counter
    (z,) = power.read_powercap(tmp_path)
    assert (z.name, z.zone, z.energy_uj, z.enabled) == ("intel-rapl:0", "package-0", 123_456_789, True)
    assert power.read_energy_uj(tmp_path, "intel-rapl:0") == 123_456_789


def test_exynos_memory_controller_devfreq():
    dmc, wcore = devfreq.read_devfreq(SYSFS / "odroid-xu3")
    assert dmc.name == "10c20000.memory-controller" and dmc.kind == "memory"
    assert dmc.frequencies_hz == (165e6, 206e6, 275e6, 413e6, 543e6, 633e6, 728e6, 825e6)
    assert dmc.governor == "simple_ondemand" and dmc.polling_interval_ms == 100
    assert wcore.kind == "bus"


def test_cpuidle_states_grouped_over_cpus():
    idle = cpuidle.read_cpuidle(SYSFS / "bbb", (0,))
    assert idle.driver == "arm_idle" and idle.governor == "menu"
    assert [(s.name, s.exit_latency_us, s.target_residency_us) for s in idle.states] == [
        ("WFI", 1, 1),
        ("mpu_gate", 130, 300),
    ]
    assert cpuidle.idle_usage(SYSFS / "bbb", 0)[1] == (254_310, 512_880_310)
    vm = cpuidle.read_cpuidle(SYSFS / "vm", (0, 1))
    assert vm.driver == "none" and vm.states == () and "haltpoll" in vm.governors


def test_disabled_idle_states_are_recorded(tmp_path):
    root = tmp_path / "bbb"
    shutil.copytree(SYSFS / "bbb", root)
    (root / "sys/devices/system/cpu/cpu0/cpuidle/state1/disable").write_text("1\n")
    idle = cpuidle.read_cpuidle(root, (0,))
    assert idle.states[1].disabled_cpus == (0,)


def test_memory_and_swap():
    m = memory.read_memory(SYSFS / "odroid-xu3")
    assert m.mem_total_kib == 2_015_580 and m.swap_total_kib == 1_007_788
    (zram,) = m.swap_devices
    assert (zram.name, zram.type, zram.size_kib, zram.priority) == ("/dev/zram0", "partition", 1_007_788, 5)
    bbb = memory.read_memory(SYSFS / "bbb")
    assert (
        480_000 < bbb.mem_total_kib < 512 * 1024 and bbb.swap_devices == () and bbb.hugepage_size_kib is None
    )


def test_system_knobs():
    s = system.read_system(SYSFS / "vm")
    assert s.aslr == 2 and s.thp_enabled == "madvise" and s.clocksource == "tsc"
    assert s.clocksources == ("tsc", "kvm-clock")
    assert (s.load_1min, s.runnable, s.threads) == (0.10, 1, 79)
    assert system.read_system(SYSFS / "bbb").thp_enabled is None


def test_pmus_and_virtualization_evidence():
    odroid = perf.read_perf(SYSFS / "odroid-xu3")
    assert odroid.core_pmus == ("armv7_cortex_a7", "armv7_cortex_a15") and odroid.paranoid == 2
    assert odroid.cycles_opened is None  # only the live system is probed
    vm = perf.read_perf(SYSFS / "vm")
    assert vm.core_pmus == () and "software" in [p.name for p in vm.pmus]
    v = virt.read_virtualization(SYSFS / "vm")
    assert v.virtualized and v.hypervisor == "KVM" and any("hypervisor" in e for e in v.evidence)
    assert not virt.read_virtualization(SYSFS / "bbb").virtualized


def test_the_live_cycles_probe_answers_as_this_machine_allows():
    opened, error = perf.open_cycles_counter()
    if not perf.read_perf(Path("/")).core_pmus:
        # no core PMU registered (a VM such as this one): the hardware cycles event cannot open
        assert opened is False and re.fullmatch(r"E[A-Z0-9]+ \(.+\)", error), error
    elif opened:
        assert error is None
    else:  # a core PMU exists: the only refusal is a permission one (perf_event_paranoid, a container)
        assert error.split()[0] in ("EACCES", "EPERM"), error


def test_each_probed_hardware_event_opens_or_says_why():
    live = perf.read_perf(Path("/"))
    assert [e.name for e in live.events] == ["cycles", "instructions"]
    for event in live.events:
        assert event.opened is True and event.reason is None or event.opened is False and event.reason
    if not live.core_pmus:  # a VM such as this one: nothing to count with, and the reason says so
        assert all("no CPU PMU is registered" in e.reason for e in live.events)
    # a tree is not probed, and says so per event; the record loads back
    odroid = perf.read_perf(SYSFS / "odroid-xu3")
    assert all(e.opened is None and "not the live system" in e.reason for e in odroid.events)
    assert type(odroid).from_dict(odroid.to_dict()) == odroid


def test_the_reason_of_a_failed_event_names_the_pmu_that_cannot_count_it():
    reason = perf.event_reason("ENOENT (No such file or directory)", ("armv7_cortex_a15",))
    assert "armv7_cortex_a15" in reason and "does not map this generic event" in reason
    assert "perf_event_paranoid" in perf.event_reason("EACCES (Permission denied)", ())
