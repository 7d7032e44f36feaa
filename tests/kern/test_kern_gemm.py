"""compute.gemm and compute.linpack: the data-stream study's SP/DP GFLOPS, verified results."""

from __future__ import annotations

import pytest

from helpers import assert_plausible, kern_json

FAST = ("--iterations", "2", "--warmup-max-iterations", "0")
IMPLS = ("blas", "native")
PRECISIONS = ("single", "double")


def run(kern, name, *params, extra=FAST):
    args = [a for p in params for a in ("--param", p)]
    return kern_json(kern, name, *args, *extra)


def blas_or_skip(res):
    if res.get("supported") is False:
        pytest.skip(f"impl=blas unsupported here: {res['reason']}")


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("precision", PRECISIONS)
def test_gemm_product_is_verified_and_rated_in_gflops(kern, impl, precision):
    rc, res = run(kern, "compute.gemm", "n=96", f"precision={precision}", f"impl={impl}")
    blas_or_skip(res)
    assert rc == 0, res.get("errors")
    assert res["ok"] and res["verified"]
    g = res["metrics"]["gflops"]
    assert g["unit"] == "GFLOPS" and g["higher_is_better"] is True
    # Any CPU of the last 20 years does between 10 MFLOPS and 10 TFLOPS on one core.
    assert_plausible(g["values"], 0.01, 10_000)
    assert res["info"]["flops_per_product"] == 2 * 96**3
    # The rounding error stays inside the bound it is checked against.
    assert res["info"]["verify_error_over_bound"] <= 1.0


@pytest.mark.parametrize("impl", IMPLS)
def test_gemm_counts_2n3_flops_per_rep(kern, impl):
    rc, res = run(kern, "compute.gemm", "n=64", f"impl={impl}")
    blas_or_skip(res)
    reps = res["reps_per_iteration"]
    for ns, g in zip(res["iterations_ns"], res["metrics"]["gflops"]["values"], strict=True):
        assert g == pytest.approx(2 * 64**3 * reps / ns, rel=1e-9)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_corrupted_product_fails_verification(kern, impl, precision):
    rc, res = run(
        kern, "compute.gemm", "n=128", f"precision={precision}", f"impl={impl}", extra=(*FAST, "--corrupt")
    )
    blas_or_skip(res)
    assert rc == 1 and res["verified"] is False and res["metrics"] == {}
    assert any("reference product" in e for e in res["errors"]), res["errors"]


def test_native_and_blas_products_agree_within_rounding(kern):
    # Both are checked against the same reference; odd n exercises the edges of every block.
    for impl in IMPLS:
        rc, res = run(kern, "compute.gemm", "n=131", f"impl={impl}", "threads=2")
        blas_or_skip(res)
        assert rc == 0, res.get("errors")
        assert res["info"]["threads"] == 2


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("precision", PRECISIONS)
def test_linpack_solves_with_hpls_residual_below_16(kern, impl, precision):
    rc, res = run(kern, "compute.linpack", "n=200", f"precision={precision}", f"impl={impl}")
    blas_or_skip(res)
    assert rc == 0, res.get("errors")
    assert 0 <= res["info"]["scaled_residual"] < 16
    n = 200
    reps = res["reps_per_iteration"]
    for ns, g in zip(res["iterations_ns"], res["metrics"]["gflops"]["values"], strict=True):
        assert g == pytest.approx((2 / 3 * n**3 + 2 * n**2) * reps / ns, rel=1e-9)


@pytest.mark.parametrize("impl", IMPLS)
def test_a_corrupted_solution_fails_hpls_check(kern, impl):
    rc, res = run(kern, "compute.linpack", "n=100", f"impl={impl}", extra=(*FAST, "--corrupt"))
    blas_or_skip(res)
    assert rc == 1 and res["verified"] is False
    assert res["info"]["scaled_residual"] > 16
    assert any("scaled residual" in e for e in res["errors"]), res["errors"]


def test_linpack_with_n_not_a_multiple_of_the_block(kern):
    rc, res = run(kern, "compute.linpack", "n=97", "impl=native", "threads=2")
    assert rc == 0, res.get("errors")


def test_the_catalog_declares_the_compute_kernels(kern):
    from boardlab.native import kernel_catalog

    names = {k["name"]: k for k in kernel_catalog()["kernels"]}
    for name in ("compute.gemm", "compute.linpack"):
        spec = names[name]
        assert spec["metrics"][0]["name"] == "gflops"
        assert {p["name"] for p in spec["params"]} >= {"n", "precision", "impl", "threads"}
