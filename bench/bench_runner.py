"""Per-run cost of the campaign runner against hyperfine -N running the same boardlab-kern command.

A = `boardlab run` of a plan with N noop runs (gates off): its wall time per run includes the spawn, the
monitor, collecting the JSON and wait4 rusage, and the SQLite commit. B = `hyperfine -N --runs N` of the
same boardlab-kern command line: its mean per run. Warm-up is off in both, so that the kernel's own
(load-dependent) warm-up does not hide the runner's cost. Both run the kernel on the same CPU (the plan's
[runs] cpu, and hyperfine under taskset): the runner pins its worker, and a pinned worker against an
unpinned one would measure how busy that CPU is, not the runner. Alternated A B, B A (the machine drifts);
the figure is the median of the pairwise ratios, printed beside the counterbalanced median of the method
(the geometric mean of each order's median). Targets: both at most 1.1x, and the monitor under 1% of one
core at 10 Hz. `--phases` instead runs one campaign in this process and prints each step of a run (spawn,
monitor, collect, JSON, commit) in wall and CPU time of the loop's thread: where the runner's cost goes.

`--program [PATH]` (default /bin/true) measures a program workload instead: A = `boardlab run` of a plan of
PROGRAM_RUNS runs of `argv = [PATH]` (the runner has boardlab-kern's launcher start it: no worker), B =
`hyperfine -N --runs PROGRAM_RUNS PATH` under `taskset` on the same CPU, alternated. It prints each side's
cost per run (A: the run loop's time per run, the whole command's beside it; B: hyperfine's mean), the median
of the pairwise ratios, the check "A per run within 1.1x B + 1 ms" on the median pair, and the stored wall
time (read back from the store: the mean of the campaign's runs) against hyperfine's mean (target: within
10%), with the 1-minute load average beside every figure. `--program --in-process` measures the same with
the programs started from Python, the fallback where boardlab-kern lacks `launch`.
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


# What the run loop's thread does per run (bench_runner.py --phases): module, attribute, what it is.
PHASES = (
    ("boardlab.campaign.runner", "spawn", "spawn (vfork, exec of the worker)"),
    ("boardlab.monitor.sampler", "Monitor.start", "monitor start (a job for its thread)"),
    ("boardlab.campaign.runner", "collect", "collect (pipes, pidfd until the end, wait4)"),
    ("boardlab.monitor.sampler", "Monitor.stop", "monitor stop (last sample, summary)"),
    ("boardlab.campaign.runner", "Runner._cpufreq", "governors and frequencies (x2)"),
    ("boardlab.campaign.runner", "Runner._result", "worker JSON read and checked, the record"),
    ("boardlab.campaign.runner", "_Campaign.write_runs", "store runs (per batch: inserts, commit)"),
    ("boardlab.campaign.runner", "Runner._settle", "the whole run, all of the above included"),
)


def phases(tmp: Path, runs: int = 100) -> None:
    """A campaign of `runs` noop runs in this process with each step wrapped: each step's median wall and CPU
    time (of the loop's thread) per run, which is where the runner's own milliseconds go."""
    import importlib

    from boardlab.cli import main as cli_main

    spent: dict[str, list[tuple[int, int]]] = {}
    for module, attr, label in PHASES:
        *parents, name = attr.split(".")
        owner = importlib.import_module(module)
        for parent in parents:
            owner = getattr(owner, parent)

        real = getattr(owner, name)

        def timed(*a, _real=real, _label=label, **k):
            w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            try:
                return _real(*a, **k)
            finally:
                spent.setdefault(_label, []).append((time.perf_counter_ns() - w0, time.thread_time_ns() - c0))

        setattr(owner, name, timed)
    plan = tmp / "phases.toml"
    plan.write_text(PLAN.replace(f"repetitions = {RUNS}", f"repetitions = {runs}"))
    cli_main(["run", str(plan), "--db", str(tmp / "phases.db"), "--quiet"])
    print(f"where the loop's time goes ({runs} noop runs; medians per run, the first run left out):")
    for _, _, label in PHASES:
        rows = spent.get(label, [])[1:]
        if rows:
            wall = statistics.median(w for w, _ in rows) / 1e6
            cpu = statistics.median(c for _, c in rows) / 1e6
            print(f"  {label:45s} wall {wall:8.3f} ms  CPU {cpu:6.3f} ms")
    whole, waits = spent.get(PHASES[-1][2], [])[1:], spent.get(PHASES[2][2], [])[1:]
    if whole and len(whole) == len(waits):  # one collect per run: the run's time outside the worker's
        outside = statistics.median((w - c[0]) for (w, _), c in zip(whole, waits, strict=True)) / 1e6
        print(f"  {'the whole run but collect (the loop alone)':45s} wall {outside:8.3f} ms")


PROGRAM_RUNS = 100
PROGRAM_PAIRS = 10  # even: as many pairs in each order
GAP_S = 0.001  # the idle gap hyperfine is given before each run for comparison (about the runner's own work)
PROGRAM_EXTRA_S = 0.001  # the allowance per run beyond 1.1x hyperfine's
STORED_WITHIN = 0.10


def load() -> float:
    return os.getloadavg()[0]


def program_plan(path: str) -> str:
    return f"""\
name = "bench-program"
[runs]
repetitions = {PROGRAM_RUNS}
cpu = {CPU}
[gates]
idle = false
temperature = false
[[workloads]]
kind = "program"
name = "measured"
argv = [{json.dumps(path)}]
"""


def in_process_kern(tmp: Path) -> Path:
    """A boardlab-kern that refuses `launch`, as one built before it does: the runner then starts the
    programs from Python (the fallback, `--in-process`)."""
    wrapper = tmp / "kern-without-launch"
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = launch ] && exit 2\nexec "{kern_path()}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def program_boardlab(
    tmp: Path, i: int, path: str, in_process: bool
) -> tuple[float, float, float, float, float]:
    """(the loop's s per run, the whole command's s per run, the stored wall time's mean in s, load, the
    stored wall time's median in s)."""
    from boardlab.store import Store

    plan, db = tmp / "program.toml", tmp / f"program-{i}.db"
    plan.write_text(program_plan(path))
    t0 = time.perf_counter()
    boardlab = str(Path(sys.executable).parent / "boardlab")
    env = {**os.environ, "BOARDLAB_KERN": str(in_process_kern(tmp))} if in_process else None
    out = subprocess.run(
        [boardlab, "run", str(plan), "--db", str(db), "--json", "--quiet"],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    whole = time.perf_counter() - t0
    # the runner says so when boardlab-kern's launcher does not serve: the figure must be the path asked for
    assert ("launcher:" in out.stderr) == in_process, out.stderr
    doc = json.loads(out.stdout)
    assert doc["runs_done"] == PROGRAM_RUNS, doc
    with Store.open(db, create=False) as store:
        walls = [r["wall_ns"] for r in store.runs(doc["campaign_id"]) if r["valid"]]
    assert len(walls) == PROGRAM_RUNS, f"{PROGRAM_RUNS - len(walls)} runs invalid"
    mean_s, median_s = statistics.mean(walls) / 1e9, statistics.median(walls) / 1e9
    return doc["loop_s"] / PROGRAM_RUNS, whole / PROGRAM_RUNS, mean_s, load(), median_s


def program_hyperfine(tmp: Path, path: str) -> tuple[float, float, float, float, float]:
    """(hyperfine's mean s per run, its whole command's s per run, load, its median s, its mean s with an
    idle gap before each run). The last is not the target: hyperfine's runs follow each other within
    microseconds on a CPU that never idles, a runner's after its own work of a millisecond, during which
    the program's CPU idles; `--prepare "sleep GAP_S"` gives hyperfine's runs such a gap, so that the part of
    the stored time that is the CPU's state after a gap, not the harness, shows."""
    export = tmp / "hf-program.json"
    t0 = time.perf_counter()
    hyperfine = ["taskset", "-c", str(CPU), "hyperfine", "-N", "--runs", str(PROGRAM_RUNS), "--style", "none"]
    subprocess.run([*hyperfine, "--export-json", str(export), path], capture_output=True, check=True)
    whole = time.perf_counter() - t0
    result = json.loads(export.read_text())["results"][0]
    gapped = [*hyperfine, "--prepare", f"sleep {GAP_S}", "--export-json", str(export), path]
    subprocess.run(gapped, capture_output=True, check=True)
    gapped_mean = json.loads(export.read_text())["results"][0]["mean"]
    return result["mean"], whole / PROGRAM_RUNS, load(), result["median"], gapped_mean


def program(path: str, in_process: bool) -> int:
    """`--program PATH`: the program workload's cost per run and stored wall time against hyperfine -N."""
    ms = 1e3

    def said(i, a, b, order) -> None:
        print(f"pair {i + 1} ({order}): boardlab {a[0] * ms:.3f} ms/run (whole command {a[1] * ms:.2f}; "
              f"stored wall mean {a[2] * ms:.3f} ms; load {a[3]:.2f}), hyperfine {b[0] * ms:.3f} ms/run "
              f"(whole command {b[1] * ms:.2f}; load {b[2]:.2f})", flush=True)  # fmt: skip

    with tempfile.TemporaryDirectory() as d:
        tmp, n = Path(d), itertools.count()
        done = alternate(
            PROGRAM_PAIRS,
            lambda: program_boardlab(tmp, next(n), path, in_process),
            lambda: program_hyperfine(tmp, path),
            said,
        )
    loads = [x for a, b, _ in done for x in (a[3], b[2])]
    at = f"load {statistics.median(loads):.2f} ({min(loads):.2f} to {max(loads):.2f})"
    cost = ratios_of(done, lambda a, b: a[0] / b[0])
    excess = statistics.median(a[0] - 1.1 * b[0] for a, b, _ in done)  # what is beyond 1.1x hyperfine's
    stored = ratios_of(done, lambda a, b: a[2] / b[0])

    def a_ms(i: int) -> float:  # the median over the pairs of boardlab's figure i, in ms
        return statistics.median(a[i] for a, _, _ in done) * ms

    def b_ms(i: int) -> float:
        return statistics.median(b[i] for _, b, _ in done) * ms

    starter = "from Python (--in-process)" if in_process else "by boardlab-kern launch"
    print(f"program {path} started {starter}, {PROGRAM_RUNS} runs a side, {PROGRAM_PAIRS} pairs, CPU {CPU}")
    print(f"boardlab run loop per run: median {a_ms(0):.3f} ms (whole command {a_ms(1):.2f} ms, interpreter "
          f"start-up and inventory spread over the runs); {at}")  # fmt: skip
    print(f"hyperfine -N per run (its mean): median {b_ms(0):.3f} ms (whole command {b_ms(1):.2f} ms); {at}")
    print(f"boardlab/hyperfine per run: median of {len(cost.ratios)} pairwise ratios "
          f"{statistics.median(cost.ratios):.3f}; {cost.describe('boardlab', 'hyperfine')}; "
          f"{at}")  # fmt: skip
    verdict = "PASS" if excess <= PROGRAM_EXTRA_S else "FAIL"
    print(f"beyond 1.1x hyperfine per run: median of the pairs {excess * ms:.3f} ms, target <= "
          f"{PROGRAM_EXTRA_S * ms:g} ms -> {verdict}; {at}")  # fmt: skip
    ratio = statistics.median(stored.ratios)
    verdict = "PASS" if abs(ratio - 1) <= STORED_WITHIN else "FAIL"
    print(f"stored wall time / hyperfine's mean: median of {len(stored.ratios)} pairwise ratios {ratio:.3f} "
          f"(stored mean {a_ms(2):.3f} ms), target within {STORED_WITHIN:.0%} -> {verdict}; "
          f"{at}")  # fmt: skip
    gapped = ratios_of(done, lambda a, b: a[2] / b[4])
    print(f"  stored wall time / hyperfine's mean with a {GAP_S * ms:g} ms idle gap before each run "
          f"(--prepare sleep; not the target: how much of the difference is the CPU's state after a gap): "
          f"median ratio {statistics.median(gapped.ratios):.3f} (hyperfine {b_ms(4):.3f} ms); "
          f"{at}")  # fmt: skip
    medians = ratios_of(done, lambda a, b: a[4] / b[3])  # what a loaded machine's slow outliers do not move
    print(f"  the same of the medians (not the target; beside it for a loaded machine): "
          f"{statistics.median(medians.ratios):.3f} (stored {a_ms(4):.3f} ms, hyperfine {b_ms(3):.3f} ms); "
          f"{at}")  # fmt: skip
    return 0


def main() -> int:
    if "--phases" in sys.argv[1:]:
        with tempfile.TemporaryDirectory() as d:
            phases(Path(d))
        return 0
    for tool, package in (("hyperfine", "hyperfine"), ("taskset", "util-linux")):
        if not shutil.which(tool):
            print(f"{tool} is not installed (apt-get install {package}): the reference cannot be measured")
            return 1
    if "--program" in sys.argv[1:]:
        rest = [a for a in sys.argv[sys.argv.index("--program") + 1 :] if a != "--in-process"]
        return program(rest[0] if rest else "/bin/true", "--in-process" in sys.argv[1:])
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
        f"runner per run (spawn, monitor, collect, commit; {RUNS} noop runs): "
        f"median {statistics.median(a_s) * 1000:.1f} ms"
    )
    print(
        "  with the interpreter start-up and inventory spread over the runs: "
        f"median {statistics.median(w_s) * 1000:.1f} ms ({whole_ratio:.3f}x hyperfine)"
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
