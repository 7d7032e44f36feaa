"""The platform layer on what a real ARM kernel exposes: the qemu-virt-arm64 and qemu-virt-armhf trees,
captured inside Debian 12 booted under qemu-system (make test-arm-system; tests/fixtures/sysfs/README.md) with
Debian's own kernels. Unlike the written board trees, nothing here was typed: each file is what that kernel
gave."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from boardlab.model import BoardInfo
from boardlab.platform import inventory, irq, procacct, sampling
from boardlab.platform.checks import run_checks

from helpers import SYSFS

TREES = {
    # tree: (uname -m, core, MIDR part, kernel flavour in the release, pointer bits of the kernel)
    "qemu-virt-arm64": ("aarch64", "Cortex-A72", "0xd08", "arm64"),
    "qemu-virt-armhf": ("armv7l", "Cortex-A15", "0xc0f", "armmp-lpae"),
}
present = [t for t in TREES if (SYSFS / t).is_dir()]
pytestmark = pytest.mark.skipif(not present, reason="no qemu-virt fixture tree in tests/fixtures/sysfs")


@pytest.fixture(params=present)
def tree(request):
    return request.param, SYSFS / request.param


def test_the_core_is_named_by_its_midr_part_and_the_two_cpus_are_one_cluster(tree):
    name, root = tree
    machine, core, part, flavour = TREES[name]
    info = inventory(root)
    assert info.machine == machine
    assert info.model == "linux,dummy-virt" and info.compatible == ("linux,dummy-virt",)
    assert [(c.name, c.midr_part, c.cpus) for c in info.clusters] == [(core, part, (0, 1))]
    assert flavour in (info.kernel.release or "")
    assert info.virtualization.virtualized and info.virtualization.hypervisor == "QEMU"


def test_two_cpus_of_one_type_in_two_device_tree_clusters_are_two_clusters(tree, tmp_path):
    """Without cpufreq the clusters come from the core type and, on ARM, the kernel's topology cluster_id."""
    name, src = tree
    root = tmp_path / name
    shutil.copytree(src, root, symlinks=True)
    cpu1 = root / "sys/devices/system/cpu/cpu1/topology"
    cpu1.mkdir(parents=True, exist_ok=True)
    (cpu1 / "cluster_id").write_text("1\n")
    clusters = inventory(root).clusters
    assert [c.cpus for c in clusters] == [(0,), (1,)]
    assert {c.name for c in clusters} == {TREES[name][1]}


def test_no_cpufreq_thermal_or_energy_each_with_its_reason_and_the_checks_say_what_to_do(tree):
    _, root = tree
    info = inventory(root)
    caps = info.capabilities
    for cap in ("cpufreq", "thermal", "energy"):
        assert not caps[cap].supported and "typical of VMs" in caps[cap].reason
    checks = {c.name: c for c in run_checks(info)}
    assert checks["virtualization"].status == "WARN" and "QEMU" in checks["virtualization"].detail
    assert all(c.fix for c in checks.values() if c.status != "OK")
    assert BoardInfo.from_dict(json.loads(json.dumps(info.to_dict()))) == info


def test_the_pmu_is_listed_but_a_tree_is_not_probed(tree):
    name, root = tree
    perf = inventory(root).perf
    if name == "qemu-virt-arm64":  # -cpu cortex-a72,pmu=on: PMUv3 from the device tree
        assert perf.core_pmus == ("armv8_pmuv3",)
    else:  # QEMU's virt machine gives the 32-bit Cortex-A15 no PMU node: only the software PMUs
        assert perf.core_pmus == () and "software" in [p.name for p in perf.pmus]
        assert not inventory(root).capabilities["perf"].supported
    assert [(e.name, e.opened) for e in perf.events] == [("cycles", None), ("instructions", None)]


def test_the_monitor_reads_the_arm_kernel_s_proc(tree):
    """The system monitor and the per-process reader on the capturing process's own /proc entries (on armhf a
    32-bit kernel's counters)."""
    _, root = tree
    pid = int(os.readlink(root / "proc/self"))
    src = sampling.resolve_sources(root)
    jiffies = sampling.read_cpu_jiffies(src)
    assert set(jiffies) >= {0, 1} and all(busy >= 0 and total >= busy for busy, total in jiffies.values())
    assert sampling.read_status(src, pid)
    process = procacct.read_process(root, pid)
    assert process is not None and process.threads
    assert procacct.mem_total_bytes(root) and procacct.mem_total_bytes(root) < 2**31
    assert procacct.read_net_dev(root).get("lo") is not None


def test_the_interrupts_of_the_gic_are_read_with_their_affinities(tree):
    _, root = tree
    lines = irq.read_interrupts(root)
    assert lines and any(line.name.startswith("GIC") and "arch_timer" in line.name for line in lines)
    assert all(line.total == sum(line.counts.values()) for line in lines if line.counts)
    assert irq.default_affinity(root) == (0, 1)
