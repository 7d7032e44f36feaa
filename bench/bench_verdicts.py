"""Error rates of the verdict pipeline a user gets: synthetic runs through store -> analysis -> verdict.

Each replicate is a real campaign written with the product's store API (`Store.create_campaign`,
`ensure_cells`, `record_run`) into a real SQLite database, from a real plan parsed by `parse_plan`, in the
order and with the A/A labels the product's `schedule` gives it; the verdict is read from
`analysis.analyze`, the code `boardlab report` runs. Only the run values are synthetic: lognormal with
a given CV (one value per run, its iterations around it), with drift along the run order or outliers in some
scenarios. Nothing of the method is re-implemented or re-parametrized here: the threshold, the intervals,
the test and the correction are whatever the product computes.

Printed: the false slowdown/speedup rate of A/A data (both arms from one distribution; goal <= 5%), and the
share of slowdown verdicts for a true 3%, 5% and 10% slowdown at CV 2% with 10 runs per arm (goal >= 80% at
5%). `--json` prints one object; `--quick` uses fewer replicates (under 2 minutes).
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

RUNS_PER_ARM = 10
ITERATIONS = 5
PLAN = f"""\
name = "bench-verdicts"
seed = 7
[runs]
repetitions = {RUNS_PER_ARM}
iterations = {ITERATIONS}
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


@dataclass(frozen=True)
class Scenario:
    name: str
    cv: float  # between-run coefficient of variation
    effect: float  # condition median / baseline median (1.0 = A/A)
    drift: float = 0.0  # total relative drift over the campaign, along run order (both arms alike)
    outliers: float = 0.0  # share of runs 1.5x slower (either arm)


AA_SCENARIOS = (
    Scenario("aa_cv1", 0.01, 1.0),
    Scenario("aa_cv2", 0.02, 1.0),
    Scenario("aa_cv5", 0.05, 1.0),
    Scenario("aa_cv2_drift3", 0.02, 1.0, drift=0.03),
    Scenario("aa_cv2_outliers5", 0.02, 1.0, outliers=0.05),
)
POWER_SCENARIOS = (
    Scenario("slowdown3_cv2", 0.02, 1.03),
    Scenario("slowdown5_cv2", 0.02, 1.05),
    Scenario("slowdown10_cv2", 0.02, 1.10),
)


def _plan_and_schedule():
    from boardlab.campaign.plan import parse_plan
    from boardlab.campaign.schedule import build_cells, reference_keys, schedule
    from boardlab.workloads import all_workloads

    catalog = {w.name: w for w in all_workloads()}
    plan = parse_plan(PLAN, "bench_verdicts", catalog)
    cells = build_cells(plan, catalog)
    runs = schedule(
        cells, plan.runs.order, plan.seed, range(1, RUNS_PER_ARM + 1), reference_keys(plan, cells)
    )
    spec = catalog["noop"]
    metric = spec.primary_metric
    return plan, cells, runs, metric


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


def simulate(scenario: Scenario, replicates: int, seed: int, workdir: Path) -> Counter:
    """Verdict counts of the condition-vs-baseline comparison over `replicates` synthetic campaigns, plus
    the A/A control's own verdicts under keys "aa_control:<kind>"."""
    import statistics

    from boardlab.analysis.core import analyze
    from boardlab.model.campaign import ConditionSpec
    from boardlab.store import Store

    plan, cells, schedule_runs, metric = _plan_and_schedule()
    conditions: dict[str, ConditionSpec] = {c.name: c for c in plan.conditions}
    units = {c.key: (metric.unit, metric.higher_is_better) for c in cells}
    rng = random.Random(f"{seed}:{scenario.name}")
    sigma = math.sqrt(math.log1p(scenario.cv**2))
    counts: Counter = Counter()
    db = workdir / f"{scenario.name}-{seed}.db"
    with Store.open(db) as store:
        board = store.upsert_board("synthetic", "synthetic board", {})
        for rep in range(replicates):
            cid = store.create_campaign(
                name=f"{scenario.name}-{rep}",
                plan_hash=f"{scenario.name}-{rep}",
                plan_source="bench_verdicts",
                plan_text=plan.source,
                board_id=board,
                boardlab_version="bench",
                kern_version=None,
                root="/",
                environment={},
            )
            ids = store.ensure_cells(cid, cells, conditions, units)
            total = len(schedule_runs)
            for sr in schedule_runs:
                median = 1000.0 * (scenario.effect if sr.cell.condition == "cond" else 1.0)
                median *= 1.0 + scenario.drift * sr.seq / max(1, total - 1)
                value = median * math.exp(rng.gauss(0.0, sigma))
                if scenario.outliers and rng.random() < scenario.outliers:
                    value *= 1.5
                iterations = [value * math.exp(rng.gauss(0.0, 0.002)) for _ in range(ITERATIONS)]
                run_value = statistics.median(iterations)
                store.record_run(
                    cid, ids[sr.cell.key], _run_result(sr, run_value, iterations, metric, sr.seq)
                )
            store.set_campaign_status(cid, "complete")
            a = analyze(store, cid)
            comp = a.comparisons[0].comparison
            counts[comp.verdict.kind if comp else "none"] += 1
            for ctl in a.aa_controls:
                counts[f"aa_control:{ctl.kind}"] += 1
    return counts


def rates(counts: Counter) -> dict[str, float]:
    n = sum(v for k, v in counts.items() if not k.startswith("aa_control:"))
    return {k: v / n for k, v in sorted(counts.items())} | {"n": n}


def run_all(replicates: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="boardlab-bench-verdicts-") as tmp:
        work = Path(tmp)
        aa = {s.name: simulate(s, replicates, seed, work) for s in AA_SCENARIOS}
        power = {s.name: simulate(s, replicates, seed, work) for s in POWER_SCENARIOS}
    aa_false = {k: (c["slowdown"] + c["speedup"]) / replicates for k, c in aa.items()}
    aa_control_false = {
        k: (c["aa_control:slowdown"] + c["aa_control:speedup"]) / replicates for k, c in aa.items()
    }
    power_rate = {k: c["slowdown"] / replicates for k, c in power.items()}
    return {
        "schema": 1,
        "replicates_per_scenario": replicates,
        "runs_per_arm": RUNS_PER_ARM,
        "seed": seed,
        "aa_false_verdict_rate": max(aa_false.values()),  # the worst A/A scenario
        "aa_false_verdict_rate_by_scenario": aa_false,
        "aa_control_false_unstable_rate_by_scenario": aa_control_false,
        "power_3pct_cv2_n10": power_rate["slowdown3_cv2"],
        "power_5pct_cv2_n10": power_rate["slowdown5_cv2"],
        "power_10pct_cv2_n10": power_rate["slowdown10_cv2"],
        "verdicts_by_scenario": {k: rates(c) for k, c in {**aa, **power}.items()},
        "goals": {"aa_false_verdict_rate": "<= 0.05", "power_5pct_cv2_n10": ">= 0.80"},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true", help="fewer replicates: under 2 minutes")
    parser.add_argument("--replicates", type=int, help="campaigns per scenario (default 300, --quick 60)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    replicates = args.replicates or (60 if args.quick else 300)
    t0 = time.monotonic()
    doc = run_all(replicates, args.seed)
    doc["elapsed_s"] = round(time.monotonic() - t0, 1)
    if args.json:
        print(json.dumps(doc))
    else:
        print(
            f"verdict error rates through store -> analysis -> verdict ({replicates} campaigns per scenario, "
            f"{RUNS_PER_ARM} runs per arm, {doc['elapsed_s']} s)"
        )
        for k, v in doc["aa_false_verdict_rate_by_scenario"].items():
            ctl = doc["aa_control_false_unstable_rate_by_scenario"][k]
            print(f"  A/A {k:<20} false slowdown/speedup {v:6.1%}   A/A control unstable {ctl:6.1%}")
        print(f"aa_false_verdict_rate (worst scenario): {doc['aa_false_verdict_rate']:.1%}  (goal <= 5%)")
        print(f"power_3pct_cv2_n10:  {doc['power_3pct_cv2_n10']:.1%}")
        print(f"power_5pct_cv2_n10:  {doc['power_5pct_cv2_n10']:.1%}  (goal >= 80%)")
        print(f"power_10pct_cv2_n10: {doc['power_10pct_cv2_n10']:.1%}")
    ok = doc["aa_false_verdict_rate"] <= 0.05 and doc["power_5pct_cv2_n10"] >= 0.80
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
