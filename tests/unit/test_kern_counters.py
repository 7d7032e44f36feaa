"""boardlab-kern --counters: perf_event_open counters around exactly the measured iterations."""

from __future__ import annotations

import platform

from helpers import kern_json, run_kern

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
