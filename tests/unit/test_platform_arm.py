"""The platform layer on real ARM /proc/cpuinfo files: armv7 (BeagleBone Black, AM335x), arm64 (Raspberry Pi
4, BCM2711) and an armhf userland on an ARMv8 big.LITTLE SoC (RK3399). Their provenance is in
tests/fixtures/sysfs/README.md."""

from __future__ import annotations

import json

import pytest

from boardlab.platform import cpu, inventory

from helpers import SYSFS, run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit


def test_beaglebone_black_is_one_cortex_a8_with_neon_and_no_crypto_extensions():
    info = inventory(SYSFS / "bbb")
    assert info.model == "TI AM335x BeagleBone Black"
    assert info.machine == "armv7l"
    (cluster,) = info.clusters
    assert cluster.name == "Cortex-A8" and cluster.cpus == (0,)
    assert "NEON" in cluster.extensions and "VFPv3" in cluster.extensions
    assert not {"AES", "SHA2", "ASIMD"} & set(cluster.extensions)


def test_raspberry_pi_4_is_four_cortex_a72_with_asimd_and_no_crypto_extensions():
    # BCM2711 was built without the ARMv8 cryptography extension: its cpuinfo has no aes/sha1/sha2/pmull.
    info = inventory(SYSFS / "rpi4")
    assert info.model == "Raspberry Pi 4 Model B Rev 1.1"
    assert info.compatible == ("raspberrypi,4-model-b", "brcm,bcm2711")
    assert info.machine == "aarch64"
    (cluster,) = info.clusters
    assert cluster.name == "Cortex-A72" and cluster.cpus == (0, 1, 2, 3) and cluster.midr_part == "0xd08"
    assert cluster.extensions == ("ASIMD", "CRC32")


def test_rk3399_under_an_armhf_userland_is_two_clusters_with_crypto_extensions():
    info = inventory(SYSFS / "rk3399-armhf")
    assert info.machine == "armv8l"  # 32-bit processes on a 64-bit ARMv8 kernel
    little, big = info.clusters
    assert (little.name, little.cpus) == ("Cortex-A53", (0, 1, 2, 3))
    assert (big.name, big.cpus) == ("Cortex-A72", (4, 5))
    for cluster in (little, big):
        assert {"NEON", "AES", "PMULL", "SHA1", "SHA2", "CRC32"} <= set(cluster.extensions)


def test_x86_names_its_own_extensions():
    assert cpu.cpu_extensions(("fpu", "sse2", "aes", "avx2", "sha_ni")) == (
        "AES-NI",
        "SSE2",
        "AVX2",
        "SHA-NI",
    )
    assert cpu.cpu_extensions(()) == ()


@pytest.mark.parametrize(
    ("tree", "model", "machine", "cores", "extension"),
    [
        ("bbb", "TI AM335x BeagleBone Black", "armv7l", ["Cortex-A8"], "NEON"),
        ("rpi4", "Raspberry Pi 4 Model B Rev 1.1", "aarch64", ["Cortex-A72"], "ASIMD"),
        ("rk3399-armhf", None, "armv8l", ["Cortex-A53", "Cortex-A72"], "AES"),
        ("qemu-virt-arm64", "linux,dummy-virt", "aarch64", ["Cortex-A72"], "AES"),
        ("qemu-virt-armhf", "linux,dummy-virt", "armv7l", ["Cortex-A15"], "VFPv4"),
    ],
)
def test_boardlab_info_root_reads_the_board_tree(tree, model, machine, cores, extension):
    proc = run_cli("info", "--root", str(SYSFS / tree), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["model"] == model and doc["machine"] == machine
    assert [c["name"] for c in doc["clusters"]] == cores
    assert all(extension in c["extensions"] for c in doc["clusters"])
    text = run_cli("info", "--root", str(SYSFS / tree)).stdout
    assert "cluster 0 extensions: " in text and extension in text
