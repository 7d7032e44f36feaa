"""The energy sampler's own cost, and its effect on a measurement (A/A: with and without sampling).

1. CPU cost: the sampler reads the Odroid-XU3 tree's four INA231 power1_input files (a copy of the board's
   hwmon layout; this VM has no sensor) at 10 Hz for a while with the real clock; cost = the sampler
   thread's CPU time / wall time, in % of one core. Goal: under 0.5%.
2. A/A overhead: the same boardlab-kern run (noop, fixed work) with the sampler running (pinned to another
   CPU, as the campaign runner does) and without, alternated A B, B A, ...; the figure is the median of the
   pairwise ratios of the runs' median iteration times (1.00 = no effect).

`--quick` shortens both for development.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from boardlab.energy.sampler import EnergySampler
from boardlab.energy.sources import discover
from boardlab.native import kern_path
from boardlab.xcheck.pairs import alternate, ratios_of

FIXTURE = Path(__file__).resolve().parent.parent / "tests/fixtures/sysfs/odroid-xu3"


def sampler_for(root: Path, cpus: set[int] | None) -> EnergySampler:
    d = discover(root)
    assert d.sources, d.reason
    return EnergySampler(d.sources, cpus=cpus, min_interval_s=0.1)  # 10 Hz: INA231 says 2 ms


def cpu_cost(root: Path, seconds: float) -> tuple[float, int]:
    s = sampler_for(root, None)
    s.start()
    time.sleep(seconds)
    s.stop()
    n = sum(len(v) for v in s.samples.values())
    return 100.0 * s.cpu_s / s.wall_s, n


def kern_median_ns(cpu: int | None, steps: int, iterations: int) -> float:
    argv = [str(kern_path()), "noop", "--param", f"steps={steps}", "--iterations", str(iterations), "--json"]
    pre = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    out = subprocess.run(argv, capture_output=True, text=True, check=True, preexec_fn=pre).stdout
    doc = json.loads(out)
    return statistics.median(doc["iterations_ns"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short runs, for development")
    args = ap.parse_args()
    seconds = 3.0 if args.quick else 20.0
    pairs = 4 if args.quick else 12
    cpus = sorted(os.sched_getaffinity(0))
    worker_cpu = cpus[-1] if len(cpus) > 1 else None
    others = set(cpus) - {worker_cpu} if worker_cpu is not None else None

    with tempfile.TemporaryDirectory(prefix="boardlab-bench-energy-") as tmp:
        root = Path(tmp) / "odroid-xu3"
        shutil.copytree(FIXTURE, root, symlinks=True)
        cost, n = cpu_cost(root, seconds)
        print(
            f"energy sampler CPU cost: {cost:.3f}% of one core at 10 Hz ({n} readings of 4 INA231 rails in "
            f"{seconds:g} s; goal < 0.5%) -> {'OK' if cost < 0.5 else 'OVER GOAL'}"
        )

        def sampled() -> float:
            s = sampler_for(root, others)
            s.start()
            try:
                return kern_median_ns(worker_cpu, 200_000, 200)
            finally:
                s.stop()

        # with, without; then without, with; ...: an order effect cancels and shows
        done = alternate(pairs, sampled, lambda: kern_median_ns(worker_cpu, 200_000, 200))
        r = ratios_of(done, lambda a, b: a / b)
        print(
            f"A/A overhead (with / without sampling, noop on CPU {worker_cpu}, sampler off it): "
            f"{r.describe('with', 'without')} (min {min(r.ratios):.4f}, max {max(r.ratios):.4f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
