"""PCIe links through the platform layer (`platform.pcie`, `inventory().pcie_links`, `boardlab info`), on the
RK3399 fixture (a Gen3 x4 NVMe drive behind the RK3399's root port, trained at 2.5 GT/s as its device tree's
max-link-speed = <1> holds it) and on trees built here for the cases a board may show."""

from __future__ import annotations

import json

import pytest

from boardlab.platform import inventory
from boardlab.platform.pcie import read_links

from helpers import SYSFS, copy_board, run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit


def test_the_rk3399_nvme_link_is_read_as_trained_and_as_allowed():
    root, nvme = read_links(SYSFS / "rk3399-armhf")
    assert root.address == "0000:00:00.0" and root.driver == "pcieport" and root.class_code == "0x060400"
    assert (nvme.address, nvme.vendor, nvme.device, nvme.class_code, nvme.driver) == (
        "0000:01:00.0", "0x144d", "0xa808", "0x010802", "nvme"
    )  # fmt: skip
    assert (nvme.current_speed_gts, nvme.current_width, nvme.max_speed_gts, nvme.max_width) == (
        2.5,
        4,
        8.0,
        4,
    )
    assert nvme.generation == 1 and nvme.degraded
    assert nvme.data_bit_s == pytest.approx(2.5e9 * 0.8 * 4)  # 8b/10b: 8 Gbit/s per direction
    assert inventory(SYSFS / "rk3399-armhf").pcie_links == (root, nvme)


def test_gen3_encoding_a_link_that_is_down_and_a_device_without_a_link(tmp_path):
    root = copy_board("rk3399-armhf", tmp_path)
    d = root / "sys/bus/pci/devices/0000:01:00.0"
    (d / "current_link_speed").write_text("8.0 GT/s PCIe\n")
    (d / "current_link_width").write_text("2\n")
    plain = root / "sys/bus/pci/devices/0000:02:00.0"  # conventional PCI: no link files
    plain.mkdir()
    (plain / "vendor").write_text("0x8086\n")
    (root / "sys/bus/pci/devices/0000:00:00.0/current_link_speed").write_text("Unknown\n")
    rc, nvme = read_links(root)
    assert nvme.generation == 3 and nvme.data_bit_s == pytest.approx(8e9 * 128 / 130 * 2)
    assert nvme.degraded  # x2 of x4
    assert rc.current_speed_gts is None and rc.generation is None and rc.data_bit_s is None


def test_a_board_without_pci_has_no_links():
    assert read_links(SYSFS / "bbb") == ()
    assert inventory(SYSFS / "bbb").pcie_links == ()


def test_boardlab_info_lists_the_links():
    p = run_cli("info", "--root", str(SYSFS / "rk3399-armhf"))
    assert p.returncode == 0, p.stderr
    row = next(line for line in p.stdout.splitlines() if line.strip().startswith("0000:01:00.0"))
    assert "nvme" in row and "2.5 GT/s x4 (gen 1)" in row and "8 GT/s x4 (trained below)" in row
    assert "8.0 Gbit/s" in row
    p = run_cli("info", "--root", str(SYSFS / "rk3399-armhf"), "--json")
    links = json.loads(p.stdout)["pcie_links"]
    assert [x["address"] for x in links] == ["0000:00:00.0", "0000:01:00.0"]
    assert links[1]["max_speed_gts"] == 8.0 and links[1]["current_width"] == 4
