"""SciMark 2.0 kernels (scimark.*): SciMark's problems, inputs and flop counts, verified results."""

from __future__ import annotations

import json
import math

import pytest

from helpers import kern_json, run_kern

FAST = ("--iterations", "2", "--warmup-max-iterations", "0")
SIZED = ["fft", "sor", "sparse", "lu"]
KERNELS = ["fft", "sor", "mc", "sparse", "lu"]
PHASES = KERNELS  # the composite's phases, in SciMark's order

# SciMark's constants.c
SMALL = {"fft": 1024, "sor": 100, "sparse": (1000, 5000), "lu": 100}
LARGE = {"fft": 1048576, "sor": 1000, "sparse": (100000, 1000000), "lu": 1000}


def scimark_random(seed: int):
    """SciMark's generator (Random.c), written from its definition: 17 seeds spread from `seed` with
    9069, then s[n] = s[n-5] - s[n-17] mod 2^31-1, each scaled to [0, 1)."""
    m1, m2 = 2**31 - 1, 2**16
    jseed = min(abs(seed), m1)
    if jseed % 2 == 0:
        jseed -= 1
    k0, k1 = 9069 % m2, 9069 // m2
    j0, j1 = jseed % m2, jseed // m2
    m = []
    for _ in range(17):
        t = j0 * k0
        j1 = (t // m2 + j0 * k1 + j1 * k0) % (m2 // 2)
        j0 = t % m2
        m.append(j0 + m2 * j1)
    history = m[::-1]  # the value read 17 steps back comes first
    dm1 = 1.0 / m1
    while True:
        k = (history[-5] - history[-17]) % m1
        history.append(k)
        del history[0]
        yield dm1 * k


def draws(seed: int, skip: int, count: int) -> list[float]:
    gen = scimark_random(seed)
    for _ in range(skip):
        next(gen)
    return [next(gen) for _ in range(count)]


def scimark_inputs(size: dict) -> dict[str, list[float]]:
    """Every input, drawn from one generator seeded 101010 in SciMark's order: fft, sor, sparse, lu."""
    n_sp, nz = size["sparse"]
    counts = {
        "fft": 2 * size["fft"],
        "sor": size["sor"] ** 2,
        "sparse": n_sp + (nz // n_sp) * n_sp,
        "lu": size["lu"] ** 2,
    }
    values = draws(101010, 0, sum(counts.values()))
    out, at = {}, 0
    for name, count in counts.items():
        out[name] = values[at : at + count]
        at += count
    return out


def scimark_flops(name: str, info: dict, prefix: str = "") -> float:
    """Flops of one rep: SciMark's own count for one cycle times the cycles a rep groups."""
    if name == "mc":
        return 4.0 * info[prefix + "samples_per_rep"]
    n, cycles = info[prefix + "n"], info[prefix + "cycles_per_rep"]
    per_cycle = {
        "fft": lambda: (5 * n - 2) * math.log2(n) + 2 * (n + 1),
        "sor": lambda: (n - 1) * (n - 1) * 6.0,
        "sparse": lambda: info[prefix + "nz"] * 2.0,
        "lu": lambda: 2.0 * n**3 / 3.0,
    }[name]()
    return per_cycle * cycles


def close(a: float, b: float, rel: float = 1e-6) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b))


@pytest.fixture(scope="module")
def small_inputs():
    return scimark_inputs(SMALL)


@pytest.mark.parametrize("name", KERNELS)
def test_each_kernel_runs_verified_at_small_size_with_plausible_mflops(kern, name):
    rc, res = kern_json(kern, f"scimark.{name}", *FAST)
    assert rc == 0, res.get("errors")
    assert res["ok"] is True and res["verified"] is True and res["errors"] == []
    assert res["family"] == "scimark"
    if name != "mc":
        assert res["params"] == {"size": "small"}
    metric = res["metrics"]["mflops"]
    assert metric["unit"] == "MFLOPS" and metric["higher_is_better"] is True
    assert len(metric["values"]) == 2
    assert all(1 < v < 1e6 for v in metric["values"])
    assert res["checksum"]


@pytest.mark.parametrize("name", KERNELS)
def test_mflops_use_scimarks_flop_counts(kern, name):
    rc, res = kern_json(kern, f"scimark.{name}", *FAST)
    flops = scimark_flops(name, res["info"]) * res["reps_per_iteration"]
    for ns, mflops in zip(res["iterations_ns"], res["metrics"]["mflops"]["values"], strict=True):
        assert close(mflops, flops / (ns * 1e-9) * 1e-6)


def test_problem_sizes_and_grouping_are_scimarks_small_ones(kern):
    info = {name: kern_json(kern, f"scimark.{name}", *FAST)[1]["info"] for name in KERNELS}
    assert info["fft"]["n"] == SMALL["fft"]
    assert info["sor"]["n"] == SMALL["sor"]
    assert info["lu"]["n"] == SMALL["lu"]
    n, nz = SMALL["sparse"]
    assert info["sparse"]["n"] == n and info["sparse"]["nz"] == (nz // n) * n
    assert info["mc"]["samples_per_rep"] == 2**20
    # A rep groups whole SciMark cycles into about 4 Mflop, so each phase is timed far above the clock.
    for name in KERNELS:
        assert 2e6 <= scimark_flops(name, info[name]) <= 8e6


@pytest.mark.parametrize("name", SIZED)
def test_inputs_are_the_ones_scimark_draws(kern, small_inputs, name):
    rc, res = kern_json(kern, f"scimark.{name}", *FAST)
    assert close(res["info"]["input_sum"], math.fsum(small_inputs[name]), 1e-9)


def test_monte_carlo_counts_the_points_scimark_draws_with_seed_113(kern):
    rc, res = kern_json(kern, "scimark.mc", *FAST)
    samples = res["info"]["samples_per_rep"]
    gen = scimark_random(113)
    under = 0
    for _ in range(samples):
        x, y = next(gen), next(gen)
        under += x * x + y * y <= 1.0
    estimate = res["info"]["pi_estimate"]
    assert round(estimate * samples / 4) == under
    # ... and that estimate is within the tolerance the kernel checks: 6 sigma of a binomial count.
    sigma = 4 * math.sqrt(math.pi / 4 * (1 - math.pi / 4) / samples)
    assert close(res["info"]["pi_tolerance"], 6 * sigma)
    assert abs(estimate - math.pi) <= 6 * sigma


def test_verification_figures_are_reported_and_small(kern):
    fft = kern_json(kern, "scimark.fft", *FAST)[1]["info"]
    # SciMark's own FFT check: RMS round-trip error over N below 1e-10.
    assert fft["round_trip_rms_error"] / fft["n"] <= 1e-10
    assert fft["dft_max_error"] < 1e-9
    assert kern_json(kern, "scimark.sor", *FAST)[1]["info"]["max_diff"] <= 1e-12
    assert kern_json(kern, "scimark.sparse", *FAST)[1]["info"]["max_diff"] <= 1e-12
    assert kern_json(kern, "scimark.lu", *FAST)[1]["info"]["scaled_residual"] <= 30


def test_results_do_not_depend_on_how_many_reps_ran(kern):
    for name in KERNELS:
        short = kern_json(kern, f"scimark.{name}", *FAST)[1]
        longer = kern_json(kern, f"scimark.{name}", "--iterations", "7", "--warmup-max-iterations", "3")[1]
        assert short["checksum"] == longer["checksum"], name


@pytest.mark.parametrize("name", KERNELS)
def test_a_corrupted_result_fails_verification(kern, name):
    rc, res = kern_json(kern, f"scimark.{name}", *FAST, "--corrupt")
    assert rc == 1
    assert res["ok"] is False and res["verified"] is False
    assert res["metrics"] == {}
    assert len(res["errors"]) == 1 and res["errors"][0].startswith(f"{name}: ")


def test_a_corrupted_composite_is_caught_by_each_of_its_five_checks(kern):
    rc, res = kern_json(kern, "scimark.composite", *FAST, "--corrupt")
    assert rc == 1 and res["ok"] is False and res["metrics"] == {}
    assert sorted(e.split(":")[0] for e in res["errors"]) == sorted(KERNELS)


@pytest.mark.parametrize("name", [*SIZED, "composite"])
def test_unknown_size_is_a_usage_error(kern, name):
    proc = run_kern(kern, f"scimark.{name}", "--param", "size=huge")
    assert proc.returncode == 2
    assert "small,large" in proc.stderr


def test_monte_carlo_has_no_size(kern):
    proc = run_kern(kern, "scimark.mc", "--param", "size=small")
    assert proc.returncode == 2 and "unknown parameter 'size'" in proc.stderr


def test_composite_score_is_the_mean_of_the_five_phase_rates(kern):
    rc, res = kern_json(kern, "scimark.composite", *FAST)
    assert rc == 0 and res["ok"] is True, res.get("errors")
    assert list(res["phases_ns"]) == PHASES
    metrics = res["metrics"]
    assert metrics["composite_mflops"]["unit"] == "MFLOPS"
    reps = res["reps_per_iteration"]
    for i in range(2):
        rates = []
        for name in PHASES:
            rate = metrics[f"{name}_mflops"]["values"][i]
            assert 1 < rate < 1e6
            # each phase's rate is its SciMark flops over its own phase time
            flops = scimark_flops(name, res["info"], f"{name}_") * reps
            assert close(rate, flops / (res["phases_ns"][name][i] * 1e-9) * 1e-6)
            rates.append(rate)
        assert close(metrics["composite_mflops"]["values"][i], sum(rates) / 5)
        assert sum(res["phases_ns"][name][i] for name in PHASES) <= res["iterations_ns"][i]


# the descriptors of the problem each kernel solves (its input and size, or its estimate): equal in the
# composite's phase and in the kernel alone when both solve the same problem
PROBLEM = {
    "fft": ("input_sum", "n", "cycles_per_rep"),
    "sor": ("input_sum", "n", "cycles_per_rep"),
    "mc": ("pi_estimate", "samples_per_rep"),
    "sparse": ("input_sum", "n", "nz", "cycles_per_rep"),
    "lu": ("input_sum", "n", "cycles_per_rep", "scaled_residual"),
}


def test_composite_solves_the_same_problems_as_the_kernels_alone(kern):
    composite = kern_json(kern, "scimark.composite", *FAST)[1]["info"]
    assert sorted(PROBLEM) == sorted(KERNELS)
    for name in KERNELS:
        alone = kern_json(kern, f"scimark.{name}", *FAST)[1]["info"]
        for key in PROBLEM[name]:
            assert composite[f"{name}_{key}"] == alone[key], (name, key)


def test_catalog_declares_the_family(kern):
    catalog = json.loads(run_kern(kern, "--list", "--json").stdout)
    specs = {k["name"]: k for k in catalog["kernels"] if k["family"] == "scimark"}
    assert sorted(specs) == sorted(f"scimark.{n}" for n in [*KERNELS, "composite"])
    for name, spec in specs.items():
        assert spec["supported"] is True
        if name == "scimark.mc":
            assert spec["params"] == []
        else:
            (size,) = spec["params"]
            assert (
                size["name"] == "size"
                and size["choices"] == ["small", "large"]
                and size["default"] == "small"
            )
    composite = specs["scimark.composite"]
    assert composite["phases"] == PHASES
    kinds = {m["name"]: (m["kind"], m["phase"]) for m in composite["metrics"]}
    assert kinds["composite_mflops"] == ("mean", None)
    assert composite["metrics"][0]["name"] == "composite_mflops"  # the primary metric
    for name in PHASES:
        assert kinds[f"{name}_mflops"] == ("rate", name)


@pytest.mark.slow
@pytest.mark.parametrize("name", SIZED)
def test_large_size_runs_scimarks_out_of_cache_problems(kern, name):
    rc, res = kern_json(
        kern, f"scimark.{name}", "--param", "size=large", "--iterations", "1", "--warmup-max-iterations", "0"
    )
    assert rc == 0 and res["ok"] is True, res.get("errors")
    expected = LARGE[name][0] if name == "sparse" else LARGE[name]
    assert res["info"]["n"] == expected
    assert 1 < res["metrics"]["mflops"]["values"][0] < 1e6
