"""From a stored campaign to the numbers a report shows: per-cell summaries and per-comparison verdicts.

Pure with respect to the store's rows: it reads, computes with boardlab.stats (docs/method.md), and returns
the frozen records of `analysis.records`; the studies (analysis.studies) add theirs, and `boardlab.report`
lays out the document built from them and computes nothing statistical.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import NamedTuple

from boardlab.analysis.cellruns import (
    CellTables,
    GrowingTables,
    Remember,
    StoredRuns,
    computed_now,
    read_table,
    remember_with,
)
from boardlab.analysis.monitor import MonitorSeries, monitor_series  # noqa: F401 (the package's API)
from boardlab.analysis.records import (
    AAControl,
    CampaignAnalysis,
    CellAnalysis,
    ComparisonAnalysis,
    StudyContext,
)
from boardlab.analysis.runs import MEASURED, VALID, RunTable
from boardlab.analysis.specs import workload_facts
from boardlab.analysis.studies import run_studies
from boardlab.errors import InputError
from boardlab.model import facts
from boardlab.model.facts import CellFacts, WorkloadFacts
from boardlab.stats import (
    CellSummary,
    Comparison,
    RunEnvironment,
    adjust,
    compare,
    compare_tail,
    family_method,
    summarize,
)
from boardlab.stats.threshold import threshold_of
from boardlab.store import Store

MIN_RUNS_FOR_SUMMARY = 2
# Workloads whose spec says `tail_samples` get a comparison of their tail of its own (`tail_comparisons`),
# with the rule of `stats.tails`: per-run p99 when every run has >= 100 samples, else the pooled p99 with a
# cluster bootstrap.
TAIL_SEED_OFFSET = 100_000  # bootstrap seeds of the tail comparisons, apart from the medians'
AA_SEED_OFFSET = 200_000  # and of the A/A controls
AA_ARMS = ("A1", "A2")
TailArm = tuple[Sequence[RunEnvironment], list]  # a tail comparison's arm: its runs' environments, tails


def named_thresholds(plan: dict, workload: str) -> CellFacts:
    """A cell's thresholds from a stored plan by workload name alone: how a campaign stored before its cells
    carried them is read (the first entry of the workload that sets each; `derived` says so)."""
    found: dict[str, float] = {}
    for entry in plan.get("workloads", []):
        if not isinstance(entry, dict) or entry.get("name") != workload:
            continue
        for key in ("threshold", "tail_threshold"):
            value = entry.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                found.setdefault(key, float(value))
    return CellFacts(found.get("threshold"), found.get("tail_threshold"), derived=True)


def named_pairing(plan: dict, workload: str, params: dict) -> tuple[str, object] | None:
    """A cell's compare pairing from a stored plan by workload name alone (how a campaign stored before its
    cells carried their pairing is read): (parameter, its first value) of the first entry of the workload
    whose `compare` list holds the cell's value after the first, or None."""
    for entry in plan.get("workloads", []):
        if not isinstance(entry, dict) or entry.get("name") != workload:
            continue
        param = entry.get("compare")
        if not isinstance(param, str):
            continue
        values = entry["params"].get(param) if isinstance(entry.get("params"), dict) else None
        if isinstance(values, list) and len(values) >= 2 and params.get(param) in values[1:]:
            return param, values[0]
    return None


PAIRING_DERIVED = (
    "This campaign was stored without its cells' compare pairing (an older boardlab): a `compare` parameter "
    "is paired from its stored plan by workload name, the first entry of the workload that compares the "
    "value, which cannot tell two entries of one workload apart."
)


def named_tail(metric: str) -> bool:
    """A metric's tail-ness from its name alone (p99 and above, maxima): how a cell stored before cells
    carried their metric's declared tail-ness is read. The one place a name is read for it: the rule the
    specs' declarations (`MetricSpec.tail`) replaced, which gave the same answer for every metric of the
    catalog, so an older campaign's report is what it was."""
    m = metric.lower()
    return m.startswith("max") or "_max" in m or "p99" in m


def cell_facts(store: Store, campaign_id: int, plan_text: str, rows) -> tuple[dict[str, CellFacts], str, str]:
    """(cell key -> its facts, the run order, what was derived) as stored with the campaign. A campaign
    stored without them gets them derived once from its stored plan (`named_thresholds`, `named_pairing`) and
    the third item says so (PAIRING_DERIVED when a pairing was derived, else ""); a cell stored without its
    metric's tail-ness gets it from the metric's name (`named_tail`). Each cell's condition parts are those
    the store keeps with it. InputError for stored facts this boardlab cannot read."""
    known, order, said = _cell_facts(store, campaign_id, plan_text, rows)
    out = {}
    for row in rows:
        f = known[row["key"]]
        out[row["key"]] = dataclasses.replace(
            f,
            tail=named_tail(row["metric"]) if f.tail is None else f.tail,
            condition=facts.condition_parts(json.loads(row["condition_json"])),
        )
    return out, order, said


def _cell_facts(
    store: Store, campaign_id: int, plan_text: str, rows
) -> tuple[dict[str, CellFacts], str, str]:
    data = store.campaign_artifact(campaign_id, facts.CELL_FACTS)
    try:
        stored = None if data is None else facts.read_cell_facts_document(json.loads(data))
    except ValueError as exc:  # JSONDecodeError too
        raise InputError(
            f"{store.path}: campaign {campaign_id}: its stored {facts.CELL_FACTS} cannot be read ({exc}); "
            "a newer boardlab wrote it, or the database is damaged"
        ) from None
    known = {} if stored is None else stored.cells
    if stored is not None and stored.order is not None and all(row["key"] in known for row in rows):
        return {row["key"]: known[row["key"]] for row in rows}, stored.order, ""
    return _derived_cell_facts(stored_plan(plan_text), rows, stored)


def _derived_cell_facts(
    plan: dict, rows, stored: facts.StoredCellFacts | None
) -> tuple[dict[str, CellFacts], str, str]:
    """`cell_facts` of an older campaign, from its stored plan: the thresholds of a cell stored without
    them (`named_thresholds`); with no pairing stored (schema 1 or nothing), every cell's pairing
    (`named_pairing`) and the run order."""
    pairing = stored is None or stored.order is None
    known = {} if stored is None else stored.cells
    by_params = {
        (r["workload"], _params_key(json.loads(r["params_json"])), r["condition"]): r["key"] for r in rows
    }
    derived: dict[str, CellFacts] = {}
    out = {}
    for row in rows:
        if row["workload"] not in derived:
            derived[row["workload"]] = named_thresholds(plan, row["workload"])
        cell = known.get(row["key"]) or derived[row["workload"]]
        params = json.loads(row["params_json"])
        pair = named_pairing(plan, row["workload"], params) if pairing else None
        if pair is not None:
            base = _params_key({**params, pair[0]: pair[1]})
            missing = f"{row['workload']}[{pair[0]}={pair[1]}]@{row['condition']}"
            key = by_params.get((row["workload"], base, row["condition"]), missing)
            cell = dataclasses.replace(cell, compare=facts.ComparePair(pair[0], key, pair[1]))
        out[row["key"]] = cell
    if stored is not None and stored.order is not None:
        return out, stored.order, ""
    said = PAIRING_DERIVED if any(c.compare is not None for c in out.values()) else ""
    return out, plan.get("runs", {}).get("order", "interleave"), said


def stored_plan(plan_text: str) -> dict:
    """The plan stored with a campaign, as TOML; {} when it cannot be read (an unreadable stored plan only
    loses what an older campaign derives from it)."""
    import tomllib

    try:
        return tomllib.loads(plan_text)
    except (tomllib.TOMLDecodeError, TypeError):
        return {}


# The campaign's stored columns that `CampaignAnalysis` keeps under the same name.
_CAMPAIGN_COLUMNS = (
    "name", "status", "plan_source", "plan_text", "boardlab_version", "started_unix_s", "finished_unix_s",
)  # fmt: skip


def _summarized(cell: CellAnalysis, remember: Remember = computed_now) -> CellAnalysis:
    """The cell with its summary over its valid runs, or why it has none (`remember`: kept while its runs
    are the same)."""
    summary, why = remember("summary", (cell.cell_id,), (), partial(_summary_of, cell))
    return dataclasses.replace(cell, summary=summary, summary_reason=why)


def _summary_of(cell: CellAnalysis) -> tuple[CellSummary | None, str | None]:
    values = cell.runs.values()
    if len(values) < MIN_RUNS_FOR_SUMMARY:
        return None, f"{len(values)} valid run(s): a summary needs at least {MIN_RUNS_FOR_SUMMARY}"
    return summarize(values, order=cell.runs.seqs(), seed=cell.cell_id), None


class Pair(NamedTuple):
    """One comparison `_pairs` asks for: the condition's cell and its reference's (None: `missing` says why),
    their labels, and the `compare` parameter whose values it compares ("": a condition against its
    baseline condition). The parameter is kept, not read back out of the label, where a reader needs it."""

    cond: CellAnalysis
    base: CellAnalysis | None
    cond_label: str
    base_label: str
    missing: str | None
    compared: str = ""


def _pair_cells(pair: Pair) -> tuple[int, ...]:
    """The cell ids a pair of `_pairs` compares: the condition's, and the baseline's where there is one."""
    cond, base = pair.cond, pair.base
    return (cond.cell_id,) if base is None else (cond.cell_id, base.cell_id)


def _pair_inputs(pair: Pair) -> tuple:
    """What a pair's comparison reads beside its cells' runs: its labels, why it is missing, what it
    compares, the facts."""
    cond, base, *labels = pair
    return (*labels, cond.facts, None if base is None else base.facts)


def _cell(row, runs: RunTable | StoredRuns, entry_facts: CellFacts) -> CellAnalysis:
    """A cell as stored, its runs not read yet where they are `StoredRuns`, and not summarized yet."""
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
        runs=runs,
        summary=None,
        summary_reason=None,
        facts=entry_facts,
    )


def _runs_of(
    store: Store, cell_id: int, tables: CellTables | None, growing: GrowingTables | None
) -> RunTable | StoredRuns:
    if tables is not None:
        return StoredRuns(cell_id, tables)
    return read_table(store.cell_run_batches(cell_id)) if growing is None else growing.table(store, cell_id)


def _params_key(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def _pairs(cells: tuple[CellAnalysis, ...]) -> Iterator[Pair]:
    """Every comparison (`Pair`): each condition against its baseline condition, and each value of a
    `compare` parameter against the parameter's first value in the cell's own plan entry (its stored
    `facts.compare`)."""
    by_params = {(c.workload, _params_key(c.params), c.condition): c for c in cells}
    by_key = {c.key: c for c in cells}
    for c in cells:
        if c.baseline is None:
            continue
        base = by_params.get((c.workload, _params_key(c.params), c.baseline))
        missing = None if base else f"no baseline cell {c.workload} under {c.baseline}"
        yield Pair(c, base, c.condition, c.baseline, missing)
    for c in cells:
        pair = c.facts.compare
        if pair is None:
            continue
        base = by_key.get(pair.baseline_key)
        at = "" if c.baseline is None else f" @{c.condition_text}"  # a label, in the reader's words
        label, base_label = (
            f"{pair.param}={c.params.get(pair.param)}{at}",
            f"{pair.param}={pair.baseline_value}{at}",
        )
        missing = None if base else f"no cell with {pair.param}={pair.baseline_value}"
        yield Pair(c, base, label, base_label, missing, pair.param)


def _metric_samples(store: Store, cell: CellAnalysis, metric: str) -> dict[int, list[float]]:
    """run id -> every sample of `metric` the valid run stored (frames, iterations), in order; runs in
    the cell's run order. One query for the cell."""
    stored = store.cell_values(cell.cell_id, metric)
    return {i: stored[i] for i in cell.runs.select(cell.runs.run_id, VALID) if stored.get(i)}


def is_sample_histogram(name: str, histogram: str | None) -> bool:
    """Whether a stored histogram holds the samples the spec names (`latency_us` or
    `latency_us.cpuN[.tK]`)."""
    return histogram is not None and (name == histogram or name.startswith(histogram + "."))


def _histogram_samples(store: Store, cell: CellAnalysis, workloads: WorkloadFacts) -> dict[int, list[float]]:
    """run id -> the samples of a valid run, rebuilt from the histograms its spec names (each sample at its
    bucket's lower edge; overflow at the limit). Only used when runs are short (< 100 samples), so the lists
    stay small."""
    spec = workloads.spec_of(cell.workload)
    histogram = spec.sample_histogram if spec else None
    out: dict[int, list[float]] = {}
    stored = store.cell_histograms(cell.cell_id)  # one query for the cell
    for run_id in cell.runs.select(cell.runs.run_id, VALID):
        samples: list[float] = []
        for h in stored.get(run_id, ()):
            if not is_sample_histogram(h["name"], histogram):
                continue
            counts = json.loads(h["counts_json"])
            w = float(h["bucket_width"])
            for i, n in enumerate(counts):
                samples.extend([i * w] * int(n))
            samples.extend([len(counts) * w] * int(h["overflow"]))
        if samples:
            out[run_id] = samples
    return out


def metrics_by_name(store: Store, run_id: int) -> dict[str, dict]:
    """A run's stored metrics (median, min, p90, p99, unit ...) by metric name."""
    return {row["metric"]: dict(row) for row in store.run_metrics(run_id)}


def _median(metrics: dict[str, dict], metric: str) -> float | None:
    """The stored median of `metric` among a run's metrics (`metrics_by_name`), or None."""
    m = metrics.get(metric)
    return None if m is None else m["median"]


def tail_metric_name(cell: CellAnalysis, workloads: WorkloadFacts) -> str:
    """The metric a tail comparison of this cell is about: the worker's own p99 metric, or 'metric p99'."""
    spec = workloads.spec_of(cell.workload)
    return spec.tail_metric if spec and spec.tail_metric else cell.metric + " p99"


def _tail_arm(
    store: Store, cell: CellAnalysis, workloads: WorkloadFacts
) -> tuple[list[RunEnvironment], list[list[float]] | list[float]]:
    """The runs of a tail arm (their environments, their tails): when the worker computes its own p99
    (`tail_metric`, e.g. from a histogram), each run's p99 when it has >= 100 samples (a float per run), else
    its samples rebuilt from the histograms; otherwise every stored sample of the primary metric per run (e.g.
    each frame's latency)."""
    from boardlab.stats import TAIL_MIN_SAMPLES

    spec = workloads.spec_of(cell.workload)
    valid = list(zip(cell.runs.select(cell.runs.run_id, VALID), cell.runs.environments(VALID), strict=True))
    if spec is not None and spec.tail_metric:
        envs, p99s = [], []
        metrics = store.cell_metrics(cell.cell_id)  # one query for the cell
        for run_id, env in valid:
            n = _median(metrics.get(run_id, {}), spec.tail_count_metric or "samples")
            v = _median(metrics.get(run_id, {}), spec.tail_metric)
            if n is None or v is None or n < TAIL_MIN_SAMPLES or v <= 0:
                break
            envs.append(env)
            p99s.append(float(v))
        else:
            return envs, p99s
        samples = _histogram_samples(store, cell, workloads)
    else:
        samples = _metric_samples(store, cell, cell.metric)
    return [env for run_id, env in valid if run_id in samples], list(samples.values())


def tail_comparisons(
    store: Store,
    cells: tuple[CellAnalysis, ...],
    workloads: WorkloadFacts,
    *,
    family_size: int,
    seed_offset: int = TAIL_SEED_OFFSET,
    remember: Remember = computed_now,
) -> tuple[ComparisonAnalysis, ...]:
    """Each condition against its baseline on the p99 (workloads with `tail_samples`) by `stats.tails`:
    per-run p99s when every run has >= 100 samples, else the pooled p99 with a permutation test over whole
    runs. Unadjusted here: `analyze` corrects them together with the medians (`family_size` comparisons, which
    set how far a permutation p must reach). `remember`: a pair's comparison kept while its cells' runs are
    the same (its samples are stored with its runs)."""
    tail_cells = tuple(c for c in cells if workloads.tail_samples(c.workload))
    arms: dict[int, TailArm] = {}
    pairs = list(_pairs(tail_cells))
    results: list[ComparisonAnalysis | None] = [None] * len(pairs)
    # an arm's samples are dropped after its last comparison, so a campaign's samples are never all held
    uses = Counter(cell_id for p in pairs for cell_id in _pair_cells(p))
    arm = partial(_held_arm, arms, store, workloads)
    for i in _by_baseline(pairs):  # a baseline's runs read once for all its conditions (`cells_in_pairs`)
        compute = partial(_tail_pair, store, pairs[i], arm, workloads, family_size, seed_offset + i)
        inputs = (*_pair_inputs(pairs[i]), family_size, seed_offset + i)
        results[i] = remember(("tail", i), _pair_cells(pairs[i]), inputs, compute)
        for cell_id in _pair_cells(pairs[i]):
            uses[cell_id] -= 1
            if not uses[cell_id]:
                arms.pop(cell_id, None)  # never read where the comparison was remembered
    return tuple(r for r in results if r is not None)


def _held_arm(
    arms: dict[int, TailArm], store: Store, workloads: WorkloadFacts, cell: CellAnalysis
) -> TailArm:
    """The cell's tail arm (`_tail_arm`), read once while `tail_comparisons` holds it."""
    if cell.cell_id not in arms:
        arms[cell.cell_id] = _tail_arm(store, cell, workloads)
    return arms[cell.cell_id]


def _tail_pair(
    store: Store,
    pair: Pair,
    arm: Callable[[CellAnalysis], TailArm],
    workloads: WorkloadFacts,
    family_size: int,
    seed: int,
) -> ComparisonAnalysis:
    """One pair of `_pairs` compared on the p99 (`tail_comparisons`); `arm(cell)`: its arm as held."""
    from boardlab.stats import TAIL_MIN_SAMPLES

    cond, base, cond_label = pair.cond, pair.base, pair.cond_label
    delta, source = threshold_of(cond.facts, tail=True)
    comp, reason = None, pair.missing
    if base is not None:  # else `missing` says why there is no comparison
        (bp, bv), (cp, cv) = arm(base), arm(cond)
        if not bv or not cv:
            reason = "no valid run with tail samples under " + ("the baseline" if not bv else cond_label)
        else:
            try:
                if isinstance(bv[0], float) and isinstance(cv[0], float):
                    comp = compare(bv, cv, higher_is_better=False, delta=delta, seed=seed, baseline_env=bp,
                                   condition_env=cp, family_size=family_size)  # fmt: skip
                    comp = dataclasses.replace(
                        comp, statistic=f"per-run p99 (every run has >= {TAIL_MIN_SAMPLES} samples)"
                    )
                else:
                    if isinstance(bv[0], float) or isinstance(cv[0], float):
                        (bp, bv), (cp, cv) = (_pooled_arm(store, c, workloads) for c in (base, cond))
                    comp = compare_tail(bv, cv, q=0.99, family_size=family_size, higher_is_better=False,
                                        delta=delta, seed=seed, baseline_env=bp[: len(bv)],
                                        condition_env=cp[: len(cv)])  # fmt: skip
            except ValueError as exc:
                reason = f"not comparable: {exc}"
    return _comparison(pair, tail_metric_name(cond, workloads), comp, reason, source, tail=True)


def _pooled_arm(store: Store, cell: CellAnalysis, workloads: WorkloadFacts) -> TailArm:
    """A tail arm of every run's samples rebuilt from its histograms, where one arm has per-run p99s and the
    other has not: both are then compared on pooled samples."""
    return cell.runs.environments(VALID), list(_histogram_samples(store, cell, workloads).values())


def cells_in_pairs(
    cells: tuple[CellAnalysis, ...], plan_order: str, *, family_size: int, remember: Remember = computed_now
) -> tuple[tuple[CellAnalysis, ...], tuple[ComparisonAnalysis, ...], tuple[AAControl, ...]]:
    """Every cell summarized, each (condition, baseline) pair compared on the runs' medians
    (`median_comparison`) and each reference cell's A/A control, in one pass over the cells: a baseline, its
    A/A control, then each of its conditions and their comparisons, so that a report holding two cells' runs
    at a time (`analyze(runs_budget=...)`) reads each cell once. Results in the order of `_pairs`.
    `remember`: each of them kept while the runs of its cells are the same."""
    pairs = list(_pairs(cells))
    done: dict[int, CellAnalysis] = {}
    controls: dict[int, AAControl] = {}

    def read(c: CellAnalysis) -> None:
        if c.cell_id not in done:
            done[c.cell_id] = _summarized(c, remember)

    medians: list[ComparisonAnalysis | None] = [None] * len(pairs)
    for i in _by_baseline(pairs):
        cond, base = pairs[i][:2]
        if base is not None:
            read(base)
            if base.cell_id not in controls:
                controls[base.cell_id] = remember(
                    "A/A", (base.cell_id,), (base.facts,), partial(aa_control, base)
                )
            if isinstance(base.runs, StoredRuns):  # used last: the next read lets the last condition go
                base.runs.table()
        read(cond)
        compute = partial(median_comparison, pairs[i], i, plan_order, family_size=family_size)
        inputs = (*_pair_inputs(pairs[i]), plan_order, family_size)
        medians[i] = remember(("median", i), _pair_cells(pairs[i]), inputs, compute)
    for c in cells:
        read(c)
    bases = dict.fromkeys(base.cell_id for _, base, *_ in pairs if base is not None)
    return (
        tuple(done[c.cell_id] for c in cells),
        tuple(m for m in medians if m is not None),
        tuple(controls[b] for b in bases),
    )


def _by_baseline(pairs: list) -> list[int]:
    """The pairs' indices, those of one baseline together (baselines in the order first seen)."""
    first: dict[int | None, int] = {}
    for i, (_, base, *_) in enumerate(pairs):
        first.setdefault(None if base is None else base.cell_id, i)
    return sorted(
        range(len(pairs)), key=lambda i: first[None if pairs[i][1] is None else pairs[i][1].cell_id]
    )


def median_comparison(pair: Pair, index: int, plan_order: str, *, family_size: int) -> ComparisonAnalysis:
    """The `index`-th (condition, baseline) pair of `_pairs` compared on the runs' medians (one value per
    run, never pooled iterations), paired by block under ABBA; unadjusted here (`analyze` corrects the whole
    family of `family_size` comparisons, which sets how far a permutation p must reach)."""
    cond, base, cond_label = pair.cond, pair.base, pair.cond_label
    delta, source = threshold_of(cond.facts)
    comp, reason = None, pair.missing
    if base is not None:  # else `missing` says why there is no comparison
        bv, cv = base.runs.values(), cond.runs.values()
        if not bv or not cv:
            reason = "no valid run under " + ("the baseline" if not bv else cond_label)
        else:
            blocks = (
                (base.runs.select(base.runs.repetition), cond.runs.select(cond.runs.repetition))
                if plan_order == "abba"
                else None
            )
            try:
                comp = compare(
                    bv,
                    cv,
                    higher_is_better=cond.higher_is_better,
                    delta=delta,
                    seed=index,
                    paired_blocks=blocks,
                    baseline_env=base.environments(),
                    condition_env=cond.environments(),
                    family_size=family_size,
                )
                comp = _with_flags(comp, (bv, cv), base, cond)
            except ValueError as exc:  # e.g. a metric that is zero or negative has no ratio
                reason = f"not comparable: {exc}"
    return _comparison(pair, cond.metric, comp, reason, source)


def _comparison(
    pair: Pair,
    metric: str,
    comp: Comparison | None,
    reason: str | None,
    source: str,
    *,
    tail: bool = False,
) -> ComparisonAnalysis:
    """The record of one pair: its verdict, or why it has none; `tail`: compared on the p99."""
    cond, base = pair.cond, pair.base
    return ComparisonAnalysis(
        workload=cond.workload,
        params=cond.params,
        label=cond.label,
        condition=pair.cond_label,
        baseline=pair.base_label,
        metric=metric,
        unit=cond.unit,
        comparison=comp,
        reason=reason,
        delta_source=source,
        cell_key=cond.key,
        baseline_key=base.key if base is not None else "",
        compared=pair.compared,
        tail=tail,
    )


def _with_flags(comp: Comparison, values: tuple, base: CellAnalysis, cond: CellAnalysis) -> Comparison:
    """The comparison with its cells' flags (bimodal runs, drift in run order, a different environment than
    the reference: `stats.flags`) on its verdict record; `values`: the arms' values, as compared."""
    from boardlab.stats.flags import comparison_flags

    flags = comparison_flags(
        *values,
        baseline_order=base.runs.seqs(),
        condition_order=cond.runs.seqs(),
        confounding=comp.confounding,
        higher_is_better=cond.higher_is_better,
    )
    return (
        dataclasses.replace(comp, verdict=dataclasses.replace(comp.verdict, flags=flags)) if flags else comp
    )


def aa_controls(cells: tuple[CellAnalysis, ...]) -> tuple[AAControl, ...]:
    """The A/A control of every reference cell (the baseline side of a comparison), in `_pairs` order."""
    bases = {base.cell_id: base for _, base, *_ in _pairs(cells) if base is not None}
    return tuple(aa_control(base) for base in bases.values())


def aa_control(base: CellAnalysis) -> AAControl:
    """A reference cell's A/A control: its A1 runs against its A2 runs, with the workload's threshold and the
    verdict rule of every comparison (unadjusted)."""
    arms: dict[str | None, list[float]] = {a: [] for a in AA_ARMS}
    for value, arm in zip(base.runs.values(), base.runs.strings(base.runs.aa_arm), strict=True):
        if arm in arms:
            arms[arm].append(value)
    a1, a2 = arms["A1"], arms["A2"]
    delta, _ = threshold_of(base.facts)
    comp, reason = None, None
    if not base.runs.count(MEASURED):
        reason = "it has no valid run to split into A1 and A2"
    elif not a1 and not a2:
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
    return AAControl(
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


def _mark_unstable(
    results: tuple[ComparisonAnalysis, ...],
    cells: tuple[CellAnalysis, ...],
    aa: dict[int, AAControl],
) -> tuple[ComparisonAnalysis, ...]:
    """Marks every comparison whose reference cell's A/A control is unstable, with the reason and remedy."""
    cell_ids = {c.key: c.cell_id for c in cells}
    out = []
    for r in results:
        cid = cell_ids.get(r.baseline_key) if r.baseline_key else None
        control = aa.get(cid) if cid is not None else None
        if control is not None and control.unstable:
            r = dataclasses.replace(r, unstable=control.remedy)
        out.append(r)
    return tuple(out)


def planned_family(cells: tuple[CellAnalysis, ...], workloads: WorkloadFacts) -> int:
    """How many comparisons the report's correction family will hold: every pair with both sides present,
    medians and tails (the permutation p-values are drawn far enough to pass its correction)."""
    family = sum(1 for p in _pairs(cells) if p.missing is None)
    tail_cells = tuple(c for c in cells if workloads.tail_samples(c.workload))
    return family + sum(1 for p in _pairs(tail_cells) if p.missing is None)


def correct_family(
    *families: tuple[ComparisonAnalysis, ...],
) -> tuple[tuple[tuple[ComparisonAnalysis, ...], ...], int, str]:
    """One correction family per report (docs/method.md): every comparison with a verdict, medians and tails
    together, Holm up to 50 comparisons and Benjamini-Hochberg above; verdicts re-decided on the adjusted
    p."""
    slots = [(i, j) for i, fam in enumerate(families) for j, r in enumerate(fam) if r.comparison is not None]
    size = len(slots)
    method = family_method(size)
    out = [list(f) for f in families]
    if slots:
        adjusted = adjust([families[i][j].comparison for i, j in slots], method)  # type: ignore[misc]
        for (i, j), c in zip(slots, adjusted, strict=True):
            out[i][j] = dataclasses.replace(out[i][j], comparison=c)
    return tuple(tuple(f) for f in out), size, method


def analyze(
    store: Store, campaign_id: int, *, runs_budget: int | None = None, growing: GrowingTables | None = None
) -> CampaignAnalysis:
    """The campaign's analysis. Its cells hold their runs' tables (what a summary keeps and another process
    receives), or, with `runs_budget`, read them through `cellruns.CellTables` holding at most that many runs
    at a time: the analysis and every section then read the store, which must stay open while they do. With
    `growing` (the tables of this campaign's last analysis, `cellruns.GrowingTables`), a cell reads only the
    runs stored since, and what depends on its runs alone is computed again only where they changed."""
    camp = store.campaign(campaign_id)
    workloads = workload_facts(store, campaign_id)  # what its workloads are, as stored with it
    board = store.board(camp["board_id"])
    rows = store.cells(campaign_id)
    known, plan_order, pairing = cell_facts(store, campaign_id, camp["plan_text"], rows)
    # one query per cell: the rows of one cell at a time, never the campaign's
    tables = None if runs_budget is None else CellTables(store, runs_budget)
    stored = tuple(_cell(row, _runs_of(store, row["id"], tables, growing), known[row["key"]]) for row in rows)
    family = planned_family(stored, workloads)
    remember = remember_with(growing)
    cells, medians, controls = cells_in_pairs(stored, plan_order, family_size=family, remember=remember)
    tails = tail_comparisons(store, cells, workloads, family_size=family, remember=remember)
    (medians, tails), size, method = correct_family(medians, tails)
    by_cell = {c.cell_id: c for c in controls}
    medians = _mark_unstable(medians, cells, by_cell)
    tails = _mark_unstable(tails, tuple(c for c in cells if workloads.tail_samples(c.workload)), by_cell)
    inventory = json.loads(board["inventory_json"])
    environment = json.loads(camp["environment_json"])
    ctx = StudyContext(store, campaign_id, cells, inventory, environment, workloads)

    return CampaignAnalysis(
        campaign_id=campaign_id,
        **{name: camp[name] for name in _CAMPAIGN_COLUMNS},
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
        pairing_source=pairing,
        workloads=workloads,
    )


def latest_campaign_id(store: Store) -> int | None:
    rows = store.campaigns()
    return rows[-1]["id"] if rows else None
