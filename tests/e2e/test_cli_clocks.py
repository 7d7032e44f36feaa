"""`boardlab info --clocks`: each CPU's clock measured by boardlab-kern's clock.chain against the one the
kernel claims, a gap over 5% flagged; on a board's copied tree the claimed operating points with "not measured
here"; and `info` says whether the kernel looks like a vendor BSP or mainline, and why."""

from __future__ import annotations

import json
import sqlite3

import pytest

from boardlab.model.board import Kernel
from boardlab.platform.kernel import kernel_flavor

from helpers import SYSFS, run_cli


def test_on_a_fixture_tree_the_claimed_operating_points_are_listed_not_measured():
    p = run_cli("info", "--clocks", "--root", str(SYSFS / "odroid-xu3"))
    assert p.returncode == 0, p.stderr
    assert (
        "policy4 operating points (MHz): 200, 300, 400" in p.stdout and "2000 (not measured here)" in p.stdout
    )
    assert p.stdout.count("not measured here  -") == 8  # each of its 8 CPUs
    doc = json.loads(run_cli("info", "--clocks", "--json", "--root", str(SYSFS / "odroid-xu3")).stdout)
    clocks = doc["clocks"]
    assert clocks["measured"] is False and "another board's tree" in clocks["reason"]
    assert clocks["opps_khz"]["policy0"][0] == 200000 and len(clocks["opps_khz"]["policy4"]) == 19
    assert all(
        c["measured_mhz"] is None and c["claimed_source"] == "scaling_cur_freq" for c in clocks["cpus"]
    )


@pytest.mark.parametrize(
    ("board", "flavor", "said"),
    [
        ("bbb", "vendor BSP", "tag 'ti'"),
        ("odroid-xu3", "vendor BSP", "tag 'odroidxu4'"),
        ("vm", "unknown", "a custom build"),
    ],
)
def test_info_says_whether_the_kernel_looks_like_a_vendor_bsp_and_why(board, flavor, said):
    doc = json.loads(run_cli("info", "--json", "--root", str(SYSFS / board)).stdout)
    assert doc["kernel_flavor"]["flavor"] == flavor and said in " ".join(doc["kernel_flavor"]["evidence"])
    assert f"looks like   {flavor}" in run_cli("info", "--root", str(SYSFS / board)).stdout


@pytest.mark.parametrize(
    ("release", "version", "flavor"),
    [
        ("6.1.0-18-arm64", "#1 SMP Debian 6.1.76-1 (2024-02-01)", "distribution (mainline)"),
        ("6.8.0", "#1 SMP PREEMPT", "mainline"),
        ("6.6.31+rpt-rpi-v8", "#1 SMP PREEMPT Debian 1:6.6.31-1+rpt1", "vendor BSP"),
        ("4.4.194-rk3399", "#1 SMP", "vendor BSP"),
        ("4.9.253-tegra", "#1 SMP PREEMPT", "vendor BSP"),
        ("6.18.44-fc-v782", "#1 SMP PREEMPT_DYNAMIC", "unknown"),  # -v782: no Raspberry Pi v7 kernel
    ],
)
def test_the_flavor_of_known_release_strings(release, version, flavor):
    kernel = Kernel(release, version, None, None, None, False, None, None, None, None)
    assert kernel_flavor(kernel, (), {})[0] == flavor


def test_on_this_machine_each_cpu_is_measured_within_5_percent_of_its_claimed_clock():
    p = run_cli("info", "--clocks", "--json")
    assert p.returncode == 0, p.stderr
    clocks = json.loads(p.stdout)["clocks"]
    assert clocks["measured"] is True
    cpus = clocks["cpus"]
    assert cpus and all(c["measured_mhz"] and c["measured_mhz"] > 0 for c in cpus)
    claimed = [c for c in cpus if c["claimed_mhz"]]
    if not claimed:
        pytest.skip("no clock claimed here (no cpufreq, no MHz in /proc/cpuinfo): nothing to compare")
    # the clock varies where iterations disagree (a governor, a shared core) or the host runs above the
    # nominal rate a virtual machine's /proc/cpuinfo gives (boost): that is measured, and the test skips
    varies = [c for c in claimed if c["measured_mhz"] > 1.1 * c["median_mhz"] or c["gap"] > 0.05]
    if varies:
        c = varies[0]
        pytest.skip(
            f"this host's clock varies: CPU {c['cpu']} measured {c['measured_mhz']:.0f} MHz (median of its "
            f"iterations {c['median_mhz']:.0f}) against {c['claimed_mhz']:.0f} MHz claimed by "
            f"{c['claimed_source']} ({c['gap']:+.1%}): a boosting or shared host, not a fixed clock"
        )
    for c in claimed:
        assert abs(c["gap"]) <= 0.05, c
        assert not c["flagged"]


PLAN = """
name = "clocked"
[runs]
repetitions = 2
iterations = 2
warmup_max_ms = 0
measure_clock = true
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
"""


def test_a_campaign_that_asks_records_each_runs_measured_clock_beside_its_claimed_one(tmp_path):
    plan, db = tmp_path / "p.toml", tmp_path / "c.db"
    plan.write_text(PLAN)
    p = run_cli("run", str(plan), "--db", str(db), "--quiet")
    assert p.returncode == 0, p.stderr
    with sqlite3.connect(db) as conn:
        states = [json.loads(s) for (s,) in conn.execute("SELECT condition_state_json FROM runs")]
    assert len(states) == 2
    for state in states:
        clock = state["clock"]
        assert clock["measured_mhz"] > 0 and clock["cpu"] == state["worker_cpus"][0]
        claimed = {p: s["cur_khz"] for p, s in state["cpufreq_before"].items()}
        assert clock["scaling_cur_khz"] in (None, *claimed.values())  # None: this machine has no cpufreq
