"""Speed of boardlab's scimark kernels against SciMark 2.0's own C code, built with the same compiler and flags.

SciMark 2.0's C sources are not shipped with boardlab: give their directory (FFT.c, SOR.c, LU.c,
MonteCarlo.c, Random.c, SparseCompRow.c, Stopwatch.c, array.c, kernel.c and their headers, as distributed by
NIST) with `--scimark-src DIR` or BOARDLAB_SCIMARK2_SRC; without it the bench says so and skips. The sources
are compiled into a temporary directory (never into the repository) with the compiler and flags
`boardlab-kern --list --json` reports for its own kernels, together with a small driver that calls SciMark's
`kernel_measureX` for one kernel (small sizes, SciMark's seed) and prints its MFlops.

For each kernel: A = one `boardlab-kern scimark.X` process (median MFlops of its iterations), B = one
SciMark process; alternated A B A B over at least 8 pairs (the machine drifts); printed: the median of the
pairwise ratios A/B per kernel (> 1 = boardlab faster). Target: at least 0.95 per kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from boardlab.native import kern_path

KERNELS = {  # boardlab kernel -> SciMark kernel.c call (small sizes of constants.h)
    "fft": "kernel_measureFFT(FFT_SIZE, t, R)",
    "sor": "kernel_measureSOR(SOR_SIZE, t, R)",
    "mc": "kernel_measureMonteCarlo(t, R)",
    "sparse": "kernel_measureSparseMatMult(SPARSE_SIZE_M, SPARSE_SIZE_nz, t, R)",
    "lu": "kernel_measureLU(LU_SIZE, t, R)",
}
SOURCES = (
    "FFT.c",
    "SOR.c",
    "LU.c",
    "MonteCarlo.c",
    "Random.c",
    "SparseCompRow.c",
    "Stopwatch.c",
    "array.c",
    "kernel.c",
)
DRIVER = """\
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "Random.h"
#include "kernel.h"
#include "constants.h"
int main(int argc, char **argv) {
    double t = atof(argv[2]), r = -1;
    Random R = new_Random_seed(RANDOM_SEED);
%s
    printf("%%.6f\\n", r);
    return r > 0 ? 0 : 1;
}
"""
TARGET = 0.95


def kern_build() -> dict:
    out = subprocess.run([str(kern_path()), "--list", "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["build"]


def build_scimark(src: Path, work: Path, cflags: str) -> Path:
    missing = [f for f in SOURCES + ("constants.h", "kernel.h") if not (src / f).is_file()]
    if missing:
        raise SystemExit(f"bench_scimark: {src} lacks {', '.join(missing)} (SciMark 2.0's C sources)")
    for f in src.iterdir():
        if f.suffix in (".c", ".h"):
            shutil.copy(f, work / f.name)
    cases = "\n".join(f'    if (!strcmp(argv[1], "{k}")) r = {call};' for k, call in KERNELS.items())
    (work / "bench_driver.c").write_text(DRIVER % cases)
    cc = os.environ.get("CC", "cc")
    exe = work / "scimark2-bench"
    flags = [f for f in shlex.split(cflags) if not f.startswith("-std=")]  # SciMark is C89: keep its dialect
    cmd = [cc, *flags, "-o", str(exe), str(work / "bench_driver.c"), *(str(work / f) for f in SOURCES), "-lm"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exe


def boardlab_mflops(kernel: str, iterations: int) -> float:
    out = subprocess.run(
        [str(kern_path()), f"scimark.{kernel}", "--iterations", str(iterations), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout)["metrics"]["mflops"]["median"])


def scimark_mflops(exe: Path, kernel: str, min_time_s: float) -> float:
    out = subprocess.run([str(exe), kernel, str(min_time_s)], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scimark-src", default=os.environ.get("BOARDLAB_SCIMARK2_SRC"), metavar="DIR")
    parser.add_argument("--pairs", type=int, default=8, help="A B pairs per kernel (at least 8)")
    parser.add_argument("--quick", action="store_true", help="shorter processes (still 8 pairs)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.scimark_src:
        print(
            "bench_scimark: skipped: no SciMark 2.0 C sources (give --scimark-src DIR or set "
            "BOARDLAB_SCIMARK2_SRC to the directory of SciMark 2.0's C files)"
        )
        return 0
    if args.pairs < 8:
        raise SystemExit("bench_scimark: --pairs must be at least 8")
    build = kern_build()
    min_time = 0.1 if args.quick else 0.5
    iterations = 20 if args.quick else 100  # boardlab iterations last >= 1 ms each
    results = {}
    with tempfile.TemporaryDirectory(prefix="boardlab-scimark2-") as tmp:
        exe = build_scimark(Path(args.scimark_src), Path(tmp), build["flags"])
        for kernel in KERNELS:
            ratios = []
            for _ in range(args.pairs):
                a = boardlab_mflops(kernel, iterations)
                b = scimark_mflops(exe, kernel, min_time)
                ratios.append(a / b)
            results[kernel] = {"median_ratio": statistics.median(ratios), "ratios": ratios}
    doc = {
        "schema": 1,
        "compiler": build["compiler"],
        "cflags": build["flags"],
        "pairs": args.pairs,
        "target": TARGET,
        "kernels": results,
    }
    if args.json:
        print(json.dumps(doc))
    else:
        print(
            f"boardlab scimark kernels / SciMark 2.0 C, both {build['compiler']} {build["flags"]} ({args.pairs} pairs)"
        )
        for k, r in results.items():
            flag = "" if r["median_ratio"] >= TARGET else f"  (below the {TARGET} target)"
            print(f"  {k:<7} {r['median_ratio']:.3f}x{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
