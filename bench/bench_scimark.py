"""Speed of boardlab's scimark kernels against SciMark 2.0's own C code, built with the same compiler and
flags.

SciMark 2.0's C sources are not shipped with boardlab: give their directory (FFT.c, SOR.c, LU.c,
MonteCarlo.c, Random.c, SparseCompRow.c, Stopwatch.c, array.c, kernel.c and their headers, as distributed by
NIST) with `--scimark-src DIR` or BOARDLAB_SCIMARK2_SRC; without it the bench says so and skips. The sources
are compiled into a temporary directory (never into the repository) with the compiler and flags
`boardlab-kern --list --json` reports for its own kernels.

What is compared, like for like:
- time: A = one `boardlab-kern scimark.X` process, B = one process running SciMark's own
  `kernel_measureX` (its problem sizes, seed, cycle doubling until --min-time, flop formulas). Both clocks
  are wall time on CLOCK_MONOTONIC_RAW: SciMark's Stopwatch reads clock() (process CPU time), which on a
  shared machine leaves out the time the process waits, so its copy here reads CLOCK_MONOTONIC_RAW, as
  boardlab-kern does. Both rates are total flops over total time of about --min-time seconds (boardlab:
  the harmonic mean of its iterations' MFLOPS, i.e. all measured work over all measured time). Alternated
  A B, B A over at least 8 pairs; printed: the median of the pairwise ratios A/B (> 1 = boardlab faster).
- instructions (when valgrind is installed): instructions executed per SciMark cycle (one FFT forward +
  inverse pair, one SOR sweep, one Monte Carlo sample, one sparse multiply, one LU copy + factorization)
  counted by callgrind inside boardlab's kernel and inside SciMark's kernel functions on the same work;
  printed: SciMark's count / boardlab's (> 1 = boardlab executes fewer). Repeatable regardless of load.
Target: a time ratio of at least 0.95 per kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from boardlab.native import kern_path
from boardlab.xcheck.pairs import alternate, ratios_of

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
# For callgrind: one SciMark kernel on its kernel.c inputs for a given number of cycles, the work in a
# noinline bench_work() that callgrind collects alone (setup and input generation are left out).
COUNT_DRIVER = """\
#include <stdlib.h>
#include <string.h>
#include "Random.h"
#include "constants.h"
#include "FFT.h"
#include "SOR.h"
#include "LU.h"
#include "MonteCarlo.h"
#include "SparseCompRow.h"
#include "array.h"
static volatile double sink;
static double *x, *y, *val, **G, **A, **lu;
static int *row, *col, *pivot;
__attribute__((noinline)) void bench_work(const char *k, int cycles) {
    int i;
    if (!strcmp(k, "fft"))
        for (i = 0; i < cycles; i++) { FFT_transform(2 * FFT_SIZE, x); FFT_inverse(2 * FFT_SIZE, x); }
    if (!strcmp(k, "sor")) SOR_execute(SOR_SIZE, SOR_SIZE, 1.25, G, cycles);
    if (!strcmp(k, "mc")) sink = MonteCarlo_integrate(cycles);
    if (!strcmp(k, "sparse")) SparseCompRow_matmult(SPARSE_SIZE_M, y, val, row, col, x, cycles);
    if (!strcmp(k, "lu"))
        for (i = 0; i < cycles; i++) {
            Array2D_double_copy(LU_SIZE, LU_SIZE, lu, A); LU_factor(LU_SIZE, LU_SIZE, lu, pivot); }
}
int main(int argc, char **argv) {
    const char *k = argv[1];
    int N = SPARSE_SIZE_M, nz = SPARSE_SIZE_nz, nr = nz / N, r, i;
    Random R = new_Random_seed(RANDOM_SEED);
    (void)argc;
    if (!strcmp(k, "fft")) x = RandomVector(2 * FFT_SIZE, R);
    if (!strcmp(k, "sor")) G = RandomMatrix(SOR_SIZE, SOR_SIZE, R);
    if (!strcmp(k, "lu")) {
        A = RandomMatrix(LU_SIZE, LU_SIZE, R); lu = new_Array2D_double(LU_SIZE, LU_SIZE);
        pivot = malloc(sizeof(int) * LU_SIZE); }
    if (!strcmp(k, "sparse")) {  /* kernel_measureSparseMatMult's inputs */
        x = RandomVector(N, R); y = malloc(sizeof(double) * N); val = RandomVector(nr * N, R);
        col = malloc(sizeof(int) * nz); row = malloc(sizeof(int) * (N + 1)); row[0] = 0;
        for (r = 0; r < N; r++) {
            int step = r / nr < 1 ? 1 : r / nr;
            row[r + 1] = row[r] + nr;
            for (i = 0; i < nr; i++) col[row[r] + i] = i * step;
        }
    }
    bench_work(k, atoi(argv[2]));
    return 0;
}
"""
WALL_SECONDS = """((double) bench_wall.tv_sec + 1e-9 * (double) bench_wall.tv_nsec)"""
TARGET = 0.95


def kern_build() -> dict:
    out = subprocess.run([str(kern_path()), "--list", "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["build"]


def wall_stopwatch(text: str) -> str:
    """SciMark's Stopwatch.c with seconds() reading CLOCK_MONOTONIC_RAW instead of clock()."""
    pattern = r"return\s*\(\(double\)\s*clock\(\)\)\s*/\s*\(double\)\s*CLOCKS_PER_SEC\s*;"
    if not re.search(pattern, text):
        raise SystemExit(
            "bench_scimark: Stopwatch.c's seconds() is not SciMark 2.0's clock() one; cannot retime it"
        )
    body = (
        f"struct timespec bench_wall; clock_gettime(CLOCK_MONOTONIC_RAW, &bench_wall); return {WALL_SECONDS};"
    )
    return "#define _GNU_SOURCE\n#include <time.h>\n" + re.sub(pattern, body, text)


def build_scimark(src: Path, work: Path, cflags: str, wall: bool = True) -> tuple[Path, Path]:
    missing = [f for f in SOURCES + ("constants.h", "kernel.h") if not (src / f).is_file()]
    if missing:
        raise SystemExit(f"bench_scimark: {src} lacks {', '.join(missing)} (SciMark 2.0's C sources)")
    for f in src.iterdir():
        if f.suffix in (".c", ".h"):
            shutil.copy(f, work / f.name)
    if wall:
        (work / "Stopwatch.c").write_text(wall_stopwatch((src / "Stopwatch.c").read_text()))
    cases = "\n".join(f'    if (!strcmp(argv[1], "{k}")) r = {call};' for k, call in KERNELS.items())
    (work / "bench_driver.c").write_text(DRIVER % cases)
    (work / "bench_count.c").write_text(COUNT_DRIVER)
    cc = os.environ.get("CC", "cc")
    flags = [f for f in shlex.split(cflags) if not f.startswith("-std=")]  # SciMark is C89: keep its dialect
    exes = []
    for driver, name in (("bench_driver.c", "scimark2-bench"), ("bench_count.c", "scimark2-count")):
        exe = work / name
        cmd = [cc, *flags, "-o", str(exe), str(work / driver), *(str(work / f) for f in SOURCES), "-lm"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"bench_scimark: building SciMark failed: {done.stderr.strip()[:400]}")
        exes.append(exe)
    return exes[0], exes[1]


def boardlab_run(kernel: str, args: list[str]) -> dict:
    out = subprocess.run(
        [str(kern_path()), f"scimark.{kernel}", *args, "--json"], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def boardlab_mflops(kernel: str, min_time_s: float) -> float:
    """All measured flops over all measured time: 10 iterations of about min_time / 10 each."""
    iteration_ms = 1000.0 * min_time_s / 10
    doc = boardlab_run(
        kernel, ["--iterations", "10", "--min-iteration-ms", f"{iteration_ms:g}", "--warmup-max-ms", "300"]
    )
    return statistics.harmonic_mean(doc["metrics"]["mflops"]["values"])


def scimark_mflops(exe: Path, kernel: str, min_time_s: float) -> float:
    out = subprocess.run([str(exe), kernel, str(min_time_s)], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def callgrind(cmd: list[str], function: str, work: Path) -> tuple[int, int, str]:
    """Instructions collected inside `function`, the number of calls to it, and the program's stdout."""
    out = work / "callgrind.out"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--toggle-collect={function}", *cmd],
        capture_output=True,
        text=True,
        check=True,
    )
    names: dict[str, str] = {}
    calls = instructions = 0
    callee = None
    for line in out.read_text().splitlines():
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3).strip()
            callee = names.get(m.group(2)) if m.group(1) == "cfn" else None
        elif line.startswith("calls=") and callee == function:
            calls += int(line.split()[0][len("calls=") :])
        elif line.startswith(("summary:", "totals:")):
            instructions = int(line.split()[1])
    out.unlink()
    return instructions, calls, done.stdout


def instructions_per_cycle(kernel: str, counter: Path, work: Path) -> tuple[float, float]:
    """(boardlab, SciMark) instructions per SciMark cycle, on the same work."""
    cmd = [str(kern_path()), f"scimark.{kernel}", "--iterations", "2", "--warmup-max-iterations", "0"]
    cmd += ["--min-iteration-ms", "0.001", "--json"]
    bl_ir, runs, stdout = callgrind(cmd, "sm_run", work)  # the run callback every scimark.X kernel drives
    doc = json.loads(stdout)
    cycles = int(doc["info"].get("cycles_per_rep", doc["info"].get("samples_per_rep", 0)))
    if runs < 1 or cycles < 1 or bl_ir <= 0:
        raise SystemExit(f"bench_scimark: callgrind saw no work in boardlab's scimark.{kernel}")
    # Under callgrind one rep outlasts the tiny iteration target, so calibration stops at one rep and
    # every sm_run call (calibration's and the iterations') runs one rep.
    if doc["reps_per_iteration"] != 1:
        raise SystemExit(
            f"bench_scimark: scimark.{kernel} under callgrind ran {doc['reps_per_iteration']} reps per call"
        )
    sm_ir, _, _ = callgrind([str(counter), kernel, str(cycles)], "bench_work", work)
    return bl_ir / (runs * cycles), sm_ir / cycles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=" ".join(__doc__.split("\n\n")[0].split()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument(
        "--scimark-src",
        default=os.environ.get("BOARDLAB_SCIMARK2_SRC"),
        metavar="DIR",
        help="directory of SciMark 2.0's C sources (default: $BOARDLAB_SCIMARK2_SRC; without it: skipped)",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=8,
        help="pairs per kernel, alternating A B, B A (at least 8; even keeps the orders balanced)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="shorter processes: --min-time-s 0.1 (still 8 pairs)"
    )
    parser.add_argument(
        "--min-time-s", type=float, default=0.5, help="seconds each side measures (SciMark's mintime)"
    )
    parser.add_argument(
        "--scimark-clock",
        choices=("wall", "cpu"),
        default="wall",
        help="SciMark's side: wall (CLOCK_MONOTONIC_RAW, as boardlab-kern; default) or cpu (its own clock(), "
        "which leaves out waiting on a shared machine: not like for like)",
    )
    parser.add_argument(
        "--no-instructions", action="store_true", help="skip the callgrind instruction counts"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object (schema 2)")
    args = parser.parse_args(argv)
    if not args.scimark_src:
        print(
            "bench_scimark: skipped: no SciMark 2.0 C sources (give --scimark-src DIR or set "
            "BOARDLAB_SCIMARK2_SRC to the directory of SciMark 2.0's C files)"
        )
        return 0
    if args.pairs < 8:
        print("bench_scimark: --pairs must be at least 8", file=sys.stderr)
        return 2
    min_time = 0.1 if args.quick else args.min_time_s
    if not min_time > 0:
        print("bench_scimark: --min-time-s must be positive", file=sys.stderr)
        return 2
    count = not args.no_instructions and shutil.which("valgrind") is not None
    build = kern_build()
    clock = (
        "CLOCK_MONOTONIC_RAW (wall) on both sides"
        if args.scimark_clock == "wall"
        else "boardlab CLOCK_MONOTONIC_RAW (wall), SciMark clock() (process CPU time): not like for like"
    )
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="boardlab-scimark2-") as tmp:
        exe, counter = build_scimark(
            Path(args.scimark_src), Path(tmp), build["flags"], args.scimark_clock == "wall"
        )
        for kernel in KERNELS:
            print(
                f"bench_scimark: {kernel}: {args.pairs} pairs A B, B A, ..."
                + (" + callgrind" if count else ""),
                file=sys.stderr,
            )
            done = alternate(  # an order effect cancels in the median and shows per order
                args.pairs,
                lambda: boardlab_mflops(kernel, min_time),  # noqa: B023 - called here, in this iteration
                lambda: scimark_mflops(exe, kernel, min_time),  # noqa: B023
            )
            pr = ratios_of(done, lambda a, b: a / b)
            r: dict = {
                "time_ratio_median": pr.median,
                "time_ratios": list(pr.ratios),
                "by_order": pr.to_dict(),
            }
            if count:
                bl, sm = instructions_per_cycle(kernel, counter, Path(tmp))
                r |= {"boardlab_instructions_per_cycle": bl, "scimark_instructions_per_cycle": sm}
                r["instruction_ratio"] = sm / bl
            results[kernel] = r
    doc = {
        "schema": 2,
        "compiler": build["compiler"],
        "cflags": build["flags"],
        "clock": clock,
        "min_time_s": min_time,
        "pairs": args.pairs,
        "target": TARGET,
        "instructions": "callgrind" if count else "not counted (no valgrind or --no-instructions)",
        "kernels": results,
    }
    if args.json:
        print(json.dumps(doc))
        return 0
    print(
        f"boardlab scimark kernels vs SciMark 2.0 C, both {build['compiler']} {build['flags']}, small sizes"
    )
    print(
        f"time: {clock}, ~{min_time:g} s each, median of {args.pairs} pairs alternating A B, B A (per "
        "order below)"
    )
    if count:
        print("instructions: callgrind, per SciMark cycle, SciMark / boardlab")
    print(
        f"  {'kernel':<7} {'time_ratio':>10} {'instr_ratio':>11} {'bl_instr_per_cycle':>19} "
        f"{'sm_instr_per_cycle':>19}"
    )
    for k, r in results.items():
        flag = "" if r["time_ratio_median"] >= TARGET else f"  (below the {TARGET} target)"
        if count:
            cols = (
                f"{r['instruction_ratio']:>10.3f}x {r['boardlab_instructions_per_cycle']:>19.1f} "
                f"{r['scimark_instructions_per_cycle']:>19.1f}"
            )
        else:
            cols = f"{'-':>11} {'-':>19} {'-':>19}"
        print(f"  {k:<7} {r['time_ratio_median']:>9.3f}x {cols}{flag}")
    for k, r in results.items():
        o = r["by_order"]
        if o["order_effect"] is not None:
            print(
                f"  {k:<7} boardlab first {o['median_ratio_a_first']:.3f}x, SciMark first "
                f"{o['median_ratio_b_first']:.3f}x; order effect {o['order_effect']:.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
