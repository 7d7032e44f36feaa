"""The timing core of boardlab-kern, specified through the noop kernel."""

from __future__ import annotations

import json

from boardlab.model.worker_result import WORKER_SCHEMA

from helpers import kern_json, run_cli, run_kern, under_qemu_user

FAST = ("--iterations", "5", "--warmup-max-iterations", "20")


def test_noop_prints_a_versioned_result_with_timer_self_test(kern):
    rc, res = kern_json(kern, "noop", *FAST)
    assert rc == 0
    assert res["schema"] == WORKER_SCHEMA and res["tool"] == "boardlab-kern" and res["workload"] == "noop"
    assert res["ok"] is True and res["verified"] is True and res["errors"] == []
    timer = res["timer"]
    assert timer["clock"] == "CLOCK_MONOTONIC_RAW"
    assert timer["resolution_ns"] >= 1 and timer["measured_resolution_ns"] >= timer["resolution_ns"]
    assert 0 < timer["overhead_ns"] < 100_000
    assert len(res["iterations_ns"]) == 5
    # docs/method.md: an iteration lasts at least 1 ms and 100x the timer resolution. Under qemu-user the
    # translator speeds up after calibration (its code cache warms), so there only the target is checked.
    if not under_qemu_user():
        assert min(res["iterations_ns"]) >= 0.9 * res["iteration_target_ns"]
    assert res["iteration_target_ns"] >= max(1e6, 100 * timer["measured_resolution_ns"])
    metric = res["metrics"]["ns_per_rep"]
    assert metric["unit"] == "ns" and metric["higher_is_better"] is False
    assert len(metric["values"]) == 5 and all(v > 0 for v in metric["values"])
    assert min(metric["values"]) <= metric["median"] <= max(metric["values"])
    for key in ("utime_us", "stime_us", "maxrss_kib", "vm_hwm_kib", "minflt", "nvcsw", "nivcsw"):
        assert key in res["rusage"]
    assert res["checksum"]


def test_per_iteration_metric_follows_from_iteration_time(kern):
    rc, res = kern_json(kern, "noop", *FAST)
    reps = res["reps_per_iteration"]
    for ns, value in zip(res["iterations_ns"], res["metrics"]["ns_per_rep"]["values"], strict=True):
        assert abs(value - ns / reps) <= 1e-6 * value


def test_warmup_stops_at_its_cap_and_flags_it(kern):
    # A CV target of 0 can never be met, so warm-up must stop at the iteration cap and say so.
    rc, res = kern_json(
        kern, "noop", "--iterations", "3", "--warmup-cv", "0", "--warmup-max-iterations", "15"
    )
    assert rc == 0
    assert res["warmup"]["capped"] is True
    assert res["warmup"]["iterations"] == 15


def test_warmup_stops_at_its_time_cap(kern):
    rc, res = kern_json(
        kern,
        "noop",
        "--iterations",
        "2",
        "--warmup-cv",
        "0",
        "--warmup-max-iterations",
        "100000",
        "--warmup-max-ms",
        "50",
    )
    assert res["warmup"]["capped"] is True
    assert res["warmup"]["duration_ns"] < 1e9


def test_warmup_ends_when_the_last_ten_iterations_are_steady(kern):
    rc, res = kern_json(kern, "noop", "--iterations", "2", "--warmup-cv", "10")
    assert res["warmup"]["capped"] is False
    assert res["warmup"]["iterations"] == 10  # the rule needs ten iterations to judge


def test_a_corrupted_result_is_an_error_not_a_time(kern):
    rc, res = kern_json(kern, "noop", *FAST, "--corrupt")
    assert rc == 1
    assert res["ok"] is False and res["verified"] is False
    assert res["metrics"] == {}
    assert any("expected" in e for e in res["errors"])


def test_unknown_kernel_is_a_usage_error(kern):
    proc = run_kern(kern, "no.such.kernel")
    assert proc.returncode == 2
    assert "unknown kernel 'no.such.kernel'" in proc.stderr and "--list" in proc.stderr


def test_unknown_parameter_names_the_valid_ones(kern):
    proc = run_kern(kern, "noop", "--param", "size=3")
    assert proc.returncode == 2
    assert "unknown parameter 'size'" in proc.stderr


def test_bad_option_values_are_usage_errors(kern):
    assert run_kern(kern, "noop", "--iterations", "0").returncode == 2
    assert run_kern(kern, "noop", "--iterations", "ten").returncode == 2
    assert run_kern(kern, "noop", "--frobnicate", "1").returncode == 2
    assert run_kern(kern, "noop", "--param", "novalue").returncode == 2


def test_list_json_declares_every_kernel_with_params_and_metrics(kern):
    proc = run_kern(kern, "--list", "--json")
    assert proc.returncode == 0
    catalog = json.loads(proc.stdout)
    assert catalog["schema"] == 1
    names = [k["name"] for k in catalog["kernels"]]
    assert "noop" in names and len(names) == len(set(names))
    for k in catalog["kernels"]:
        assert k["family"] and k["summary"]
        assert isinstance(k["supported"], bool)
        assert k["supported"] or k["reason"], f"{k['name']} is unsupported without a reason"
        assert k["metrics"], f"{k['name']} declares no metric"
        for m in k["metrics"]:
            assert m["unit"] and isinstance(m["higher_is_better"], bool)


def test_list_json_says_how_the_binary_was_built(kern):
    build = json.loads(run_kern(kern, "--list", "--json").stdout)["build"]
    assert build["compiler"].split()[0] in ("gcc", "clang") and build["compiler"].split()[1][0].isdigit()
    flags = build["flags"].split()
    assert any(f.startswith("-O") for f in flags) and "-fno-strict-aliasing" in flags
    assert build["arch"] in ("x86_64", "x86", "arm", "aarch64", "riscv64")
    assert build["pointer_bits"] in (32, 64)
    if build["arch"] == "arm":
        assert build["pointer_bits"] == 32
    assert isinstance(build["simd"], list) and isinstance(build["libraries"], list)
    if build["arch"] == "aarch64":
        assert "neon" in build["simd"]  # Advanced SIMD is part of the AArch64 baseline
    if "-mfpu=neon" in build["flags"]:
        assert "neon" in build["simd"]
    if not build["cross"]:
        # A native build is the one installed with this package: its probes agree with the Python side.
        from boardlab import _build_config as built

        libs = {"lzma": built.HAVE_LZMA, "zstd": built.HAVE_ZSTD, "crypto": built.HAVE_CRYPTO}
        assert {lib for lib, have in libs.items() if have} == set(build["libraries"]) & set(libs)


def test_version_is_the_package_version(kern):
    import boardlab

    proc = run_kern(kern, "--version")
    assert proc.returncode == 0 and boardlab.__version__ in proc.stdout


def test_boardlab_kern_path_and_passthrough(kern):
    proc = run_cli("kern", "--path")
    assert proc.returncode == 0 and proc.stdout.strip() == str(kern)
    proc = run_cli("kern", "noop", "--iterations", "2", "--warmup-max-iterations", "0", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["workload"] == "noop"
    assert run_cli("kern", "nope").returncode == 2
    proc = run_cli("kern", "--help")  # boardlab's --path, which boardlab-kern's own help cannot name, first
    assert proc.returncode == 0 and proc.stdout.startswith("usage: boardlab kern --path\n")
    assert "usage: boardlab-kern --version" in proc.stdout
