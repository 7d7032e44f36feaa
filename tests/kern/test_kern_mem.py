"""The mem family: pointer-chasing latency (mem.latency) and STREAM-style bandwidth (mem.bandwidth)."""

from __future__ import annotations

import os

import pytest

from helpers import assert_plausible, kern_build, kern_json, run_kern

FAST = ("--iterations", "2", "--warmup-max-iterations", "0")
PATTERNS = ("random", "seq", "stride", "random_global")
OPS = ("copy", "scale", "add", "triad", "memcpy", "memset")
# Arrays STREAM counts as moved per element: copy/scale/memcpy read one and write one, add/triad read two.
ARRAYS_COUNTED = {"copy": 2, "scale": 2, "add": 3, "triad": 3, "memcpy": 2, "memset": 1}
MIB = 1024 * 1024
# Non-temporal stores exist where the binary was built for x86 or AArch64 (not this interpreter's machine:
# the binary may be a cross-built one run under qemu).
NT_ARCHES = ("x86_64", "x86", "aarch64")


def has_nontemporal(kern) -> bool:
    return kern_build(kern)["arch"] in NT_ARCHES


def pointer_bytes(kern) -> int:
    return kern_build(kern)["pointer_bits"] // 8


def latency(kern, *params: str, extra: tuple[str, ...] = FAST) -> tuple[int, dict]:
    args = [a for p in params for a in ("--param", p)]
    return kern_json(kern, "mem.latency", *args, *extra)


def bandwidth(kern, *params: str, extra: tuple[str, ...] = FAST) -> tuple[int, dict]:
    args = [a for p in params for a in ("--param", p)]
    return kern_json(kern, "mem.bandwidth", *args, *extra)


# ---- mem.latency ----


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_pattern_chases_a_verified_chain(kern, pattern):
    rc, res = latency(kern, f"pattern={pattern}", "size_bytes=32k")
    assert rc == 0, res.get("errors")
    assert res["ok"] is True and res["verified"] is True
    metric = res["metrics"]["ns_per_access"]
    assert metric["unit"] == "ns" and metric["higher_is_better"] is False
    # One dependent load costs more than a tenth of a nanosecond and less than ten microseconds anywhere.
    assert_plausible(metric["values"], 0.1, 10_000)
    info = res["info"]
    assert info["accesses_per_rep"] == 4096
    assert info["llc_bytes"] >= 0 and info["llc_source"]
    assert res["checksum"]


@pytest.mark.parametrize(
    ("params", "slots", "spacing"),
    [
        (("pattern=random", "size_bytes=12345"), 12345 // 64, 64),  # partial last page, whole lines only
        (("pattern=random", "size_bytes=1M", "line_bytes=256", "page_bytes=8192"), MIB // 256, 256),
        (("pattern=seq", "size_bytes=12345"), None, None),  # one pointer per slot: 8 or 4 bytes
        (("pattern=stride", "size_bytes=64k", "stride_bytes=192"), 65536 // 192, 192),
        (("pattern=stride", "size_bytes=4k", "stride_bytes=4096"), 1, 4096),  # a chain of one slot
        (("pattern=random_global", "size_bytes=1M", "line_bytes=128"), MIB // 128, 128),
    ],
)
def test_the_array_is_cut_into_slots_by_the_pattern(kern, params, slots, spacing):
    if spacing is None:
        spacing = pointer_bytes(kern)
        slots = 12345 // spacing
    rc, res = latency(kern, *params)
    assert rc == 0, res.get("errors")
    assert res["info"]["slots"] == slots
    assert res["info"]["slot_spacing_bytes"] == spacing
    assert res["info"]["array_bytes"] == slots * spacing


def test_random_pattern_reports_its_page_shape(kern):
    rc, res = latency(kern, "pattern=random", "size_bytes=64k", "line_bytes=64", "page_bytes=4096")
    assert res["info"]["slots_per_page"] == 64


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_broken_chain_is_an_error_not_a_time(kern, pattern):
    # --corrupt makes the first slot point to itself: no longer one cycle through every slot.
    rc, res = latency(kern, f"pattern={pattern}", "size_bytes=32k", extra=(*FAST, "--corrupt"))
    assert rc == 1
    assert res["ok"] is False and res["verified"] is False and res["metrics"] == {}
    assert any("cycle" in e or "twice" in e for e in res["errors"]), res["errors"]


def test_a_one_slot_chain_that_leaves_its_slot_is_caught(kern):
    rc, res = latency(
        kern, "pattern=stride", "size_bytes=4k", "stride_bytes=4096", extra=(*FAST, "--corrupt")
    )
    assert rc == 1 and res["verified"] is False
    assert any("close" in e or "leaves" in e for e in res["errors"]), res["errors"]


def test_the_chain_is_the_same_on_every_run_and_differs_by_pattern(kern):
    sums = {p: latency(kern, f"pattern={p}", "size_bytes=16k")[1]["checksum"] for p in PATTERNS}
    assert latency(kern, "pattern=random", "size_bytes=16k")[1]["checksum"] == sums["random"]
    assert len(set(sums.values())) == len(PATTERNS)


def test_latency_grows_from_an_l1_working_set_to_a_64_mib_random_one(kern):
    # 4 KiB fits any L1; 64 MiB with a random order inside pages is at least last-level cache, usually DRAM.
    small = latency(kern, "pattern=random", "size_bytes=4k", extra=("--iterations", "3"))[1]
    large = latency(
        kern, "pattern=random", "size_bytes=64M", extra=("--iterations", "3", "--warmup-max-iterations", "3")
    )[1]
    assert small["ok"] and large["ok"]
    ratio = large["metrics"]["ns_per_access"]["median"] / small["metrics"]["ns_per_access"]["median"]
    assert ratio >= 3, f"64 MiB random is only {ratio:.2f}x slower than 4 KiB"


def test_cycles_per_access_needs_the_clock(kern):
    rc, res = latency(kern, "size_bytes=16k")
    assert "cycles_per_access" not in res["metrics"]
    assert "freq_khz" in res["info"]["cycles_per_access_unavailable"]

    rc, res = latency(kern, "size_bytes=16k", "freq_khz=2500000")
    assert rc == 0
    cycles = res["metrics"]["cycles_per_access"]
    assert cycles["unit"] == "cycles" and cycles["higher_is_better"] is False
    # At 2.5 GHz one nanosecond is 2.5 cycles, iteration by iteration.
    for ns, cyc in zip(res["metrics"]["ns_per_access"]["values"], cycles["values"], strict=True):
        assert cyc == pytest.approx(ns * 2.5, rel=1e-9)


def test_ns_per_access_follows_from_iteration_time(kern):
    rc, res = latency(kern, "size_bytes=16k")
    accesses = res["reps_per_iteration"] * res["info"]["accesses_per_rep"]
    for ns, value in zip(res["iterations_ns"], res["metrics"]["ns_per_access"]["values"], strict=True):
        assert value == pytest.approx(ns / accesses, rel=1e-9)


@pytest.mark.parametrize(
    "param",
    [
        "size_bytes=4095",
        "size_bytes=8G",
        "pattern=zigzag",
        "line_bytes=4",
        "line_bytes=128k",
        "page_bytes=32",
        "stride_bytes=0",
        "freq_khz=-1",
    ],
)
def test_latency_out_of_range_parameters_are_usage_errors(kern, param):
    proc = run_kern(kern, "mem.latency", "--param", param, *FAST)
    assert proc.returncode == 2
    assert param.split("=")[0] in proc.stderr


@pytest.mark.parametrize(
    ("params", "named"),
    [
        (("line_bytes=12",), "line_bytes"),
        (("pattern=random", "page_bytes=100"), "page_bytes"),
        (("pattern=stride", "stride_bytes=10"), "stride_bytes"),  # a multiple of neither 4 nor 8
    ],
)
def test_latency_spacings_that_cannot_hold_aligned_pointers_fail_with_the_fix(kern, params, named):
    rc, res = latency(kern, *params)
    assert rc == 1 and res["ok"] is False
    assert any(named in e and "multiple" in e for e in res["errors"]), res["errors"]


# ---- mem.bandwidth ----


@pytest.mark.parametrize("op", OPS)
def test_every_op_runs_verified_and_counts_bytes_as_stream(kern, op):
    rc, res = bandwidth(kern, f"op={op}", "array_bytes=1M")
    assert rc == 0, res.get("errors")
    assert res["ok"] is True and res["verified"] is True
    metric = res["metrics"]["mb_s"]
    assert metric["unit"] == "MB/s" and metric["higher_is_better"] is True
    assert all(10 < v < 10_000_000 for v in metric["values"])
    info = res["info"]
    assert info["array_bytes"] == MIB and info["array_bytes_source"] == "array_bytes parameter"
    assert info["arrays_counted"] == ARRAYS_COUNTED[op]
    assert info["bytes_per_rep"] == ARRAYS_COUNTED[op] * MIB
    # MB = 1e6 bytes: the rate is bytes moved per iteration over the iteration's time.
    moved = info["bytes_per_rep"] * res["reps_per_iteration"]
    for ns, value in zip(res["iterations_ns"], metric["values"], strict=True):
        assert value == pytest.approx(moved / ns * 1e3, rel=1e-9)


@pytest.mark.parametrize("op", OPS)
def test_a_flipped_element_is_an_error_not_a_rate(kern, op):
    rc, res = bandwidth(kern, f"op={op}", "array_bytes=1M", extra=(*FAST, "--corrupt"))
    assert rc == 1
    assert res["ok"] is False and res["verified"] is False and res["metrics"] == {}
    assert any(op in e and ("element" in e or "word" in e) for e in res["errors"]), res["errors"]


def test_the_result_is_the_same_whatever_the_thread_count(kern):
    one = bandwidth(kern, "op=triad", "array_bytes=3M", "threads=1")[1]
    three = bandwidth(kern, "op=triad", "array_bytes=3M", "threads=3")[1]
    assert one["ok"] and three["ok"]
    assert one["checksum"] == three["checksum"]


@pytest.mark.parametrize("op", ("copy", "scale", "add", "triad"))
def test_nontemporal_stores_compute_the_same_arrays(kern, op):
    # An odd element count over three threads leaves a last slice with an odd tail for the ordinary store.
    params = (f"op={op}", "array_bytes=1000008", "threads=3")
    rc, normal = bandwidth(kern, *params)
    rc, streaming = bandwidth(kern, *params, "stores=nontemporal")
    if not has_nontemporal(kern):
        assert streaming["supported"] is False and "no non-temporal store" in streaming["reason"]
        return
    assert rc == 0 and streaming["verified"] is True, streaming.get("errors")
    assert streaming["info"]["stores"] == "nontemporal" and normal["info"]["stores"] == "normal"
    assert streaming["checksum"] == normal["checksum"]
    assert streaming["info"]["bytes_per_rep"] == normal["info"]["bytes_per_rep"]


def test_a_flipped_element_is_caught_after_nontemporal_stores_too(kern):
    if not has_nontemporal(kern):
        pytest.skip(f"no non-temporal stores on {kern_build(kern)['arch']} (32-bit ARM has none)")
    rc, res = bandwidth(kern, "op=triad", "array_bytes=1M", "stores=nontemporal", extra=(*FAST, "--corrupt"))
    assert rc == 1 and res["verified"] is False


@pytest.mark.parametrize("op", ("memcpy", "memset"))
def test_nontemporal_stores_are_refused_where_libc_chooses_the_stores(kern, op):
    rc, res = bandwidth(kern, f"op={op}", "array_bytes=1M", "stores=nontemporal")
    assert rc == 1
    assert any("stores=normal" in e for e in res["errors"]), res["errors"]


def test_threads_are_pinned_round_robin_to_the_allowed_cpus(kern):
    allowed = sorted(os.sched_getaffinity(0))
    for threads in (2, 3):
        rc, res = bandwidth(kern, "op=copy", "array_bytes=4M", f"threads={threads}")
        assert rc == 0, res.get("errors")
        assert res["info"]["threads"] == threads
        cpus = [int(c) for c in res["info"]["cpus"].split(",")]
        assert cpus == [allowed[t % len(allowed)] for t in range(threads)]


def test_two_threads_use_two_cpus_when_two_are_allowed(kern):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("this process may use only one CPU")
    rc, res = bandwidth(kern, "op=triad", "array_bytes=4M", "threads=2")
    cpus = res["info"]["cpus"].split(",")
    assert len(cpus) == 2 and len(set(cpus)) == 2


def test_more_threads_than_elements_still_verifies(kern):
    rc, res = bandwidth(kern, "op=add", "array_bytes=64", "threads=4")
    assert rc == 0 and res["verified"] is True


def test_auto_size_is_four_times_the_last_level_cache_and_at_least_32_mib_within_what_fits(kern):
    rc, res = bandwidth(
        kern, "op=memset", "array_bytes=0", extra=("--iterations", "1", "--warmup-max-iterations", "0")
    )
    assert rc == 0, res.get("errors")
    info = res["info"]
    wanted = max(4 * info["llc_bytes"], 32 * MIB)
    assert info["array_bytes"] == min(wanted, info["array_bytes_limit"])
    assert info["array_bytes_source"].startswith("auto")
    if info["llc_bytes"]:
        assert str(int(info["llc_bytes"])) in info["array_bytes_source"]
    assert ("clamped" in info["array_bytes_source"]) == (wanted > info["array_bytes_limit"])


def test_the_auto_size_of_three_arrays_fits_a_quarter_of_the_address_space_and_half_the_available_memory(
    kern,
):
    """triad maps three arrays: on a 32-bit build (armhf) 4x a large host LLC would not fit, and on a board
    with little free memory it would swap; the automatic size is clamped and says why."""
    rc, res = bandwidth(
        kern, "op=triad", "array_bytes=0", extra=("--iterations", "1", "--warmup-max-iterations", "0")
    )
    assert rc == 0, res.get("errors")
    info = res["info"]
    space = (2 ** (8 * pointer_bytes(kern)) - 1) // 4
    assert 3 * info["array_bytes"] <= space
    if info["mem_available_bytes"]:
        assert 3 * info["array_bytes"] <= info["mem_available_bytes"] // 2 or info["array_bytes"] == MIB
    if "clamped" in info["array_bytes_source"]:
        assert str(int(info["array_bytes_limit"])) in info["array_bytes_source"]


def test_an_explicit_array_size_is_not_clamped(kern):
    rc, res = bandwidth(kern, "op=memset", "array_bytes=4M", extra=("--iterations", "1"))
    assert rc == 0 and res["info"]["array_bytes"] == 4 * MIB
    assert res["info"]["array_bytes_source"] == "array_bytes parameter"


@pytest.mark.parametrize(
    "param", ["op=fma", "threads=0", "threads=257", "array_bytes=-1", "array_bytes=128G", "stores=uncached"]
)
def test_bandwidth_out_of_range_parameters_are_usage_errors(kern, param):
    proc = run_kern(kern, "mem.bandwidth", "--param", param, *FAST)
    assert proc.returncode == 2
    assert param.split("=")[0] in proc.stderr


def test_an_array_smaller_than_one_double_fails_with_the_fix(kern):
    rc, res = bandwidth(kern, "array_bytes=4")
    assert rc == 1
    assert any("array_bytes" in e for e in res["errors"])
