"""Labels for the snoop sweep: is a cell slower than the same cell with the other cluster at its maximum?

For each (pattern, size, this frequency, other frequency): a one-sided Welch t-test of the runs' ns/access
against the reference cell (other cluster at its highest OPP), as the governor study did with per-run
samples. The family (every non-reference cell) is corrected like the report's verdicts (docs/method.md: Holm
up to 50 comparisons, Benjamini-Hochberg above), and a cell is `slow` only if its adjusted p < alpha AND its
mean is at least `min_effect` slower: significance alone would label a 0.1% difference slow given runs
enough.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from boardlab.governor.sweep import SweepCell
from boardlab.stats._special import student_t_sf
from boardlab.stats.multiple import benjamini_hochberg, holm
from boardlab.stats.summary import mean_t_interval

LABEL_SCHEMA = 1
ALPHA = 0.05
MIN_EFFECT = 0.02  # docs/method.md's default practical threshold for run time
HOLM_MAX = 50


@dataclass(frozen=True)
class Label:
    cell: SweepCell
    reference_khz: int | None
    mean_ns: float
    ci95_ns: tuple[float, float] | None  # t-interval of the mean over runs (assumes normality)
    ratio: float | None  # mean / reference mean
    t: float | None
    df: float | None
    p: float | None
    p_adjusted: float | None
    slow: bool

    def to_json(self) -> dict:
        c = self.cell
        return {
            "pattern": c.pattern,
            "size_bytes": c.size_bytes,
            "this_policy": c.this_policy,
            "this_khz": c.this_khz,
            "other_policy": c.other_policy,
            "other_khz": c.other_khz,
            "bus_hz": c.bus_hz,
            "reference_other_khz": self.reference_khz,
            "runs": len(c.ns_per_access),
            "mean_ns_per_access": self.mean_ns,
            "ci95_ns_per_access": list(self.ci95_ns) if self.ci95_ns else None,
            "ratio_to_reference": self.ratio,
            "welch_t": self.t,
            "welch_df": self.df,
            "p_one_sided": self.p,
            "p_adjusted": self.p_adjusted,
            "label": "slow" if self.slow else "not_slow",
        }


def welch_greater(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float] | None:
    """One-sided Welch t-test of mean(a) > mean(b): (t, df, p); None with fewer than 2 runs per arm."""
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return None
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / (na - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    se2 = va / na + vb / nb
    if se2 == 0:
        return (math.inf if ma > mb else -math.inf), float(na + nb - 2), 0.0 if ma > mb else 1.0
    t = (ma - mb) / math.sqrt(se2)
    df = se2**2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    return t, df, student_t_sf(t, df)


def label(cells: Sequence[SweepCell], *, alpha: float = ALPHA, min_effect: float = MIN_EFFECT) -> list[Label]:
    refs: dict[tuple, SweepCell] = {}
    for c in cells:
        k = (c.pattern, c.size_bytes, c.this_policy, c.this_khz)
        if c.other_khz is not None and (k not in refs or c.other_khz > (refs[k].other_khz or 0)):
            refs[k] = c
    tests: list[tuple[SweepCell, SweepCell | None, tuple[float, float, float] | None]] = []
    for c in cells:
        ref = refs.get((c.pattern, c.size_bytes, c.this_policy, c.this_khz))
        if ref is None or ref is c:
            tests.append((c, ref, None))
        else:
            tests.append((c, ref, welch_greater(c.ns_per_access, ref.ns_per_access)))
    ps = [w[2] if w else None for _, _, w in tests]
    family = sum(p is not None for p in ps)
    adjusted = holm(ps) if family <= HOLM_MAX else benjamini_hochberg(ps)
    out = []
    for (c, ref, w), p_adj in zip(tests, adjusted, strict=True):
        mean = sum(c.ns_per_access) / len(c.ns_per_access)
        ci = mean_t_interval(c.ns_per_access) if len(c.ns_per_access) >= 2 else None
        ratio = None
        if ref is not None:
            ratio = mean / (sum(ref.ns_per_access) / len(ref.ns_per_access))
        slow = p_adj is not None and p_adj < alpha and ratio is not None and ratio > 1 + min_effect
        out.append(
            Label(
                c, ref.other_khz if ref else None, mean, (ci.low, ci.high) if ci else None, ratio,
                w[0] if w else None, w[1] if w else None, w[2] if w else None, p_adj, slow,
            )
        )  # fmt: skip
    return out


def features(lab: Label) -> dict[str, float] | None:
    """The tree's inputs for one labelled cell (means over its runs); None without counters."""
    c = lab.cell
    if not c.cci_congestion or not c.memory_access or c.other_khz is None:
        return None
    return {
        "cci_congestion": sum(c.cci_congestion) / len(c.cci_congestion),
        "memory_access": sum(c.memory_access) / len(c.memory_access),
        "load": sum(c.load_pct) / len(c.load_pct) if c.load_pct else 0.0,
        "this_khz": c.this_khz,
        "other_khz": c.other_khz,
    }
