"""The statistics take a run table's columns (`array.array`) and keep them columns: the same numbers as from a
list, the same errors naming the same place, and memory of about a column's 8 bytes a value where a list of
floats takes 33 (a report of a campaign of 10^7 runs summarizes and compares cells of 300,000 runs)."""

from __future__ import annotations

import math
import random
import re
import tracemalloc
from array import array

import pytest

from boardlab.stats import compare, summarize
from boardlab.stats._validate import as_values

N = 60_000


def _arm(seed: int, scale: float) -> list[float]:
    rng = random.Random(seed)
    return [scale * rng.lognormvariate(0.0, 0.05) for _ in range(N)]


def _peak_bytes(fn) -> int:
    """The bytes `fn` allocates above what was held when it began, at their most."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_a_column_gives_the_numbers_a_list_gives():
    base, cond = _arm(1, 1.0), _arm(2, 1.05)
    order = list(range(0, 3 * N, 3))
    as_column = summarize(array("d", base), order=array("q", order), seed=4)
    assert as_column == summarize(base, order=order, seed=4)
    kw = {"higher_is_better": False, "delta": 0.02, "seed": 3}
    assert compare(array("d", base), array("d", cond), **kw) == compare(base, cond, **kw)


def test_a_column_is_checked_as_a_list_is_and_kept_a_column():
    got = as_values(array("q", [3, 1, 2]))
    assert isinstance(got, array) and got.typecode == "d" and list(got) == [3.0, 1.0, 2.0]
    for bad, where in ((array("d", [1.0, math.nan]), "nan"), (array("d", [2.0, 0.0]), "0.0")):
        with pytest.raises(ValueError, match=re.escape(f"baseline[1] = {where}")):
            as_values(bad, what="baseline", positive=True)


@pytest.mark.slow  # six seconds: a campaign's worth of columns, measured by tracemalloc
def test_summary_and_comparison_of_columns_take_a_few_columns_of_memory():
    """Before, a column reached the statistics as a list: its summary took 210 bytes a run more and a
    comparison 158 (60,000 runs an arm; 88 and 86 now)."""
    base, cond = array("d", _arm(5, 1.0)), array("d", _arm(6, 1.02))
    order = array("q", range(N))
    summary_b = _peak_bytes(lambda: summarize(base, order=order, seed=1)) / N
    compare_b = _peak_bytes(lambda: compare(base, cond, higher_is_better=False, delta=0.02, seed=1)) / N
    assert summary_b < 120, f"summarize took {summary_b:.0f} bytes a run"
    assert compare_b < 110, f"compare took {compare_b:.0f} bytes a run (both arms)"
