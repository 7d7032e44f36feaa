"""What a comparison between two campaigns reads of a large cell (`CellAnalysis.compared_runs`): at most
COMPARED_RUNS measured runs spread evenly over the campaign, every run still counted; the same runs whether
the cell is the analysis computed now or its stored summary read back; and each row says when a side was
sampled."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from boardlab.analysis.compare import pair_rows
from boardlab.analysis.records import COMPARED_RUNS, CellAnalysis, KeptAnalysis, PairSide
from boardlab.analysis.runs import INVALID_VALUE, MEASURED, OK, VALID, RunPoint, RunTable, spread_rows
from boardlab.model.records import from_plain, to_plain
from boardlab.stats import RunEnvironment, compare, summarize


def _table(n: int, seed: int = 1, scale: float = 1.0) -> RunTable:
    """n attempts: most measured, every 97th invalid with a value, every 89th failed, every 83rd valid
    without a value; values log-normal around `scale` with a slow drift, so a sample's runs are told apart."""
    rng = random.Random(seed)
    points = []
    for i in range(n):
        failed, invalid, missing = i % 89 == 5, i % 97 == 7, i % 83 == 11
        value = None if failed or missing else scale * math.exp(rng.gauss(0, 0.02)) * (1 + i * 1e-6)
        points.append(RunPoint(
            run_id=10 + i, seq=i, repetition=i, value=value, valid=not (failed or invalid), ok=not failed,
            invalid_reason="throttled" if invalid else None, error="crashed" if failed else None,
            wall_ns=1000 + i, environment=RunEnvironment(1.2e6 + i % 7, 45000.0 + i % 11, i % 501 == 0),
            warmup_capped=None if i % 2 else False, aa_arm=None, user_us=i, system_us=None,
        ))  # fmt: skip
    return RunTable.of_points(points)


def _cell(runs: RunTable) -> CellAnalysis:
    values = runs.values()
    return CellAnalysis(
        1, "w|{}|baseline", "w", {}, "baseline", None, "time", "s", False, runs,
        summarize(values, order=runs.seqs(), seed=1), None,
    )  # fmt: skip


def _view(cid: int, cells: tuple[CellAnalysis, ...]) -> KeptAnalysis:
    return KeptAnalysis(cid, "nightly", "complete", "board-a", "0.1", 1.7e9 + cid, "", cells, (), {}, 0)


FLAG_QUERIES = [(0, 0), (MEASURED, 0), (OK, VALID), (0, OK), (INVALID_VALUE, 0), (VALID, MEASURED)]


def test_spread_rows_are_distinct_ordered_and_cover_the_whole_session():
    for n, limit in ((2049, 2048), (5000, 2048), (294_118, 2048), (10, 3)):
        rows = spread_rows(n, limit)
        assert len(rows) == limit == len(set(rows)) and rows == sorted(rows)
        assert 0 <= rows[0] < n / limit and n - n / limit <= rows[-1] < n  # the first and last stretch
        gaps = [b - a for a, b in zip(rows, rows[1:], strict=False)]
        assert max(gaps) - min(gaps) <= 1  # evenly spread, no stretch of the session skipped


def test_a_thinned_table_holds_the_spread_runs_and_counts_every_run():
    table = _table(6000)
    thin = table.thinned(COMPARED_RUNS)
    measured = [i for i, f in enumerate(table.flags) if f & MEASURED]
    picked = [measured[i] for i in spread_rows(len(measured), COMPARED_RUNS)]
    assert len(thin.values()) == COMPARED_RUNS == len(thin)  # only measured runs are held
    assert list(thin.values()) == [table.value[i] for i in picked]
    assert list(thin.environments()) == [table[i].environment for i in picked]
    assert list(thin.seqs()) == [table.seq[i] for i in picked]
    for has, lacks in FLAG_QUERIES:
        assert thin.count(has, lacks) == table.count(has, lacks), (has, lacks)
    assert thin.thinned(COMPARED_RUNS) is thin  # thinning again reads the same runs
    small = _table(COMPARED_RUNS + 40)  # some of its attempts are not measured: at most the limit
    assert small.count(MEASURED) <= COMPARED_RUNS and small.thinned(COMPARED_RUNS) is small


def test_a_thinned_table_reads_back_from_a_summary_as_it_was():
    thin = _table(5000).thinned(COMPARED_RUNS)
    back = from_plain(RunTable, to_plain(thin))
    assert back == thin and back.omitted == thin.omitted and back.count(MEASURED) == thin.count(MEASURED)


@pytest.mark.parametrize("big_side", ["A", "B"])
def test_a_step_reads_the_same_sample_from_the_analysis_and_from_its_summary(big_side):
    """The live cell (every run) and the summary's (thinned, read back) give the same row, decided on the
    spread sample: the same comparison as `compare` of the sampled values, and the row says so."""
    big, small = _cell(_table(7000, seed=2)), _cell(_table(40, seed=3, scale=1.01))
    # what `CampaignAnalysis.kept` keeps of the cell, through the summary's codec
    kept = from_plain(KeptAnalysis, to_plain(_view(1, (dataclasses.replace(big, runs=big.compared_runs()),))))
    other = _view(2, (small,))
    pairs = [(v, other) if big_side == "A" else (other, v) for v in (_view(1, (big,)), kept)]
    (live_rows, live_comps, _), (kept_rows, kept_comps, _) = (pair_rows(a, b) for a, b in pairs)
    assert live_rows == kept_rows and live_comps == kept_comps
    n_big = big.n_valid
    assert n_big > COMPARED_RUNS and kept.cells[0].n_valid == n_big
    assert len(kept.cells[0].values) == COMPARED_RUNS  # what a step decodes of a large predecessor
    side = live_rows[0].a if big_side == "A" else live_rows[0].b
    assert side == PairSide(n_big, big.summary.median, COMPARED_RUNS)
    sample = list(big.compared_runs().values())
    a, b = (sample, list(small.values)) if big_side == "A" else (list(small.values), sample)
    direct = compare(a, b, higher_is_better=False, delta=live_rows[0].delta, seed=0,
                     baseline_env=None, condition_env=None, family_size=1)  # fmt: skip
    assert live_comps[0].ratio == direct.ratio and live_comps[0].p_value == direct.p_value


def test_a_row_says_which_side_was_sampled():
    from boardlab.analysis.compare import finish_rows
    from boardlab.stats import adjust

    big, small = _cell(_table(3000)), _cell(_table(30, seed=4))
    rows, comps, slots = pair_rows(_view(1, (big,)), _view(2, (small,)))
    (row,) = finish_rows(rows, slots, adjust(comps, "holm"))
    assert row.a.tested == COMPARED_RUNS and row.b.tested is None
    assert f"on {COMPARED_RUNS:,} of A's {big.n_valid:,} runs spread over the campaign" in row.test_words
    assert row.plain()["a"] == {"n": big.n_valid, "median": big.summary.median, "tested": COMPARED_RUNS}
    rows, comps, slots = pair_rows(_view(1, (small,)), _view(2, (small,)))
    (whole,) = finish_rows(rows, slots, adjust(comps, "holm"))
    assert whole.a.tested is None and whole.b.tested is None and "spread" not in whole.test_words
    assert whole.plain()["b"]["tested"] is None
