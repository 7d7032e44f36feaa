"""Kernel identity, command line, preemption model and isolation."""

from __future__ import annotations

import shutil

import pytest

from boardlab.errors import InputError
from boardlab.platform import kernel

from helpers import SYSFS


def test_cmdline_parameters_stop_at_the_init_separator():
    params = kernel.parse_cmdline(
        'root=/dev/mmcblk1p1 ro quiet dyndbg="file x.c +p" isolcpus=2 -- --init-flag a=b'
    )
    assert params == {
        "root": "/dev/mmcblk1p1",
        "ro": None,
        "quiet": None,
        "dyndbg": "file x.c +p",
        "isolcpus": "2",
    }


@pytest.mark.parametrize(
    ("value", "flags", "cpus"),
    [
        ("1,3", (), (1, 3)),
        ("managed_irq,domain,2-3", ("managed_irq", "domain"), (2, 3)),
        ("nohz,7", ("nohz",), (7,)),
    ],
)
def test_isolcpus_flags_are_stripped_before_the_cpulist(value, flags, cpus):
    assert kernel.parse_isolcpus(value) == (flags, cpus)


@pytest.mark.parametrize(
    ("version", "model"),
    [
        ("#1 SMP PREEMPT_RT Fri Sep 1 10:00:00 UTC 2023", "PREEMPT_RT"),
        ("#1 SMP PREEMPT RT Tue Jan 1 2019", "PREEMPT_RT"),
        ("#1 SMP PREEMPT_DYNAMIC @0", "PREEMPT_DYNAMIC"),
        ("#1bullseye SMP PREEMPT Sat Sep 30 01:11:57 UTC 2023", "PREEMPT"),
        ("#1 SMP Debian 6.1.76-1", "none"),
    ],
)
def test_preemption_model_comes_from_uname_v(version, model):
    assert kernel.preempt_model(version) == model


def test_kernel_versions_of_the_fixture_boards():
    k = kernel.read_kernel(SYSFS / "bbb")
    assert k.release == "5.10.168-ti-r71" and k.preempt_model == "PREEMPT" and not k.preempt_rt
    assert k.version.startswith("#1bullseye SMP PREEMPT") and k.proc_version.startswith(
        "Linux version 5.10.168"
    )
    assert "root=/dev/mmcblk1p1" in k.cmdline and k.sched_rt_runtime_us == 950_000
    vm = kernel.read_kernel(SYSFS / "vm")
    assert vm.preempt_model == "PREEMPT_DYNAMIC" and vm.config_hz == 250


def test_sys_kernel_realtime_marks_a_preempt_rt_kernel(tmp_path):
    root = tmp_path / "bbb"
    shutil.copytree(SYSFS / "bbb", root)
    (root / "sys/kernel").mkdir(parents=True, exist_ok=True)
    (root / "sys/kernel/realtime").write_text("1\n")
    k = kernel.read_kernel(root)
    assert k.preempt_rt and k.preempt_model == "PREEMPT_RT" and "realtime" in k.preempt_rt_evidence


def test_isolation_from_command_line_and_sysfs():
    iso = kernel.read_isolation(SYSFS / "odroid-xu3")
    assert iso.isolcpus == (7,) and iso.isolcpus_flags == ("domain",)
    assert iso.isolated == (7,) and iso.nohz_full == (7,) and iso.rcu_nocbs == (7,)
    assert iso.isolated_cpus == (7,)
    vm = kernel.read_isolation(SYSFS / "vm")
    assert vm.isolated == () and vm.isolated_cpus == () and vm.nohz_full == ()


def test_a_malformed_isolcpus_is_an_input_error_naming_proc_cmdline(tmp_path):
    root = tmp_path / "vm"
    shutil.copytree(SYSFS / "vm", root)
    (root / "proc/cmdline").write_text("quiet isolcpus=domain,x-y\n")
    with pytest.raises(InputError, match="proc/cmdline.*isolcpus"):
        kernel.read_isolation(root)
