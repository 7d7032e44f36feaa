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

import contextlib
import os
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
    def __init__(
        self,
        root: RootLike = "/",
        *,
        interval_s: float = 0.1,
        keep_series: bool = True,
        cpus: set[int] | None = None,
    ):
        self.root = root
        self.cpus = cpus  # the sampling thread's CPUs (the runner's: off the measured one); None: inherited
        self.interval_s = interval_s
        self.keep_series = keep_series
        self.src = sampling.resolve_sources(root)
        self.files = sampling.HeldFiles()  # /proc/stat, PSI and /proc/swaps, read twice a run
        self._thread: threading.Thread | None = None
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._job: _Job | None = None

    def start(self, pid: int, worker_cpu: int | None, *, launcher: bool = False, ended: bool = False) -> None:
        """Samples process `pid` and its descendants until stop(); `launcher`: `pid` only starts and waits
        for the measured program, so its own CPU time and memory are not the workload's; `ended`: a
        prepare()d program that has been reaped already (there is nothing of it left to read). One thread
        serves every run of a campaign: starting a thread per run costs a scheduler wake-up before the worker
        (milliseconds on a busy board); handing it a job does not."""
        self.ready()
        job = self._job
        if job is not None and job.pid is None and not job.done:  # prepare()d: begun before the process
            job.pid, job.processes_max, job.ended = pid, 1, ended
            if ended:  # as has_children_files takes a process that is gone: nothing of /proc is scanned
                job.children_files = True
            else:
                job.tree_reader()  # made while it lives: its children file is looked for in /proc
            return  # the sampling thread gets it from follow(), if the process outlives its first interval
        self._job = job = _Job(self, pid, worker_cpu, launcher)
        self._jobs.put(job)

    def prepare(self, worker_cpu: int | None) -> None:
        """Takes the next run's start values now, in the caller's thread, before its process exists; start()
        then only names it, counting its CPU time from zero (a new process has none), and the sampling thread
        is handed it by follow() once the process has lived one interval (its first sample is due then).
        For a program the runner starts itself: one of a millisecond ends with no thread of boardlab's woken
        beside the one that times its end (their reads of /proc, a fifth of a millisecond, once delayed that
        end by as much)."""
        self.ready()
        self._job = _Job(self, None, worker_cpu, False)
        self._job.begin()

    def follow(self) -> None:
        """The prepare()d job to the sampling thread, which samples it at once and every interval after."""
        if self._job is not None and not self._job.done:
            self._jobs.put(self._job)

    def ready(self) -> None:
        """Starts the sampling thread if it is not running: the runner calls it before the first run, whose
        worker would otherwise start beside a new thread's creation."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._serve, name="boardlab-monitor", daemon=True)
            self._thread.start()

    def stop(self) -> MonitorOutput:
        """The last sample is taken here, in the caller's thread, once the worker has ended: waiting for the
        sampling thread to wake on its CPU, sample and wake the caller costs two cross-CPU wake-ups per run
        (milliseconds on a busy board). A sample the thread is taking finishes first (the job's lock)."""
        job = self._job
        assert job is not None, "stop() without start()"
        job.stopping.set()
        with job.lock:
            job.begin()  # a no-op unless the thread never got to this job (a very short worker)
            job.sample()
            job.done = True
            return job.output()

    def close(self) -> None:
        """Ends the sampling thread (between runs). The last job is told to stop first: a stop (SIGTERM) that
        lands between start() and the caller's record of it leaves a job nobody stopped, and the thread would
        sample it for ever while this waits for the thread."""
        if self._job is not None:
            self._job.stopping.set()
        if self._thread is not None and self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join()
        self._thread = None
        self.files.close()

    def _serve(self) -> None:
        if self.cpus:
            with contextlib.suppress(OSError):  # this thread only (Linux affinity is per thread)
                os.sched_setaffinity(0, self.cpus)
        while (job := self._jobs.get()) is not None:
            with job.lock:
                if job.done:
                    continue
                job.begin()
            # a job handed over late (follow()) is due its first sample now
            wait_s = max(0.0, self.interval_s - (time.monotonic_ns() - job.t0) / 1e9)
            while not job.stopping.wait(wait_s):
                with job.lock:
                    if job.done:
                        break
                    job.sample()
                wait_s = self.interval_s


class _Job:
    """One run's sampling: its start values, then one sample per interval (the sampling thread's) and a last
    one at stop (the caller's). The lock keeps the two threads' samples apart; each adds its CPU time."""

    def __init__(self, monitor: Monitor, pid: int | None, worker_cpu: int | None, launcher: bool):
        self.keep_series = monitor.keep_series
        self.interval_s = monitor.interval_s
        self.src, self.files = monitor.src, monitor.files
        self.pid, self.worker_cpu, self.launcher = pid, worker_cpu, launcher
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.done = False
        self.begun = False
        self.cpu_s = 0.0
        self.series: list[tuple[str, int, float]] = []
        self.acc = _Acc()
        self.throttled = False
        self.status: dict[str, int] = {}
        self.last_cpu: int | None = None
        self.threads: int | None = None
        self.samples = 0
        self.reader: sampling.TreeReader | None = None
        self.children_files = False
        self.ended = False  # reaped before start() named it: no tree to read

    def begin(self) -> None:
        if self.begun:
            return
        self.begun = True
        cpu0 = time.thread_time()
        self.t0 = time.monotonic_ns()
        src = self.src
        self.prev_cpu = sampling.read_cpu_jiffies(src, self.files)
        self.prev_t = self.t0
        if self.pid is None:  # prepare(): the process does not exist yet
            self.prev_worker: int | None = 0
            self.processes_max = 0
        else:
            tree = self._tree()
            self.prev_worker = tree.cpu_jiffies if tree else None
            self.processes_max = tree.processes if tree else 0
        self.swap0 = sampling.read_swap_pages(src, self.files)
        self.psi0 = sampling.read_psi(src, self.files)
        self.energy0 = sampling.read_values(src.energy)
        self.temps0 = {k: v for k, v in sampling.read_values(src.temps).items() if v is not None}
        self.cpu_s += time.thread_time() - cpu0

    def tree_reader(self) -> sampling.TreeReader:
        """The reader of the process and its descendants, made once (the process must still be alive: where
        the kernel has no children files, each sample scans /proc instead, a millisecond or more)."""
        if self.reader is None:
            assert self.pid is not None
            self.children_files = sampling.has_children_files(self.src.proc, self.pid)
            self.reader = sampling.TreeReader(
                self.src, self.pid, count_root=not self.launcher, children_files=self.children_files
            )
        return self.reader

    def _tree(self) -> sampling.TreeSample | None:
        return self.tree_reader().read()

    def _add(self, key: str, t: int, value: float, acc: bool = True) -> None:
        if acc:
            self.acc.add(key, value)
        if self.keep_series:
            self.series.append((key, t, float(value)))

    def sample(self) -> None:
        cpu0 = time.thread_time()
        now = time.monotonic_ns()
        t = now - self.t0
        self.samples += 1
        self._sample_cpus(t)
        self._sample_tree(t, (now - self.prev_t) / 1e9)
        self.prev_t = now
        src = self.src
        for name, khz in sampling.read_values(src.freq).items():
            if khz is not None:
                self._add(f"freq.{name}_khz", t, khz)
        for name, mc in sampling.read_values(src.temps).items():
            if mc is not None:
                self._add(f"temp.{name}_mc", t, mc)
        for name, state in sampling.read_values(src.cooling).items():
            if state:
                self.throttled = True
            if state is not None and self.keep_series:
                self.series.append((f"cooling.{name}", t, float(state)))
        for name, uw in sampling.read_values(src.power).items():
            if uw is not None:
                self._add(f"power.{name}_uw", t, uw)
        self.cpu_s += time.thread_time() - cpu0

    def _sample_cpus(self, t: int) -> None:
        cpu = sampling.read_cpu_jiffies(self.src, self.files)
        for c, (busy, total) in cpu.items():
            prev = self.prev_cpu.get(c)
            if prev is not None and total > prev[1]:
                pct = 100.0 * (busy - prev[0]) / (total - prev[1])
                self._add(f"cpu{c}.busy_pct", t, pct)
                if c != self.worker_cpu:
                    self.acc.add("other_cpus.busy_pct", pct)
        self.prev_cpu = cpu

    def _sample_tree(self, t: int, dt_s: float) -> None:
        if self.pid is None or self.ended:  # prepare()d for a process that could not be started, or reaped
            return
        tree = self._tree()
        if tree is None:
            return
        self.last_cpu, self.threads = tree.last_cpu, tree.threads
        self.processes_max = max(self.processes_max, tree.processes)
        if self.prev_worker is not None and dt_s > 0:
            # a process that left the tree unreaped (an orphan adopted by init) takes its time along
            pct = 100.0 * max(0, tree.cpu_jiffies - self.prev_worker) / self.src.clk_tck / dt_s
            self._add("worker.cpu_pct", t, pct)
        self.prev_worker = tree.cpu_jiffies
        if tree.processes:
            self.acc.add("worker.rss_kib", tree.rss_kib)
            if self.keep_series:
                self.series.append(("worker.rss_kib", t, float(tree.rss_kib)))
        if not self.launcher and self.pid is not None:
            self.status = sampling.read_status(self.src, self.pid) or self.status

    def output(self) -> MonitorOutput:
        cpu0 = time.thread_time()
        summary: dict = {"samples": self.samples, "interval_s": self.interval_s}
        for key, vals in self.acc.values.items():
            if key.startswith("temp."):
                summary[f"{key}_max"] = max(vals)
            elif key.startswith("worker.rss"):
                summary[f"{key}_max"] = max(vals)
            else:
                summary[f"{key}_mean"] = sum(vals) / len(vals)
            if key.startswith("freq."):
                summary[f"{key}_min"] = min(vals)
        status = self.status
        summary["temp_start_mc"] = self.temps0
        summary["throttled"] = self.throttled
        summary["worker_vm_hwm_kib"] = status.get("VmHWM")
        summary["worker_last_cpu"] = self.last_cpu
        summary["worker_threads"] = self.threads
        summary["worker_ctxt_switches"] = {k: status[k] for k in status if k.endswith("ctxt_switches")}
        summary["worker_tree"] = {
            "launcher_left_out": self.launcher,
            "processes_max": self.processes_max,
            "children_from": "task children files" if self.children_files else "a scan of /proc/*/stat",
        }
        summary.update(self._increases())
        wall_s = (time.monotonic_ns() - self.t0) / 1e9
        cpu_s = self.cpu_s + time.thread_time() - cpu0
        summary["monitor_cpu_s"] = cpu_s
        summary["monitor_wall_s"] = wall_s
        return MonitorOutput(series=self.series, summary=summary, cpu_s=cpu_s, wall_s=wall_s)

    def _increases(self) -> dict:
        """Swap pages, PSI stall time and energy counters: their increase since begin()."""
        src = self.src
        swap0, psi0, energy0 = self.swap0, self.psi0, self.energy0
        swap1 = sampling.read_swap_pages(src, self.files)
        psi1 = sampling.read_psi(src, self.files)
        energy1 = sampling.read_values(src.energy)
        return {
            # counters since boot only grow; less at the end means a swap device went off during the run
            "swap_pages": swap1 - swap0
            if swap0 is not None and swap1 is not None and swap1 >= swap0
            else None,
            "psi_some_us": {
                r: b - a for r, b in psi1.items() if b is not None and (a := psi0.get(r)) is not None
            },
            "energy_uj": {
                z: b - a
                for z, b in energy1.items()
                if b is not None and (a := energy0.get(z)) is not None and b >= a
            },
        }
