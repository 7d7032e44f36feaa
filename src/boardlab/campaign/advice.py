"""Repetition advice that means detection, and the reference cells' allocation, for the dry-run and the
pilot (docs/method.md "How many runs to detect an effect", "Allocation").

For each compared workload: the runs per arm that give 80% power to call a true slowdown of 2.5 x its
threshold a slowdown (`stats.power.repetitions_for_power`, simulated through the shipped test), at the CV
its cells showed in earlier runs on this board (the plan's database: a pilot or earlier campaigns; its upper
95% confidence bound, and as two groups where their runs fell into two), else at an assumed CV that the
advice names, under the plan's correction family and allocation; and the estimated
duration of the plan at that count.
"""

from __future__ import annotations

import functools
import math
import os
import sqlite3
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from boardlab.campaign.schedule import compared_with, comparisons_per_reference, reference_runs
from boardlab.errors import InputError
from boardlab.model.campaign import Cell, Plan
from boardlab.stats.power import (
    ASSUMED_CV,
    CV_CONFIDENCE,
    PowerAdvice,
    RunShape,
    cv_upper_bound,
    repetitions_for_power,
)


@dataclass(frozen=True)
class Earlier:
    """What the plan's database holds of earlier runs, read once per dry-run (a reader's open verifies the
    whole store): each finished run's (cell key, wall ns, gate wait s), each cell's valid values."""

    run_times: tuple[tuple[str, int, float | None], ...]
    valid_values: dict[str, list[float]]


def read_earlier(db: str | None) -> tuple[Earlier | None, str | None]:
    """(what the plan's database, opened read-only, holds of earlier runs, None) or (None, why there is
    nothing to read): no database yet, or one that cannot be read (the advice then names its assumptions)."""
    if not db or not Path(db).is_file():
        return None, "no earlier runs (no database yet)"
    st = os.stat(db)
    return _read_earlier(str(Path(db).resolve()), (st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=4)
def _read_earlier(path: str, _stamp: tuple[int, int]) -> tuple[Earlier | None, str | None]:
    from boardlab.store import Store

    try:
        with Store.open(path, create=False) as store:
            return Earlier(tuple(store.earlier_run_times()), store.earlier_valid_values()), None
    except (InputError, sqlite3.Error) as exc:
        return None, f"the database could not be read ({exc})"


def earlier_values(db: str | None) -> dict[str, list[float]]:
    """Valid run values per cell key from the plan's database (read-only; {} when there is none)."""
    earlier, _why = read_earlier(db)
    return earlier.valid_values if earlier else {}


def allocation(plan: Plan, cells: list[Cell], per_cell: dict[str, int]) -> dict:
    """What the dry-run shows of the allocation: the rule and each reference cell's runs and comparisons."""
    shares = comparisons_per_reference(plan, cells)
    rule = plan.runs.baseline_allocation
    if plan.runs.order == "abba" and rule == "sqrt":
        rule = "equal (order = abba pairs runs by block)"
    return {
        "rule": rule,
        "reference_cells": {
            key: {"comparisons": k, "runs": per_cell.get(key)} for key, k in sorted(shares.items())
        },
    }


def power_advice(
    plan: Plan, cells: list[Cell], compared: set[str], comparisons: int, values: dict[str, list[float]]
) -> list[tuple[str, PowerAdvice]]:
    """(workload, `PowerAdvice`) for each compared workload, most runs first: at the upper confidence bound of
    the CV its cells showed in earlier runs (`power.cv_upper_bound`), else at the assumed CV, and as runs in
    two groups where an earlier cell's runs were (`cell_shape`). A workload whose plan entries set different
    thresholds gets one advice per threshold, labelled with it. Workloads with the same CV, threshold, shape
    and sharing share one simulation."""
    from collections import Counter

    from boardlab.campaign.facts import cell_facts
    from boardlab.stats.threshold import threshold_of

    groups: dict[tuple[str, float], list[Cell]] = {}
    for c in cells:
        if c.key in compared:  # each cell judged by its own entry's threshold
            groups.setdefault((c.workload, threshold_of(cell_facts(plan, c))[0]), []).append(c)
    split = Counter(workload for workload, _ in groups)
    shares = comparisons_per_reference(plan, cells)
    pairs = compared_with(plan, cells)
    sqrt_rule = plan.runs.baseline_allocation == "sqrt" and plan.runs.order != "abba"
    out = []
    done: dict[tuple, PowerAdvice] = {}
    for (workload, delta), mine in groups.items():
        cv, source, shape = _spread(mine, values)
        # the workload's weakest comparison decides: the one whose reference is shared least, so has the
        # fewest runs (a `compare` parameter's first value is often the reference of one comparison alone)
        k = min((shares.get(ref, 1) for c in mine for ref in pairs.get(c, ())), default=1)
        base: Callable[[int], int] = functools.partial(reference_runs, k=k) if sqrt_rule else (lambda n: n)
        key = (round(cv, 4), delta, k if sqrt_rule else 1, source, shape)
        if key not in done:
            done[key] = repetitions_for_power(
                cv=key[0],
                delta=delta,
                family_size=max(1, comparisons),
                cv_source=source,
                baseline_runs=base,
                shape=shape,
            )
        out.append((workload if split[workload] == 1 else f"{workload} (threshold {delta:g})", done[key]))
    out.sort(key=lambda wa: -wa[1].runs_per_arm)
    return out


def _spread(cells: list[Cell], values: dict[str, list[float]]) -> tuple[float, str, RunShape | None]:
    """(CV, where it came from, two-group shape or None) of a workload's cells for the power advice."""
    earlier = [values[c.key] for c in cells if len(values.get(c.key, ())) >= 3]
    bound = cv_upper_bound(earlier)
    if bound is None:
        return ASSUMED_CV, "assumed: no earlier runs of its cells on this board", None
    cv, runs = bound
    source = (
        f"the upper {CV_CONFIDENCE:.0%} confidence bound of the spread of {runs} earlier runs of "
        f"{len(earlier)} of its cells"
    )
    shapes = [s for v in earlier if (s := cell_shape(v)) is not None]
    return cv, source, max(shapes, key=lambda s: s.gap_ratio, default=None)


def cell_shape(values: list[float]) -> RunShape | None:
    """The two groups of a cell's earlier runs as the bimodal flag finds them (`flags.bimodality`), or None
    where it does not flag them: the share in the slower group, the gap, and the spread within a group (the
    part of the log variance the split leaves unexplained)."""
    from boardlab.stats.flags import bimodality

    b = bimodality(values)
    if b is None or not b.flagged:
        return None
    logs = [math.log(v) for v in values]
    within = math.sqrt(max(0.0, (1.0 - b.r2) * statistics.variance(logs)))
    return RunShape(
        round(1.0 - b.low_share, 2), round(b.gap_ratio, 3), round(math.sqrt(math.expm1(within**2)), 4)
    )


def advice_dict(advice: list[tuple[str, PowerAdvice]], duration: tuple[float | None, str]) -> dict:
    """The `repetitions_for_power` part of `run --dry-run --json` (the most any compared workload needs)."""
    if not advice:
        return {"repetitions_for_power": None, "power": []}
    seconds, basis = duration
    return {
        "repetitions_for_power": advice[0][1].runs_per_arm,
        "repetitions_for_power_duration_s": seconds,
        "repetitions_for_power_duration_basis": basis,
        "power": [
            {
                "workload": w,
                "runs_per_arm": a.runs_per_arm,
                "reference_runs": a.baseline_runs,
                "power": a.power,
                "effect": a.effect,
                "delta": a.delta,
                "cv": a.cv,
                "cv_source": a.cv_source,
                "family_size": a.family_size,
                "exceeds_cap": a.exceeds_cap,
                "aa_control_runs": a.aa_runs,
                "two_groups": None
                if a.shape is None
                else {
                    "slower_share": a.shape.high_share,
                    "gap_ratio": a.shape.gap_ratio,
                    "within_cv": a.shape.within_cv,
                },
                "advice": a.sentence(),
            }
            for w, a in advice
        ],
    }
