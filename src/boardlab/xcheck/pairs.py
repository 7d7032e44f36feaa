"""Interleaved pairs and the median of their ratios (the statistic every cross-check reports)."""

from __future__ import annotations

import os
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


def kern_command(kern: Path, kernel: str, params: list[str]) -> list[str]:
    """boardlab-kern's side of a cross-check: 100 ms iterations, sustained rates comparable with the
    reference tool's seconds-long run."""
    return [str(kern), kernel, "--json", "--min-iteration-ms", "100", "--iterations", "10",
            "--warmup-max-iterations", "3", *params]  # fmt: skip


def run_kern(command: list[str], kernel: str, cpu: int | None) -> dict:
    """Runs boardlab-kern's side pinned to `cpu`; its result, or MeasurementError with the reason."""
    from boardlab.errors import MeasurementError
    from boardlab.xcheck.jsonrobust import parse

    proc = subprocess.run(command, capture_output=True, text=True, preexec_fn=pin(cpu), timeout=600)
    res = parse(proc.stdout, f"boardlab-kern {kernel}") if proc.stdout.strip() else {}
    if res.get("supported") is False:
        raise MeasurementError(f"{kernel} unsupported here: {res.get('reason')}")
    if proc.returncode != 0 or not res.get("ok"):
        raise MeasurementError(f"{kernel} failed: {res.get('errors') or proc.stderr.strip()}")
    return res


def pin(cpu: int | None):
    """A preexec_fn pinning the child to `cpu` (None: not pinned), so both tools of a pair run alike."""
    if cpu is None:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


@dataclass(frozen=True)
class Pair:
    """One A B pair: each side's value of every metric (None when a side did not report it)."""

    boardlab: dict[str, float | None]
    reference: dict[str, float | None]


@dataclass(frozen=True)
class CrossCheck:
    job: str
    reference_tool: str
    boardlab_command: list[str]
    reference_command: list[str]
    ratio_metrics: tuple[str, ...]  # metrics compared by ratio; others are shown side by side
    pairs: list[Pair] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def ratios(self, metric: str) -> list[float]:
        out = []
        for p in self.pairs:
            a, b = p.boardlab.get(metric), p.reference.get(metric)
            if a is not None and b is not None and b > 0:
                out.append(a / b)
        return out

    def median_ratio(self, metric: str) -> float | None:
        r = self.ratios(metric)
        return statistics.median(r) if r else None

    def median_side(self, metric: str, side: str) -> float | None:
        vals = [getattr(p, side).get(metric) for p in self.pairs]
        vals = [v for v in vals if v is not None]
        return statistics.median(vals) if vals else None

    def metrics(self) -> list[str]:
        names: list[str] = []
        for p in self.pairs:
            for k in (*p.boardlab, *p.reference):
                if k not in names:
                    names.append(k)
        return names

    def as_json(self) -> dict:
        return {
            "schema": 1,
            "job": self.job,
            "reference_tool": self.reference_tool,
            "boardlab_command": self.boardlab_command,
            "reference_command": self.reference_command,
            "pairs": [{"boardlab": p.boardlab, "reference": p.reference} for p in self.pairs],
            "metrics": {
                m: {
                    "median_ratio": self.median_ratio(m) if m in self.ratio_metrics else None,
                    "ratios": self.ratios(m) if m in self.ratio_metrics else [],
                    "boardlab_median": self.median_side(m, "boardlab"),
                    "reference_median": self.median_side(m, "reference"),
                }
                for m in self.metrics()
            },
            "notes": self.notes,
        }


def whole_run_rate(res: dict, amount_per_rep: float) -> float | None:
    """amount per second over all timed iterations of a boardlab-kern result (total over total, the way fio and
    iperf3 report a run), rather than the median of per-iteration rates."""
    ns = res.get("iterations_ns") or []
    total = sum(ns)
    return amount_per_rep * res["reps_per_iteration"] * len(ns) / (total * 1e-9) if total else None


def interleave(
    n: int,
    run_boardlab: Callable[[], dict[str, float | None]],
    run_reference: Callable[[], dict[str, float | None]],
    on_pair: Callable[[int, Pair], None] | None = None,
) -> list[Pair]:
    """n pairs, A B A B ..., so that drift of the machine falls on both sides alike."""
    pairs = []
    for i in range(n):
        a = run_boardlab()
        b = run_reference()
        pairs.append(Pair(a, b))
        if on_pair:
            on_pair(i, pairs[-1])
    return pairs
