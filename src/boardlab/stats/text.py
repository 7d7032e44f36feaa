"""How the statistics write a p-value in a sentence or a table cell: one format for every reason, report
table and page (`analysis.format.fmt_p` is this), with no e-notation: a p below 0.0001 is "< 0.0001", which
is all a verdict needs of it (the corrections read 0.05 / m, and no report holds 500 comparisons at whose
threshold four decimals would not tell)."""

from __future__ import annotations

import math

P_SMALLEST_SHOWN = 1e-4


def p_text(p: float | None) -> str:
    """ "0.042", "0.0007", "< 0.0001" (and "–" for no p)."""
    if p is None or math.isnan(p):
        return "–"
    if p < P_SMALLEST_SHOWN:
        return f"< {P_SMALLEST_SHOWN:.4f}"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.4f}"


def p_is(p: float) -> str:
    """The p-value after its name in a sentence: "= 0.042" or "< 0.0001"."""
    text = p_text(p)
    return text if text.startswith("<") else f"= {text}"
