"""Error rates of the verdict pipeline a user gets: synthetic runs through store -> analysis -> verdict.

Each replicate is a real campaign written with the product's store API (`Store.create_campaign`,
`ensure_cells`, `record_run`) into a real SQLite database, from a real plan parsed by `parse_plan`, with the
runs per cell the product allocates (`cell_repetitions`: the shared reference cell gets Dunnett's
square-root share) and in the order and with the A/A labels the product's `schedule` gives; the verdicts
are read from `analysis.analyze`, the code `boardlab report` runs. Only the run values are synthetic:
lognormal with a given CV (one value per run, its iterations around it), with drift, a step, outliers or
two modes in some scenarios. Nothing of the method is re-implemented or re-parametrized here: the threshold,
the intervals, the test, the correction and the flags are whatever the product computes, and the planted
effect is 2.5 x the threshold the analysis uses (5% at the default 2%).

Printed, for each scenario (CV 1/2/5%, drift, a step, outliers, bimodal) and each family (1, 14 and 70
comparisons, one shared reference per workload), at 7 and 10 runs per arm: the false slowdown/speedup rate
of comparisons without an effect (goal <= 5%) and the power (share of slowdown verdicts) where 10% of the
comparisons (at least one) carry the effect (goal >= 80% at CV 2%, 10 runs, family of one), and the share of
comparisons flagged, with the false rate's 95% Wilson interval and the number of campaigns with any false
verdict (the family-wise error: comparisons of one campaign share their reference, so errors cluster and
the interval is a lower bound on the uncertainty); then the interference preset, from its own plan at its
default repetitions and allocation, with 10% of its 70 comparisons carrying the effect at CV 2% (goal >= 80%); then the pooled-tail
test's calibration (`stats.compare_tail`, the function the analysis calls for tails): its rejection rate of
true nulls at 5% (goal 4-6%) and the coverage of its 90% interval (goal >= 88%). `--json` prints one
object; `--quick` uses fewer replicates (about a minute).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ITERATIONS = 5
FAMILIES = {1: (1, 1), 14: (2, 7), 70: (7, 10)}  # family size -> (workloads, conditions per workload)
RUNS = (7, 10)
EFFECT_SHARE = 0.10  # share of a family's comparisons that carry the effect (at least one)


def plan_text(workloads: int, conditions: int, runs_per_arm: int) -> str:
    """A noop plan: `workloads` parameter sets, each under a baseline and `conditions` conditions."""
    steps = ", ".join(str(i + 1) for i in range(workloads))
    conds = "".join(
        f'[[conditions]]\nname = "c{j}"\nkind = "baseline"\nbaseline = "baseline"\n'
        for j in range(conditions)
    )
    return (
        f'name = "bench-verdicts"\nseed = 7\n[runs]\nrepetitions = {runs_per_arm}\niterations = {ITERATIONS}\n'
        f'order = "interleave"\n[[workloads]]\nname = "noop"\nparams = {{ steps = [{steps}] }}\n'
        f'[[conditions]]\nname = "baseline"\nkind = "baseline"\n{conds}'
    )


@dataclass(frozen=True)
class Scenario:
    name: str
    cv: float  # between-run coefficient of variation
    drift: float = 0.0  # total relative drift over the campaign, along run order (every cell alike)
    step: float = 0.0  # a relative step halfway through the campaign (every cell alike)
    outliers: float = 0.0  # share of runs 1.5x slower (any cell)
    bimodal: float = 0.0  # share of runs in a second mode 10% slower (any cell)


SCENARIOS = (
    Scenario("cv1", 0.01),
    Scenario("cv2", 0.02),
    Scenario("cv5", 0.05),
    Scenario("cv2_drift3", 0.02, drift=0.03),
    Scenario("cv2_step3", 0.02, step=0.03),
    Scenario("cv2_outliers5", 0.02, outliers=0.05),
    Scenario("cv2_bimodal40", 0.02, bimodal=0.40),
)


def value_of(scenario: Scenario, rng: random.Random, median: float, position: float) -> float:
    """One run's value: `median` x the scenario's noise at `position` (0..1 along the campaign's order)."""
    sigma = math.sqrt(math.log1p(scenario.cv**2))
    v = median * (1.0 + scenario.drift * position) * (1.0 + (scenario.step if position >= 0.5 else 0.0))
    v *= math.exp(rng.gauss(0.0, sigma))
    if scenario.outliers and rng.random() < scenario.outliers:
        v *= 1.5
    if scenario.bimodal and rng.random() < scenario.bimodal:
        v *= 1.10
    return v


def _run_result(sr, value: float, iterations: list[float], metric, seq: int):
    from boardlab.model.run import GateResult, MetricResult, RunResult

    return RunResult(
        cell_key=sr.cell.key,
        repetition=sr.repetition,
        attempt=1,
        seq=seq,
        started_unix_s=time.time(),
        wall_ns=int(sum(iterations)),
        cpu=None,
        exit_code=0,
        ok=True,
        valid=True,
        invalid_reason=None,
        value=value,
        metrics=(
            MetricResult(
                metric.name, metric.unit, metric.higher_is_better, tuple(iterations), value, min(iterations)
            ),
        ),
        iterations_ns=tuple(int(v) for v in iterations),
        warmup_iterations=0,
        warmup_capped=False,
        rusage={},
        gate=GateResult(0.0, False, "synthetic"),
        condition_state={"synthetic": True},
        monitor={},
        aa_arm=sr.aa_arm,
    )


PLAN = """\
name = "bench-verdicts"
seed = 7
[runs]
repetitions = 10
iterations = 5
order = "interleave"
[[workloads]]
name = "noop"
[[conditions]]
name = "cond"
kind = "baseline"
baseline = "baseline"
[[conditions]]
name = "baseline"
kind = "baseline"
"""


def _plan_and_schedule():
    """One comparison ("cond" against "baseline", 10 runs per arm): the plan, cells, scheduled runs and the
    noop metric, for tests that write their own campaigns (tests/unit/test_report_aa_control.py)."""
    d = design(PLAN, "bench_verdicts")
    return d.plan, d.cells, d.schedule, d.metrics[d.cells[0].key]


@dataclass
class Design:
    """A parsed plan with the product's cells, runs per cell, schedule, thresholds and comparison pairs."""

    plan: object
    cells: list
    schedule: list
    metrics: dict  # cell key -> MetricSpec
    compared: dict  # condition cell key -> reference cell key


def design(text: str, source: str) -> Design:
    from boardlab.campaign.plan import parse_plan, unsupported_workloads
    from boardlab.campaign.schedule import build_cells, cell_repetitions, reference_keys, schedule
    from boardlab.model.campaign import Cell
    from boardlab.workloads import all_workloads

    catalog = {w.name: w for w in all_workloads()}
    plan = parse_plan(text, source, catalog)
    skipped = unsupported_workloads(plan, catalog)
    cells = [c for c in build_cells(plan, catalog) if c.workload not in skipped]
    per_cell = cell_repetitions(plan, cells)
    rounds = range(1, max(per_cell.values()) + 1)
    runs = schedule(cells, plan.runs.order, plan.seed, rounds, reference_keys(plan, cells), per_cell)
    metrics = {c.key: next(m for m in catalog[c.workload].metrics if m.name == c.metric) for c in cells}
    keys = {c.key for c in cells}
    bases = {c.name: c.baseline for c in plan.conditions}
    compared = {}
    for c in cells:
        if bases.get(c.condition):
            ref = Cell(c.workload, c.params, bases[c.condition], c.metric).key
            if ref in keys:
                compared[c.key] = ref
    return Design(plan, cells, runs, metrics, compared)


def campaign(
    store, board: int, d: Design, scenario: Scenario, effect_keys: set, rng: random.Random, tag: str
):
    """Writes one synthetic campaign of design `d` (the cells in `effect_keys` 2.5 x delta slower) and
    returns its analysis, the one `boardlab report` renders."""
    import statistics

    from boardlab.analysis.core import analyze, threshold_of
    from boardlab.campaign.facts import cell_facts, store_cell_facts
    from boardlab.model.campaign import ConditionSpec

    conditions: dict[str, ConditionSpec] = {c.name: c for c in d.plan.conditions}
    units = {c.key: (d.metrics[c.key].unit, d.metrics[c.key].higher_is_better) for c in d.cells}
    cid = store.create_campaign(
        name=tag,
        plan_hash=tag,
        plan_source="bench_verdicts",
        plan_text=d.plan.source,
        board_id=board,
        boardlab_version="bench",
        kern_version=None,
        root="/",
        environment={},
    )
    ids = store.ensure_cells(cid, d.cells, conditions, units)
    store_cell_facts(store, cid, d.plan, d.cells)  # as the runner stores them
    factor = {}
    for c in d.cells:
        delta, _ = threshold_of(cell_facts(d.plan, c), c.metric)
        slower = 1.0 + 2.5 * delta if c.key in effect_keys else 1.0
        factor[c.key] = 1.0 / slower if d.metrics[c.key].higher_is_better else slower
    total = len(d.schedule)
    for sr in d.schedule:
        value = value_of(scenario, rng, 1000.0 * factor[sr.cell.key], sr.seq / max(1, total - 1))
        iterations = [value * math.exp(rng.gauss(0.0, 0.002)) for _ in range(ITERATIONS)]
        metric = d.metrics[sr.cell.key]
        result = _run_result(sr, statistics.median(iterations), iterations, metric, sr.seq)
        store.record_run(cid, ids[sr.cell.key], result)
    store.set_campaign_status(cid, "complete")
    return analyze(store, cid)


def _effect_keys(d: Design, rng: random.Random, replicate: int) -> set:
    """10% of the comparisons (at least one) carry the effect; a family of one alternates null and effect."""
    keys = sorted(d.compared)
    if len(keys) == 1:
        return set(keys) if replicate % 2 else set()
    return set(rng.sample(keys, max(1, round(EFFECT_SHARE * len(keys)))))


def simulate(d: Design, scenario: Scenario, replicates: int, seed: int, workdir: Path) -> Counter:
    """Verdict counts over `replicates` campaigns of design `d`: "null:<kind>" for comparisons without an
    effect, "effect:<kind>" with one, "flagged:null"/"flagged:effect" for comparisons with a flag, and
    "aa_control:<kind>" for the A/A controls."""
    import json as json_

    from boardlab.store import Store

    rng = random.Random(f"{seed}:{scenario.name}:{len(d.compared)}:{len(d.schedule)}")
    by_label = {(c.workload, json_.dumps(c.params_dict, sort_keys=True), c.condition): c.key for c in d.cells}
    counts: Counter = Counter()
    db = workdir / f"{scenario.name}-{len(d.compared)}-{len(d.schedule)}-{seed}.db"
    with Store.open(db) as store:
        board = store.upsert_board("synthetic", "synthetic board", {})
        for rep in range(replicates):
            effect = _effect_keys(d, rng, rep)
            a = campaign(store, board, d, scenario, effect, rng, f"{scenario.name}-{rep}")
            false_before = counts["null:slowdown"] + counts["null:speedup"]
            for ca in a.comparisons:
                key = by_label.get((ca.workload, json_.dumps(ca.params, sort_keys=True), ca.condition))
                arm = "effect" if key in effect else "null"
                kind = ca.comparison.verdict.kind if ca.comparison else "none"
                counts[f"{arm}:{kind}"] += 1
                counts[f"{arm}:n"] += 1
                if ca.comparison and ca.comparison.verdict.flags:
                    counts[f"flagged:{arm}"] += 1
            counts["campaigns"] += 1
            counts["campaigns:false"] += counts["null:slowdown"] + counts["null:speedup"] > false_before
            for ctl in a.aa_controls:
                counts[f"aa_control:{ctl.kind}"] += 1
    return counts


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a binomial proportion k / n (Wilson 1927). Comparisons of one
    campaign share their reference cell, so their errors cluster: the interval is a lower bound on the
    rate's real uncertainty, and the campaign count says how many independent draws there were."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rates(c: Counter) -> dict:
    nulls, effects = c["null:n"], c["effect:n"]
    false = c["null:slowdown"] + c["null:speedup"]
    return {
        "false_verdict_rate": false / nulls if nulls else None,
        "false_verdicts": false,
        "false_verdict_ci95": wilson(false, nulls),
        "campaigns": c["campaigns"],
        "campaigns_with_false_verdict": c["campaigns:false"],
        "power": c["effect:slowdown"] / effects if effects else None,
        "flagged_rate": (c["flagged:null"] + c["flagged:effect"]) / max(1, nulls + effects),
        "null_comparisons": nulls,
        "effect_comparisons": effects,
        "aa_control_alarms": c["aa_control:slowdown"] + c["aa_control:speedup"],
        "aa_controls": sum(v for k, v in c.items() if k.startswith("aa_control:")),
    }


def tail_calibration(replicates: int, seed: int) -> dict:
    """The pooled-tail test on true nulls (both arms from one distribution): 7 runs of 20 samples and 5 runs
    of 90 (a run's p99 is its slowest sample there, so the pooled rule applies), run-level CV 5% and
    lognormal samples; `stats.compare_tail` with the analysis's defaults."""
    from boardlab.stats.tails import compare_tail

    out = {}
    rng = random.Random(f"tails:{seed}")
    for runs, samples in ((7, 20), (5, 90)):
        rejected = covered = 0
        for i in range(replicates):
            arms = []
            for _ in range(2):
                scales = [math.exp(rng.gauss(0.0, 0.05)) for _ in range(runs)]
                arms.append([[s * rng.lognormvariate(0.0, 0.3) for _ in range(samples)] for s in scales])
            c = compare_tail(arms[0], arms[1], delta=0.10, seed=i)
            rejected += c.p_value < 0.05
            covered += c.decision_ci.low <= 1.0 <= c.decision_ci.high
        out[f"{runs}x{samples}"] = {"reject_rate": rejected / replicates, "coverage_90": covered / replicates}
    return out


def run_all(replicates: dict, seed: int) -> dict:
    from boardlab.campaign.plan import preset_text

    doc: dict = {"schema": 2, "seed": seed, "replicates": replicates, "scenarios": {}}
    with tempfile.TemporaryDirectory(prefix="boardlab-bench-verdicts-") as tmp:
        work = Path(tmp)
        for n in RUNS:
            for family, (w, k) in FAMILIES.items():
                d = design(plan_text(w, k, n), f"bench_verdicts family {family}")
                for s in SCENARIOS:
                    counts = simulate(d, s, replicates[family], seed, work)
                    doc["scenarios"].setdefault(s.name, {})[f"family{family}_n{n}"] = rates(counts)
        preset = design(preset_text("interference"), "preset:interference")
        counts = simulate(preset, SCENARIOS[1], replicates["interference"], seed, work)
        doc["interference"] = rates(counts) | {
            "runs_per_arm": preset.plan.runs.repetitions,
            "runs": len(preset.schedule),
            "comparisons": len(preset.compared),
        }
    doc["tails"] = tail_calibration(replicates["tails"], seed)
    cv2 = doc["scenarios"]["cv2"]
    doc["aa_false_verdict_rate"] = max(
        r["false_verdict_rate"] for sc in doc["scenarios"].values() for r in sc.values()
    )
    doc["power_5pct_cv2_n10"] = cv2["family1_n10"]["power"]
    doc["power_interference_preset"] = doc["interference"]["power"]
    return doc


REPLICATES = {1: 60, 14: 20, 70: 3, "interference": 4, "tails": 100}
QUICK = {1: 10, 14: 1, 70: 1, "interference": 1, "tails": 20}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true", help="fewer replicates: about a minute")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    replicates = QUICK if args.quick else REPLICATES
    t0 = time.monotonic()
    doc = run_all(replicates, args.seed)
    doc["elapsed_s"] = round(time.monotonic() - t0, 1)
    if args.json:
        print(json.dumps(doc))
    else:
        print_text(doc)
    ok = (
        doc["aa_false_verdict_rate"] <= 0.05
        and doc["power_5pct_cv2_n10"] >= 0.80
        and doc["power_interference_preset"] >= 0.80
    )
    return 0 if ok else 1


def print_text(doc: dict) -> None:
    print(
        f"verdicts through store -> analysis -> verdict ({doc['elapsed_s']} s; replicates {doc['replicates']})"
    )
    print(
        f"{'scenario':<16}{'family/runs':<14}{'false verdicts':>15}{'(95% CI)':>16}{'campaigns':>12}"
        f"{'power @2.5 delta':>18}{'flagged':>9}"
    )
    for name, by in doc["scenarios"].items():
        for where, r in by.items():
            power = "–" if r["power"] is None else f"{r['power']:.1%}"
            lo, hi = r["false_verdict_ci95"]
            camps = f"{r['campaigns_with_false_verdict']}/{r['campaigns']}"
            print(
                f"{name:<16}{where:<14}{r['false_verdict_rate']:>15.1%}{f'[{lo:.1%}, {hi:.1%}]':>16}"
                f"{camps:>12}{power:>18}{r['flagged_rate']:>9.1%}"
            )
    print("campaigns: how many of the simulated campaigns had any false verdict (the family-wise error)")
    i = doc["interference"]
    print(
        f"interference preset: {i['comparisons']} comparisons, {i['runs']} runs per campaign, 10% with a real "
        f"effect at CV 2%: power {i['power']:.1%} (goal >= 80%), false verdicts {i['false_verdict_rate']:.1%}"
    )
    for design_, t in doc["tails"].items():
        print(
            f"pooled tail {design_} (runs x samples): rejects {t['reject_rate']:.1%} of true nulls at 5% "
            f"(goal 4-6%), 90% interval covers {t['coverage_90']:.1%} (goal >= 88%)"
        )
    print(f"aa_false_verdict_rate (worst): {doc['aa_false_verdict_rate']:.1%}  (goal <= 5%)")
    print(f"power_5pct_cv2_n10 (family of one): {doc['power_5pct_cv2_n10']:.1%}  (goal >= 80%)")


if __name__ == "__main__":
    sys.exit(main())
