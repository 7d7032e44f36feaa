"""Per-run cost of `boardlab bench` against `hyperfine -N` benchmarking the same two commands.

A = `boardlab bench 'xz -6 -c F' 'xz -9 -c F' --runs N` (pinned to one CPU, as boardlab pins; no idle gate):
each run is the program spawned by the runner itself (no launcher worker: campaign/direct.py), the monitor,
wait4, the worker result and the SQLite commit. B = `hyperfine -N --runs N` of the same two commands under
`taskset` on the same CPU. Two figures per side, per run: the run loop (boardlab's `loop_s`, the runs
alone) and the whole command (interpreter start-up, inventory, the power advice skipped by --runs, analysis
and output spread over the runs), each against hyperfine's whole command per run. Alternated A B, B A (the
machine drifts); the figure is the median of the pairwise ratios, with the machine's 1-minute load average
beside every pair and each median. Target: 1.1x. The commands take a few hundred ms each; a command of a
millisecond is `bench_runner.py --program`'s, held to 1.1x plus 1 ms a run (the runner's own cost, about a
millisecond a run, is a large share of so short a command).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from boardlab.xcheck.pairs import alternate, ratios_of

RUNS = 10  # per command
PAIRS = 6  # even: as many pairs in each order
TARGET = 1.1
INPUT_BYTES = 1 << 20
CPU = max(os.sched_getaffinity(0))  # boardlab's "auto": the last CPU this process may use
COMMANDS = ("xz -6 -c F", "xz -9 -c F")


def make_input(path: Path) -> None:
    """Sensor-like text (numbers in lines), seeded: compressible as real logs are, the same every time."""
    rng = random.Random(42)
    lines, size = [], 0
    while size < INPUT_BYTES:
        line = (
            f"{rng.randrange(10**6)},{rng.gauss(20, 3):.3f},{rng.gauss(1013, 5):.2f},{rng.choice('ABCD')}\n"
        )
        lines.append(line)
        size += len(line)
    path.write_text("".join(lines))


def load() -> float:
    return os.getloadavg()[0]


def boardlab_side(tmp: Path, i: int) -> tuple[float, float, float]:
    """(loop s per run, whole command s per run, load average at its end)."""
    db = tmp / f"bench-{i}.db"
    t0 = time.perf_counter()
    out = subprocess.run(
        [str(Path(sys.executable).parent / "boardlab"), "bench", *COMMANDS, "--runs", str(RUNS),
         "--db", str(db), "--json", "--quiet"],
        capture_output=True, text=True, check=True, cwd=tmp,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    doc = json.loads(out.stdout)
    runs = doc["runs_done"]
    assert runs == RUNS * len(COMMANDS), doc
    return doc["loop_s"] / runs, wall / runs, load()


def hyperfine_side(tmp: Path) -> tuple[float, float]:
    """(whole command s per run, load average at its end)."""
    t0 = time.perf_counter()
    subprocess.run(
        ["taskset", "-c", str(CPU), "hyperfine", "-N", "--runs", str(RUNS), "--style", "none",
         "--export-json", str(tmp / "hf.json"), *COMMANDS],
        capture_output=True, check=True, cwd=tmp,
    )  # fmt: skip
    return (time.perf_counter() - t0) / (RUNS * len(COMMANDS)), load()


def main() -> int:
    for tool, package in (("hyperfine", "hyperfine"), ("taskset", "util-linux"), ("xz", "xz-utils")):
        if not shutil.which(tool):
            print(f"{tool} is not installed (apt-get install {package}): the comparison cannot be made")
            return 1
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        make_input(tmp / "F")
        count = iter(range(10**6))

        def said(i, a, b, order) -> None:
            print(
                f"pair {i + 1} ({order}): boardlab loop {a[0] * 1e3:.1f} ms/run, "
                f"whole {a[1] * 1e3:.1f} ms/run (load {a[2]:.2f}); hyperfine {b[0] * 1e3:.1f} ms/run "
                f"(load {b[1]:.2f}); loop/hyperfine {a[0] / b[0]:.3f}",
                flush=True,
            )

        done = alternate(PAIRS, lambda: boardlab_side(tmp, next(count)), lambda: hyperfine_side(tmp), said)
    loop = ratios_of(done, lambda a, b: a[0] / b[0])
    whole = ratios_of(done, lambda a, b: a[1] / b[0])
    loads = [x for a, b, _ in done for x in (a[2], b[1])]
    print(f"commands: {' | '.join(COMMANDS)} on {INPUT_BYTES >> 10} KiB, {RUNS} runs each, CPU {CPU}")
    print(f"machine load (1-min average) during the pairs: median {statistics.median(loads):.2f}, "
          f"{min(loads):.2f} to {max(loads):.2f}")  # fmt: skip
    print(f"boardlab bench run loop / hyperfine -N per run: median of {len(loop.ratios)} pairs "
          f"{statistics.median(loop.ratios):.3f} (load {statistics.median(loads):.2f}); "
          f"{loop.describe('boardlab', 'hyperfine')}  target <= {TARGET}x -> "
          f"{'PASS' if statistics.median(loop.ratios) <= TARGET else 'FAIL'}")  # fmt: skip
    print(
        f"boardlab bench whole command / hyperfine -N per run: median {statistics.median(whole.ratios):.3f} "
        f"(load {statistics.median(loads):.2f}); {whole.describe('boardlab', 'hyperfine')}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
