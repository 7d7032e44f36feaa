"""Counterbalanced pairs and the median of their ratios (the statistic every cross-check and every
benchmark under bench/ reports).

Pairs alternate their order (A B, B A, A B, ...): whatever running second does to a side (a warm page
cache, a busy disk still writing back, a CPU at a higher frequency) falls on A in half the pairs and on B
in the other half. The ratio is reported per order and as the geometric mean of the two orders' medians,
in which a multiplicative order effect cancels exactly; the order effect itself is shown beside it.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
U = TypeVar("U")


# boardlab-kern's shortest timed iteration in a cross-check; its count of them sets how long it runs.
ITERATION_MS = 100


def iterations_for(ms: float) -> int:
    """How many timed iterations of ITERATION_MS make boardlab-kern run about `ms` milliseconds, as long as
    the reference tool."""
    return max(1, round(ms / ITERATION_MS))


def kern_command(kern: Path, kernel: str, params: list[str], iterations: int = 10) -> list[str]:
    """boardlab-kern's side of a cross-check: `iterations` of at least ITERATION_MS each, as many as fill
    the reference tool's run, so both sustain their rates for about as long."""
    return [str(kern), kernel, "--json", "--min-iteration-ms", str(ITERATION_MS), "--iterations",
            str(iterations), "--warmup-max-iterations", "3", *params]  # fmt: skip


def run_kern(command: list[str], kernel: str, cpu: int | None, timeout_s: float = 600) -> dict:
    """Runs boardlab-kern's side pinned to `cpu`; its result, or MeasurementError with the reason."""
    from boardlab.errors import MeasurementError
    from boardlab.xcheck.jsonrobust import parse

    proc = run_tool(command, cpu, timeout_s)
    res = parse(proc.stdout, f"boardlab-kern {kernel}") if proc.stdout.strip() else {}
    if res.get("supported") is False:
        raise MeasurementError(f"{kernel} unsupported here: {res.get('reason')}")
    if proc.returncode != 0 or not res.get("ok"):
        raise MeasurementError(f"{kernel} failed: {res.get('errors') or proc.stderr.strip()}")
    return res


def run_tool(argv: list[str], cpu: int | None, timeout_s: float) -> subprocess.CompletedProcess:
    """`argv` run to its end pinned to `cpu` (None: not pinned), in a process group of its own, its output as
    text. A stop of boardlab (Ctrl-C, SIGTERM) or the timeout ends the whole group: subprocess.run killed the
    tool's first process only, and fio's job processes ran on, orphaned, to the end of their runtime."""
    from boardlab.errors import MeasurementError
    from boardlab.platform.spawn import collect, owned, spawn

    with owned(spawn(argv, cpus=None if cpu is None else {cpu})) as proc:
        out, err, code, _, killed = collect(proc, timeout_s)
    if killed:
        raise MeasurementError(f"{argv[0]} did not end within {timeout_s:g} s: stopped")
    return subprocess.CompletedProcess(argv, code, out.decode(errors="replace"), err.decode(errors="replace"))


def pin(cpu: int | None):
    """A preexec_fn pinning the child to `cpu` (None: not pinned), so both tools of a pair run alike."""
    if cpu is None:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def alternate(
    n: int,
    run_a: Callable[[], T],
    run_b: Callable[[], U],
    on_pair: Callable[[int, T, U, str], None] | None = None,
) -> list[tuple[T, U, str]]:
    """n pairs in alternating order, A B, B A, A B, ...: (A's result, B's result, "AB" or "BA")."""
    out = []
    for i in range(n):
        if i % 2 == 0:
            a = run_a()
            b = run_b()
        else:
            b = run_b()
            a = run_a()
        out.append((a, b, "AB" if i % 2 == 0 else "BA"))
        if on_pair:
            on_pair(i, a, b, out[-1][2])
    return out


@dataclass(frozen=True)
class PairedRatios:
    """Ratios A/B of counterbalanced pairs: per order, and the counterbalanced median of both.

    `median` is the geometric mean of the medians of the two orders (the plain median when only one order
    ran): if whichever side runs second gains a factor k, the A-first pairs show r/k... and the B-first
    pairs r*k..., and the geometric mean is r. `order_effect` = sqrt(ab / ba): 1.0 when the order does not
    matter, 1.10 when A's figure relative to B's is 10% higher when A runs first."""

    ratios: tuple[float, ...]
    orders: tuple[str, ...]
    ab: float | None  # median ratio of the pairs in which A ran first
    ba: float | None  # ... in which B ran first
    median: float | None

    @property
    def n_ab(self) -> int:
        return self.orders.count("AB")

    @property
    def n_ba(self) -> int:
        return self.orders.count("BA")

    @property
    def order_effect(self) -> float | None:
        return math.sqrt(self.ab / self.ba) if self.ab and self.ba else None

    def describe(self, a: str = "A", b: str = "B") -> str:
        """ "median ratio 0.998 over 10 pairs (A first 1.052 x5, B first 0.947 x5; order effect 1.054)"."""
        if self.median is None:
            return "no ratio (no pair gave both values)"
        text = f"median ratio {self.median:.3f} over {len(self.ratios)} pairs"
        parts = [
            f"{side} first {m:.3f} x{k}"
            for side, m, k in ((a, self.ab, self.n_ab), (b, self.ba, self.n_ba))
            if m
        ]
        if self.order_effect is not None:
            parts.append(f"order effect {self.order_effect:.3f}")
        return f"{text} ({'; '.join(parts)})" if parts else text

    def to_dict(self) -> dict:
        return {
            "median_ratio": self.median,
            "median_ratio_a_first": self.ab,
            "median_ratio_b_first": self.ba,
            "pairs_a_first": self.n_ab,
            "pairs_b_first": self.n_ba,
            "order_effect": self.order_effect,
        }


def paired_ratios(pairs: Iterable[tuple[float | None, str]]) -> PairedRatios:
    """PairedRatios of (ratio A/B, order) items; ratios that are not finite and positive are left out."""
    kept = [(r, o) for r, o in pairs if r is not None and math.isfinite(r) and r > 0]
    ratios = tuple(r for r, _ in kept)
    orders = tuple(o for _, o in kept)
    by = {o: [r for r, oo in kept if oo == o] for o in ("AB", "BA")}
    ab = statistics.median(by["AB"]) if by["AB"] else None
    ba = statistics.median(by["BA"]) if by["BA"] else None
    median = math.sqrt(ab * ba) if ab and ba else (ab or ba)
    return PairedRatios(ratios, orders, ab, ba, median)


def ratios_of(results: list[tuple[Any, Any, str]], ratio: Callable[[Any, Any], float | None]) -> PairedRatios:
    """PairedRatios of alternate()'s results, with `ratio(a, b)` computing each pair's ratio."""
    return paired_ratios((ratio(a, b), order) for a, b, order in results)


@dataclass(frozen=True)
class Pair:
    """One pair: each side's value of every metric (None when a side did not report it), and which ran
    first ("AB": boardlab, "BA": the reference)."""

    boardlab: dict[str, float | None]
    reference: dict[str, float | None]
    order: str = "AB"


@dataclass(frozen=True)
class CrossCheck:
    job: str
    reference_tool: str
    boardlab_command: list[str]
    reference_command: list[str]
    ratio_metrics: tuple[str, ...]  # metrics compared by ratio; others are shown side by side
    pairs: list[Pair] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def by_order(self, metric: str) -> PairedRatios:
        return paired_ratios(
            (_ratio(p.boardlab.get(metric), p.reference.get(metric)), p.order) for p in self.pairs
        )

    def ratios(self, metric: str) -> list[float]:
        return list(self.by_order(metric).ratios)

    def median_ratio(self, metric: str) -> float | None:
        return self.by_order(metric).median

    @staticmethod
    def _first(p: Pair) -> str:
        return "boardlab" if p.order == "AB" else "reference"

    def _by_order_json(self, metric: str) -> dict:
        r = self.by_order(metric)
        return {
            "boardlab_first": r.ab,
            "reference_first": r.ba,
            "pairs_boardlab_first": r.n_ab,
            "pairs_reference_first": r.n_ba,
            "order_effect": r.order_effect,
        }

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
            "pairs": [
                {"boardlab": p.boardlab, "reference": p.reference, "first": self._first(p)}
                for p in self.pairs
            ],
            "metrics": {
                m: {
                    "median_ratio": self.median_ratio(m) if m in self.ratio_metrics else None,
                    "ratios": self.ratios(m) if m in self.ratio_metrics else [],
                    "by_order": self._by_order_json(m) if m in self.ratio_metrics else None,
                    "boardlab_median": self.median_side(m, "boardlab"),
                    "reference_median": self.median_side(m, "reference"),
                }
                for m in self.metrics()
            },
            "notes": self.notes,
        }


def whole_run_rate(res: dict, amount_per_rep: float) -> float | None:
    """amount per second over all timed iterations of a boardlab-kern result (total over total, the way fio
    and iperf3 report a run), rather than the median of per-iteration rates."""
    ns = res.get("iterations_ns") or []
    total = sum(ns)
    return amount_per_rep * res["reps_per_iteration"] * len(ns) / (total * 1e-9) if total else None


def interleave(
    n: int,
    run_boardlab: Callable[[], dict[str, float | None]],
    run_reference: Callable[[], dict[str, float | None]],
    on_pair: Callable[[int, Pair], None] | None = None,
) -> list[Pair]:
    """n pairs, counterbalanced (boardlab first, then the reference first, ...), so that drift of the
    machine falls on both sides alike and an order effect cancels in the median ratio and shows per order."""
    done = alternate(
        n, run_boardlab, run_reference, (lambda i, a, b, o: on_pair(i, Pair(a, b, o))) if on_pair else None
    )
    return [Pair(a, b, order) for a, b, order in done]


def _ratio(a: float | None, b: float | None) -> float | None:
    """a / b where both were measured and b is positive (a pair missing a figure has no ratio)."""
    return a / b if a is not None and b is not None and b > 0 else None
