"""boardlab-kern --counters: perf_event_open counters around exactly the measured iterations."""

from __future__ import annotations

import platform

import pytest

from helpers import kern_json, run_kern, under_qemu_user

pytestmark = pytest.mark.skipif(
    under_qemu_user(), reason="qemu-user does not emulate perf_event_open: counters are tested natively"
)

FAST = ("--iterations", "5", "--warmup-max-iterations", "30")
# PERF_TYPE_SOFTWARE (1) / PERF_COUNT_SW_TASK_CLOCK (1): a counter every Linux kernel has, VM or not, so
# the plumbing (open, enable around the measured loop, read with times) is checked everywhere.
TASK_CLOCK = "task_clock_ns=1:1"


def test_software_counter_covers_the_measured_iterations_only(kern):
    rc, res = kern_json(kern, "noop", *FAST, "--counters", TASK_CLOCK)
    assert rc == 0 and res["ok"]
    c = res["counters"]["task_clock_ns"]
    measured_ns = sum(res["iterations_ns"])
    # CPU time of this task while enabled: at most the measured wall time (plus the loop's bookkeeping),
    # and nowhere near the warm-up's 30 iterations, which would add about 6x the measured time.
    assert 0 < c["count"] <= measured_ns * 1.2 + 2_000_000
    assert warm_excluded(res, c["count"])
    assert c["time_enabled_ns"] >= c["time_running_ns"] > 0


def warm_excluded(res: dict, count: int) -> bool:
    warm_ns = res["warmup"]["duration_ns"]
    return count < sum(res["iterations_ns"]) + warm_ns / 2


def test_each_counter_is_counted_or_unsupported_with_an_errno_reason(kern):
    rc, res = kern_json(
        kern, "noop", *FAST, "--counters", "instructions,cycles,bus_access,raw:0x11,cci=9999:0x69@0"
    )
    assert rc == 0  # a counter that cannot open never fails the run
    counters = res["counters"]
    assert list(counters) == ["instructions", "cycles", "bus_access", "raw:0x11", "cci"]
    for name, c in counters.items():
        if "unsupported" in c:
            assert c["unsupported"], name
        else:
            assert c["count"] >= 0 and c["time_enabled_ns"] >= c["time_running_ns"]
    # No PMU has type 9999: the kernel says so and the reason carries the errno name.
    assert counters["cci"]["unsupported"].split()[0] in ("ENOENT", "EINVAL", "ENODEV", "EACCES", "EPERM")
    if not platform.machine().startswith(("arm", "aarch64")):
        assert "not ARM" in counters["bus_access"]["unsupported"]


def test_text_output_lists_counters(kern):
    p = run_kern(kern, "noop", *FAST, "--counters", TASK_CLOCK)
    assert p.returncode == 0
    assert "counter task_clock_ns" in p.stdout


def test_bad_counter_lists_are_usage_errors_naming_the_item(kern):
    for bad, word in (
        ("foo", "'foo'"),
        ("cycles,cycles", "twice"),
        ("raw:zz", "raw:"),
        ("x=1", "x=1"),
        ("", "empty"),
    ):
        p = run_kern(kern, "noop", "--counters", bad)
        assert p.returncode == 2, bad
        assert word in p.stderr and "--counters" in p.stderr, p.stderr


# ---- the platform layer's request and the derived metrics a plan stores per run ----------------------------


def test_cci_events_are_built_from_the_pmu_type_in_sysfs(tmp_path):
    from boardlab.governor import opp, sim
    from boardlab.platform import perf

    from helpers import SYSFS

    sim.SimBoard(opp.EXYNOS5422, tmp_path / "sim")  # its event_source lists CCI_400_r1 with type 12
    items, unsupported = perf.counter_request(tmp_path / "sim", ("memory_access", "cci_congestion"))
    assert unsupported == {}
    assert items[:2] == ["bus_access", "cpu_cycles"]
    # source << 5 | event: S3 = 3 -> 0x60 (si_rrq_hs_any 0x00), 0x69 (si_rrq_stall_tt_full 0x09)
    assert (
        "cci_rrq_s3=12:96@0" in items
        and "cci_stall_s3=12:105@0" in items
        and "cci_stall_s4=12:137@0" in items
    )
    items, unsupported = perf.counter_request(SYSFS / "odroid-xu3", ("cci_congestion",))
    assert items == [] and "CCI-400" in unsupported["cci_congestion"]


def test_derived_counters_and_their_reasons():
    from boardlab.platform import perf

    counted = {
        "bus_access": {"count": 300, "time_enabled_ns": 1, "time_running_ns": 1},
        "cpu_cycles": {"count": 60000, "time_enabled_ns": 1, "time_running_ns": 1},
        "cci_rrq_s3": {"count": 100}, "cci_rrq_s4": {"count": 100},
        "cci_stall_s3": {"count": 500}, "cci_stall_s4": {"count": 100},
        "instructions": {"unsupported": "ENOENT (No such file or directory): no PMU"},
    }  # fmt: skip
    values, reasons = perf.derive_counters(("memory_access", "cci_congestion", "instructions"), counted)
    assert values == {"memory_access": 0.005, "cci_congestion": 3.0}
    assert reasons == {"instructions": "instructions: ENOENT (No such file or directory): no PMU"}


def test_a_plan_stores_counters_per_run_or_why_not(tmp_path):
    import sqlite3

    from helpers import run_cli

    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "counters"\n[runs]\nrepetitions = 2\niterations = 3\nwarmup_max_iterations = 5\n'
        'counters = ["instructions", "memory_access", "cci_congestion"]\n[gates]\nidle = false\n'
        '[[workloads]]\nname = "noop"\n'
    )
    db = tmp_path / "c.db"
    p = run_cli("run", str(plan), "--db", str(db))
    assert p.returncode == 0, p.stderr
    con = sqlite3.connect(db)
    for state_json, run_id in con.execute("select condition_state_json, id from runs"):
        import json

        reasons = json.loads(state_json).get("counters_unsupported", {})
        stored = {
            name for (name,) in con.execute("select metric from run_metrics where run_id = ?", (run_id,))
        }
        for name in ("instructions", "memory_access", "cci_congestion"):
            assert (name in stored) != (name in reasons), (
                name
            )  # counted and stored, or a reason: never neither
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[runs]\ncounters = ["flops"]\n[[workloads]]\nname = "noop"\n')
    p = run_cli("run", str(bad), "--db", str(tmp_path / "x.db"))
    assert p.returncode == 2 and "flops" in p.stderr and "counters" in p.stderr
