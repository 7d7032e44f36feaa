"""cpufreq policies as the kernel publishes them, and the writes the DVFS condition will make."""

from __future__ import annotations

import pytest

from boardlab.errors import InputError
from boardlab.platform import cpufreq, inventory

from helpers import SYSFS, copy_board


def test_beaglebone_black_policy():
    (p,) = cpufreq.read_policies(SYSFS / "bbb")
    assert p.name == "policy0" and p.cpus == (0,) and p.related_cpus == (0,)
    assert p.driver == "cpufreq-dt"
    assert p.frequencies_khz == (300_000, 600_000, 800_000, 1_000_000)
    assert p.governors == ("conservative", "ondemand", "userspace", "powersave", "performance")
    assert p.governor == "performance" and p.cur_khz == 1_000_000
    assert (p.cpuinfo_min_khz, p.cpuinfo_max_khz) == (300_000, 1_000_000)
    assert p.transition_latency_ns == 300_000
    assert p.total_transitions == 412


def test_time_in_state_is_converted_from_10_ms_ticks_to_ms():
    tis = cpufreq.time_in_state_ms(SYSFS / "bbb", "policy0")
    assert tis == {300_000: 15_230, 600_000: 2_120, 800_000: 980, 1_000_000: 862_330}
    (p,) = cpufreq.read_policies(SYSFS / "bbb")
    assert p.time_in_state_ms() == tis


def test_the_monitor_reads_the_current_frequency_per_policy():
    assert cpufreq.list_policies(SYSFS / "odroid-xu3") == ("policy0", "policy4")
    assert cpufreq.current_frequency_khz(SYSFS / "odroid-xu3", "policy4") == 200_000
    assert cpufreq.list_policies(SYSFS / "vm") == ()


def test_a_corrupted_frequency_file_is_an_input_error_naming_it(tmp_path):
    root = copy_board("bbb", tmp_path)
    bad = root / "sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq"
    bad.write_text("1GHz\n")
    with pytest.raises(InputError) as err:
        inventory(root)
    assert str(bad) in str(err.value) and "kHz" in str(err.value)


def test_a_corrupted_frequency_table_is_an_input_error_naming_it(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    bad = root / "sys/devices/system/cpu/cpufreq/policy4/scaling_available_frequencies"
    bad.write_text("200000 fast 2000000\n")
    with pytest.raises(InputError, match="scaling_available_frequencies"):
        cpufreq.read_policies(root)


def test_without_a_frequency_table_the_stats_supply_the_frequencies(tmp_path):
    root = copy_board("bbb", tmp_path)
    (root / "sys/devices/system/cpu/cpufreq/policy0/scaling_available_frequencies").unlink()
    (p,) = cpufreq.read_policies(root)
    assert p.frequencies_khz == (300_000, 600_000, 800_000, 1_000_000)


def test_set_governor_writes_an_offered_governor_and_refuses_others(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    cpufreq.set_governor(root, "policy4", "performance")
    assert cpufreq.read_policy(root, "policy4").governor == "performance"
    with pytest.raises(InputError, match="interactive"):
        cpufreq.set_governor(root, "policy4", "interactive")


def test_frequency_limits_are_written_without_crossing(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    cpufreq.set_frequency_limits(root, "policy4", max_khz=1_000_000)
    cpufreq.set_frequency_limits(root, "policy4", min_khz=1_200_000, max_khz=1_400_000)
    p = cpufreq.read_policy(root, "policy4")
    assert (p.scaling_min_khz, p.scaling_max_khz) == (1_200_000, 1_400_000)


def test_global_boost_reads_cpufreq_boost_or_intel_no_turbo(tmp_path):
    root = copy_board("bbb", tmp_path)
    assert cpufreq.global_boost(root) is None
    (root / "sys/devices/system/cpu/cpufreq/boost").write_text("1\n")
    assert cpufreq.global_boost(root) is True
