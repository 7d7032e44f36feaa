"""A userspace governor daemon: the userspace cpufreq governor on every policy, and `scaling_setspeed`
driven every sampling period by one of `policies` (ondemand, conservative, schedutil-like, anti-snoop).

Every change goes through the restore journal first: the governor switch per policy, then scaling_setspeed
(its value right after the switch, which the restore writes back before the governor); later setspeed
writes are covered by that entry. Exit, Ctrl-C and SIGTERM undo them; after SIGKILL `boardlab restore` does.
The daemon measures its own CPU time per sample.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from boardlab.conditions.journal import RestoreJournal, not_restored
from boardlab.governor import policies, sim
from boardlab.platform import cpufreq, perf, sampling
from boardlab.platform.sysroot import SysRoot


class Unsupported(Exception):
    pass


@dataclass
class Counters:
    """Per-cluster cumulative counters -> per-period features of the cluster running the task."""

    read: Callable[[], dict[str, dict[str, int]] | None]
    describe: str
    last: dict | None = None

    def features(self) -> dict[str, tuple[float | None, float | None]]:
        """{policy: (cci_congestion, memory_access)} over the last period of that policy's CPUs."""
        now = self.read()
        prev, self.last = self.last, now
        out: dict[str, tuple[float | None, float | None]] = {}
        for pol, c in (now or {}).items():
            p = (prev or {}).get(pol)
            if p is None:
                out[pol] = (None, None)
                continue
            reads = c["cci_read_requests"] - p["cci_read_requests"]
            cycles = c["cpu_cycles"] - p["cpu_cycles"]
            cong = (c["cci_stall_cycles"] - p["cci_stall_cycles"]) / reads if reads > 0 else 0.0
            mem = (c["bus_access"] - p["bus_access"]) / cycles if cycles > 0 else 0.0
            out[pol] = (cong, mem)
        return out


def sim_counters(root: SysRoot) -> Counters | None:
    if not sim.is_sim_root(root.root):
        return None
    return Counters(lambda: (sim.read_counters(root.root) or {}).get("clusters"), "simulator counters file")


def perf_counters(
    root: SysRoot, clusters: dict[str, tuple[int, ...]], cci_source: dict[str, int]
) -> Counters:
    """BUS_ACCESS/CPU_CYCLES per CPU (system-wide) and CCI-400 read requests/stalls per cluster port.
    Raises Unsupported with the reason (no live system, no PMU, no CCI PMU, a perf error)."""
    if not root.live:
        raise Unsupported(f"hardware counters need the live system; {root.root} is a tree without perf")
    cci = perf.cci_pmu(root)
    if cci is None:
        raise Unsupported(
            "no CCI-400 PMU in /sys/bus/event_source/devices (the device tree needs an arm,cci-400-pmu node)"
        )
    fds: dict[str, dict[str, list[int]]] = {}
    for pol, cpus in clusters.items():
        f = fds.setdefault(
            pol, {"cpu_cycles": [], "bus_access": [], "cci_read_requests": [], "cci_stall_cycles": []}
        )
        for cpu in cpus:
            pmu = perf.core_pmu_for_cpu(root, cpu)
            if pmu is None:
                raise Unsupported(f"no core PMU counts CPU {cpu} (none in /sys/bus/event_source/devices)")
            for key, ev in (("cpu_cycles", perf.ARM_CPU_CYCLES), ("bus_access", perf.ARM_BUS_ACCESS)):
                fd, err = perf.open_event(pmu[1], ev, pid=-1, cpu=cpu)
                if fd is None:
                    raise Unsupported(f"{pmu[0]} event 0x{ev:x} on CPU {cpu}: {err}")
                f[key].append(fd)
        src = cci_source[pol]
        for key, name in (("cci_read_requests", "read_requests"), ("cci_stall_cycles", "read_stalls")):
            fd, err = perf.open_event(cci[1], src << 5 | perf.CCI_EVENTS[cci[0]][name], pid=-1, cpu=0)
            if fd is None:
                raise Unsupported(f"{cci[0]} {name} (source S{src}): {err}")
            f[key].append(fd)

    def read() -> dict:
        return {
            pol: {k: sum(perf.read_event(fd) for fd in v) for k, v in f.items()} for pol, f in fds.items()
        }

    return Counters(read, f"perf: {cci[0]} and core PMUs")


@dataclass
class Stats:
    samples: int = 0
    writes: int = 0
    cpu_s: float = 0.0
    written_khz: dict[str, set[int]] = field(default_factory=dict)

    def to_json(self, wall_s: float) -> dict:
        return {
            "samples": self.samples,
            "setspeed_writes": self.writes,
            "cpu_s": round(self.cpu_s, 6),
            "cpu_us_per_sample": round(1e6 * self.cpu_s / self.samples, 1) if self.samples else None,
            "cpu_share_pct": round(100 * self.cpu_s / wall_s, 3) if wall_s > 0 else None,
            "frequencies_written_khz": {p: sorted(v) for p, v in self.written_khz.items()},
        }


class Daemon:
    def __init__(self, root: SysRoot, policy: str, journal: RestoreJournal, *,
                 counters: Counters | None = None,
                 slow: Callable[[policies.Sample], bool] | None = None):  # fmt: skip
        self.root = root
        self.journal = journal
        self.counters = counters
        self.policy_name = policy
        self.names = list(cpufreq.list_policies(root))
        self.slow = slow
        self.stats = Stats()
        self.tokens: list[str] = []
        self.gov: dict[str, Any] = {}
        self.prev_jiffies: dict[int, tuple[int, int]] | None = None
        self.info: dict[str, Any] = {}

    def check(self, *, counters: bool = True) -> None:
        """Raises Unsupported with the reason this tree cannot run the daemon (cpufreq first, then, with
        `counters`, what anti-snoop needs)."""
        if not self.names:
            raise Unsupported(f"no cpufreq policy under {self.root.show(cpufreq.CPUFREQ_DIR)}")
        for name in self.names:
            p = cpufreq.read_policy(self.root, name)
            if "userspace" not in p.governors:
                raise Unsupported(f"{name} offers no userspace governor ({', '.join(p.governors)})")
            if not p.frequencies_khz:
                raise Unsupported(f"{name} publishes no frequency table")
            for attr in ("scaling_governor", "scaling_setspeed"):
                rel = f"{cpufreq.policy_dir(name)}/{attr}"
                if not self.root.writable(rel):
                    raise Unsupported(f"{self.root.show(rel)} is not writable by this user: run as root")
            self.info[name] = p
        if self.root.read_bytes("proc/stat") is None:
            raise Unsupported(f"no {self.root.show('proc/stat')}: the load cannot be measured")
        if self.policy_name == "anti-snoop" and counters:
            if self.counters is None:
                raise Unsupported("anti-snoop needs the CCI-400 and core counters (none here)")
            if len(self.names) < 2:
                raise Unsupported(
                    "anti-snoop needs two clusters (big.LITTLE); this board has one cpufreq policy"
                )

    def start(self) -> None:
        for name in self.names:
            self.gov[name] = policies.make(self.policy_name, self.slow)
            d = cpufreq.policy_dir(name)
            if self.root.read_str(f"{d}/scaling_governor") != "userspace":
                what = f"{name} cpufreq governor"
                self.tokens.append(self.journal.set(f"{d}/scaling_governor", "userspace", what=what))
            # Under userspace the kernel shows the current frequency in scaling_setspeed: that is what a
            # restore writes back (before the governor), so every later write is covered by this entry.
            cur = self.root.read_int(f"{d}/scaling_cur_freq") or self.info[name].frequencies_khz[0]
            start = policies.resolve(self.info[name].frequencies_khz, cur, "C", 0, 1 << 62)
            self.tokens.append(
                self.journal.set(f"{d}/scaling_setspeed", str(start), what=f"{name} scaling_setspeed")
            )
            self.stats.writes += 1
            self.stats.written_khz.setdefault(name, set()).add(start)
        self.prev_jiffies = sampling.cpu_jiffies(self.root.read_bytes("proc/stat") or b"")
        if self.counters is not None:
            self.counters.features()

    def _loads(self) -> dict[str, float]:
        now = sampling.cpu_jiffies(self.root.read_bytes("proc/stat") or b"")
        prev, self.prev_jiffies = self.prev_jiffies or {}, now
        out = {}
        for name, p in self.info.items():
            loads = []
            for cpu in p.related_cpus or p.cpus:
                if cpu in now and cpu in prev:
                    busy, total = now[cpu][0] - prev[cpu][0], now[cpu][1] - prev[cpu][1]
                    loads.append(100.0 * busy / total if total > 0 else 0.0)
            out[name] = max(loads, default=0.0)
        return out

    def tick(self) -> dict[str, int]:
        """One sampling period: measure, decide, write. Returns {policy: kHz written or kept}."""
        c0 = time.process_time()
        loads = self._loads()
        feats = self.counters.features() if self.counters is not None else {}
        out = {}
        for name, p in self.info.items():
            d = cpufreq.policy_dir(name)
            cur = self.root.read_int(f"{d}/scaling_cur_freq") or p.frequencies_khz[0]
            lo = self.root.read_int(f"{d}/scaling_min_freq") or p.frequencies_khz[0]
            hi = self.root.read_int(f"{d}/scaling_max_freq") or p.frequencies_khz[-1]
            others = [o for o in self.info if o != name]
            cong, mem = feats.get(others[0], (None, None)) if others else (None, None)
            other_khz = (
                self.root.read_int(f"{cpufreq.policy_dir(others[0])}/scaling_cur_freq") if others else None
            )
            s = policies.Sample(loads[name], cur, p.frequencies_khz, lo, hi, cong, mem, other_khz)
            khz = self.gov[name].decide(s)
            if khz not in p.frequencies_khz:  # never write what the policy does not offer
                raise RuntimeError(f"{name}: policy {self.policy_name} chose {khz} kHz, not an OPP")
            if str(khz) != (self.root.read_str(f"{d}/scaling_setspeed") or ""):
                self.root.write_text(f"{d}/scaling_setspeed", str(khz))
                self.stats.writes += 1
                self.stats.written_khz.setdefault(name, set()).add(khz)
            out[name] = khz
        self.stats.samples += 1
        self.stats.cpu_s += time.process_time() - c0
        return out

    def stop(self) -> list[str]:
        """Undoes the journaled changes, newest first; returns what was restored."""
        done = []
        first: BaseException | None = None
        for token in reversed(self.tokens):
            try:
                r = self.journal.undo(token)
                if r is not None:
                    done.append(f"{r.what}: {r.detail}")
            except Exception as exc:  # stays in the journal for `boardlab restore`; raised after the rest
                first = first or exc
        self.tokens.clear()
        for r in self.journal.undo_own():  # a write whose token a stop took before `start` kept it
            if r.failed is None:
                done.append(f"{r.what}: {r.detail}")
            else:
                first = first or not_restored(r)
        if first is not None:
            raise first
        return done


def run_forever(daemon: Daemon, sampling_s: float, duration_s: float | None, progress=None) -> float:
    """Ticks every sampling period until duration_s (None: until interrupted); returns wall seconds."""
    t0 = time.monotonic()
    next_t = t0
    while duration_s is None or time.monotonic() - t0 < duration_s:
        next_t += sampling_s
        khz = daemon.tick()
        if progress is not None:
            progress(time.monotonic() - t0, khz)
        time.sleep(max(0.0, next_t - time.monotonic()))
    return time.monotonic() - t0
