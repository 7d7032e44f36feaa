"""CPU identity, topology and clusters, read from fixture trees copied from real boards."""

from __future__ import annotations

from boardlab.platform import cpu, cpufreq
from boardlab.platform.cpu import midr_core_name, parse_cpuinfo

from helpers import SYSFS


def test_midr_parts_decode_to_core_names():
    assert midr_core_name(0x41, 0xC07) == "Cortex-A7"
    assert midr_core_name(0x41, 0xC08) == "Cortex-A8"
    assert midr_core_name(0x41, 0xC09) == "Cortex-A9"
    assert midr_core_name(0x41, 0xC0F) == "Cortex-A15"
    assert midr_core_name(0x41, 0xD03) == "Cortex-A53"
    assert midr_core_name(0x41, 0xD05) == "Cortex-A55"
    assert midr_core_name(0x41, 0xD07) == "Cortex-A57"
    assert midr_core_name(0x41, 0xD08) == "Cortex-A72"
    assert midr_core_name(0x41, 0xD0B) == "Cortex-A76"
    assert midr_core_name(0x41, 0xFFF) is None
    assert midr_core_name(None, 0xC07) is None


def test_old_arm_cpuinfo_puts_shared_lines_outside_processor_blocks():
    text = (
        "Processor\t: ARMv7 Processor rev 10 (v7l)\nprocessor\t: 0\nBogoMIPS\t: 790.52\n\n"
        "processor\t: 1\nBogoMIPS\t: 790.52\n\n"
        "Features\t: swp half thumb\nCPU implementer\t: 0x41\nCPU part\t: 0xc09\n\n"
        "Hardware\t: Freescale i.MX 6Quad\n"
    )
    processors, common = parse_cpuinfo(text)
    assert set(processors) == {0, 1}
    assert common["CPU part"] == "0xc09" and common["Hardware"] == "Freescale i.MX 6Quad"
    assert common["Processor"].startswith("ARMv7")


def test_odroid_xu3_has_four_cortex_a7_and_four_cortex_a15():
    cores = cpu.read_cores(SYSFS / "odroid-xu3")
    assert [c.core_name for c in cores] == ["Cortex-A7"] * 4 + ["Cortex-A15"] * 4
    assert [c.midr_part for c in cores] == ["0xc07"] * 4 + ["0xc0f"] * 4
    assert [c.capacity for c in cores] == [539] * 4 + [1024] * 4
    assert all(c.online for c in cores)
    assert cores[5].core_id == 1 and cores[5].package_id == 0 and cores[1].package_id == 1


def test_clusters_follow_cpufreq_related_cpus():
    root = SYSFS / "odroid-xu3"
    clusters = cpu.group_clusters(cpu.read_cores(root), cpufreq.read_policies(root))
    little, big = clusters
    assert little.cpus == (0, 1, 2, 3) and big.cpus == (4, 5, 6, 7)
    assert (little.name, big.name) == ("Cortex-A7", "Cortex-A15")
    assert (little.capacity, big.capacity) == (539, 1024)
    assert little.frequencies_khz == tuple(range(200_000, 1_400_001, 100_000))
    assert big.frequencies_khz == tuple(range(200_000, 2_000_001, 100_000))
    assert (little.policy, big.policy) == ("policy0", "policy4")
    assert big.transition_latency_ns == 140_000


def test_without_cpufreq_a_cluster_is_one_core_type_with_empty_frequency_lists():
    root = SYSFS / "vm"
    (cluster,) = cpu.group_clusters(cpu.read_cores(root), cpufreq.read_policies(root))
    assert cluster.cpus == (0, 1)
    assert cluster.policy is None and cluster.frequencies_khz == () and cluster.governors == ()
    assert cluster.name == "Intel(R) Xeon(R) Processor"


def test_beaglebone_black_single_cortex_a8_without_mpidr_package():
    (core,) = cpu.read_cores(SYSFS / "bbb")
    assert core.core_name == "Cortex-A8" and core.midr_revision == 2 and core.midr_variant == "0x3"
    assert core.package_id == -1  # a uniprocessor MPIDR: arch/arm/kernel/topology.c leaves -1
    assert cpu.machine(SYSFS / "bbb") == "armv7l"


def test_caches_are_listed_once_each_with_the_cpus_sharing_them():
    caches = cpu.read_caches(SYSFS / "vm")
    l3 = [c for c in caches if c.level == 3]
    assert len(l3) == 1 and l3[0].cpus == (0, 1) and l3[0].size_kib == 107520
    l1d = [c for c in caches if c.level == 1 and c.type == "Data"]
    assert [c.cpus for c in l1d] == [(0,), (1,)] and l1d[0].size_kib == 48 and l1d[0].line_size_b == 64
    assert cpu.read_caches(SYSFS / "bbb") == ()  # 32-bit ARM kernels publish no cacheinfo


def test_online_cpus_fall_back_to_per_cpu_files(tmp_path):
    for n, online in ((0, None), (1, "1"), (2, "0")):
        d = tmp_path / f"sys/devices/system/cpu/cpu{n}"
        d.mkdir(parents=True)
        if online is not None:
            (d / "online").write_text(online + "\n")
    assert cpu.online_cpus(tmp_path) == (0, 1)
