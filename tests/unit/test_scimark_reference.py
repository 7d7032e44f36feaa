"""boardlab's scimark kernels against SciMark 2.0's own C code (small and large inputs).

The facts below were produced once, outside this repository, by SciMark 2.0's C sources (FFT.c, SOR.c,
LU.c, MonteCarlo.c, Random.c, SparseCompRow.c, array.c, constants.h) linked with a small driver that draws
the inputs as scimark2.c does (one generator seeded 101010; fft, sor, sparse, lu in that order), runs one
forward FFT, 68 (small) or 21 (large) SOR sweeps at omega 1.25, one sparse y = A x, one LU factorization and
MonteCarlo_integrate(1048576), and prints the inputs' sums and the FNV-1a 64 hash of each result's bytes (LU:
the factor rows in pivoted order, then the pivot vector). Built with gcc 12.2.0 -O2 -std=c99 on x86-64.

A regression that still passes the kernels' self-checks (a different input order, a changed recurrence,
another pivot choice) changes these hashes. Both builds are ISO C without floating-point contraction, so the
results are bit-identical wherever the C library's sin() is correctly rounded (glibc); the FFT hash depends on
it for the twiddle factors.
"""

from __future__ import annotations

import pytest

from helpers import kern_json

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

FAST = ("--iterations", "1", "--warmup-max-iterations", "0")

SCIMARK2 = {
    "mc": {"samples": 1048576, "pi_estimate": 3.1398506164550781, "checksum": "041846d348da37a9"},
    "small": {
        "fft": {"n": 1024, "input_sum": 1029.0301666134169, "checksum": "39ecf72cef757773"},
        "sor": {"n": 100, "sweeps": 68, "input_sum": 5065.6536653179937, "checksum": "51eef0f21e431f56"},
        "sparse": {"n": 1000, "nz": 5000, "input_sum": 2990.3469957250081, "checksum": "b609d98d35644f4e"},
        "lu": {"n": 100, "input_sum": 4981.6047032767001, "checksum": "74ff5f546144f6a1"},
    },
    "large": {
        "fft": {"n": 1048576, "input_sum": 1048137.4270619594, "checksum": "a397dd62c300713a"},
        "sor": {"n": 1000, "sweeps": 21, "input_sum": 499928.26172333135, "checksum": "e178df117c030261"},
        "sparse": {
            "n": 100000,
            "nz": 1000000,
            "input_sum": 549881.03481570783,
            "checksum": "06a49f6ace6784ec",
        },
        "lu": {"n": 1000, "input_sum": 500366.55227025674, "checksum": "6f21bbf5669fb936"},
    },
}


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("kernel", ["fft", "sor", "sparse", "lu"])
def test_kernel_matches_scimark2_bit_for_bit(kern, kernel, size):
    code, doc = kern_json(kern, f"scimark.{kernel}", "--param", f"size={size}", *FAST)
    assert code == 0 and doc["ok"] and doc["verified"], doc.get("errors")
    fact = SCIMARK2[size][kernel]
    info = doc["info"]
    assert info["n"] == fact["n"]
    if "nz" in fact:
        assert info["nz"] == fact["nz"]
    if "sweeps" in fact:
        assert info["cycles_per_rep"] == fact["sweeps"]  # the checksum covers exactly these sweeps
    # the JSON prints 10 significant digits
    assert info["input_sum"] == pytest.approx(fact["input_sum"], rel=1e-9)
    assert doc["checksum"] == fact["checksum"]


def test_monte_carlo_matches_scimark2(kern):
    code, doc = kern_json(kern, "scimark.mc", *FAST)
    assert code == 0 and doc["ok"]
    fact = SCIMARK2["mc"]
    assert doc["info"]["samples_per_rep"] == fact["samples"]
    assert doc["info"]["pi_estimate"] == pytest.approx(fact["pi_estimate"], rel=1e-9)
    assert doc["checksum"] == fact["checksum"]
