"""`boardlab info` as a user runs it: on fixture trees of real boards, on this machine, and on bad input."""

from __future__ import annotations

import json
import re
import shutil

from helpers import SYSFS, run_cli


def info_json(*args: str) -> dict:
    proc = run_cli("info", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_odroid_xu3_has_a_little_and_a_big_cluster():
    doc = info_json("--root", str(SYSFS / "odroid-xu3"))
    assert doc["schema"] == 1 and doc["boardlab_version"]
    little, big = doc["clusters"]
    assert little["cpus"] == [0, 1, 2, 3] and big["cpus"] == [4, 5, 6, 7]
    assert little["frequencies_khz"] == list(range(200_000, 1_400_001, 100_000))
    assert big["frequencies_khz"] == list(range(200_000, 2_000_001, 100_000))
    assert (
        little["governors"]
        == big["governors"]
        == [
            "conservative",
            "ondemand",
            "userspace",
            "powersave",
            "performance",
            "schedutil",
        ]
    )
    assert little["governor"] == big["governor"] == "ondemand"
    assert (little["capacity"], big["capacity"]) == (539, 1024)
    assert (little["name"], big["name"]) == ("Cortex-A7", "Cortex-A15")
    assert (little["midr_part"], big["midr_part"]) == ("0xc07", "0xc0f")


def test_beaglebone_black_has_one_cluster_with_four_frequencies():
    doc = info_json("--root", str(SYSFS / "bbb"))
    (cluster,) = doc["clusters"]
    assert cluster["cpus"] == [0] and cluster["name"] == "Cortex-A8"
    assert cluster["frequencies_khz"] == [300_000, 600_000, 800_000, 1_000_000]
    assert doc["model"] == "TI AM335x BeagleBone Black"


def test_json_lists_capabilities_and_checks():
    doc = info_json("--root", str(SYSFS / "bbb"))
    for cap in doc["capabilities"].values():
        assert set(cap) == {"supported", "reason"}
    assert doc["checks"] and all(set(c) == {"name", "status", "detail", "fix"} for c in doc["checks"])


def test_this_vm_has_no_cpufreq_thermal_energy_or_perf_and_says_why():
    doc = info_json()
    caps = doc["capabilities"]
    for name in ("cpufreq", "thermal", "energy", "perf"):
        assert caps[name]["supported"] is False, name
        assert caps[name]["reason"], name
    assert {"rt_priority", "isolation"} <= set(caps)


def test_the_table_has_every_section_and_exit_0_despite_warnings():
    proc = run_cli("info", "--root", str(SYSFS / "odroid-xu3"))
    assert proc.returncode == 0, proc.stderr
    for section in (
        "Identity",
        "Clusters",
        "Memory",
        "Kernel and isolation",
        "Thermal",
        "Power",
        "Capabilities",
        "Checks",
    ):
        assert f"\n{section}\n" in proc.stdout, section
    assert "Cortex-A15 (0xc0f)" in proc.stdout and "A15 cluster (VDD_ARM)" in proc.stdout
    assert "WARN  governor" in proc.stdout and "fix: echo performance" in proc.stdout


def test_the_table_on_this_machine():
    proc = run_cli("info")
    assert proc.returncode == 0, proc.stderr
    assert "\nCapabilities\n" in proc.stdout
    assert re.search(r"^  cpufreq +no: .+", proc.stdout, re.MULTILINE)


def test_a_missing_root_exits_2_naming_it(tmp_path):
    missing = tmp_path / "no-such-board"
    proc = run_cli("info", "--root", str(missing))
    assert proc.returncode == 2
    assert str(missing) in proc.stderr and proc.stdout == ""


def test_a_tree_that_is_not_a_board_exits_2(tmp_path):
    (tmp_path / "etc").mkdir()
    proc = run_cli("info", "--root", str(tmp_path))
    assert proc.returncode == 2 and "not a board tree" in proc.stderr and str(tmp_path) in proc.stderr


def test_a_malformed_frequency_file_exits_2_naming_the_file(tmp_path):
    root = tmp_path / "bbb"
    shutil.copytree(SYSFS / "bbb", root)
    bad = root / "sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq"
    bad.write_text("one GHz\n")
    proc = run_cli("info", "--json", "--root", str(root))
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "expected a frequency in kHz" in proc.stderr
