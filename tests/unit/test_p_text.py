"""One way to write a p-value, in every reason, table and page: never e-notation."""

from __future__ import annotations

import math

from boardlab.analysis.format import fmt_p
from boardlab.stats.summary import Interval
from boardlab.stats.text import p_is, p_text
from boardlab.stats.verdict import decide


def test_p_values_read_as_decimals_down_to_a_ten_thousandth():
    assert [p_text(p) for p in (1.0, 0.042, 0.00123, 0.0007, 1e-4, 9.9e-5, 2.6e-15, 0.0)] == [
        "1.000", "0.042", "0.001", "0.0007", "0.0001", "< 0.0001", "< 0.0001", "< 0.0001",
    ]  # fmt: skip
    assert p_text(None) == p_text(math.nan) == "–" and fmt_p(2.6e-15) == "< 0.0001"
    assert (p_is(0.042), p_is(1e-9)) == ("= 0.042", "< 0.0001")


def test_a_verdicts_reason_says_a_tiny_p_without_an_exponent():
    v = decide(Interval(1.24, 1.26, 0.9, "t"), p_adjusted=2.6e-15, delta=0.02, n_baseline=10, n_condition=10)
    assert v.kind == "slowdown" and "adjusted p < 0.0001, below 0.05" in v.reasons[0]
    assert "e-" not in v.reasons[0]
