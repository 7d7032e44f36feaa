"""The governors' decisions, as pure functions of one sample (research notes 3.2-3.4 and 1.3).

The daemon (on a board or a simulator tree) and `governor simulate` call the same code: each policy gets a
`Sample` per cluster every sampling period and returns the frequency to set. Frequencies are kHz; a target
is resolved to an OPP of the policy's table the way the kernel's relation flags do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

POLICIES = ("ondemand", "conservative", "schedutil-like", "anti-snoop")


@dataclass(frozen=True)
class Sample:
    load_pct: float  # max over the policy's CPUs of busy time over the last period (dbs_update)
    cur_khz: int
    table_khz: tuple[int, ...]  # ascending
    min_khz: int  # policy limits (scaling_min/max_freq)
    max_khz: int
    # Anti-snoop features: of the *other* cluster (where the memory-bound task runs); None if unknown.
    cci_congestion: float | None = None
    memory_access: float | None = None
    other_khz: int | None = None


def resolve(table: tuple[int, ...], khz: float, relation: str, lo: int, hi: int) -> int:
    """RELATION_L: lowest OPP >= khz; RELATION_H: highest <= khz; RELATION_C: closest; within lo..hi."""
    allowed = [f for f in table if lo <= f <= hi] or [min(table, key=lambda f: abs(f - lo))]
    if relation == "L":
        return next((f for f in allowed if f >= khz), allowed[-1])
    if relation == "H":
        return next((f for f in reversed(allowed) if f <= khz), allowed[0])
    return min(allowed, key=lambda f: (abs(f - khz), -f))


@dataclass
class Ondemand:
    """drivers/cpufreq/cpufreq_ondemand.c od_update(): max above up_threshold, else proportional."""

    up_threshold: int = 95
    sampling_down_factor: int = 1
    rate_mult: int = 1
    name: str = "ondemand"

    def load_target(self, s: Sample) -> int:
        fmin, fmax = s.table_khz[0], s.table_khz[-1]  # cpuinfo limits, as mainline does
        if s.load_pct > self.up_threshold:
            if s.cur_khz < s.max_khz:
                self.rate_mult = self.sampling_down_factor
            return resolve(s.table_khz, s.max_khz, "H", s.min_khz, s.max_khz)
        self.rate_mult = 1
        return resolve(s.table_khz, fmin + s.load_pct * (fmax - fmin) / 100, "C", s.min_khz, s.max_khz)

    def decide(self, s: Sample) -> int:
        return self.load_target(s)


@dataclass
class Conservative:
    """cpufreq_conservative.c cs_dbs_update(): steps of freq_step % of the policy max."""

    up_threshold: int = 80
    down_threshold: int = 20
    freq_step_pct: int = 5
    requested_khz: int | None = None
    name: str = "conservative"

    def decide(self, s: Sample) -> int:
        req = self.requested_khz
        if req is None or not s.min_khz <= req <= s.max_khz:
            req = s.cur_khz
        step = self.freq_step_pct * s.max_khz // 100 or 5
        if s.load_pct > self.up_threshold:
            req = min(req + step, s.max_khz)
            self.requested_khz = req
            return resolve(s.table_khz, req, "H", s.min_khz, s.max_khz)
        if s.load_pct < self.down_threshold and req != s.min_khz:
            req = max(req - step, s.min_khz)
        self.requested_khz = req
        return resolve(s.table_khz, req, "L", s.min_khz, s.max_khz)


@dataclass
class SchedutilLike:
    """kernel/sched/cpufreq_schedutil.c with frequency-invariant utilisation: next = 1.25 * max * util/cap,
    util = load * cur/max; resolved to the lowest OPP at or above it. (Load stands in for PELT utilisation:
    the daemon sees idle time, not the scheduler's signal.)"""

    name: str = "schedutil-like"

    def decide(self, s: Sample) -> int:
        util = s.load_pct / 100 * s.cur_khz / s.table_khz[-1]
        return resolve(s.table_khz, 1.25 * s.table_khz[-1] * util, "L", s.min_khz, s.max_khz)


@dataclass
class AntiSnoop:
    """ondemand-anti-snoop (the governor study, Algorithm 2): ondemand's load target, but while the other
    cluster's CCI port stalls on snoops and its tasks are memory-bound (the trained tree, or T1/T2), step
    this cluster up one OPP; otherwise step down one OPP, never below the load-based frequency."""

    slow: Callable[[Sample], bool]
    base: Ondemand = field(default_factory=Ondemand)
    name: str = "anti-snoop"

    def decide(self, s: Sample) -> int:
        load_f = self.base.load_target(s)
        if s.load_pct > self.base.up_threshold:
            return load_f
        table = [f for f in s.table_khz if s.min_khz <= f <= s.max_khz] or list(s.table_khz)
        i = min(range(len(table)), key=lambda k: abs(table[k] - s.cur_khz))
        if s.cci_congestion is not None and s.memory_access is not None and self.slow(s):
            stall_f = table[min(i + 1, len(table) - 1)]
        else:
            stall_f = table[max(i - 1, 0)]
        return max(load_f, stall_f)


def thresholds_rule(t1: float, t2: float) -> Callable[[Sample], bool]:
    """The study's rule: cci_congestion > T1 and memory_access > T2."""
    # a sample without the counters (None) is not congested: the rule cannot fire without its evidence
    return lambda s: (
        s.cci_congestion is not None
        and s.cci_congestion > t1
        and s.memory_access is not None
        and s.memory_access > t2
    )


def make(name: str, slow: Callable[[Sample], bool] | None = None):
    if name == "ondemand":
        return Ondemand()
    if name == "conservative":
        return Conservative()
    if name == "schedutil-like":
        return SchedutilLike()
    if name == "anti-snoop":
        if slow is None:
            raise ValueError("anti-snoop needs a rule (a trained tree or thresholds)")
        return AntiSnoop(slow)
    raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(POLICIES)}")
