"""Per-run cost of the campaign runner against hyperfine -N running the same boardlab-kern command.

A = `boardlab run` of a plan with N noop runs (gates off): its wall time per run includes the spawn, the
monitor, collecting the JSON and wait4 rusage, and the SQLite commit. B = `hyperfine -N --runs N` of the
same boardlab-kern command line: its mean per run. Alternated A B A B (the VM drifts); the figure is the
median of the pairwise ratios. Targets: at most 1.5x, and the monitor under 1% of one core at 10 Hz.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from boardlab.native import kern_path

RUNS = 20
PAIRS = 5
ITERATIONS = 10
PLAN = f"""\
name = "bench-runner"
[runs]
repetitions = {RUNS}
iterations = {ITERATIONS}
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
"""


def boardlab_per_run(tmp: Path, i: int) -> tuple[float, float | None]:
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
    return wall / RUNS, doc["monitor_cost_pct_of_core"]


def hyperfine_per_run(tmp: Path) -> float:
    export = tmp / "hf.json"
    cmd = f"{kern_path()} noop --iterations {ITERATIONS} --json"
    subprocess.run(
        ["hyperfine", "-N", "--runs", str(RUNS), "--export-json", str(export), "--style", "none", cmd],
        capture_output=True,
        check=True,
    )
    return json.loads(export.read_text())["results"][0]["mean"]


def main() -> int:
    if not shutil.which("hyperfine"):
        print("hyperfine is not installed (apt-get install hyperfine): the reference cannot be measured")
        return 1
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ratios, costs, a_s, b_s = [], [], [], []
        for i in range(PAIRS):
            a, cost = boardlab_per_run(tmp, i)
            b = hyperfine_per_run(tmp)
            a_s.append(a)
            b_s.append(b)
            ratios.append(a / b)
            if cost is not None:
                costs.append(cost)
    ratio = statistics.median(ratios)
    print(
        f"runner per run (boardlab run, {RUNS} noop runs, incl. interpreter start-up): "
        f"median {statistics.median(a_s) * 1000:.1f} ms"
    )
    print(f"hyperfine -N per run (same boardlab-kern command): median {statistics.median(b_s) * 1000:.1f} ms")
    print(
        f"ratio boardlab/hyperfine (median of {PAIRS} pairs): {ratio:.3f}x  target <= 1.5x -> "
        f"{'PASS' if ratio <= 1.5 else 'FAIL'}"
    )
    if costs:
        cost = statistics.median(costs)
        print(
            f"monitor CPU cost at 10 Hz: {cost:.3f}% of one core  target < 1% -> {'PASS' if cost < 1 else 'FAIL'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
