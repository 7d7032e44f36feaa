"""The monitor: samples the board and the worker while a run executes (default 10 Hz).

Series: per-CPU busy %, the workload's CPU % (from /proc/PID/stat jiffies, as the vehicle-services study
measured) and resident memory, the current frequency per policy, temperatures, cpufreq cooling states
(throttling), power and energy counters, PSI and swap activity. Its own CPU time is measured, so its cost is
known, not assumed.

The workload is the worker process and all its descendants (a program's children), summed at each sample;
a worker that only launches the program (`launcher`, the `program` workload's) is left out of the sums but
not the children it reaps (docs/monitoring.md).
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

from boardlab.platform import sampling
from boardlab.platform.sysroot import RootLike


@dataclass
class MonitorOutput:
    series: list[tuple[str, int, float]]  # (source, t_ns since start, value)
    summary: dict
    cpu_s: float  # the monitor thread's own CPU time
    wall_s: float


@dataclass
class _Acc:
    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, value: float) -> None:
        self.values.setdefault(key, []).append(value)


class Monitor:
    def __init__(self, root: RootLike = "/", *, interval_s: float = 0.1, keep_series: bool = True):
        self.root = root
        self.interval_s = interval_s
        self.keep_series = keep_series
        self.src = sampling.resolve_sources(root)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._done = threading.Event()
        self._out: MonitorOutput | None = None

    def start(self, pid: int, worker_cpu: int | None, *, launcher: bool = False) -> None:
        """Samples process `pid` and its descendants until stop(); `launcher`: `pid` only starts and waits
        for the measured program, so its own CPU time and memory are not the workload's. One thread serves
        every run of a campaign: starting a thread per run costs a scheduler wake-up before the worker
        (milliseconds on a busy board); handing it a job does not."""
        self._stop.clear()
        self._out = None
        self._done.clear()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._serve, name="boardlab-monitor", daemon=True)
            self._thread.start()
        self._jobs.put((pid, worker_cpu, launcher))

    def stop(self) -> MonitorOutput:
        self._stop.set()
        if self._thread is not None:
            while not self._done.wait(0.5):  # a thread that died mid-run (its error is printed) sets nothing
                if not self._thread.is_alive():
                    break
        assert self._out is not None
        return self._out

    def close(self) -> None:
        """Ends the sampling thread (between runs)."""
        if self._thread is not None and self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join()
        self._thread = None

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                self._loop(*job)
            finally:
                self._done.set()

    def _loop(self, pid: int, worker_cpu: int | None, launcher: bool) -> None:
        cpu0 = time.thread_time()
        t0 = time.monotonic_ns()
        src = self.src
        series: list[tuple[str, int, float]] = []
        acc = _Acc()
        prev_cpu = sampling.read_cpu_jiffies(src)
        children_files = sampling.has_children_files(src.proc, pid)
        reader = sampling.TreeReader(src, pid, count_root=not launcher, children_files=children_files)
        tree = reader.read()
        prev_worker, prev_t = tree.cpu_jiffies if tree else None, t0
        processes_max = tree.processes if tree else 0
        swap0 = sampling.read_swap_pages(src)
        psi0 = sampling.read_psi(src)
        energy0 = sampling.read_values(src.energy)
        temps0 = {k: v for k, v in sampling.read_values(src.temps).items() if v is not None}
        throttled = False
        status: dict[str, int] = {}
        last_cpu = None
        threads = None
        samples = 0
        while True:
            stopping = self._stop.wait(self.interval_s)
            now = time.monotonic_ns()
            t = now - t0
            dt_s = (now - prev_t) / 1e9
            samples += 1
            cpu = sampling.read_cpu_jiffies(src)
            for c, (busy, total) in cpu.items():
                if c in prev_cpu and total > prev_cpu[c][1]:
                    pct = 100.0 * (busy - prev_cpu[c][0]) / (total - prev_cpu[c][1])
                    acc.add(f"cpu{c}.busy_pct", pct)
                    if self.keep_series:
                        series.append((f"cpu{c}.busy_pct", t, pct))
                    if c != worker_cpu:
                        acc.add("other_cpus.busy_pct", pct)
            prev_cpu = cpu
            tree = reader.read()
            if tree is not None:
                last_cpu, threads = tree.last_cpu, tree.threads
                processes_max = max(processes_max, tree.processes)
                if prev_worker is not None and dt_s > 0:
                    # a process that left the tree unreaped (an orphan adopted by init) takes its time along
                    pct = 100.0 * max(0, tree.cpu_jiffies - prev_worker) / src.clk_tck / dt_s
                    acc.add("worker.cpu_pct", pct)
                    if self.keep_series:
                        series.append(("worker.cpu_pct", t, pct))
                prev_worker = tree.cpu_jiffies
                if tree.processes:
                    acc.add("worker.rss_kib", tree.rss_kib)
                    if self.keep_series:
                        series.append(("worker.rss_kib", t, float(tree.rss_kib)))
                if not launcher:
                    status = sampling.read_status(src, pid) or status
            prev_t = now
            for name, khz in sampling.read_values(src.freq).items():
                if khz is not None:
                    acc.add(f"freq.{name}_khz", khz)
                    if self.keep_series:
                        series.append((f"freq.{name}_khz", t, float(khz)))
            for name, mc in sampling.read_values(src.temps).items():
                if mc is not None:
                    acc.add(f"temp.{name}_mc", mc)
                    if self.keep_series:
                        series.append((f"temp.{name}_mc", t, float(mc)))
            for name, state in sampling.read_values(src.cooling).items():
                if state:
                    throttled = True
                if state is not None and self.keep_series:
                    series.append((f"cooling.{name}", t, float(state)))
            for name, uw in sampling.read_values(src.power).items():
                if uw is not None:
                    acc.add(f"power.{name}_uw", uw)
                    if self.keep_series:
                        series.append((f"power.{name}_uw", t, float(uw)))
            if stopping:
                break
        summary: dict = {"samples": samples, "interval_s": self.interval_s}
        for key, vals in acc.values.items():
            if key.startswith("temp."):
                summary[f"{key}_max"] = max(vals)
            elif key.startswith("worker.rss"):
                summary[f"{key}_max"] = max(vals)
            else:
                summary[f"{key}_mean"] = sum(vals) / len(vals)
            if key.startswith("freq."):
                summary[f"{key}_min"] = min(vals)
        summary["temp_start_mc"] = temps0
        summary["throttled"] = throttled
        summary["worker_vm_hwm_kib"] = status.get("VmHWM")
        summary["worker_last_cpu"] = last_cpu
        summary["worker_threads"] = threads
        summary["worker_ctxt_switches"] = {k: status[k] for k in status if k.endswith("ctxt_switches")}
        summary["worker_tree"] = {
            "launcher_left_out": launcher,
            "processes_max": processes_max,
            "children_from": "task children files" if children_files else "a scan of /proc/*/stat",
        }
        swap1 = sampling.read_swap_pages(src)
        summary["swap_pages"] = swap1 - swap0 if swap0 is not None and swap1 is not None else None
        psi1 = sampling.read_psi(src)
        summary["psi_some_us"] = {
            r: psi1[r] - psi0[r] for r in psi1 if psi1[r] is not None and psi0.get(r) is not None
        }
        energy1 = sampling.read_values(src.energy)
        summary["energy_uj"] = {
            z: energy1[z] - energy0[z]
            for z in energy1
            if energy1[z] is not None and energy0.get(z) is not None and energy1[z] >= energy0[z]
        }
        wall_s = (time.monotonic_ns() - t0) / 1e9
        cpu_s = time.thread_time() - cpu0
        summary["monitor_cpu_s"] = cpu_s
        summary["monitor_wall_s"] = wall_s
        self._out = MonitorOutput(series=series, summary=summary, cpu_s=cpu_s, wall_s=wall_s)
