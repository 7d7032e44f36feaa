"""Two campaigns side by side, cell by cell (two boards, or two sessions of one): the comparison document.

Works on any two `CampaignView`s (`analysis.records`: a `CampaignAnalysis` computed now or the `KeptAnalysis`
of a stored summary, from one store or two): cells matched by workload, parameters and condition; B/A per cell
with its 90% decision interval, corrected over the matched cells, and each side's A/A control (docs/method.md
"Comparing a condition with its baseline").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from boardlab.analysis.format import estimator_words, test_words

if TYPE_CHECKING:
    from boardlab.analysis.records import CampaignView, CellAnalysis, ComparisonRow, PairSide

# 2: each cell says its test, how its p was found and what its ratio is of; 3: each side says how many of its
# runs the test read ("tested": a sample of a large cell's, None for all of them)
COMPARE_SCHEMA = 3
RATIO_WORDS = (
    "B / A of each cell's estimate (`estimator`: the runs' 20%-trimmed geometric means, or their medians "
    "where the rank test decided); cost_ratio > 1 means B is worse; the a/b medians are shown for reading"
)
DECISION_WORDS = (
    "verdicts are decided on decision_ci, the 90% interval of the cost ratio from the cell's test "
    "(`test_words`: Yuen's trimmed t on log runs, its p by permutation where a correction could use it), "
    "against each cell's delta, with p adjusted over every cell; cost_ratio_ci (95%) is shown, not decided on"
)


def _key(cell: CellAnalysis) -> tuple[str, str, str]:
    return cell.workload, json.dumps(cell.params, sort_keys=True), cell.condition


def _side(path: str, a: CampaignView) -> dict:
    return {
        "db": path,
        "campaign_id": a.campaign_id,
        "name": a.name,
        "board": a.board_label,
        "status": a.status,
        "boardlab_version": a.boardlab_version,
        "started_unix_s": a.started_unix_s,
    }


def _interval(ci) -> list[float] | None:
    return None if ci is None else [ci.low, ci.high]


def median_point(cell: CellAnalysis) -> dict:
    """A cell's median as a point of a history or a column of a board comparison (JSON): its runs, the
    median with its CI, or why there is none (a single run's value stands as its median)."""
    s, n = cell.summary, cell.n_valid
    median = s.median if s else (cell.values[0] if n == 1 else None)
    return {
        "n": n,
        "median": median,
        "median_ci": _interval(s.median_ci) if s else None,
        "reason": None if s else cell.summary_reason,
    }


def _pair(ci) -> tuple[float, float] | None:
    return None if ci is None else (ci.low, ci.high)


def _cell_id(cell: CellAnalysis) -> dict:
    return {
        "workload": cell.workload,
        "params": cell.params,
        "condition": cell.condition,
        "metric": cell.metric,
    }


def pair_rows(
    a: CampaignView, b: CampaignView, *, seed: int = 0, family_size: int | None = None
) -> tuple[list[ComparisonRow], list, list[int]]:
    """B/A for every cell of A matched in B, not yet corrected: (rows, comparisons, the row of each
    comparison).

    `finish_rows` fills the rows once the comparisons are corrected, over this pair alone
    (`compare_campaigns`) or over every pair of a report (`analysis.boards`, `analysis.history`): one family
    per report (docs/method.md). `family_size` is that family's size as far as it is known before (this pair's
    matched cells when None): how far a permutation p-value must reach to pass its correction."""
    from boardlab.stats import compare

    b_cells = {_key(c): c for c in b.cells}
    matched = [(ca, b_cells[_key(ca)]) for ca in a.cells if _key(ca) in b_cells]
    # A/A controls of both sides, by cell: a cell whose control is unstable on either side is unstable here.
    unstable: dict[tuple, list[str]] = {}
    for side, analysis in (("A", a), ("B", b)):
        for ctl in analysis.aa_controls:
            if ctl.unstable:
                key = (ctl.workload, json.dumps(ctl.params, sort_keys=True), ctl.condition)
                unstable.setdefault(key, []).append(f"{side}: {ctl.remedy}")

    rows: list[ComparisonRow] = []
    comps = []
    slots = []
    family = family_size if family_size is not None else len(matched)
    for i, (ca, cb) in enumerate(matched):
        row = _row(ca, cb, unstable.get(_key(ca)))
        if row.delta is not None:  # both sides have valid runs of one metric: `_row` found its threshold
            ta, tb = ca.compared_runs(), cb.compared_runs()
            comps.append(
                compare(
                    list(ta.values()),
                    list(tb.values()),
                    higher_is_better=ca.higher_is_better,
                    delta=row.delta,
                    seed=seed + i,
                    baseline_env=ta.environments(),
                    condition_env=tb.environments(),
                    family_size=family,
                )
            )
            slots.append(len(rows))
        rows.append(row)
    return rows, comps, slots


def _row(ca: CellAnalysis, cb: CellAnalysis, unstable: list[str] | None) -> ComparisonRow:
    """A's cell against B's before any comparison: who, each side's median, and the threshold, or why there is
    no comparison (`reason`, and no `delta`)."""
    import statistics

    from boardlab.analysis.records import ComparisonRow, PairSide
    from boardlab.stats.threshold import threshold_of

    row = ComparisonRow(
        ca.workload, ca.params, ca.condition, ca.metric, ca.unit, ca.higher_is_better, _side_of(ca),
        _side_of(cb), unstable=None if unstable is None else tuple(unstable),
    )  # fmt: skip
    if ca.metric != cb.metric or ca.unit != cb.unit:
        return replace(
            row, reason=f"different metrics: {ca.metric} [{ca.unit}] in A, {cb.metric} [{cb.unit}] in B"
        )
    if not row.a.n or not row.b.n:
        return replace(row, reason=f"no valid runs in {'A' if not row.a.n else 'B'}")
    if row.a.median is None or row.b.median is None:  # one run: its value is the median
        row = replace(
            row,
            a=PairSide(row.a.n, statistics.median(ca.values)),
            b=PairSide(row.b.n, statistics.median(cb.values)),
        )
    delta, source = threshold_of(ca.facts)  # A's cell: its plan entry's threshold
    return replace(row, delta=delta, delta_source=source)


def _side_of(cell: CellAnalysis) -> PairSide:
    from boardlab.analysis.records import PairSide

    return PairSide(cell.n_valid, cell.summary.median if cell.summary else None, cell.compared_sample)


def finish_rows(rows: Sequence[ComparisonRow], slots: list[int], adjusted) -> list[ComparisonRow]:
    """The rows of `pair_rows` filled from their corrected comparisons (`stats.adjust`), in slot order."""
    out = list(rows)
    for slot, c in zip(slots, adjusted, strict=True):
        out[slot] = replace(
            out[slot],
            ratio=c.ratio,
            ratio_ci=_pair(c.ratio_ci),
            cost_ratio=c.cost_ratio,
            cost_ratio_ci=_pair(c.cost_ratio_ci),
            decision_ci=_pair(c.decision_ci),
            test=c.test.name,
            test_method=c.test.method,
            test_words=test_words(c) + _sample_words(out[slot]),
            estimator=estimator_words(c),
            p_value=c.p_value,
            p_adjusted=c.p_adjusted,
            verdict=c.verdict.kind,
            confounded=c.verdict.confounded,
            reasons=tuple(c.verdict.reasons),
            flags=tuple(c.verdict.flags),
        )
    return out


def _sample_words(row: ComparisonRow) -> str:
    """Which sides the test read a sample of (`PairSide.tested`), as a clause of its words."""
    sampled = [f"{side.tested:,} of {name}'s {side.n:,} runs" for name, side in (("A", row.a), ("B", row.b))
               if side.tested is not None]  # fmt: skip
    return f", on {' and '.join(sampled)} spread over the campaign" if sampled else ""


def plain(document: Any) -> Any:
    """A comparison, cross-board or history document as its JSON has it: each `ComparisonRow` and
    `HistoryStep` in it as its `plain` dict (the documents hold the records; their JSON outputs convert here,
    and only here)."""
    from boardlab.analysis.records import ComparisonRow, HistoryStep

    if isinstance(document, ComparisonRow | HistoryStep):
        return document.plain()
    if isinstance(document, dict):
        return {k: plain(v) for k, v in document.items()}
    if isinstance(document, list):
        return [plain(v) for v in document]
    return document


def unmatched(a: CampaignView, b: CampaignView) -> dict:
    a_keys, b_keys = {_key(c) for c in a.cells}, {_key(c) for c in b.cells}
    return {
        "a_only": [_cell_id(c) for c in a.cells if _key(c) not in b_keys],
        "b_only": [_cell_id(c) for c in b.cells if _key(c) not in a_keys],
    }


def compare_campaigns(a: CampaignView, b: CampaignView, *, path_a: str = "A", path_b: str = "B") -> dict:
    """The comparison document: every cell of A matched in B, B/A per cell (docs/method.md "Comparing
    ...")."""
    from boardlab.stats import adjust, family_method

    rows, comps, slots = pair_rows(a, b)
    method = family_method(len(comps))
    rows = finish_rows(rows, slots, adjust(comps, method) if comps else ())
    return {
        "schema": COMPARE_SCHEMA,
        "a": _side(path_a, a),
        "b": _side(path_b, b),
        "ratio": RATIO_WORDS,
        "decision": DECISION_WORDS,
        "adjustment": method,
        "family_size": len(comps),
        "aa_controls": {side: _aa_doc(analysis) for side, analysis in (("a", a), ("b", b))},
        "cells": rows,
        "unmatched": unmatched(a, b),
    }


def _aa_doc(analysis: CampaignView) -> list[dict]:
    out = []
    for ctl in analysis.aa_controls:
        c = ctl.comparison
        out.append(
            {
                "workload": ctl.workload,
                "params": ctl.params,
                "condition": ctl.condition,
                "n_a1": ctl.n_a1,
                "n_a2": ctl.n_a2,
                "verdict": None if ctl.reason or c is None else c.verdict.kind,
                "cost_ratio": None if c is None else c.cost_ratio,
                "decision_ci": None if c is None else _interval(c.decision_ci),
                "unstable": ctl.unstable,
                "remedy": ctl.remedy,
                "reason": ctl.reason,
            }
        )
    return out
