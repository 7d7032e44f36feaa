"""A big.LITTLE SoC simulator: a LIVE sysfs tree in a directory, driven by the memory-latency model.

`SimBoard(soc, root)` writes what the platform layer reads on a real board (cpufreq policies with their
scaling_* files and stats, devfreq, perf event_source PMUs, /proc/stat, cpu online) and `step(dt)` moves
time on: it reads back what a governor wrote (scaling_governor, scaling_setspeed, limits), applies it
(in-kernel governors run the same decisions as `policies`), runs the trace's task, and updates
scaling_cur_freq, time_in_state, total_trans, /proc/stat and the counters file. So `boardlab info --root`,
the `governor` condition and the governor daemon run against it exactly as against a board.

Counters have no sysfs file on a real board (they come from perf_event_open); the simulator publishes the
cumulative per-cluster values the daemon would read, in `run/boardlab-sim/counters.json` under the root.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from boardlab.governor import model, policies
from boardlab.governor.opp import ClusterSpec, SocSpec
from boardlab.platform.sysroot import SIM_MARKER, is_sim_root  # noqa: F401  (the simulator's own names)

COUNTERS = "run/boardlab-sim/counters.json"
KERNEL_GOVERNORS = ("conservative", "ondemand", "userspace", "powersave", "performance", "schedutil")
USER_HZ = 100
KERNEL_SAMPLING_S = 0.010  # the Exynos 5422's transition delay cap: ondemand/schedutil sample every 10 ms


@dataclass(frozen=True)
class Phase:
    """One phase of a trace: a task on `cluster` needing `instructions`; the other clusters' load."""

    cluster: str  # policy name
    instructions: float
    cpi: float  # core cycles per instruction when nothing misses
    dram_per_instruction: float  # accesses past the last-level cache per instruction (each crosses the CCI)
    other_load_pct: float = 3.0


@dataclass(frozen=True)
class Trace:
    name: str
    phases: tuple[Phase, ...]


def traces(soc: SocSpec) -> dict[str, Trace]:
    """The built-in traces: a memory-bound and a compute-bound task on the LITTLE (first) cluster, and
    a memory-bound one on the big cluster where there is one."""
    little = soc.clusters[0].policy
    out = {
        "memory-bound": Trace("memory-bound", (Phase(little, 2.0e8, 1.0, 0.02),)),
        "compute-bound": Trace("compute-bound", (Phase(little, 6.0e8, 1.0, 0.0002),)),
        "mixed": Trace(
            "mixed",
            (
                Phase(little, 2.0e8, 1.0, 0.0002),
                Phase(little, 1.0e8, 1.0, 0.02),
                Phase(little, 2.0e8, 1.0, 0.0002),
            ),
        ),
    }
    if len(soc.clusters) > 1:
        out["memory-bound-big"] = Trace(
            "memory-bound-big", (Phase(soc.clusters[1].policy, 3.0e8, 1.0, 0.02),)
        )
    return out


@dataclass
class _Cluster:
    spec: ClusterSpec
    cur_khz: int
    tis_s: dict[int, float] = field(default_factory=dict)
    trans: int = 0
    busy_s: list[float] = field(default_factory=list)
    idle_s: list[float] = field(default_factory=list)
    cycles: float = 0.0
    bus_access: float = 0.0
    cci_reads: float = 0.0
    cci_stall: float = 0.0
    gov_state: Any = None  # the in-kernel governor's policies.Policy, made at its first decision
    last_sample_s: float = 0.0
    window_busy: float = 0.0
    window_s: float = 0.0


class SimBoard:
    def __init__(self, soc: SocSpec, root: os.PathLike | str, *, governor: str = "ondemand"):
        self.soc = soc
        self.root = Path(root)
        self.t_s = 0.0
        self.energy_j = 0.0
        self.clusters = {c.policy: _Cluster(c, min(c.khz)) for c in soc.clusters}
        for c in self.clusters.values():
            n = len(c.spec.cpus)
            c.busy_s, c.idle_s = [0.0] * n, [0.0] * n
            c.tis_s = {k: 0.0 for k in c.spec.khz}
        self.control: dict[str, dict] = {}
        self._write_static(governor)
        self.sync()
        self.publish()

    # ---- the tree ----

    def _w(self, rel: str, text: str) -> None:
        p = self.root / rel
        try:
            if p.read_text() == text:
                # the tree says it already (46% of a simulated trace's writes: a frequency or a counter that
                # did not move): a reader sees the same either way, and the rename cost 1.4 ms on ext4
                return
        except OSError:
            pass  # not there yet
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".sim-tmp")
        tmp.write_text(text)
        os.replace(tmp, p)  # a reader never sees half a file

    def _r(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_text().strip()
        except OSError:
            return None

    def _write_static(self, governor: str) -> None:
        soc = self.soc
        ncpu = sum(len(c.cpus) for c in soc.clusters)
        self._w(SIM_MARKER, soc.name + "\n")
        cpu = "sys/devices/system/cpu"
        for f in ("online", "possible", "present"):
            self._w(f"{cpu}/{f}", f"0-{ncpu - 1}\n" if ncpu > 1 else "0\n")
        self._w(
            "proc/cpuinfo",
            "".join(f"processor\t: {i}\nmodel name\t: ARMv7 Processor rev 3 (v7l)\n\n" for i in range(ncpu)),
        )
        for c in soc.clusters:
            d = f"{cpu}/cpufreq/{c.policy}"
            cpus = " ".join(map(str, c.cpus)) + "\n"
            self._w(f"{d}/affected_cpus", cpus)
            self._w(f"{d}/related_cpus", cpus)
            self._w(f"{d}/cpuinfo_min_freq", f"{min(c.khz)}\n")
            self._w(f"{d}/cpuinfo_max_freq", f"{max(c.khz)}\n")
            self._w(f"{d}/cpuinfo_transition_latency", f"{soc.transition_latency_ns}\n")
            self._w(f"{d}/scaling_available_frequencies", " ".join(map(str, c.khz)) + " \n")
            self._w(f"{d}/scaling_available_governors", " ".join(KERNEL_GOVERNORS) + " \n")
            self._w(f"{d}/scaling_driver", "cpufreq-dt\n")
            self._w(f"{d}/scaling_governor", governor + "\n")
            self._w(f"{d}/scaling_min_freq", f"{min(c.khz)}\n")
            self._w(f"{d}/scaling_max_freq", f"{max(c.khz)}\n")
            self._w(
                f"{d}/scaling_setspeed", "<unsupported>\n" if governor != "userspace" else f"{min(c.khz)}\n"
            )
            for i in c.cpus:
                self._w(f"{cpu}/cpu{i}/online", "1\n")
                self._w(f"{cpu}/cpu{i}/topology/cluster_id", f"{soc.clusters.index(c)}\n")
        ev = "sys/bus/event_source/devices"
        for i, name in enumerate(["software", "tracepoint"] + [c.pmu for c in soc.clusters]):
            self._w(f"{ev}/{name}/type", f"{[1, 2][i] if i < 2 else 6 + i}\n")
        if soc.cci:
            self._w(f"{ev}/CCI_400_r1/type", "12\n")
        if soc.devfreq:
            d = f"sys/class/devfreq/{soc.devfreq}"
            self._w(f"{d}/available_frequencies", " ".join(map(str, soc.devfreq_hz)) + "\n")
            self._w(f"{d}/available_governors", "userspace performance powersave simple_ondemand\n")
            self._w(f"{d}/governor", "performance\n")
            self._w(f"{d}/min_freq", f"{min(soc.devfreq_hz)}\n")
            self._w(f"{d}/max_freq", f"{max(soc.devfreq_hz)}\n")
            self._w(f"{d}/cur_freq", f"{max(soc.devfreq_hz)}\n")
            self._w(f"{d}/polling_interval", "100\n")

    def bus_hz(self) -> int | None:
        if not self.soc.devfreq:
            return None
        d = f"sys/class/devfreq/{self.soc.devfreq}"
        gov = self._r(f"{d}/governor")
        lo, hi = int(self._r(f"{d}/min_freq") or 0), int(self._r(f"{d}/max_freq") or 0)
        return lo if gov == "powersave" else hi

    def publish(self) -> None:
        cpu = "sys/devices/system/cpu/cpufreq"
        stat_lines = []
        tot_busy = sum(sum(c.busy_s) for c in self.clusters.values())
        tot_idle = sum(sum(c.idle_s) for c in self.clusters.values())
        stat_lines.append(f"cpu  {int(tot_busy * USER_HZ)} 0 0 {int(tot_idle * USER_HZ)} 0 0 0 0 0 0")
        counters: dict[str, Any] = {"schema": 1, "t_s": self.t_s, "clusters": {}}
        for c in self.clusters.values():
            d = f"{cpu}/{c.spec.policy}"
            self._w(f"{d}/scaling_cur_freq", f"{c.cur_khz}\n")
            self._w(f"{d}/cpuinfo_cur_freq", f"{c.cur_khz}\n")
            self._w(
                f"{d}/stats/time_in_state",
                "".join(f"{k} {int(s * USER_HZ)}\n" for k, s in sorted(c.tis_s.items())),
            )
            self._w(f"{d}/stats/total_trans", f"{c.trans}\n")
            for i, n in enumerate(c.spec.cpus):
                stat_lines.append(
                    f"cpu{n} {int(c.busy_s[i] * USER_HZ)} 0 0 {int(c.idle_s[i] * USER_HZ)} 0 0 0 0 0 0"
                )
            counters["clusters"][c.spec.policy] = {
                "cpu_cycles": int(c.cycles),
                "bus_access": int(c.bus_access),
                "cci_read_requests": int(c.cci_reads),
                "cci_stall_cycles": int(c.cci_stall),
            }
        self._w("proc/stat", "\n".join(stat_lines) + "\n")
        self._w(COUNTERS, json.dumps(counters) + "\n")

    # ---- time ----

    def _other(self, c: _Cluster) -> _Cluster | None:
        others = [o for o in self.clusters.values() if o is not c]
        return others[0] if others else None

    def sync(self) -> None:
        """Reads back what a governor wrote (governor, setspeed, limits, devfreq); call after writers ran."""
        for c in self.clusters.values():
            d = f"sys/devices/system/cpu/cpufreq/{c.spec.policy}"
            text = self._r(f"{d}/scaling_setspeed") or ""
            self.control[c.spec.policy] = {
                "governor": self._r(f"{d}/scaling_governor") or "performance",
                "lo": int(self._r(f"{d}/scaling_min_freq") or min(c.spec.khz)),
                "hi": int(self._r(f"{d}/scaling_max_freq") or max(c.spec.khz)),
                "setspeed": int(text) if text.isdigit() else None,
            }
        self.bus = self.bus_hz()

    def _governed_khz(self, c: _Cluster, load_pct: float) -> int:
        ctl = self.control[c.spec.policy]
        gov, lo, hi, table = ctl["governor"], ctl["lo"], ctl["hi"], c.spec.khz
        if gov == "performance":
            return policies.resolve(table, hi, "H", lo, hi)
        if gov == "powersave":
            return policies.resolve(table, lo, "L", lo, hi)
        if gov == "userspace":
            want = ctl["setspeed"] if ctl["setspeed"] is not None else c.cur_khz
            return policies.resolve(table, want, "C", lo, hi)
        # In-kernel dbs/schedutil: the same decisions as the daemon's, every KERNEL_SAMPLING_S.
        name = {"schedutil": "schedutil-like"}.get(gov, gov)
        if c.gov_state is None or c.gov_state.name != name:
            c.gov_state = policies.make(name)
        return c.gov_state.decide(policies.Sample(load_pct, c.cur_khz, table, lo, hi))

    def step(self, dt_s: float, phase: Phase | None) -> float:
        """Advances `dt_s`; returns the instructions the phase's task retired in it."""
        done = 0.0
        power_w = 0.0
        bus = self.bus
        for c in self.clusters.values():
            runs_task = phase is not None and phase.cluster == c.spec.policy
            load = 100.0 if runs_task else (phase.other_load_pct if phase else 1.0)
            c.window_busy += load * dt_s
            c.window_s += dt_s
            gov = self.control[c.spec.policy]["governor"]
            if (
                gov in ("userspace", "performance", "powersave")
                or self.t_s - c.last_sample_s >= KERNEL_SAMPLING_S - 1e-9
            ):
                new = self._governed_khz(c, c.window_busy / c.window_s if c.window_s else 0.0)
                if gov not in ("userspace", "performance", "powersave"):
                    c.last_sample_s, c.window_busy, c.window_s = self.t_s, 0.0, 0.0
                if new != c.cur_khz:
                    c.cur_khz, c.trans = new, c.trans + 1
        for c in self.clusters.values():
            runs_task = phase is not None and phase.cluster == c.spec.policy
            load = 1.0 if runs_task else (phase.other_load_pct / 100 if phase else 0.01)
            ghz = c.cur_khz / 1e6
            c.tis_s[c.cur_khz] = c.tis_s.get(c.cur_khz, 0.0) + dt_s
            c.busy_s[0] += dt_s * load
            c.idle_s[0] += dt_s * (1 - load)
            for i in range(1, len(c.busy_s)):
                c.idle_s[i] += dt_s
            c.cycles += ghz * 1e9 * dt_s * load
            power_w += c.spec.cluster_power_w(c.cur_khz, load)
            if runs_task:
                assert phase is not None  # a cluster runs the task only while a phase is running
                other = self._other(c)
                wait = model.snoop_ns(
                    other.spec if other and self.soc.cci else None, other.cur_khz if other else None
                )
                dram = self.soc.dram_ns * ((max(self.soc.devfreq_hz) / bus) ** 0.5 if bus else 1.0)
                ns_per_instr = phase.cpi / ghz + phase.dram_per_instruction * (dram + wait)
                done = dt_s * 1e9 / ns_per_instr
                c.bus_access += done * phase.dram_per_instruction
                c.cci_reads += done * phase.dram_per_instruction
                c.cci_stall += (
                    done * phase.dram_per_instruction * (model.CCI_BASE_STALL + wait * model.CCI_CLOCK_GHZ)
                )
        self.energy_j += power_w * dt_s
        self.t_s += dt_s
        return done


def read_counters(root: os.PathLike | str) -> dict | None:
    try:
        return json.loads((Path(root) / COUNTERS).read_text())
    except (OSError, ValueError):
        return None


def run_trace(
    soc: SocSpec,
    trace: Trace,
    root: os.PathLike | str,
    *,
    controller=None,
    period_s: float = 0.010,
    kernel_governor: str = "ondemand",
    dt_s: float = 0.001,
    max_s: float = 120.0,
) -> dict:
    """Runs `trace` to completion on a fresh tree at `root`. Every `period_s` the tree is published,
    `controller(board)` (a userspace daemon's tick) runs and what it wrote is read back; without a
    controller the in-kernel `kernel_governor` decides."""
    board = SimBoard(soc, root, governor=kernel_governor)
    next_t = 0.0
    for phase in trace.phases:
        left = phase.instructions
        while left > 0:
            if board.t_s > max_s:
                raise RuntimeError(f"trace {trace.name} did not finish in {max_s} s of simulated time")
            if controller is not None and board.t_s + 1e-12 >= next_t:
                board.publish()
                controller(board)
                board.sync()
                next_t = board.t_s + period_s
            left -= board.step(dt_s, phase)
    board.publish()
    t, e = board.t_s, board.energy_j
    return {
        "trace": trace.name,
        "time_s": t,
        "energy_j": e,
        "edp_j_s": e * t,
        "time_in_state_s": {
            p: {k: round(s, 6) for k, s in c.tis_s.items() if s > 0} for p, c in board.clusters.items()
        },
    }
