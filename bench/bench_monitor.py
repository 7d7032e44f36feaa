"""What one sample of the run monitor's process tree costs (CPU time of the sampling thread), against the
reference it replaced: the single worker process read alone (its /proc/PID/stat and status).

The tree is a real one: `sh` running a program that forked three children (as a user's program under the
`program` workload would), on this machine with whatever else runs on it (the scan of every /proc/*/stat
grows with that). Three ways, each in rounds of SAMPLES back-to-back samples, alternated A B, B A, ...:
- tree through the children files (/proc/PID/task/TID/children, where the kernel has them);
- tree through /proc/*/stat (the fallback: after the first sample, only the tree's and new PIDs' stat);
- the single process (the reference).
Prints the median CPU microseconds per sample of each and the median of the pairwise ratios tree/single.

    .venv/bin/python bench/bench_monitor.py [--rounds 10] [--samples 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from boardlab.platform import sampling
from boardlab.xcheck.pairs import alternate, ratios_of

TREE = "sleep 60 & sleep 60 & sleep 60 & wait"


def per_sample_us(sample, samples: int) -> float:
    t0 = time.thread_time_ns()
    for _ in range(samples):
        sample()
    return (time.thread_time_ns() - t0) / samples / 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10, help="pairs per comparison (even: both orders)")
    ap.add_argument("--samples", type=int, default=2000, help="samples per timed round")
    args = ap.parse_args()
    src = sampling.resolve_sources("/")
    # a launcher (this sh) with its program's three children, as the program workload's worker would have
    proc = subprocess.Popen(["sh", "-c", TREE], process_group=0)
    try:
        time.sleep(0.3)
        files = sampling.has_children_files(src.proc, proc.pid)
        tree = sampling.read_tree(src, proc.pid, count_root=False, children_files=False)
        assert tree is not None and tree.processes == 3, tree

        def single():
            sampling._read(f"{src.proc}/{proc.pid}/stat")
            sampling.read_status(src, proc.pid)

        ways = {"scan of /proc/*/stat": False}
        if files:
            ways = {"children files": True, **ways}
        procs = sum(1 for n in os.listdir(src.proc) if n.isdigit())
        print(f"tree: 1 launcher + {tree.processes} processes; {procs} processes on this machine")
        single_us = []
        for name, how in ways.items():
            # one reader for all its samples, as the monitor keeps one for a run
            walk = sampling.TreeReader(src, proc.pid, count_root=False, children_files=how).read
            pairs = alternate(
                args.rounds,
                lambda walk=walk: per_sample_us(walk, args.samples),
                lambda: per_sample_us(single, args.samples),
            )
            single_us += [b for _, b, _ in pairs]
            ratio = ratios_of(pairs, lambda a, b: a / b)
            print(
                f"tree via {name}: {statistics.median(a for a, _, _ in pairs):.1f} us CPU per sample; "
                f"tree / single process: {ratio.describe('tree', 'single')}"
            )
        print(
            f"single process (stat + status, the reference): {statistics.median(single_us):.1f} us per sample"
        )
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
