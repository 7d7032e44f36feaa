"""Idle power, dynamic energy and efficiency per cell, derived from the metric's unit, never its name.

- Idle: the power of the idle windows taken (after the idle gate) before and after each block of runs,
  interpolated in time to each run; `energy_dynamic_j = energy_j - power_idle_w x t`.
- Efficiency from the cell's metric unit: GFLOPS/W for FLOP rates (MFLOPS, GFLOPS, flop/s), nJ/bit for data
  rates (B/s, MB/s, MiB/s, bit/s, Mbit/s ...), J/op for other rates ("frames/s"), perf/W for every
  higher-is-better metric, J/run for lower-is-better ones; each with total and with dynamic watts (the
  data-stream study's 2.40 GFLOPS / (5.03 W - 2.02 W) = 0.80 GFLOPS/W is the dynamic one).
- EDP = E x t (J*s) and ED^2P = E x t^2 (Gonzalez & Horowitz 1996), t = the run's wall time.
Each figure is summarised per cell as the median over runs with a percentile bootstrap CI resampling whole
runs (stats/bootstrap.py), as the primary metric is.
"""

from __future__ import annotations

import math
import random
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from boardlab.stats.bootstrap import bootstrap_median_draws, percentile_interval

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BIN = {"Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4}
_FLOPS = re.compile(r"^(?P<p>[kKMGT]?)(?:flops|flop/s)$", re.IGNORECASE)
_BYTES = re.compile(r"^(?P<p>[kKMGT]i?)?(?:B/s|Bps|bytes/s)$")
_BITS = re.compile(r"^(?P<p>[kKMGT]i?)?(?:bit/s|bps|b/s)$")
_RATE = re.compile(r"^(?P<what>[A-Za-z_ ]+)/s$")
_TIME = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def _scale(prefix: str | None) -> float:
    p = prefix or ""
    return _BIN[p] if p in _BIN else _SI[p[:1]] if p else 1.0


@dataclass(frozen=True)
class UnitKind:
    kind: str  # flops | bits | ops | time | other
    to_base: float  # multiply a value to get FLOP/s, bit/s, op/s, or s
    op: str = "op"  # what one operation is called (for J/op)


def classify_unit(unit: str) -> UnitKind:
    u = unit.strip()
    if m := _FLOPS.match(u):
        return UnitKind("flops", _SI[m["p"].upper()])  # "mflops" is SciMark's MFLOPS, not milli-FLOPS
    if m := _BYTES.match(u):
        return UnitKind("bits", 8 * _scale(m["p"]))
    if m := _BITS.match(u):
        return UnitKind("bits", _scale(m["p"]))
    if m := _RATE.match(u):
        return UnitKind("ops", 1.0, m["what"].strip().rstrip("s") or "op")
    if u in _TIME:
        return UnitKind("time", _TIME[u])
    return UnitKind("other", 1.0)


@dataclass(frozen=True)
class IdleWindow:
    started_unix_s: float
    duration_s: float
    power_w: float


def idle_power_at(windows: Sequence[IdleWindow], unix_s: float) -> float | None:
    """The idle power at a run's time: linear between the idle windows before and after it (the board may
    drift warmer over a block), the nearest one when it is on one side only."""
    if not windows:
        return None
    ws = sorted(windows, key=lambda w: w.started_unix_s)
    mids = [w.started_unix_s + w.duration_s / 2 for w in ws]
    if unix_s <= mids[0]:
        return ws[0].power_w
    if unix_s >= mids[-1]:
        return ws[-1].power_w
    for i in range(1, len(ws)):
        if mids[i] >= unix_s:
            f = (unix_s - mids[i - 1]) / (mids[i] - mids[i - 1])
            return ws[i - 1].power_w + f * (ws[i].power_w - ws[i - 1].power_w)
    return ws[-1].power_w  # pragma: no cover


@dataclass(frozen=True)
class RunFigures:
    """One run's energy figures (one source)."""

    energy_j: float
    duration_s: float
    power_avg_w: float
    power_idle_w: float | None
    energy_dynamic_j: float | None
    power_dynamic_w: float | None
    edp_js: float
    ed2p_js2: float
    efficiency_total: float | None  # in Efficiency.unit, with total watts
    efficiency_dynamic: float | None  # with dynamic watts (power above idle)


@dataclass(frozen=True)
class Efficiency:
    name: str  # "GFLOPS/W", "nJ/bit", "J/frame", "MB/s per W", "J/run"
    unit: str
    higher_is_better: bool


def efficiency_kind(unit: str, higher_is_better: bool) -> Efficiency:
    k = classify_unit(unit)
    if higher_is_better and k.kind == "flops":
        return Efficiency("GFLOPS/W", "GFLOPS/W", True)
    if higher_is_better and k.kind == "bits":
        return Efficiency("energy per bit", "nJ/bit", False)
    if higher_is_better and k.kind == "ops":
        return Efficiency(f"energy per {k.op}", f"J/{k.op}", False)
    if higher_is_better:
        return Efficiency("perf/W", f"{unit}/W", True)
    return Efficiency("energy per run", "J/run", False)


def _eff(
    value: float | None, unit: str, hib: bool, watts: float | None, energy_j: float | None
) -> float | None:
    if watts is None or energy_j is None:
        return None
    e = efficiency_kind(unit, hib)
    if e.unit == "J/run":
        return energy_j
    if value is None or watts <= 0 or value <= 0:
        return None
    k = classify_unit(unit)
    if e.unit == "GFLOPS/W":
        return value * k.to_base / 1e9 / watts
    if e.unit == "nJ/bit":
        return watts / (value * k.to_base) * 1e9
    if e.unit.startswith("J/"):
        return watts / value
    return value / watts


def run_figures(
    *,
    energy_j: float,
    duration_s: float,
    power_idle_w: float | None,
    value: float | None,
    unit: str,
    higher_is_better: bool,
) -> RunFigures:
    p_avg = energy_j / duration_s
    e_dyn = None if power_idle_w is None else energy_j - power_idle_w * duration_s
    p_dyn = None if e_dyn is None else e_dyn / duration_s
    return RunFigures(
        energy_j=energy_j,
        duration_s=duration_s,
        power_avg_w=p_avg,
        power_idle_w=power_idle_w,
        energy_dynamic_j=e_dyn,
        power_dynamic_w=p_dyn,
        edp_js=energy_j * duration_s,
        ed2p_js2=energy_j * duration_s**2,
        efficiency_total=_eff(value, unit, higher_is_better, p_avg, energy_j),
        efficiency_dynamic=_eff(value, unit, higher_is_better, p_dyn, e_dyn),
    )


@dataclass(frozen=True)
class Estimate:
    median: float
    ci_low: float | None  # 95% percentile bootstrap over runs; None below 3 runs
    ci_high: float | None
    n: int


def estimate(values: Sequence[float | None], *, seed: int = 0, resamples: int = 2000) -> Estimate | None:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    med = statistics.median(vals)
    if len(vals) < 3:
        return Estimate(med, None, None, len(vals))
    draws = bootstrap_median_draws(vals, resamples, random.Random(seed))
    lo, hi = percentile_interval(draws, 0.95)
    return Estimate(med, lo, hi, len(vals))


FIGURES = (
    ("energy_j", "energy", "J"),
    ("power_avg_w", "average power", "W"),
    ("power_idle_w", "idle power", "W"),
    ("energy_dynamic_j", "dynamic energy", "J"),
    ("power_dynamic_w", "dynamic power", "W"),
    ("edp_js", "EDP", "J*s"),
    ("ed2p_js2", "ED^2P", "J*s^2"),
    ("efficiency_total", "efficiency (total W)", ""),
    ("efficiency_dynamic", "efficiency (dynamic W)", ""),
)


def cell_estimates(runs: Sequence[RunFigures], *, seed: int = 0) -> dict[str, Estimate | None]:
    return {f: estimate([getattr(r, f) for r in runs], seed=seed + i) for i, (f, _, _) in enumerate(FIGURES)}
