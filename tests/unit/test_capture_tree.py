"""tests/capture_tree.py, the tool that captured the qemu-virt fixture trees, run on this machine: the tree it
writes holds what the platform layer read here, and boardlab reads the same board from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_cli

pytestmark = pytest.mark.spawns  # starts the tool and the CLI: not in make test-unit

TOOL = Path(__file__).resolve().parents[1] / "capture_tree.py"


def test_a_captured_tree_reads_as_the_live_system_does(tmp_path):
    tree = tmp_path / "here"
    proc = subprocess.run([sys.executable, str(TOOL), str(tree)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tree / "proc/cpuinfo").is_file() and (tree / "proc/meminfo").is_file()
    assert (tree / "sys/devices/system/cpu/online").is_file()
    # the monitor's per-process files are those of the capturing process, reached through proc/self
    pid = os.readlink(tree / "proc/self")
    assert (tree / "proc" / pid / "stat").is_file()
    assert not [p for p in (tree / "proc").iterdir() if p.name.isdigit() and p.name != pid]
    # links stay links (sysfs's are relative, so they resolve inside the tree)
    for link in (p for p in tree.rglob("*") if p.is_symlink()):
        assert not os.path.isabs(os.readlink(link)), link
    live = json.loads(run_cli("info", "--json").stdout)
    captured = json.loads(run_cli("info", "--root", str(tree), "--json").stdout)
    for key in (
        "machine",
        "cpus",
        "clusters",
        "caches",
        "cpuidle",
        "isolation",
        "thermal_zones",
        "pcie_links",
    ):
        assert captured[key] == live[key], key
    assert (tmp_path / "here.capture.txt").exists()


def test_it_refuses_a_wrong_command_line():
    proc = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "capture_tree.py OUT" in proc.stderr
