"""How long stress-ng's stressors take to reach a steady rate, how long they take to stop, and what a
stressor costs the campaign runner per run.

1. Ramp-up: each stressor of the `stressor` condition (1 worker, pinned to the CPU the campaign's "other"
   placement uses) is sampled every 50 ms for 3 s: CPU time of its whole process group (/proc jiffies,
   reaped children included). Rates are taken over sliding 250 ms windows (one jiffy is 4% of one); the
   plateau is the median window rate over the last 1.5 s (its CV shows how busy the machine is), and t90 the
   end of the first window at 90% of it or more. The condition's default warm-up (1 s) should exceed every
   t90. CPU is a proxy for the rate: a timer or udp stressor also loads interrupts and softirqs that no
   process is charged for.
2. Stop: SIGINT to stress-ng's parent (what the condition does) against SIGINT to its whole process group,
   alternated A B, B A, 4 pairs per stressor after 0.5 s of running; median ms until the parent exits.
3. Runner cost: noop campaigns (ABBA order, gates off, worker warm-up off) with a baseline cell and a
   `cpu` stressor cell on the other CPU with warmup_s = 0, run in this process with a progress hook. Each
   run's cost is the time from the end of its gate to its commit; the baseline and the stressor run of each
   block are a pair, and the figure is the median of the pairs' ratios (the stressor's deliberate warm-up,
   1 s by default, comes on top).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from boardlab.conditions.stressor import STRESSORS
from boardlab.platform import sampling
from boardlab.xcheck.pairs import PairedRatios, alternate, ratios_of

SAMPLE_S = 0.05
WINDOW = 5  # samples: 250 ms
RUN_S = 3.0
PAIRS = 4  # even: as many pairs in each order
BLOCKS = 20
CAMPAIGNS = 3


def start(real: str, cpu: int, tmp: Path) -> subprocess.Popen:
    argv = ["stress-ng", f"--{real}", "1", "--taskset", str(cpu), "--timeout", "60s", "--oom-avoid"]
    if real == "iomix":
        argv += ["--iomix-bytes", "64M"]
    return subprocess.Popen(
        argv + ["--temp-path", str(tmp)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        process_group=0,  # as the condition starts it: its own group, this session
        cwd=tmp,
    )


def stop(proc: subprocess.Popen, to_group: bool) -> float:
    t0 = time.perf_counter()
    if to_group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGINT)
    while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if time.perf_counter() - t0 > 10:
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.001)  # Popen.wait's back-off would round the figures up to 3, 7, 15, 31 ms
    dt = time.perf_counter() - t0
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return dt


def ramp(real: str, cpu: int, tmp: Path) -> tuple[float | None, float, float]:
    """(t90 in s, plateau in % of one core, CV of the plateau's windows)."""
    ticks = sampling.clock_ticks()
    proc = start(real, cpu, tmp)
    t0 = time.perf_counter()
    samples = []
    while (t := time.perf_counter() - t0) < RUN_S:
        samples.append((t, sampling.read_group_cpu("/", proc.pid)[0]))
        time.sleep(SAMPLE_S)
    stop(proc, False)
    rates = []  # (window end, % of one core)
    for i in range(WINDOW, len(samples)):
        (ta, ja), (tb, jb) = samples[i - WINDOW], samples[i]
        rates.append((tb, 100.0 * (jb - ja) / ticks / (tb - ta)))
    tail = [r for t, r in rates if t >= RUN_S - 1.5]
    plateau = statistics.median(tail)
    # Reaching 90% of the plateau: a window above it by more than 10% is a busy machine taking CPU away
    # later (seen on a shared VM), not a stressor still ramping up.
    t90 = next((t for t, r in rates if r >= 0.9 * plateau), None)
    return t90, plateau, statistics.pstdev(tail) / plateau if plateau > 0 else 0.0


def stop_times(real: str, cpu: int, tmp: Path) -> tuple[float, float]:
    def once(to_group: bool) -> float:
        proc = start(real, cpu, tmp)
        time.sleep(0.5)
        return stop(proc, to_group)

    done = alternate(PAIRS, lambda: once(False), lambda: once(True))  # A B, B A, ...
    return statistics.median(a for a, _, _ in done), statistics.median(b for _, b, _ in done)


class Timing:
    """A campaign progress hook that times each run from the end of its gate to its commit."""

    def __init__(self):
        self.began: dict[int, float] = {}
        self.cost: dict[int, tuple[str, int, float]] = {}  # seq -> (condition, block, seconds)

    def start(self, campaign, total, done, resumed):
        pass

    def gate(self, run, detail):
        self.began[run.seq] = time.perf_counter()

    def finished(self, run, result, done, total):
        self.cost[run.seq] = (run.cell.condition, run.block, time.perf_counter() - self.began[run.seq])

    def note(self, message):
        pass


def runner_cost(tmp: Path) -> tuple[float, float, PairedRatios, float]:
    """(baseline run ms, stressor run ms, ratios stressor/baseline per order, median stop_s of the stressor
    in ms). The ABBA schedule alternates which of the two runs first in each block."""
    from boardlab.campaign.plan import parse_plan
    from boardlab.campaign.runner import Runner
    from boardlab.store import Store
    from boardlab.workloads import all_workloads

    catalog = {w.name: w for w in all_workloads()}
    plan = parse_plan(
        f"""\
name = "bench-stressor-runner"
[runs]
repetitions = {BLOCKS}
iterations = 10
warmup_max_iterations = 0
order = "abba"
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
[[conditions]]
name = "cpu-other"
kind = "stressor"
params = {{ stressor = "cpu", placement = "other", warmup_s = 0 }}
""",
        "bench",
        catalog,
    )
    pairs: list[tuple[float, float, str]] = []  # (stressor run, baseline run, "AB" = stressor run first)
    stop_ms: list[float] = []
    for i in range(CAMPAIGNS):
        timing = Timing()
        with Store.open(str(tmp / f"runner-{i}.db")) as store:
            Runner(plan, catalog, store, progress=timing).run()
            states = [json.loads(r["condition_state_json"]) for r in store.runs(1)]
        stop_ms += [1000 * s["stop_s"] for s in states if "stop_s" in s]
        by_block: dict[int, dict[str, tuple[int, float]]] = {}
        for seq, (cond, block, seconds) in timing.cost.items():
            by_block.setdefault(block, {})[cond] = (seq, seconds)
        for b in by_block.values():
            if len(b) == 2:
                (seq_base, base), (seq_load, load) = b["baseline"], b["cpu-other"]
                pairs.append((load, base, "AB" if seq_load < seq_base else "BA"))
    return (
        1000 * statistics.median(base for _, base, _ in pairs),
        1000 * statistics.median(load for load, _, _ in pairs),
        ratios_of(pairs, lambda load, base: load / base),
        statistics.median(stop_ms),
    )


def main() -> int:
    import shutil

    if shutil.which("stress-ng") is None:
        print("stress-ng is not installed (apt-get install stress-ng)")
        return 1
    online = sorted(os.sched_getaffinity(0))
    if len(online) < 2:
        print("this bench needs two CPUs: the stressor's and this process's")
        return 1
    load_cpu, own_cpu = online[0], online[-1]
    os.sched_setaffinity(0, {own_cpu})
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print(f"stress-ng stressors, 1 worker on CPU {load_cpu} (this process on CPU {own_cpu})")
        print(
            f"{'stressor':<10} {'stress-ng':<9} {'plateau':>9} {'(CV)':>6} {'t90':>7}  "
            f"{'stop parent':>11} {'stop group':>10}"
        )
        worst = 0.0
        for name, real in STRESSORS.items():
            t90, plateau, cv = ramp(real, load_cpu, tmp)
            leader, group = stop_times(real, load_cpu, tmp)
            worst = max(worst, t90 or RUN_S)
            shown = f"{t90:.2f} s" if t90 is not None else "  never"
            print(
                f"{name:<10} {real:<9} {plateau:>7.1f} % {cv:>6.1%} {shown:>7}  "
                f"{leader * 1000:>8.1f} ms {group * 1000:>7.1f} ms"
            )
        print(f"slowest ramp-up t90: {worst:.2f} s (the condition's default warm-up is 1.0 s)")
        os.sched_setaffinity(0, set(online))
        base_ms, load_ms, ratio, stop_ms = runner_cost(tmp)
    print(
        f"runner per run, noop, {CAMPAIGNS} x {BLOCKS} ABBA blocks: baseline {base_ms:.1f} ms, with a cpu "
        f"stressor on the other CPU (warmup_s = 0) {load_ms:.1f} ms; "
        f"{ratio.describe('stressor', 'baseline')} (stressor stop {stop_ms:.1f} ms)"
    )
    print(f"bench time {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
