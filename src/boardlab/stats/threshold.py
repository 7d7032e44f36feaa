"""The practical threshold delta and the report's correction family (docs/method.md "Comparing ...").

delta is the smallest effect worth a verdict: a statement of what matters, set per workload by the plan's
`threshold` (and `tail_threshold` for p99 and above), with defaults of 2% for run-time and throughput and
10% for tail metrics. It is never estimated from the runs being compared: their sampling noise is already in
the confidence interval, and counting it twice made real effects read as "no change".
"""

from __future__ import annotations

from typing import Literal

DEFAULT_DELTA = 0.02  # run-time and throughput
DEFAULT_TAIL_DELTA = 0.10  # p99 and above
HOLM_MAX_FAMILY = 50  # above this many comparisons, Benjamini-Hochberg (a sweep, exploratory)

FamilyMethod = Literal["holm", "bh"]


def family_method(size: int) -> FamilyMethod:
    """Holm (1979) for a family of up to 50 comparisons, Benjamini & Hochberg (1995) above (docs/method.md)."""
    return "holm" if size <= HOLM_MAX_FAMILY else "bh"


def family_method_name(method: str) -> str:
    return {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no correction"}.get(method, method)
