"""From a stored campaign to the numbers a report shows: per-cell summaries and per-comparison verdicts.

Pure with respect to the store's rows: it reads, computes with boardlab.stats (METHOD.md), and returns
frozen records; rendering (HTML, Markdown, terminal) lives beside it and computes nothing statistical.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from boardlab.report import study_services
from boardlab.report.studies import AiCell, RtCell, ai_cells, rt_cells
from boardlab.stats import (
    AADelta,
    CellSummary,
    Comparison,
    RunEnvironment,
    aa_delta,
    aa_ratios_from_runs,
    adjust,
    compare,
    summarize,
)
from boardlab.store import Store

MIN_RUNS_FOR_SUMMARY = 2
# Workloads whose per-run p99 of the primary metric gets a comparison of its own (`tail_comparisons`): their
# runs keep every frame, so each run's p99 is a per-run summary like its median (AI inference, seed 003).
TAIL_WORKLOADS = frozenset({"ai.inference"})
TAIL_SEED_OFFSET = 100_000  # bootstrap seeds of the tail family, apart from the primary family's


@dataclass(frozen=True)
class RunPoint:
    """One run of a cell, as plots need it."""

    run_id: int
    seq: int
    repetition: int
    value: float | None
    valid: bool
    ok: bool
    invalid_reason: str | None
    error: str | None
    wall_ns: int
    gate_waited_s: float
    environment: RunEnvironment
    worker_cpu_pct: float | None
    warmup_capped: bool | None


@dataclass(frozen=True)
class CellAnalysis:
    cell_id: int
    key: str
    workload: str
    params: dict[str, Any]
    condition: str
    baseline: str | None  # the condition this cell is compared with; None for a baseline cell
    metric: str
    unit: str
    higher_is_better: bool
    runs: tuple[RunPoint, ...]  # every attempt, in run order
    summary: CellSummary | None  # over valid runs; None below MIN_RUNS_FOR_SUMMARY
    summary_reason: str | None

    @property
    def values(self) -> tuple[float, ...]:
        return tuple(r.value for r in self.runs if r.valid and r.value is not None)

    @property
    def label(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.workload} ({params})" if params else self.workload

    @property
    def n_invalid(self) -> int:
        return sum(1 for r in self.runs if r.ok and not r.valid)

    @property
    def n_failed(self) -> int:
        return sum(1 for r in self.runs if not r.ok)


@dataclass(frozen=True)
class ComparisonAnalysis:
    workload: str
    params: dict[str, Any]
    label: str
    condition: str
    baseline: str
    metric: str
    unit: str
    comparison: Comparison | None
    reason: str | None  # why there is no comparison


@dataclass(frozen=True)
class CampaignAnalysis:
    campaign_id: int
    name: str
    status: str
    plan_source: str
    plan_text: str
    boardlab_version: str
    started_unix_s: float
    finished_unix_s: float | None
    board_label: str
    inventory: dict
    environment: dict  # checks and capabilities at the start
    monitor: dict  # the monitor's own cost
    order: str
    cells: tuple[CellAnalysis, ...]
    comparisons: tuple[ComparisonAnalysis, ...]
    delta: AADelta | None
    notes: dict = field(default_factory=dict)
    rt_cells: tuple[RtCell, ...] = ()  # rt.cyclictest cells: merged histograms and percentiles (studies.py)
    ai_cells: tuple[AiCell, ...] = ()  # ai.inference cells: per-frame p50/p90/p99 over runs (studies.py)
    services_cells: tuple = ()  # svc.scenario cells (study_services.py)
    # The per-run p99 of the primary metric against the baseline, for TAIL_WORKLOADS: a second family with
    # its own A/A threshold `tail_delta` and its own Holm correction.
    tail_comparisons: tuple[ComparisonAnalysis, ...] = ()
    tail_delta: AADelta | None = None

    @property
    def conditions(self) -> list[str]:
        seen: list[str] = []
        for c in self.cells:
            if c.condition not in seen:
                seen.append(c.condition)
        return seen

    @property
    def warnings(self) -> list[dict]:
        return [c for c in self.environment.get("checks") or [] if c.get("status") != "OK"]


def run_environment(monitor: dict) -> RunEnvironment:
    """Per-run confounders from the monitor's summary: mean frequency, peak temperature, throttling."""
    freqs = [v for k, v in monitor.items() if k.startswith("freq.") and k.endswith("_khz_mean")]
    temps = [v for k, v in monitor.items() if k.startswith("temp.") and k.endswith("_mc_max")]
    return RunEnvironment(
        mean_freq_khz=sum(freqs) / len(freqs) if freqs else None,
        max_temp_mc=max(temps) if temps else None,
        throttled=monitor.get("throttled"),
    )


def _cell(row, runs) -> CellAnalysis:
    points = []
    for r in runs:
        mon = json.loads(r["monitor_json"])
        points.append(
            RunPoint(
                run_id=r["id"],
                seq=r["seq"],
                repetition=r["repetition"],
                value=r["value"],
                valid=bool(r["valid"]),
                ok=bool(r["ok"]),
                invalid_reason=r["invalid_reason"],
                error=r["error"],
                wall_ns=r["wall_ns"],
                gate_waited_s=r["gate_waited_s"],
                environment=run_environment(mon),
                worker_cpu_pct=mon.get("worker.cpu_pct_mean"),
                warmup_capped=None if r["warmup_capped"] is None else bool(r["warmup_capped"]),
            )
        )
    valid = [p for p in points if p.valid and p.value is not None]
    summary, reason = None, None
    if len(valid) >= MIN_RUNS_FOR_SUMMARY:
        summary = summarize([p.value for p in valid], order=[p.seq for p in valid], seed=row["id"])
    else:
        reason = f"{len(valid)} valid run(s): a summary needs at least {MIN_RUNS_FOR_SUMMARY}"
    return CellAnalysis(
        cell_id=row["id"],
        key=row["key"],
        workload=row["workload"],
        params=json.loads(row["params_json"]),
        condition=row["condition"],
        baseline=row["baseline"],
        metric=row["metric"],
        unit=row["unit"],
        higher_is_better=bool(row["higher_is_better"]),
        runs=tuple(points),
        summary=summary,
        summary_reason=reason,
    )


def _params_key(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def _pairs(cells: tuple[CellAnalysis, ...], plan: dict):
    """(condition cell, baseline cell, condition label, baseline label, why missing) for every comparison:
    each condition against its baseline condition, and each value of a `compare` parameter against the
    parameter's first value (same condition, same other parameters)."""
    by_key = {(c.workload, _params_key(c.params), c.condition): c for c in cells}
    for c in cells:
        if c.baseline is None:
            continue
        base = by_key.get((c.workload, _params_key(c.params), c.baseline))
        missing = None if base else f"no baseline cell {c.workload} under {c.baseline}"
        yield c, base, c.condition, c.baseline, missing
    for entry in plan.get("workloads", []):
        param = entry.get("compare")
        values = entry.get("params", {}).get(param) if param else None
        if not param or not isinstance(values, list) or len(values) < 2:
            continue
        for c in cells:
            if c.workload != entry.get("name") or c.params.get(param) not in values[1:]:
                continue
            ref = {**c.params, param: values[0]}
            base = by_key.get((c.workload, _params_key(ref), c.condition))
            label = f"{param}={c.params[param]}" + ("" if c.baseline is None else f" @{c.condition}")
            base_label = f"{param}={values[0]}" + ("" if c.baseline is None else f" @{c.condition}")
            yield c, base, label, base_label, None if base else f"no cell with {param}={values[0]}"


def _run_p99s(store: Store, cell: CellAnalysis) -> dict[int, float]:
    """run id -> the run's p99 of the cell's metric, for the valid runs that stored one."""
    out: dict[int, float] = {}
    for p in cell.runs:
        if not p.valid:
            continue
        for row in store.run_metrics(p.run_id):
            if row["metric"] == cell.metric and row["p99"] is not None:
                out[p.run_id] = float(row["p99"])
    return out


def aa_threshold(reference_values: dict[int, list[float]]) -> AADelta | None:
    """delta from A/A half-splits of each reference cell (cell id -> per-run values) with >= 4 runs."""
    aa: list[float] = []
    for cell_id, values in reference_values.items():
        if len(values) >= 4:
            aa.extend(aa_ratios_from_runs(values, seed=cell_id))
    return aa_delta(aa) if aa else None


def compare_family(
    pairs: list,
    values: Callable[[CellAnalysis], list[tuple[RunPoint, float]]],
    delta: AADelta | None,
    plan_order: str,
    *,
    no_delta: str,
    seed_offset: int = 0,
    metric_suffix: str = "",
) -> tuple[ComparisonAnalysis, ...]:
    """Each (condition, baseline) pair of one family compared on the per-run values `values` gives (one per
    run, never pooled iterations), paired by block under ABBA, then Holm over the family (METHOD.md)."""
    results: list[ComparisonAnalysis] = []
    comps: list[Comparison] = []
    slots: list[int] = []
    for cond, base, cond_label, base_label, missing in pairs:
        comp, reason = None, missing
        if reason is None and delta is None:
            reason = no_delta
        if reason is None:
            bv, cv = values(base), values(cond)
            if not bv or not cv:
                reason = f"no valid run{metric_suffix and ' with a' + metric_suffix} under " + (
                    "the baseline" if not bv else cond_label
                )
            else:
                blocks = (
                    ([p.repetition for p, _ in bv], [p.repetition for p, _ in cv])
                    if plan_order == "abba"
                    else None
                )
                try:
                    comp = compare(
                        [v for _, v in bv],
                        [v for _, v in cv],
                        higher_is_better=cond.higher_is_better,
                        delta=delta.delta,
                        seed=seed_offset + len(results),
                        paired_blocks=blocks,
                        baseline_env=[p.environment for p, _ in bv],
                        condition_env=[p.environment for p, _ in cv],
                    )
                except ValueError as exc:  # e.g. a metric that is zero or negative has no ratio
                    reason = f"not comparable: {exc}"
            if comp is not None:
                slots.append(len(results))
                comps.append(comp)
        results.append(
            ComparisonAnalysis(
                workload=cond.workload,
                params=cond.params,
                label=cond.label,
                condition=cond_label,
                baseline=base_label,
                metric=cond.metric + metric_suffix,
                unit=cond.unit,
                comparison=comp,
                reason=reason,
            )
        )
    if comps:  # Holm within the family (METHOD.md); another family keeps its own correction
        for slot, adjusted in zip(slots, adjust(comps, "holm"), strict=True):
            results[slot] = dataclasses.replace(results[slot], comparison=adjusted)
    return tuple(results)


def tail_comparisons(
    store: Store, cells: tuple[CellAnalysis, ...], plan: dict, plan_order: str
) -> tuple[tuple[ComparisonAnalysis, ...], AADelta | None]:
    """Each condition against its baseline on the per-run p99 of the primary metric (TAIL_WORKLOADS whose
    runs carry one): the pairs, rank test, bootstrap and verdict rule of the primary comparisons, one value
    per run (never pooled frames), a threshold from A/A half-splits of the reference cells' per-run p99s,
    and Holm over this family alone."""
    tail_cells = tuple(c for c in cells if c.workload in TAIL_WORKLOADS)
    p99s = {c.cell_id: _run_p99s(store, c) for c in tail_cells}
    if not any(p99s.values()):
        return (), None
    delta = aa_threshold(
        {b.cell_id: list(p99s[b.cell_id].values()) for _, b, *_ in _pairs(tail_cells, plan) if b is not None}
    )

    def arm(cell: CellAnalysis) -> list[tuple[RunPoint, float]]:
        return [(p, p99s[cell.cell_id][p.run_id]) for p in cell.runs if p.run_id in p99s[cell.cell_id]]

    results = compare_family(
        list(_pairs(tail_cells, plan)),
        arm,
        delta,
        plan_order,
        no_delta="no A/A threshold for the p99: the reference cells have fewer than 4 runs with a p99",
        seed_offset=TAIL_SEED_OFFSET,
        metric_suffix=" p99",
    )
    return results, delta


def analyze(store: Store, campaign_id: int) -> CampaignAnalysis:
    camp = store.campaign(campaign_id)
    board = store.board(camp["board_id"])
    runs_by_cell: dict[int, list] = {}
    for r in store.runs(campaign_id):
        runs_by_cell.setdefault(r["cell_id"], []).append(r)
    cells = tuple(_cell(row, runs_by_cell.get(row["id"], [])) for row in store.cells(campaign_id))
    plan: dict = {}
    try:
        import tomllib

        plan = tomllib.loads(camp["plan_text"])
    except Exception:  # an unreadable stored plan only loses the pairing hint and parameter comparisons
        pass
    plan_order = plan.get("runs", {}).get("order", "interleave")

    # The practical threshold: A/A half-splits of the reference side of every comparison (METHOD.md:
    # baseline against baseline); a cell that is only ever compared does not widen it with its own noise.
    pairs = list(_pairs(cells, plan))
    delta = aa_threshold({base.cell_id: list(base.values) for _, base, *_ in pairs if base is not None})

    results = compare_family(
        pairs,
        lambda cell: [(p, p.value) for p in cell.runs if p.valid and p.value is not None],
        delta,
        plan_order,
        no_delta="no A/A threshold: the baselines have fewer than 4 valid runs",
    )
    tails, tail_delta = tail_comparisons(store, cells, plan, plan_order)

    return CampaignAnalysis(
        campaign_id=campaign_id,
        name=camp["name"],
        status=camp["status"],
        plan_source=camp["plan_source"],
        plan_text=camp["plan_text"],
        boardlab_version=camp["boardlab_version"],
        started_unix_s=camp["started_unix_s"],
        finished_unix_s=camp["finished_unix_s"],
        board_label=board["label"],
        inventory=json.loads(board["inventory_json"]),
        environment=json.loads(camp["environment_json"]),
        monitor=json.loads(camp["monitor_json"] or "{}"),
        order=plan_order,
        cells=cells,
        comparisons=tuple(results),
        delta=delta,
        notes=json.loads(camp["notes_json"] or "{}"),
        rt_cells=rt_cells(store, cells),
        ai_cells=ai_cells(store, cells),
        services_cells=study_services.services_cells(store, cells),
        tail_comparisons=tails,
        tail_delta=tail_delta,
    )


def latest_campaign_id(store: Store) -> int | None:
    rows = store.campaigns()
    return rows[-1]["id"] if rows else None
