"""Multiple-testing corrections over the p-values of one report (docs/method.md "Comparing a condition ...").

Both return adjusted p-values in the input order, so a caller compares each with alpha directly. `None`
entries (comparisons without a test, e.g. too few runs) are left out of the family and stay None.
Definitions match statsmodels' `multipletests(method="holm")` and `(method="fdr_bh")`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _family(p_values: Sequence[float | None]) -> list[tuple[int, float]]:
    family = []
    for i, p in enumerate(p_values):
        if p is None:
            continue
        if not (isinstance(p, int | float) and not math.isnan(p) and 0.0 <= p <= 1.0):
            raise ValueError(f"p_values[{i}] = {p!r}: p-values must lie in [0, 1] (None for 'no test')")
        family.append((i, float(p)))
    return family


def holm(p_values: Sequence[float | None]) -> tuple[float | None, ...]:
    """Holm's step-down adjusted p-values (controls the family-wise error rate, any dependence).

    Method: Holm (1979), "A simple sequentially rejective multiple test procedure". With the m p-values
    sorted ascending, p_adj(i) = max_{j <= i} min(1, (m - j + 1) p(j)); monotone in the sorted order.
    Rejecting where p_adj < alpha is exactly Holm's procedure at level alpha.
    """
    family = _family(p_values)
    m = len(family)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (i, p) in enumerate(sorted(family, key=lambda ip: ip[1])):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return tuple(out)


def benjamini_hochberg(p_values: Sequence[float | None]) -> tuple[float | None, ...]:
    """Benjamini-Hochberg adjusted p-values (q-values; controls the false discovery rate).

    Method: Benjamini & Hochberg (1995). With the m p-values sorted ascending,
    q(i) = min_{j >= i} min(1, m p(j) / j); valid for independent or positively dependent tests. Use it for
    large exploratory sweeps; Holm within a report.
    """
    family = _family(p_values)
    m = len(family)
    out: list[float | None] = [None] * len(p_values)
    running = 1.0
    ordered = sorted(family, key=lambda ip: ip[1])
    for rank in range(m - 1, -1, -1):
        i, p = ordered[rank]
        running = min(running, m * p / (rank + 1))
        out[i] = running
    return tuple(out)
