"""compute.gemm DGEMM against OpenBLAS called directly, alternated A B, B A in the same run.

The reference is a 30-line C program built here into a temporary directory and linked with -lopenblas: it
times NREP products C = A B (cblas_dgemm, row-major, the same n, entries in [-0.5, 0.5)) with
CLOCK_MONOTONIC_RAW and prints the median GFLOPS (2 n^3 per product). boardlab-kern runs compute.gemm
impl=blas with the same n and thread count; each side is pinned to the same CPU set. Target: the median of
the pairwise ratios boardlab/reference within 10% of 1. The native fallback (impl=native) is printed as a
ratio to the same reference, for information. `--quick` runs 4 pairs instead of 10.

Exits 0 whatever the figures; prints PASS or FAIL.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from boardlab.native import kern_path
from boardlab.xcheck.pairs import alternate, ratios_of

N = 512
THREADS = 1
REF_C = r"""
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC_RAW, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    int n = atoi(argv[1]), reps = atoi(argv[2]), threads = atoi(argv[3]);
    openblas_set_num_threads(threads);
    double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n),
           *c = malloc(sizeof(double) * n * n);
    srand(1);
    for (long i = 0; i < (long)n * n; i++) {
        a[i] = rand() / (RAND_MAX + 1.0) - 0.5; b[i] = rand() / (RAND_MAX + 1.0) - 0.5; }
    double *g = malloc(sizeof(double) * reps);
    for (int w = 0; w < 3; w++)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
        g[r] = 2.0 * n * n * (double)n / (now() - t0) * 1e-9;
    }
    qsort(g, reps, sizeof(double), cmp);
    printf("%.6f\n", reps % 2 ? g[reps / 2] : 0.5 * (g[reps / 2 - 1] + g[reps / 2]));
    return 0;
}
"""


def cpus() -> set[int]:
    allowed = sorted(os.sched_getaffinity(0))
    return set(allowed[-THREADS:])


def pinned():
    mask = cpus()
    return lambda: os.sched_setaffinity(0, mask)


def build_reference(workdir: Path) -> Path | None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src, exe = workdir / "ref_dgemm.c", workdir / "ref_dgemm"
    src.write_text(REF_C)
    proc = subprocess.run([cc, "-O2", "-o", str(exe), str(src), "-lopenblas"], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"cannot build the OpenBLAS reference: {proc.stderr.strip()[:300]}")
        return None
    return exe


def reference_gflops(exe: Path) -> float:
    out = subprocess.run(
        [str(exe), str(N), "20", str(THREADS)],
        capture_output=True,
        text=True,
        preexec_fn=pinned(),
        timeout=300,
    )
    return float(out.stdout.strip())


def boardlab_gflops(impl: str) -> float:
    args = [str(kern_path()), "compute.gemm", "--json", "--iterations", "10", "--warmup-max-iterations", "5"]
    for k, v in {"n": N, "impl": impl, "precision": "double", "threads": THREADS}.items():
        args += ["--param", f"{k}={v}"]
    proc = subprocess.run(args, capture_output=True, text=True, preexec_fn=pinned(), timeout=300)
    res = json.loads(proc.stdout) if proc.stdout.strip() else {}
    if not res.get("ok"):
        raise RuntimeError(
            f"compute.gemm impl={impl}: {res.get('reason') or res.get('errors') or proc.stderr}"
        )
    return res["metrics"]["gflops"]["median"]


def main() -> int:
    pairs = 4 if "--quick" in sys.argv else 10  # even: as many pairs in each order
    with tempfile.TemporaryDirectory(prefix="boardlab-bench-") as tmp:
        exe = build_reference(Path(tmp))
        if exe is None:
            print("compute.gemm vs OpenBLAS: SKIP (no C compiler or libopenblas-dev)")
            return 0

        def show(i, a, b, order):
            print(
                f"  pair {i + 1} ({order}): boardlab blas {a[0]:.2f} native {a[1]:.2f}  openblas "
                f"{b:.2f} GFLOPS"
            )

        # A B, B A, ...: boardlab's two runs (blas, native) against OpenBLAS, alternating which goes first
        done = alternate(
            pairs,
            lambda: (boardlab_gflops("blas"), boardlab_gflops("native")),
            lambda: reference_gflops(exe),
            show,
        )
    blas = ratios_of(done, lambda a, b: a[0] / b)
    native = ratios_of(done, lambda a, b: a[1] / b)
    verdict = "PASS" if abs(blas.median - 1) <= 0.10 else "FAIL"
    print(
        f"compute.gemm DGEMM n={N} threads={THREADS} vs OpenBLAS direct: "
        f"{blas.describe('boardlab', 'openblas')} {verdict}"
    )
    print(f"compute.gemm native fallback vs OpenBLAS direct: {native.describe('boardlab', 'openblas')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
