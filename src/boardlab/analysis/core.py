"""From a stored campaign to the numbers a report shows: per-cell summaries and per-comparison verdicts.

Pure with respect to the store's rows: it reads, computes with boardlab.stats (docs/method.md), and returns
frozen records; the studies (analysis.studies) add theirs, and `boardlab.report` lays out the document
built from them and computes nothing statistical.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

from boardlab.analysis.document import Section
from boardlab.analysis.format import cell_label
from boardlab.analysis.monitor import MonitorSeries, monitor_series  # noqa: F401 (the package's API)
from boardlab.analysis.specs import remember_campaign, spec_of, tail_samples
from boardlab.stats import (
    DEFAULT_DELTA,
    DEFAULT_TAIL_DELTA,
    CellSummary,
    Comparison,
    RunEnvironment,
    adjust,
    compare,
    compare_tail,
    family_method,
    summarize,
)
from boardlab.stats.threshold import family_method_name
from boardlab.store import Store

MIN_RUNS_FOR_SUMMARY = 2
# Workloads whose spec says `tail_samples` get a comparison of their tail of its own (`tail_comparisons`), with
# the rule of `stats.tails`: per-run p99 when every run has >= 100 samples, else the pooled p99 with a
# cluster bootstrap.
TAIL_SEED_OFFSET = 100_000  # bootstrap seeds of the tail comparisons, apart from the medians'
AA_SEED_OFFSET = 200_000  # and of the A/A controls
AA_ARMS = ("A1", "A2")


def is_tail_metric(metric: str) -> bool:
    """p99 and above (and maxima): the metrics whose default threshold is 10%, not 2% (docs/method.md)."""
    m = metric.lower()
    return m.startswith("max") or "_max" in m or "p99" in m


def threshold_for(plan: dict, workload: str, metric: str, *, tail: bool = False) -> tuple[float, str]:
    """The practical threshold delta of a workload's metric and where it comes from: the plan's
    `threshold` (`tail_threshold` for tails) of that workload, else the default (2%, tails 10%)."""
    tail = tail or is_tail_metric(metric)
    key = "tail_threshold" if tail else "threshold"
    for entry in plan.get("workloads", []):
        if isinstance(entry, dict) and entry.get("name") == workload and key in entry:
            value = entry[key]
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                return float(value), f"plan: {key} = {value:g}"
    default = DEFAULT_TAIL_DELTA if tail else DEFAULT_DELTA
    return default, f"default for {'tail metrics' if tail else 'run-time and throughput'}"


@dataclass(frozen=True, slots=True)
class RunPoint:
    """One run of a cell, as plots need it. Slots: a campaign of a million runs holds a million of these."""

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
    aa_arm: str | None = None  # "A1" / "A2" on a reference cell's runs (the schedule's A/A labels)
    user_us: int | None = None  # the worker's own CPU time (wait4 rusage), user and system
    system_us: int | None = None


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
        return cell_label(self.workload, self.params)

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
    # Set when the A/A control of this comparison's reference cell said slowdown or speedup: why the
    # verdict cannot be trusted and what to do (docs/method.md "A/A control").
    unstable: str | None = None
    delta_source: str = ""  # where the threshold came from (the plan, or the default)


@dataclass(frozen=True)
class AAControl:
    """The A/A control of one reference cell: its baseline runs labelled A1 and A2 alternately by the
    schedule before the first run, compared with each other by the same rule as every comparison.
    Expected: no change or inconclusive. Not part of the report's correction family: uncorrected, it errs
    towards calling a workload unstable, the safe side for a control."""

    cell_id: int
    workload: str
    params: dict[str, Any]
    label: str
    condition: str
    metric: str
    unit: str
    n_a1: int
    n_a2: int
    comparison: Comparison | None
    reason: str | None  # why there is no A/A verdict

    @property
    def kind(self) -> str:
        if self.comparison is None:
            return "insufficient" if self.n_a1 or self.n_a2 else "not labelled"
        return self.comparison.verdict.kind

    @property
    def unstable(self) -> bool:
        return self.comparison is not None and self.comparison.verdict.kind in ("slowdown", "speedup")

    @property
    def remedy(self) -> str | None:
        if not self.unstable:
            return None
        assert self.comparison is not None
        c = self.comparison
        return (
            f"the A/A control says {c.verdict.kind} (A2/A1 cost ratio {c.cost_ratio:.3f}, decision interval "
            f"[{c.decision_ci.low:.3f}, {c.decision_ci.high:.3f}]) although both halves ran the same "
            "condition: the board drifted or was not quiet during the campaign. Check the drift column, the "
            "gate's waits and the temperatures, quiet the board (stop other work, fix the frequency, let it "
            "cool), then run the campaign again"
            if c.decision_ci is not None
            else f"the A/A control says {c.verdict.kind}"
        )


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
    notes: dict = field(default_factory=dict)
    # The p99 against the baseline, for workloads with `tail_samples` (stats.tails: per-run or pooled with a
    # cluster bootstrap), in the same correction family as the medians.
    tail_comparisons: tuple[ComparisonAnalysis, ...] = ()
    aa_controls: tuple[AAControl, ...] = ()
    family_size: int = 0  # every comparison with a verdict, medians and tails together
    family_adjustment: str = "holm"  # "holm" up to 50 comparisons, "bh" above
    # The studies that apply to this campaign (analysis.studies), each with its typed record, in report order.
    studies: tuple[StudyResult, ...] = ()

    def study_sections(self) -> list[Section]:
        """Every applying study's sections of the document, in the registry's order."""
        return [sec for r in self.studies for sec in r.sections(self)]

    @property
    def shown_by_studies(self) -> dict[int, str]:
        """cell id -> where a study's section shows it (instead of the generic boxplots)."""
        return {cid: r.shown_as for r in self.studies for cid in r.shows}

    def study(self, module: str) -> Any:
        """The record of the study `module` (e.g. `boardlab.analysis.studies.energy.__name__`), or None."""
        return next((r.record for r in self.studies if r.study == module), None)

    @property
    def family_text(self) -> str:
        return (
            f"{family_method_name(self.family_adjustment)} over all {self.family_size} comparisons of this "
            "report (medians and tails together)"
        )

    @property
    def unstable_workloads(self) -> list[AAControl]:
        return [c for c in self.aa_controls if c.unstable]

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
    environments: dict[tuple, RunEnvironment] = {}  # equal environments shared (a frozen record)
    for r in runs:
        mon = json.loads(r["monitor_json"])
        ru = json.loads(r["rusage_json"] or "{}")
        env = run_environment(mon)
        # equal environments shared; the key tells 1, 1.0 and True apart (as the record's equality does not)
        env_key = (type(env.mean_freq_khz), env.mean_freq_khz, type(env.max_temp_mc), env.max_temp_mc,
                   type(env.throttled), env.throttled)  # fmt: skip
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
                environment=environments.setdefault(env_key, env),
                worker_cpu_pct=mon.get("worker.cpu_pct_mean"),
                warmup_capped=None if r["warmup_capped"] is None else bool(r["warmup_capped"]),
                aa_arm=r["aa_arm"] if "aa_arm" in r.keys() else None,
                user_us=ru.get("utime_us"),
                system_us=ru.get("stime_us"),
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


def _metric_samples(store: Store, cell: CellAnalysis, metric: str) -> dict[int, list[float]]:
    """run id -> every sample of `metric` the valid run stored (frames, iterations), in order; runs in
    the cell's run order. One query for the cell."""
    stored = store.cell_values(cell.cell_id, metric)
    return {p.run_id: stored[p.run_id] for p in cell.runs if p.valid and stored.get(p.run_id)}


def is_sample_histogram(name: str, histogram: str | None) -> bool:
    """Whether a stored histogram holds the samples the spec names (`latency_us` or `latency_us.cpuN[.tK]`)."""
    return histogram is not None and (name == histogram or name.startswith(histogram + "."))


def _histogram_samples(store: Store, cell: CellAnalysis) -> dict[int, list[float]]:
    """run id -> the samples of a valid run, rebuilt from the histograms its spec names (each sample at its
    bucket's lower edge; overflow at the limit). Only used when runs are short (< 100 samples), so the lists
    stay small."""
    spec = spec_of(cell.workload)
    histogram = spec.sample_histogram if spec else None
    out: dict[int, list[float]] = {}
    stored = store.cell_histograms(cell.cell_id)  # one query for the cell
    for p in cell.runs:
        if not p.valid:
            continue
        samples: list[float] = []
        for h in stored.get(p.run_id, ()):
            if not is_sample_histogram(h["name"], histogram):
                continue
            counts = json.loads(h["counts_json"])
            w = float(h["bucket_width"])
            for i, n in enumerate(counts):
                samples.extend([i * w] * int(n))
            samples.extend([len(counts) * w] * int(h["overflow"]))
        if samples:
            out[p.run_id] = samples
    return out


def metrics_by_name(store: Store, run_id: int) -> dict[str, dict]:
    """A run's stored metrics (median, min, p90, p99, unit ...) by metric name."""
    return {row["metric"]: dict(row) for row in store.run_metrics(run_id)}


def _median(metrics: dict[str, dict], metric: str) -> float | None:
    """The stored median of `metric` among a run's metrics (`metrics_by_name`), or None."""
    m = metrics.get(metric)
    return None if m is None else m["median"]


def tail_metric_name(cell: CellAnalysis) -> str:
    """The metric a tail comparison of this cell is about: the worker's own p99 metric, or 'metric p99'."""
    spec = spec_of(cell.workload)
    return spec.tail_metric if spec and spec.tail_metric else cell.metric + " p99"


def _tail_arm(store: Store, cell: CellAnalysis) -> tuple[list[RunPoint], list[list[float]] | list[float]]:
    """The runs of a tail arm: when the worker computes its own p99 (`tail_metric`, e.g. from a histogram),
    each run's p99 when it has >= 100 samples (a float per run), else its samples rebuilt from the
    histograms; otherwise every stored sample of the primary metric per run (e.g. each frame's latency)."""
    from boardlab.stats import TAIL_MIN_SAMPLES

    spec = spec_of(cell.workload)
    if spec is not None and spec.tail_metric:
        points, p99s = [], []
        metrics = store.cell_metrics(cell.cell_id)  # one query for the cell
        for p in cell.runs:
            if not p.valid:
                continue
            n = _median(metrics.get(p.run_id, {}), spec.tail_count_metric or "samples")
            v = _median(metrics.get(p.run_id, {}), spec.tail_metric)
            if n is None or v is None or n < TAIL_MIN_SAMPLES or v <= 0:
                break
            points.append(p)
            p99s.append(float(v))
        else:
            return points, p99s
        samples = _histogram_samples(store, cell)
        return [p for p in cell.runs if p.run_id in samples], list(samples.values())
    samples = _metric_samples(store, cell, cell.metric)
    return [p for p in cell.runs if p.run_id in samples], list(samples.values())


def tail_comparisons(
    store: Store, cells: tuple[CellAnalysis, ...], plan: dict, *, seed_offset: int = TAIL_SEED_OFFSET
) -> tuple[ComparisonAnalysis, ...]:
    """Each condition against its baseline on the p99 (workloads with `tail_samples`) by `stats.tails`: per-run p99s
    when every run has >= 100 samples, else the pooled p99 with a cluster bootstrap over runs. Unadjusted
    here: `analyze` corrects them together with the medians."""
    from boardlab.stats import TAIL_MIN_SAMPLES
    from boardlab.stats.tails import TAIL_RESAMPLES

    tail_cells = tuple(c for c in cells if tail_samples(c.workload))
    arms: dict[int, tuple[list[RunPoint], list]] = {}
    results: list[ComparisonAnalysis] = []
    # A pooled tail's bootstrap p cannot go below 2 / (B + 1): enough resamples that it can still clear
    # 0.05 after the report's correction over every comparison (reachability, docs/method.md).
    family = sum(1 for *_, missing in _pairs(cells, plan) if missing is None)
    family += sum(1 for *_, missing in _pairs(tail_cells, plan) if missing is None)
    resamples = max(TAIL_RESAMPLES, math.ceil(2 * family / 0.05))
    for cond, base, cond_label, base_label, missing in _pairs(tail_cells, plan):
        spec = spec_of(cond.workload)
        metric = spec.tail_metric if spec and spec.tail_metric else cond.metric
        delta, source = threshold_for(plan, cond.workload, metric, tail=True)
        comp, reason = None, missing
        if reason is None:
            for c in (base, cond):
                if c.cell_id not in arms:
                    arms[c.cell_id] = _tail_arm(store, c)
            (bp, bv), (cp, cv) = arms[base.cell_id], arms[cond.cell_id]
            if not bv or not cv:
                reason = "no valid run with tail samples under " + ("the baseline" if not bv else cond_label)
            else:
                try:
                    if isinstance(bv[0], float) and isinstance(cv[0], float):
                        comp = compare(
                            bv,
                            cv,
                            higher_is_better=False,
                            delta=delta,
                            seed=seed_offset + len(results),
                            baseline_env=[p.environment for p in bp],
                            condition_env=[p.environment for p in cp],
                        )
                        comp = dataclasses.replace(
                            comp, statistic=f"per-run p99 (every run has >= {TAIL_MIN_SAMPLES} samples)"
                        )
                    else:
                        if isinstance(bv[0], float) or isinstance(cv[0], float):
                            bp, bv = (
                                [p for p in base.runs if p.valid],
                                list(_histogram_samples(store, base).values()),
                            )
                            cp, cv = (
                                [p for p in cond.runs if p.valid],
                                list(_histogram_samples(store, cond).values()),
                            )
                        comp = compare_tail(
                            bv,
                            cv,
                            q=0.99,
                            resamples=resamples,
                            higher_is_better=False,
                            delta=delta,
                            seed=seed_offset + len(results),
                            baseline_env=[p.environment for p in bp][: len(bv)],
                            condition_env=[p.environment for p in cp][: len(cv)],
                        )
                except ValueError as exc:
                    reason = f"not comparable: {exc}"
        results.append(
            ComparisonAnalysis(
                workload=cond.workload,
                params=cond.params,
                label=cond.label,
                condition=cond_label,
                baseline=base_label,
                metric=tail_metric_name(cond),
                unit=cond.unit,
                comparison=comp,
                reason=reason,
                delta_source=source,
            )
        )
    return tuple(results)


def median_comparisons(
    cells: tuple[CellAnalysis, ...], plan: dict, plan_order: str
) -> tuple[ComparisonAnalysis, ...]:
    """Each (condition, baseline) pair compared on the runs' medians (one value per run, never pooled
    iterations), paired by block under ABBA; unadjusted here (`analyze` corrects the whole family)."""
    results: list[ComparisonAnalysis] = []
    for cond, base, cond_label, base_label, missing in _pairs(cells, plan):
        delta, source = threshold_for(plan, cond.workload, cond.metric)
        comp, reason = None, missing
        if reason is None:
            bv = [p for p in base.runs if p.valid and p.value is not None]
            cv = [p for p in cond.runs if p.valid and p.value is not None]
            if not bv or not cv:
                reason = "no valid run under " + ("the baseline" if not bv else cond_label)
            else:
                blocks = (
                    ([p.repetition for p in bv], [p.repetition for p in cv]) if plan_order == "abba" else None
                )
                try:
                    comp = compare(
                        [p.value for p in bv],
                        [p.value for p in cv],
                        higher_is_better=cond.higher_is_better,
                        delta=delta,
                        seed=len(results),
                        paired_blocks=blocks,
                        baseline_env=[p.environment for p in bv],
                        condition_env=[p.environment for p in cv],
                    )
                    comp = _with_flags(comp, bv, cv)
                except ValueError as exc:  # e.g. a metric that is zero or negative has no ratio
                    reason = f"not comparable: {exc}"
        results.append(
            ComparisonAnalysis(
                workload=cond.workload,
                params=cond.params,
                label=cond.label,
                condition=cond_label,
                baseline=base_label,
                metric=cond.metric,
                unit=cond.unit,
                comparison=comp,
                reason=reason,
                delta_source=source,
            )
        )
    return tuple(results)


def _with_flags(comp: Comparison, base: list[RunPoint], cond: list[RunPoint]) -> Comparison:
    """The comparison with its cells' flags (bimodal runs, drift in run order, a different environment than
    the reference: `stats.flags`) on its verdict record."""
    from boardlab.stats.flags import comparison_flags

    flags = comparison_flags(
        [p.value for p in base if p.value is not None],
        [p.value for p in cond if p.value is not None],
        baseline_order=[p.seq for p in base if p.value is not None],
        condition_order=[p.seq for p in cond if p.value is not None],
        confounding=comp.confounding,
    )
    return (
        dataclasses.replace(comp, verdict=dataclasses.replace(comp.verdict, flags=flags)) if flags else comp
    )


def aa_controls(cells: tuple[CellAnalysis, ...], plan: dict) -> tuple[AAControl, ...]:
    """The A/A control of every reference cell (the baseline side of a comparison): its A1 runs against
    its A2 runs, with the workload's threshold and the verdict rule of every comparison (unadjusted)."""
    out: list[AAControl] = []
    seen: set[int] = set()
    for _, base, *_ in _pairs(cells, plan):
        if base is None or base.cell_id in seen:
            continue
        seen.add(base.cell_id)
        arms: dict[str, list[float]] = {a: [] for a in AA_ARMS}
        for p in base.runs:
            if p.valid and p.value is not None and p.aa_arm in arms:
                arms[p.aa_arm].append(p.value)
        a1, a2 = arms["A1"], arms["A2"]
        delta, _ = threshold_for(plan, base.workload, base.metric)
        comp, reason = None, None
        if not a1 and not a2:
            reason = "its runs carry no A1/A2 labels (recorded before boardlab labelled them)"
        else:
            try:
                comp = compare(
                    a1,
                    a2,
                    higher_is_better=base.higher_is_better,
                    delta=delta,
                    seed=AA_SEED_OFFSET + base.cell_id,
                    test_kind="rank",  # a family of one at 5 + 5: the exact rank test (docs/method.md "Test")
                )
            except ValueError as exc:
                reason = f"not comparable: {exc}"
            if comp is not None and comp.verdict.kind == "insufficient":
                reason = (
                    f"{len(a1)} A1 and {len(a2)} A2 runs: the A/A control needs at least 5 of each "
                    "(10 baseline runs)"
                )
        out.append(
            AAControl(
                cell_id=base.cell_id,
                workload=base.workload,
                params=base.params,
                label=base.label,
                condition=base.condition,
                metric=base.metric,
                unit=base.unit,
                n_a1=len(a1),
                n_a2=len(a2),
                comparison=comp,
                reason=reason,
            )
        )
    return tuple(out)


def _mark_unstable(
    results: tuple[ComparisonAnalysis, ...],
    cells: tuple[CellAnalysis, ...],
    plan: dict,
    aa: dict[int, AAControl],
) -> tuple[ComparisonAnalysis, ...]:
    """Marks every comparison whose reference cell's A/A control is unstable, with the reason and remedy."""
    ref = {}
    for cond, base, cond_label, base_label, _ in _pairs(cells, plan):
        if base is not None:
            ref[(cond.workload, json.dumps(cond.params, sort_keys=True), cond_label, base_label)] = (
                base.cell_id
            )
    out = []
    for r in results:
        cid = ref.get((r.workload, json.dumps(r.params, sort_keys=True), r.condition, r.baseline))
        control = aa.get(cid) if cid is not None else None
        if control is not None and control.unstable:
            r = dataclasses.replace(r, unstable=control.remedy)
        out.append(r)
    return tuple(out)


def correct_family(
    *families: tuple[ComparisonAnalysis, ...],
) -> tuple[tuple[tuple[ComparisonAnalysis, ...], ...], int, str]:
    """One correction family per report (docs/method.md): every comparison with a verdict, medians and tails
    together, Holm up to 50 comparisons and Benjamini-Hochberg above; verdicts re-decided on the adjusted p."""
    slots = [(i, j) for i, fam in enumerate(families) for j, r in enumerate(fam) if r.comparison is not None]
    size = len(slots)
    method = family_method(size)
    out = [list(f) for f in families]
    if slots:
        adjusted = adjust([families[i][j].comparison for i, j in slots], method)  # type: ignore[misc]
        for (i, j), c in zip(slots, adjusted, strict=True):
            out[i][j] = dataclasses.replace(out[i][j], comparison=c)
    return tuple(tuple(f) for f in out), size, method


def analyze(store: Store, campaign_id: int) -> CampaignAnalysis:
    camp = store.campaign(campaign_id)
    remember_campaign(store, campaign_id)  # what its workloads are, as stored with it (analysis/specs.py)
    board = store.board(camp["board_id"])
    # one query per cell: the rows of one cell at a time, never the campaign's
    cells = tuple(_cell(row, store.cell_runs(row["id"])) for row in store.cells(campaign_id))
    plan: dict = {}
    try:
        import tomllib

        plan = tomllib.loads(camp["plan_text"])
    except Exception:  # an unreadable stored plan only loses the pairing hint and parameter comparisons
        pass
    plan_order = plan.get("runs", {}).get("order", "interleave")

    medians = median_comparisons(cells, plan, plan_order)
    tails = tail_comparisons(store, cells, plan)
    (medians, tails), size, method = correct_family(medians, tails)
    controls = aa_controls(cells, plan)
    by_cell = {c.cell_id: c for c in controls}
    medians = _mark_unstable(medians, cells, plan, by_cell)
    tails = _mark_unstable(tails, tuple(c for c in cells if tail_samples(c.workload)), plan, by_cell)
    inventory = json.loads(board["inventory_json"])
    environment = json.loads(camp["environment_json"])
    from boardlab.analysis.studies import run_studies

    ctx = StudyContext(store, campaign_id, cells, plan, inventory, environment)

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
        inventory=inventory,
        environment=environment,
        monitor=json.loads(camp["monitor_json"] or "{}"),
        order=plan_order,
        cells=cells,
        comparisons=medians,
        notes=json.loads(camp["notes_json"] or "{}"),
        tail_comparisons=tails,
        aa_controls=controls,
        family_size=size,
        family_adjustment=method,
        studies=run_studies(ctx),
    )


def latest_campaign_id(store: Store) -> int | None:
    rows = store.campaigns()
    return rows[-1]["id"] if rows else None


@dataclass(frozen=True)
class StudyContext:
    """What a study may read: the store (through its methods only), the campaign and its analysed cells."""

    store: Store
    campaign_id: int
    cells: tuple[CellAnalysis, ...]
    plan: dict
    inventory: dict
    environment: dict


@dataclass(frozen=True)
class StudyResult:
    """One applying study: its module (the plugin), its section title, its typed record, and the cells its
    section shows (the generic run-value boxplots then point there instead of drawing them again)."""

    study: str
    title: str
    record: Any
    shows: tuple[int, ...] = ()
    shown_as: str = ""  # where those cells are shown, e.g. "per model in the AI inference section below"
    covers: tuple[
        int, ...
    ] = ()  # the cells the study is about (its `shows`, or more): the summary card's groups

    def sections(self, analysis: CampaignAnalysis) -> list[Section]:
        import importlib

        return list(importlib.import_module(self.study).sections(analysis, self.record))
