"""The whole inventory: capabilities with reasons, environment checks, and a JSON form that loads back."""

from __future__ import annotations

import json
import shutil

import pytest

from boardlab.errors import InputError
from boardlab.model import BoardInfo, Check
from boardlab.platform import inventory
from boardlab.platform.checks import run_checks

from helpers import SYSFS

REQUIRED_CAPABILITIES = {"cpufreq", "thermal", "energy", "perf", "rt_priority", "isolation"}


def copy_board(name, tmp_path):
    dest = tmp_path / name
    shutil.copytree(SYSFS / name, dest, symlinks=True)
    return dest


def checks_by_name(info) -> dict[str, Check]:
    return {c.name: c for c in info.checks}


@pytest.mark.parametrize("board", ["bbb", "odroid-xu3", "vm", "qemu-virt-arm64", "qemu-virt-armhf"])
def test_every_board_reports_the_required_capabilities_with_reasons_when_unsupported(board):
    info = inventory(SYSFS / board)
    assert REQUIRED_CAPABILITIES <= set(info.capabilities)
    for name, cap in info.capabilities.items():
        assert cap.supported or cap.reason, f"{name} unsupported without a reason"


@pytest.mark.parametrize("board", ["bbb", "odroid-xu3", "vm", "qemu-virt-arm64", "qemu-virt-armhf"])
def test_the_inventory_round_trips_through_json(board):
    info = inventory(SYSFS / board)
    doc = json.loads(json.dumps(info.to_dict()))
    assert BoardInfo.from_dict(doc) == info


def test_loading_tolerates_keys_from_a_newer_schema():
    doc = inventory(SYSFS / "bbb").to_dict()
    doc["added_later"] = {"x": 1}
    assert BoardInfo.from_dict(doc).model == "TI AM335x BeagleBone Black"


def test_odroid_xu3_can_do_everything_but_hold_cpu_dma_latency():
    caps = inventory(SYSFS / "odroid-xu3").capabilities
    assert all(caps[name].supported for name in REQUIRED_CAPABILITIES)


def test_vm_fixture_lacks_cpufreq_thermal_energy_and_perf_and_says_why():
    caps = inventory(SYSFS / "vm").capabilities
    assert "cpufreq" in caps["cpufreq"].reason and "typical of VMs" in caps["cpufreq"].reason
    assert "thermal_zone" in caps["thermal"].reason
    assert "hwmon" in caps["energy"].reason and "powercap" in caps["energy"].reason
    assert "PMU" in caps["perf"].reason
    assert not any(caps[n].supported for n in ("cpufreq", "thermal", "energy", "perf"))
    assert caps["isolation"].reason.endswith(
        "add isolcpus=1 nohz_full=1 rcu_nocbs=1 to the kernel command line"
    )


def test_a_single_cpu_board_cannot_isolate():
    cap = inventory(SYSFS / "bbb").capabilities["isolation"]
    assert not cap.supported and "only one CPU" in cap.reason


def test_rt_priority_needs_a_nonzero_rt_budget(tmp_path):
    root = copy_board("bbb", tmp_path)
    (root / "proc/sys/kernel/sched_rt_runtime_us").write_text("0\n")
    cap = inventory(root).capabilities["rt_priority"]
    assert not cap.supported and "sched_rt_runtime_us = 0" in cap.reason


def test_checks_on_the_odroid_xu3():
    checks = checks_by_name(inventory(SYSFS / "odroid-xu3"))
    assert checks["governor"].status == "WARN" and "policy4" in checks["governor"].fix
    assert checks["devfreq"].status == "WARN" and "10c20000.memory-controller" in checks["devfreq"].detail
    assert checks["swap"].status == "WARN" and checks["swap"].fix == "swapoff -a"
    assert checks["isolation"].status == "OK" and "isolated CPUs 7" in checks["isolation"].detail
    assert checks["thermal"].status == "OK" and checks["perf"].status == "OK"
    assert checks["virtualization"].status == "OK"
    assert checks["aslr"].status == "OK" and "ASLR on" in checks["aslr"].detail


def test_checks_on_the_beaglebone_black():
    checks = checks_by_name(inventory(SYSFS / "bbb"))
    assert checks["governor"].status == "OK"
    assert checks["cpuidle"].status == "WARN" and "mpu_gate" in checks["cpuidle"].detail
    assert checks["clocksource"].status == "WARN" and "dmtimer" in checks["clocksource"].detail
    assert checks["preempt_rt"].status == "OK" and "PREEMPT" in checks["preempt_rt"].detail


def test_checks_on_the_vm_fixture():
    checks = checks_by_name(inventory(SYSFS / "vm"))
    for name in ("virtualization", "governor", "isolation", "perf"):
        assert checks[name].status == "WARN", name
        assert checks[name].fix, name
    assert checks["clocksource"].status == "OK" and checks["thp"].status == "OK"
    assert checks["load"].status == "OK"


def test_every_check_has_a_known_status_and_a_fix_when_not_ok():
    for board in ("bbb", "odroid-xu3", "vm"):
        for check in inventory(SYSFS / board).checks:
            assert check.status in ("OK", "WARN", "FAIL")
            assert check.detail
            assert check.status == "OK" or (check.fix and "\n" not in check.fix)


def test_aslr_off_warns_because_runs_should_sample_memory_layouts(tmp_path):
    root = copy_board("vm", tmp_path)
    (root / "proc/sys/kernel/randomize_va_space").write_text("0\n")
    check = checks_by_name(inventory(root))["aslr"]
    assert check.status == "WARN" and check.fix == "echo 2 > /proc/sys/kernel/randomize_va_space"


def test_thp_always_warns(tmp_path):
    root = copy_board("vm", tmp_path)
    (root / "sys/kernel/mm/transparent_hugepage/enabled").write_text("[always] madvise never\n")
    check = checks_by_name(inventory(root))["thp"]
    assert check.status == "WARN" and "madvise" in check.fix


def test_a_zone_near_its_passive_trip_warns_and_one_above_it_fails(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    temp = root / "sys/class/thermal/thermal_zone2/temp"
    temp.write_text("67000\n")
    check = checks_by_name(inventory(root))["thermal"]
    assert check.status == "WARN" and "cpu2-thermal 67.0 C" in check.detail
    temp.write_text("86000\n")
    assert checks_by_name(inventory(root))["thermal"].status == "FAIL"


def test_a_cpufreq_cooling_device_above_state_zero_means_throttled(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    (root / "sys/class/thermal/cooling_device2/cur_state").write_text("2\n")
    check = checks_by_name(inventory(root))["thermal"]
    assert check.status == "FAIL" and "thermal-cpufreq-1 at state 2 of 18" in check.detail


def test_a_capped_policy_and_boost_warn(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    (root / "sys/devices/system/cpu/cpufreq/policy4/scaling_max_freq").write_text("1800000\n")
    (root / "sys/devices/system/cpu/cpufreq/boost").write_text("1\n")
    checks = checks_by_name(inventory(root))
    assert checks["frequency_limits"].status == "WARN"
    assert (
        checks["frequency_limits"].fix
        == "echo 2000000 > /sys/devices/system/cpu/cpufreq/policy4/scaling_max_freq"
    )
    assert checks["boost"].status == "WARN"


def test_a_busy_board_warns(tmp_path):
    root = copy_board("odroid-xu3", tmp_path)
    (root / "proc/loadavg").write_text("3.50 2.00 1.00 4/150 999\n")
    assert checks_by_name(inventory(root))["load"].status == "WARN"


def test_checks_are_a_pure_function_of_the_inventory():
    info = inventory(SYSFS / "odroid-xu3")
    assert run_checks(info) == info.checks


def test_a_root_that_is_not_a_board_tree_is_an_input_error(tmp_path):
    (tmp_path / "etc").mkdir()
    with pytest.raises(InputError, match=str(tmp_path)):
        inventory(tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        inventory(tmp_path / "nowhere")


def test_the_vm_fixture_reproduces_this_machine_when_run_on_it():
    fixture = inventory(SYSFS / "vm")
    live = inventory("/")
    same_machine = (
        live.cpus[0].model_name == fixture.cpus[0].model_name
        and len(live.cpus) == len(fixture.cpus)
        and live.kernel.release == fixture.kernel.release
    )
    if not same_machine:
        pytest.skip("not the kind of VM the vm fixture was copied from (CPU model, count or kernel differ)")
    assert live.clusters == fixture.clusters and live.caches == fixture.caches
    assert live.cpus == fixture.cpus and live.isolation == fixture.isolation
    assert live.kernel.release == fixture.kernel.release and live.kernel.version == fixture.kernel.version
    assert {k: c.supported for k, c in live.capabilities.items()} == {
        k: c.supported for k, c in fixture.capabilities.items()
    }
