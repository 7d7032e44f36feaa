"""The campaign runner: gate, fresh pinned worker, monitor, collect, store.

Resumable by construction: the schedule is a pure function of the plan and its seed, and every finished
run is committed as it ends (runs shorter than WRITE_EVERY_S a few at a time), so running the same plan on
the same database again skips what is stored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from boardlab import __version__
from boardlab.campaign import pagecache
from boardlab.campaign.direct import DirectRuns
from boardlab.campaign.plan import plan_catalog
from boardlab.campaign.precision import PrecisionRule
from boardlab.campaign.schedule import cell_repetitions, reference_keys, schedule
from boardlab.campaign.session import Session, over_temperature, prepare
from boardlab.conditions.journal import RestoreJournal, SystemLock, not_restored
from boardlab.errors import InputError, MeasurementError
from boardlab.model.campaign import Cell, CommitIdentity, Plan, ScheduledRun
from boardlab.model.run import LOAD_DID_NOT_RUN, GateResult, MetricResult, RunResult
from boardlab.model.worker_result import WorkerResult, WorkerResultError, read_worker_result
from boardlab.model.workload import LaunchOptions, WorkloadSpec
from boardlab.monitor.sampler import Monitor, MonitorOutput
from boardlab.platform import sampling
from boardlab.platform.clock import start_evidence
from boardlab.platform.spawn import collect, spawn, stop_group
from boardlab.platform.sysroot import SysRoot
from boardlab.store import Store

# Runs that end within this of the last store of runs are stored with the next ones: a commit (0.4 ms on a
# VM's disk) cost a 0.5 ms program as much as its own run. A boardlab killed with SIGKILL loses at most this
# much of runs, which the campaign's resume runs again; a stop or an error stores them first.
WRITE_EVERY_S = 0.5


class Progress(Protocol):
    def start(self, campaign: str, total: int, done: int, resumed: bool) -> None: ...
    def gate(self, run: ScheduledRun, detail: str) -> None: ...
    def finished(self, run: ScheduledRun, result: RunResult, done: int, total: int) -> None: ...
    def note(self, message: str) -> None: ...


@dataclass(frozen=True)
class Outcome:
    campaign_id: int
    status: str  # complete | interrupted | failed
    runs_done: int
    runs_total: int
    reruns: int
    resumed: bool
    monitor_cost_pct_of_core: float | None
    loop_s: float = (
        0.0  # wall time of the run loop (gates, workers, monitor, commits): not its set-up or close
    )
    lock_waited_s: float = 0.0  # for another boardlab's system settings


@dataclass(frozen=True)
class _Worker:
    """One worker's life as the runner saw it."""

    started_unix_s: float
    t0_ns: int  # monotonic, at the spawn
    wall_ns: int  # spawn to reap
    timeout_s: float
    code: int
    out: bytes
    err: bytes
    rusage: dict[str, int]
    killed: bool  # at its timeout
    monitor: MonitorOutput
    result: WorkerResult | None = None  # made by the runner (a direct run): `out` holds its JSON, not re-read


@dataclass
class _Campaign:
    """A campaign while it runs: what it runs, what each run needs, and its tally so far."""

    session: Session
    campaign_id: int
    cell_ids: dict[str, int]
    resumed: bool
    info_dict: dict
    attempts: dict[tuple[str, int], list[bool]] = field(default_factory=dict)  # validity of each try
    gate: Callable[[], GateResult] | None = None
    execute: Callable[[ScheduledRun, int], RunResult] | None = None
    done: int = 0
    total: int = 0
    reruns: int = 0
    mon_cpu: float = 0.0  # the monitor's own CPU time and wall time, summed over the runs
    mon_wall: float = 0.0
    values: dict[str, list[float]] = field(default_factory=dict)  # each cell's valid values, as runs settle
    unwritten: list[tuple[int, RunResult]] = field(default_factory=list)  # (cell id, run) not yet stored
    written_at_s: float = 0.0  # monotonic, the last store of runs
    held_at_s: float = -math.inf  # monotonic, the last check that the lock and database are still held

    @property
    def cells(self) -> list[Cell]:
        return list(self.session.cells)

    @property
    def cpu(self) -> int | None:
        return self.session.cpu

    def keep(self, store: Store, key: str, result: RunResult) -> None:
        """The run among the campaign's: its value kept for the precision rule, and stored with the runs
        before it once WRITE_EVERY_S has passed since the last store (a run that long is stored as it
        ends)."""
        self.unwritten.append((self.cell_ids[key], result))
        if result.valid and result.value is not None:
            self.values.setdefault(key, []).append(result.value)
        if time.monotonic() - self.written_at_s >= WRITE_EVERY_S:
            self.write_runs(store)

    def write_runs(self, store: Store) -> None:
        if self.unwritten:
            store.record_runs(self.campaign_id, self.unwritten)
            self.unwritten.clear()
        self.written_at_s = time.monotonic()

    def settled(self, run: ScheduledRun, max_reruns: int) -> bool:
        """A valid run is stored, or every allowed rerun is used."""
        tries = self.attempts.get((run.cell.key, run.repetition), [])
        return any(tries) or len(tries) > max_reruns


def plan_hash(plan: Plan) -> str:
    return hashlib.sha256(plan.source.encode()).hexdigest()


def board_fingerprint(info_dict: dict) -> str:
    """Identity that survives reboots: model, CPUs and kernel; not temperatures or load."""
    ident = {
        "model": info_dict.get("model"),
        "machine": info_dict.get("machine"),
        "hostname": info_dict.get("hostname"),
        "cpus": [(c.get("cpu"), c.get("model_name")) for c in info_dict.get("cpus", [])],
        "kernel": (info_dict.get("kernel") or {}).get("release"),
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_problems(state: dict) -> list[str]:
    """Why a condition's load was not there for the whole run (it ended before the workload did): such a run
    is invalid and re-run, not a measurement under load; so is one whose load did not run at all (its
    state's `load_ran` is false: every start of a command failed, ddgzip finished no cycle). A load that
    needed SIGKILL at the end, or whose achieved rate could not be read, still loaded the run: that is
    recorded in its state, not invalidating."""
    parts = state.get("parts") or [state]
    return [
        f"{part.get('stressor') or part.get('kind') or 'the load'} ended before the workload did"
        for part in parts
        if part.get("load_exited_early")
    ] + [  # the condition's own account of its load (conditions/background.py record_health)
        f"{LOAD_DID_NOT_RUN} ({part.get('kind') or 'load'}): {part.get('load_failure') or 'no reason given'}"
        for part in parts
        if part.get("load_ran") is False
    ]


def _own_times(w: _Worker, doc: WorkerResult | None) -> tuple[int, dict[str, int]]:
    """A launcher workload's time columns (the run's wall_ns, and utime_us, stime_us, maxrss_kib of its
    rusage): its program's own (`WorkerResult.launched`), so that a run of `sleep 1` reads 1.0 s and not the
    launcher's interpreter start-up besides. The launcher's share is kept beside them (`launcher_*`); a
    result without them (the launcher failed before the program ran) keeps the worker's."""
    if doc is None or doc.launched is None:
        return w.wall_ns, w.rusage
    own = doc.launched
    rusage = {
        **w.rusage,
        "utime_us": own.utime_us,
        "stime_us": own.stime_us,
        "maxrss_kib": own.maxrss_kib,
        "launcher_wall_ns": max(0, w.wall_ns - own.wall_ns),
        "launcher_utime_us": max(0, w.rusage.get("utime_us", 0) - own.utime_us),
        "launcher_stime_us": max(0, w.rusage.get("stime_us", 0) - own.stime_us),
        "worker_maxrss_kib": w.rusage.get("maxrss_kib", 0),  # the launcher's and its program's, the larger
    }
    return own.wall_ns, rusage


def run_timeout_s(planned_s: float | None, params: dict, longest_run_s: float) -> float:
    """runs.timeout_s, else a generous default from the workload's own duration: 30 min (a slow board's
    longest kernel run is minutes), 4x a timed workload's duration_s plus 2 min, or 20x the longest run
    of the cell so far, whichever is longest. It exists to end a hang, not to judge a slow run."""
    if planned_s is not None:
        return planned_s
    duration = params.get("duration_s")
    timed = 4 * float(duration) + 120 if isinstance(duration, int | float) else 0.0
    return max(1800.0, timed, 20 * longest_run_s)


class Runner:
    def __init__(
        self,
        plan: Plan,
        catalog: dict[str, WorkloadSpec],
        store: Store,
        *,
        root: str = "/",
        progress: Progress,
        monitor_interval_s: float = 0.1,
        fresh: bool = False,
        lock_wait_s: float | None = None,
        label: str | None = None,
        identity: CommitIdentity | None = None,
    ):
        self.label = label  # the user's name for what changed since the last campaign (`run --label`)
        self.identity = identity  # the commit and branch measured (`run --commit`, campaign.identity)
        self.plan = plan
        self.lock_wait_s = lock_wait_s  # how long to wait for another boardlab's system lock (None: no limit)
        self.catalog = plan_catalog(plan, catalog)  # and the workloads the plan declares
        self.store = store
        self.root = root
        self.sr = SysRoot(root)
        self.progress = progress
        self.monitor_interval_s = monitor_interval_s
        self.fresh = fresh
        self._longest_ns: dict[str, int] = {}  # per cell: the longest run so far, for the default timeout
        self._warned: set[str] = (
            set()
        )  # cells whose worker warning was said (each run's result keeps its own)
        self._argvs: dict[str, list[str]] = {}  # per cell: its worker's command line, built once
        self._direct = DirectRuns()  # the runs it makes itself, with no worker (campaign.direct)
        # the plan's counters as boardlab-kern items and the reasons of those the board cannot count (read
        # once)
        self._counters_req: tuple[list[str], dict[str, str]] | None = None

    # ---- pieces of one run ----

    def _cpu_busy_pct(self, src, window_s: float) -> float:
        a = sampling.read_cpu_jiffies(src)
        time.sleep(window_s)
        b = sampling.read_cpu_jiffies(src)
        busy = sum(b[c][0] - a[c][0] for c in b if c in a)
        total = sum(b[c][1] - a[c][1] for c in b if c in a)
        return 100.0 * busy / total if total > 0 else 0.0

    def _gate(self, src, start_temps: dict[str, int]) -> GateResult:
        g = self.plan.gates
        t0 = time.monotonic()
        if g.cooldown_s:
            time.sleep(g.cooldown_s)
        details = []
        timed_out = False
        if g.idle:
            while True:
                load = self._cpu_busy_pct(src, g.idle_window_s)
                if load <= g.idle_threshold_pct:
                    details.append(f"idle: other load {load:.1f}% <= {g.idle_threshold_pct:g}%")
                    break
                if time.monotonic() - t0 >= g.timeout_s:
                    timed_out = True
                    details.append(f"idle: gave up after {g.timeout_s:g} s, other load {load:.1f}%")
                    break
        if g.temperature:
            if not start_temps:
                details.append("temperature: unsupported (no readable thermal zone)")
            else:
                while True:
                    now = {k: v for k, v in sampling.read_values(src.temps).items() if v is not None}
                    over = {
                        k: now[k] - start_temps[k]
                        for k in now
                        if k in start_temps and now[k] - start_temps[k] > g.temperature_delta_c * 1000
                    }
                    if not over:
                        details.append(f"temperature: within {g.temperature_delta_c:g} C of the start")
                        break
                    if time.monotonic() - t0 >= g.timeout_s:
                        timed_out = True
                        details.append(
                            "temperature: gave up, still "
                            + ", ".join(f"{k} +{v / 1000:.1f} C" for k, v in over.items())
                        )
                        break
                    time.sleep(0.5)
        return GateResult(waited_s=time.monotonic() - t0, timed_out=timed_out, detail="; ".join(details))

    def _page_cache(self, cell: Cell) -> dict:
        """runs.drop_caches: drop the page cache (root) or evict the workload's files; records which."""
        if not self.plan.runs.drop_caches:
            return {"page_cache": "not requested"}
        files = pagecache.workload_files(self.catalog[cell.workload], cell.params_dict)
        return pagecache.make_cold(self.sr, files)

    def _argv(self, cell: Cell) -> list[str]:
        """The workload's own `measured_argv` hook (boardlab-kern, `python -m boardlab.pyrun`, ...), called
        once per cell: the command line is a function of the cell's parameters and the plan's [runs]."""
        if cell.key not in self._argvs:
            self._argvs[cell.key] = self._build_argv(cell)
        return self._argvs[cell.key]

    def _build_argv(self, cell: Cell) -> list[str]:
        runs = self.plan.runs
        options = LaunchOptions(
            iterations=runs.iterations,
            warmup_max_iterations=runs.warmup_max_iterations,
            warmup_max_ms=runs.warmup_max_ms,
            warmup_cv=runs.warmup_cv,
            counters=tuple(self._counter_items()) if self.catalog[cell.workload].runner == "kern" else (),
        )
        measured_argv = self.catalog[cell.workload].measured_argv
        assert measured_argv is not None  # the catalog gives every workload one (workloads/__init__.py)
        return measured_argv(cell.params_dict, options)

    def _counter_items(self) -> list[str]:
        """The plan's [runs] counters as boardlab-kern items (PMU types read once from sysfs)."""
        return self._counter_request()[0]

    def _counter_request(self) -> tuple[list[str], dict[str, str]]:
        if self._counters_req is None:
            from boardlab.platform import perf

            self._counters_req = perf.counter_request(self.sr, self.plan.runs.counters)
        return self._counters_req

    def _counter_metrics(self, counters: Mapping) -> tuple[list[MetricResult], dict[str, str]]:
        """Counters of one run as metrics (one value per run, like the other metrics), and the reasons of
        those this board could not count."""
        if not self.plan.runs.counters:
            return [], {}
        from boardlab.platform import perf

        values, reasons = perf.derive_counters(self.plan.runs.counters, counters)
        reasons = {**self._counter_request()[1], **reasons}
        units = {"instructions": "count", "cycles": "count", "memory_access": "bus accesses per cycle",
                 "cci_congestion": "stall cycles per read"}  # fmt: skip
        metrics = [
            MetricResult(
                name=name,
                unit=units[name],
                higher_is_better=False,
                values=(v,),
                median=v,
                min=v,
                p90=v,
                p99=v,
            )  # fmt: skip
            for name, v in values.items()
        ]
        return metrics, reasons

    def _cpufreq(self) -> dict[str, dict]:
        """Governor and current frequency of every policy (read inside the conditions, after they apply)."""
        from boardlab.platform import cpufreq

        return {
            p: {
                "governor": self.sr.read_str(f"{cpufreq.policy_dir(p)}/scaling_governor"),
                "cur_khz": cpufreq.current_frequency_khz(self.sr, p),
            }
            for p in self._policies
        }

    @functools.cached_property
    def _policies(self) -> tuple[str, ...]:
        """The cpufreq policies, listed once: a policy's directory stays while its CPUs are offline, and the
        listing cost 14 us twice a run."""
        from boardlab.platform import cpufreq

        return cpufreq.list_policies(self.sr)

    def _execute(
        self, s: Session, sr_run: ScheduledRun, attempt: int, monitor: Monitor, start_temps: dict[str, int]
    ) -> RunResult:
        cell, cpu = sr_run.cell, s.cpu
        cache = self._page_cache(cell)  # before the gate, so that write-back and reclaim settle first
        gate = self._gate(monitor.src, start_temps)
        self.progress.gate(sr_run, gate.detail)
        condition = s.conditions[cell.condition]
        with contextlib.ExitStack() as stack:
            part_states, worker_cpus = self._apply_condition(s, stack, condition)
            cpufreq0 = self._cpufreq()
            clock = self._clock(s, cpufreq0) if self.plan.runs.measure_clock else None
            w = self._measure(cell, cpu, worker_cpus, monitor)
            cpufreq1 = self._cpufreq()
        # the condition may add to its state on exit (a stressor's achieved rate), so read it afterwards
        state = self._run_state(condition, part_states, worker_cpus, cache, cpufreq0, cpufreq1)
        if clock is not None:
            state = {**state, "clock": clock}
        result = self._result(s, sr_run, attempt, w, gate, state)
        if w.killed:
            why = f"timed out after {w.timeout_s:g} s (runs.timeout_s): killed with its process group"
            return dataclasses.replace(
                result, ok=False, valid=False, value=None, invalid_reason="failed", error=why
            )
        self._longest_ns[cell.key] = max(self._longest_ns.get(cell.key, 0), w.wall_ns)
        return s.energy.attach(result, w.t0_ns, w.t0_ns + w.wall_ns)  # the worker's exact life, clipped

    def _apply_condition(self, s: Session, stack: contextlib.ExitStack, condition):
        """Each part of the run's condition applied in order (undone in reverse by `stack`): their states,
        and the worker's CPUs (a part may move the worker, e.g. onto an isolated CPU)."""
        worker_cpus = self._pinned(s.cpu)
        part_states = []
        if condition.parts:  # journaled as one restore unit, which `boardlab restore` undoes whole
            stack.enter_context(s.ctx.journal.unit(f"combined condition {condition.name}"))
        for kind_name, params in condition.all_parts:
            kind = s.kinds[kind_name]
            part_states.append((kind_name, stack.enter_context(kind.apply(params, s.ctx))))
            if hasattr(kind, "worker_cpus"):
                wanted = kind.worker_cpus(params, s.ctx)
                worker_cpus = wanted if wanted is not None else worker_cpus
        return part_states, worker_cpus

    def _clock(self, s: Session, cpufreq: dict[str, dict]) -> dict:
        """[runs] measure_clock: the worker CPU's clock measured under the run's condition, just before the
        worker starts, beside the frequency its policy claims (campaign.clocks). A failed measurement is
        recorded, not the run's failure."""
        from boardlab.campaign.clocks import GAP, measure_cpu

        cpu = s.cpu
        if cpu is None:
            return {
                "measured_mhz": None,
                "reason": "the worker is not pinned (runs.cpu = 'none'): no CPU to measure",
            }
        policies = {p.name: p.cpus for p in s.info.cpufreq_policies}
        claimed = next((p["cur_khz"] for name, p in cpufreq.items() if cpu in policies.get(name, ())), None)
        try:
            fastest, median = measure_cpu(cpu, iterations=5, warmup_ms=20)
        except MeasurementError as exc:
            return {"measured_mhz": None, "scaling_cur_khz": claimed, "reason": str(exc)}
        gap = fastest / (claimed / 1000) - 1 if claimed else None
        return {"cpu": cpu, "measured_mhz": fastest, "median_mhz": median, "scaling_cur_khz": claimed,
                "gap": gap, "flagged": gap is not None and abs(gap) > GAP}  # fmt: skip

    def _pinned(self, cpu: int | None) -> set[int] | None:
        """The worker's CPUs: the plan's set (`cpu = [2, 3]`), else its one CPU, else None (not pinned)."""
        if self.plan.runs.cpu_set:
            return set(self.plan.runs.cpu_set)
        return {cpu} if cpu is not None else None

    def _measure(
        self, cell: Cell, cpu: int | None, worker_cpus: set[int] | None, monitor: Monitor
    ) -> _Worker:
        """The worker, spawned fresh, monitored, read to its end and reaped (a hung one is killed at its
        timeout with its group)."""
        launch = self._direct.launch(cell, self.catalog[cell.workload])
        if launch is not None and self._direct.ready:  # no worker: the runner starts the program itself
            timeout_s = self._timeout_s(cell)
            d = self._direct.measure(launch, cpu, worker_cpus, monitor, timeout_s)
            return _Worker(d.started_unix_s, d.t0_ns, d.wall_ns, timeout_s, 0 if d.result.ok else 1,
                           d.result.to_json().encode(), b"", dict(d.execution.rusage), d.killed, d.monitor,
                           d.result)  # fmt: skip
        started = time.time()
        t0 = time.monotonic_ns()
        timeout_s = self._timeout_s(cell)
        native = self.catalog[cell.workload].runner == "kern"
        proc = spawn(self._argv(cell), cpus=worker_cpus, self_reaping=native)
        monitored = False
        try:  # from the spawn on, a stop (Ctrl-C, SIGTERM, SIGHUP) at any point stops this worker
            monitor.start(proc.pid, cpu, launcher=self.catalog[cell.workload].launcher)
            monitored = True
            out, err, code, rusage, killed = collect(proc, timeout_s)
        except BaseException:
            stop_group(proc)
            if monitored:
                monitor.stop()
            raise
        finally:
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        wall_ns = time.monotonic_ns() - t0
        return _Worker(started, t0, wall_ns, timeout_s, code, out, err, rusage, killed, monitor.stop())

    def _run_state(self, condition, part_states, worker_cpus, cache, cpufreq0, cpufreq1) -> dict:
        """What the run ran under: the condition's state, the page cache, governors and frequencies."""
        governors0 = {p: s["governor"] for p, s in cpufreq0.items()}
        governors1 = {p: s["governor"] for p, s in cpufreq1.items()}
        if len(part_states) == 1:
            cond_state = part_states[0][1]
        else:  # a combined condition keeps each part's state apart
            cond_state = {"parts": [{"kind": k, **st} for k, st in part_states]}
        return {
            "condition": condition.name,
            "kind": condition.kind,
            "worker_cpus": sorted(worker_cpus) if worker_cpus else None,
            **cond_state,
            **cache,
            "governors": governors0,
            "governors_changed": governors0 != governors1,
            "cpufreq_before": cpufreq0,  # per policy: governor and scaling_cur_freq at the start ...
            "cpufreq_after": cpufreq1,  # ... and at the end of the run
        }

    def _timeout_s(self, cell: Cell) -> float:
        default = run_timeout_s(
            self.plan.runs.timeout_s, cell.params_dict, self._longest_ns.get(cell.key, 0) / 1e9
        )
        own = self.catalog[cell.workload].run_timeout_s  # a program's own timeout_s x iterations
        return default if own is None or self.plan.runs.timeout_s is not None else max(default, own + 120)

    def _result(self, s: Session, sr_run, attempt, w: _Worker, gate, state) -> RunResult:
        cell = sr_run.cell
        code, mon = w.code, w.monitor
        out, err = w.out.decode(errors="replace"), w.err.decode(errors="replace")
        error = None
        doc: WorkerResult | None = None
        if w.result is not None:
            doc = w.result
        elif not out.strip():
            error = f"worker exited {code} without a result: {err.strip()[:500]}"
        else:
            try:
                doc = read_worker_result(out)
            except WorkerResultError as exc:
                error = f"{exc} (exit {code}): {err.strip()[:500]}"
        if doc is not None and doc.warnings and cell.key not in self._warned:
            self._warned.add(cell.key)
            self.progress.note(
                f"{cell.key}: {doc.warnings[0]} (said once per cell: each run's result keeps it)"
            )
        if doc is not None and not doc.supported:
            error = f"unsupported here: {doc.reason}"
        elif doc is not None and not doc.ok:
            error = "; ".join(doc.errors) or f"worker failed (exit {code})"
        metrics = list(doc.metrics) if doc is not None else []
        counter_metrics, counter_reasons = self._counter_metrics(doc.counters) if doc else ([], {})
        metrics += counter_metrics
        if counter_reasons:
            state = {**state, "counters_unsupported": counter_reasons}
        value = next((m.median for m in metrics if m.name == cell.metric), None)
        ok = error is None and code == 0 and value is not None
        if ok is False and error is None:
            error = f"the result has no value for metric {cell.metric}"
        reasons = []
        if mon.summary.get("throttled"):
            reasons.append("throttled (a cpufreq cooling device was active)")
        if mon.summary.get("swap_pages"):
            reasons.append(f"swapped ({mon.summary['swap_pages']} pages in/out)")
        if state.get("governors_changed"):
            reasons.append("the cpufreq governor changed during the run")
        reasons += over_temperature(mon.summary, self.plan.runs.max_temp_c, s.temp_limits_mc)
        reasons += load_problems(state)
        valid = ok and not reasons
        wall_ns, rusage = (
            _own_times(w, doc) if self.catalog[cell.workload].launcher else (w.wall_ns, w.rusage)
        )
        return RunResult(
            cell_key=cell.key,
            repetition=sr_run.repetition,
            attempt=attempt,
            seq=sr_run.seq,
            started_unix_s=w.started_unix_s,
            wall_ns=wall_ns,
            cpu=s.cpu,
            exit_code=code,
            ok=ok,
            valid=valid,
            invalid_reason="; ".join(reasons) or (None if ok else "failed"),
            value=value,
            metrics=tuple(metrics),
            iterations_ns=doc.iterations_ns if doc else (),
            warmup_iterations=doc.warmup_iterations if doc else None,
            warmup_capped=doc.warmup_capped if doc else None,
            rusage=rusage,
            gate=gate,
            condition_state=state,
            monitor=mon.summary,
            series=tuple(mon.series),
            histograms=doc.histograms if doc else (),
            error=error,
            worker_json=out if doc is not None else None,  # a result that was read: valid JSON
            aa_arm=sr_run.aa_arm,
        )

    # ---- the campaign ----

    def run(self) -> Outcome:
        """The campaign, under the system lock of its tree (docs/safety.md): a second campaign on the same
        board waits here for the first to finish and restore what it changed."""
        from boardlab.campaign.holder import with_progress, withdraw

        lock = SystemLock(self.sr, f"campaign {self.plan.name}")
        waited_s = lock.acquire(self.lock_wait_s, with_progress(lock.path, self.progress.note))
        try:
            s = prepare(self.plan, self.catalog, self.root, self.progress.note, lock, waited_s)
            return dataclasses.replace(self._run(s), lock_waited_s=waited_s)
        finally:
            self._undo_leftovers()
            withdraw(lock.path)
            lock.release()

    def _check_held(self, s: Session) -> None:
        """The system lock and the database are still the files at their paths (before a run, at most every
        WRITE_EVERY_S, and before the campaign is called complete): a lock file removed under a campaign let
        a second one run beside it, a database removed under it took its runs where nobody would read them."""
        s.lock.check()
        self.store.check_file()

    def _undo_leftovers(self) -> None:
        """A stop can land between a setting's write and its condition's bookkeeping; the journal still
        holds the change, and it is undone here, before another campaign may take the lock. What cannot be
        undone is said and stays for `boardlab restore`."""
        for r in RestoreJournal(self.sr).undo_own():
            if r.failed:
                self.progress.note(str(not_restored(r)))
            else:
                self.progress.note(f"restored {r.what}: {r.detail}")

    def _run(self, s: Session) -> Outcome:
        """The campaign stored (or found: a resume) and run."""
        from boardlab.campaign.holder import announce

        info_dict = s.info.to_dict()
        board_id = self.store.upsert_board(
            board_fingerprint(info_dict), s.info.model or s.info.hostname or "unknown board", info_dict
        )
        phash = plan_hash(self.plan)
        existing = None if self.fresh else self.store.find_campaign(phash, board_id)
        if existing is not None and existing["status"] == "complete":
            self.progress.note(
                f"campaign {self.plan.name!r} is already complete in {self.store.path} "
                f"(id {existing['id']}); use --fresh to run it again"
            )
            return Outcome(existing["id"], "complete", 0, 0, 0, True, None)
        if existing is not None:
            self._same_commit(existing["id"])
        environment = self._environment(s, info_dict)
        campaign_id = self._open_campaign(existing, board_id, phash, environment)
        announce(s.lock.path, self.store.path, campaign_id)  # a waiting campaign reads its progress
        cells = list(s.cells)
        cell_ids = self.store.ensure_cells(campaign_id, cells, s.conditions, self._units(cells))
        self._store_facts(s, campaign_id)
        c = _Campaign(s, campaign_id, cell_ids, existing is not None, info_dict)
        return self._campaign(c, set(s.info.online_cpus))

    def _same_commit(self, campaign_id: int) -> None:
        """A campaign measures one commit: resuming it with another would mix two builds in its cells."""
        stored = self.store.campaign_identities([campaign_id]).get(campaign_id)
        given = self.identity.sha if self.identity else None
        if stored and stored[0] and given and stored[0] != given:
            raise InputError(
                f"campaign {campaign_id} in {self.store.path} measured commit {stored[0][:12]}, not "
                f"{given[:12]}: a resume would mix two builds; give --fresh to start a campaign of this "
                "commit"
            )

    def _store_facts(self, s: Session, campaign_id: int) -> None:
        """What the report needs to know of the workloads and cells, kept with the campaign so any host can
        report it."""
        from boardlab.campaign.facts import store_cell_facts, store_facts

        store_cell_facts(self.store, campaign_id, s.plan, list(s.cells))
        if store_facts(self.store, campaign_id, self.catalog, self.root):
            self.progress.note(
                "this campaign was stored without its workloads' facts: derived from this catalog"
            )

    def _units(self, cells: list[Cell]) -> dict[str, tuple[str, bool]]:
        units = {}
        for cell in cells:
            metric = next(m for m in self.catalog[cell.workload].metrics if m.name == cell.metric)
            units[cell.key] = (metric.unit, metric.higher_is_better)
        return units

    def _environment(self, s: Session, info_dict: dict) -> dict:
        """What the campaign ran with, stored with it; the energy meter's reason said when it has none."""
        from boardlab.native import kernel_catalog

        cpu, support = s.cpu, s.support

        environment = {
            "capabilities": info_dict.get("capabilities"),
            "checks": info_dict.get("checks"),
            "worker_cpu": cpu,
            "worker_cpus": sorted(self._pinned(cpu) or ()) or None,  # a set (`cpu = [2, 3]`), or the one CPU
            "skipped_conditions": support.conditions,
            "skipped_workloads": support.workloads,
            "skipped_cells": support.cells,
            # compiler and flags of the native kernels: what a SciMark or MiBench figure was built with
            "kern_build": kernel_catalog().get("build"),
            # the boot and the monotonic clock, which a board's history trusts where its wall clock went back
            "clock": start_evidence("/"),
            # the gates this start ran under: `run --gate-timeout` changes them without changing the plan
            "gates": dataclasses.asdict(self.plan.gates),
        }
        environment["energy"] = s.energy.environment()
        if s.energy.reason():
            self.progress.note(f"energy: {s.energy.reason()}")
        return environment

    def _open_campaign(self, existing, board_id: int, phash: str, environment: dict) -> int:
        from boardlab.native import kernel_catalog

        if existing is not None:
            self.store.set_campaign_status(existing["id"], "running")
            return existing["id"]
        return self.store.create_campaign(
            name=self.plan.name,
            plan_hash=phash,
            plan_source=self.plan.source_name,
            plan_text=self.plan.source,
            board_id=board_id,
            boardlab_version=__version__,
            kern_version=kernel_catalog().get("version"),
            root=str(self.root),
            environment=environment,
        )

    def _campaign(self, c: _Campaign, online: set[int]) -> Outcome:
        """The run loop, with the orchestrator off the measured CPU when there is another one; whatever
        happens, the campaign's status and monitor cost are stored and every setting restored."""
        own_before = os.sched_getaffinity(0)
        pinned = self._pinned(c.cpu)
        others = (online - pinned) & own_before if pinned is not None else set()
        if (
            others
        ):  # the loop and what it starts (loads, the energy meter's commands) stay off the worker's CPU
            os.sched_setaffinity(0, others)
        monitor = Monitor(self.root, interval_s=self.monitor_interval_s, cpus=others or None)
        s = c.session
        s.energy.start(self.store, c.campaign_id, others or None)
        start_temps = {k: v for k, v in sampling.read_values(monitor.src.temps).items() if v is not None}
        c.attempts = self.store.attempts(c.campaign_id)
        c.values = self._valid_values(c.campaign_id)  # a resumed campaign's; then kept as runs settle
        c.gate = lambda: self._gate(monitor.src, start_temps)
        c.execute = lambda sr_run, attempt: self._execute(s, sr_run, attempt, monitor, start_temps)
        status = "interrupted"
        if any(self._direct.launch(cell, self.catalog[cell.workload]) for cell in c.cells):
            fallback = self._direct.open()  # its launcher, started off the measured CPU like the loop
            if fallback:
                self.progress.note(fallback)
        try:
            planned, rounds, references = self._plan_rounds(c)
            monitor.ready()  # its thread, off the measured CPU, exists before the first worker does
            loop_t0 = time.monotonic()
            self._rounds(c, planned, rounds, references)
            s.energy.finish(c.gate)
            loop_s = time.monotonic() - loop_t0  # the runs, not the campaign's closing below
            self._check_held(s)
            status = "complete"
        finally:
            c.write_runs(self.store)  # the runs that ended before a stop too
            s.energy.stop()
            monitor.close()
            self._direct.close()
            os.sched_setaffinity(0, own_before)
            s.ctx.cleanup()
            cost = self._close_campaign(c, status)
        return Outcome(c.campaign_id, status, c.done, c.total, c.reruns, c.resumed, cost, loop_s)

    def _plan_rounds(self, c: _Campaign):
        """The schedule of the planned rounds (fixed repetitions, or the precision rule's pilot), stored as
        the campaign's planned run count; what a resumed campaign already has is counted done."""
        plan = c.session.plan
        policy = plan.runs
        per_cell = cell_repetitions(plan, c.cells) if policy.precision is None else None
        rounds = range(1, (max(per_cell.values()) if per_cell else policy.pilot) + 1)
        references = reference_keys(plan, c.cells)
        planned = schedule(c.cells, policy.order, plan.seed, rounds, references, per_cell)
        c.total = len(planned)
        self.store.set_campaign_context(
            c.campaign_id, label=self.label, inventory=c.info_dict, runs_planned=c.total
        )
        if self.identity is not None:
            i = self.identity
            self.store.set_campaign_identity(c.campaign_id, i.sha, i.describe, i.branch)
        c.done = sum(1 for r in planned if c.settled(r, policy.max_reruns))
        self.progress.start(self.plan.name, c.total, c.done, c.resumed)
        return planned, rounds, references

    def _rounds(self, c: _Campaign, planned: list[ScheduledRun], rounds: range, references) -> None:
        """The planned rounds, then (precision rule) one more round of the cells not yet precise enough
        until none is left or the cap is reached."""
        policy = self.plan.runs
        extra_round = rounds.stop
        rule = PrecisionRule(c.session.plan, self.catalog, c.session.conditions, c.session.cells)
        while True:
            for sr_run in planned:
                self._settle(c, sr_run)
            if policy.precision is None or extra_round > policy.cap:
                return
            if extra_round == rounds.stop:  # the pilot is complete: predict, and warn over the cap
                for note in rule.after_pilot(c.values):
                    self.progress.note(note)
            pending = [cell for cell in c.cells if not rule.precise_enough(c.values, cell)]
            if not pending:
                return
            planned = schedule(pending, policy.order, self.plan.seed, [extra_round], references)
            c.total += sum(1 for r in planned if not c.settled(r, policy.max_reruns))
            extra_round += 1

    def _settle(self, c: _Campaign, sr_run: ScheduledRun) -> None:
        """Runs one scheduled run until it has a valid result or has used its reruns; each run is stored
        as it ends, or with the next ones within WRITE_EVERY_S (_Campaign.keep)."""
        assert c.gate is not None and c.execute is not None  # set by _campaign, which calls this
        max_reruns = self.plan.runs.max_reruns
        tries = c.attempts.setdefault((sr_run.cell.key, sr_run.repetition), [])
        while not c.settled(sr_run, max_reruns):
            # As often as runs are stored, not before each one: its four stat calls cost a 0.5 ms program
            # a twentieth of the harness's time; a run of WRITE_EVERY_S or longer is still checked before.
            if time.monotonic() - c.held_at_s >= WRITE_EVERY_S:
                self._check_held(c.session)
                c.held_at_s = time.monotonic()
            c.session.energy.before_run(sr_run.seq, sr_run.block, c.gate)
            result = c.execute(sr_run, len(tries) + 1)
            c.keep(self.store, sr_run.cell.key, result)
            tries.append(result.valid)
            c.mon_cpu += result.monitor.get("monitor_cpu_s", 0.0)
            c.mon_wall += result.monitor.get("monitor_wall_s", 0.0)
            c.reruns += len(tries) > 1
            if not result.ok:  # a failed worker (not a disturbed one) will fail again: don't loop on it
                tries += [False] * max_reruns
            c.done += c.settled(sr_run, max_reruns)
            self.progress.finished(sr_run, result, c.done, c.total)

    def _close_campaign(self, c: _Campaign, status: str) -> float | None:
        """The campaign's status, the monitor's measured cost and what was skipped; the cost is returned."""
        cost = 100.0 * c.mon_cpu / c.mon_wall if c.mon_wall > 0 else None
        self.store.set_campaign_status(
            c.campaign_id,
            status,
            monitor={
                "interval_s": self.monitor_interval_s,
                "cpu_s": c.mon_cpu,
                "wall_s": c.mon_wall,
                "cost_pct_of_core": cost,
                **c.session.energy.cost(),
            },
            notes={
                "reruns": c.reruns,
                "skipped_conditions": c.session.support.conditions,
                "skipped_workloads": c.session.support.workloads,
                "skipped_cells": c.session.support.cells,
            },
        )
        return cost

    def _valid_values(self, campaign_id: int) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for r in self.store.runs(campaign_id):
            if r["valid"] and r["value"] is not None:
                out.setdefault(r["cell_key"], []).append(r["value"])
        return out
