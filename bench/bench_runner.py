"""Per-run cost of the campaign runner against hyperfine -N running the same boardlab-kern command.

A = `boardlab run` of a plan with N noop runs (gates off): its wall time per run includes the spawn, the
monitor, collecting the JSON and wait4 rusage, and the SQLite commit. B = `hyperfine -N --runs N` of the
same boardlab-kern command line: its mean per run. Warm-up is off in both, so that the kernel's own
(load-dependent) warm-up does not hide the runner's cost. Both run the kernel on the same CPU (the plan's
[runs] cpu, and hyperfine under taskset): the runner pins its worker, and a pinned worker against an
unpinned one would measure how busy that CPU is, not the runner. Alternated A B, B A (the machine drifts);
the figure is the median of the pairwise ratios, printed beside the counterbalanced median of the method
(the geometric mean of each order's median). Targets: both at most 1.1x, and the monitor under 1% of one
core at 10 Hz.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from boardlab.native import kern_path
from boardlab.xcheck.pairs import alternate, ratios_of

RUNS = 20
PAIRS = 10  # even: as many pairs in each order
ITERATIONS = 10
TARGET = 1.1
CPU = max(os.sched_getaffinity(0))  # the runner's "auto": the last CPU this process may use
PLAN = f"""\
name = "bench-runner"
[runs]
repetitions = {RUNS}
iterations = {ITERATIONS}
warmup_max_iterations = 0
cpu = {CPU}
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
"""


# The monitor's steady-state cost: a few runs of ~1-3 s each, so per-run start-up reads are negligible.
MONITOR_PLAN = """\
name = "bench-monitor"
[runs]
repetitions = 3
iterations = 1000
warmup_max_iterations = 0
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
params = { steps = 1000000 }
"""


def monitor_cost(tmp: Path) -> float:
    plan = tmp / "monitor.toml"
    plan.write_text(MONITOR_PLAN)
    out = subprocess.run(
        [
            str(Path(sys.executable).parent / "boardlab"),
            "run",
            str(plan),
            "--db",
            str(tmp / "monitor.db"),
            "--json",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["monitor_cost_pct_of_core"]


def boardlab_per_run(tmp: Path, i: int) -> tuple[float, float, float | None]:
    plan = tmp / "plan.toml"
    plan.write_text(PLAN)
    db = tmp / f"bench-{i}.db"
    t0 = time.perf_counter()
    out = subprocess.run(
        [
            str(Path(sys.executable).parent / "boardlab"),
            "run",
            str(plan),
            "--db",
            str(db),
            "--json",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - t0
    doc = json.loads(out.stdout)
    assert doc["runs_done"] == RUNS, doc
    return doc["loop_s"] / RUNS, wall / RUNS, doc["monitor_cost_pct_of_core"]


def hyperfine_per_run(tmp: Path) -> float:
    export = tmp / "hf.json"
    cmd = f"{kern_path()} noop --iterations {ITERATIONS} --warmup-max-iterations 0 --json"
    subprocess.run(
        ["taskset", "-c", str(CPU), "hyperfine", "-N", "--runs", str(RUNS), "--export-json", str(export)]
        + ["--style", "none", cmd],
        capture_output=True,
        check=True,
    )
    return json.loads(export.read_text())["results"][0]["mean"]


def main() -> int:
    for tool, package in (("hyperfine", "hyperfine"), ("taskset", "util-linux")):
        if not shutil.which(tool):
            print(f"{tool} is not installed (apt-get install {package}): the reference cannot be measured")
            return 1
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        n = itertools.count()  # each boardlab campaign in its own database
        # boardlab then hyperfine, hyperfine then boardlab, ...: an order effect cancels and shows
        done = alternate(PAIRS, lambda: boardlab_per_run(tmp, next(n)), lambda: hyperfine_per_run(tmp))
    a_s = [a for (a, _, _), _, _ in done]
    w_s = [w for (_, w, _), _, _ in done]
    b_s = [b for _, b, _ in done]
    costs = [c for (_, _, c), _, _ in done if c is not None]
    per_run = ratios_of(done, lambda a, b: a[0] / b)
    whole_ratio = ratios_of(done, lambda a, b: a[1] / b).median
    ratio = statistics.median(per_run.ratios)  # the median of the pairwise ratios
    print(
        f"runner per run (spawn, monitor, collect, commit; {RUNS} noop runs): median {statistics.median(a_s) * 1000:.1f} ms"
    )
    print(
        f"  with the interpreter start-up and inventory spread over the runs: median {statistics.median(w_s) * 1000:.1f} ms"
        f" ({whole_ratio:.3f}x hyperfine)"
    )
    print(
        f"hyperfine -N per run (same boardlab-kern command, on CPU {CPU}): "
        f"median {statistics.median(b_s) * 1000:.1f} ms"
    )
    print(
        "pairwise ratios, in run order: "
        + " ".join(f"{r:.3f}{o}" for r, o in zip(per_run.ratios, per_run.orders, strict=True))
    )
    print(
        f"ratio boardlab/hyperfine per run: median of {len(per_run.ratios)} pairs {ratio:.3f}  "
        f"target <= {TARGET}x -> {'PASS' if max(ratio, per_run.median or ratio) <= TARGET else 'FAIL'}"
    )
    print(f"  counterbalanced: {per_run.describe('boardlab', 'hyperfine')} (also held to the target)")
    if costs:
        print(
            f"monitor CPU cost at 10 Hz over {RUNS} short runs (start-up reads included): "
            f"{statistics.median(costs):.3f}% of one core"
        )
    with tempfile.TemporaryDirectory() as d:
        cost = monitor_cost(Path(d))
    print(
        f"monitor CPU cost at 10 Hz in steady state (runs of ~1-3 s): {cost:.3f}% of one core  "
        f"target < 1% -> {'PASS' if cost < 1 else 'FAIL'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
