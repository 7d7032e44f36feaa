"""Error rates of the verdict pipeline a user gets: synthetic runs through store -> analysis -> verdict.

Each replicate is a real campaign written with the product's store API (`Store.create_campaign`,
`ensure_cells`, `record_run`) into a real SQLite database, from a real plan parsed by `parse_plan`, with the
runs per cell the product allocates (`cell_repetitions`: a reference cell shared by k comparisons gets
Dunnett's square-root share) and in the order and with the A/A labels the product's `schedule` gives; the
verdicts are read from `analysis.analyze`, the code `boardlab report` runs, and the advice from
`campaign.advice.power_advice`, the code `boardlab run --dry-run` runs. Only the run values are synthetic:
normal or log-normal with a given CV (one value per run, its iterations around it), with drift, outliers or
two modes in some scenarios. Nothing of the method is re-implemented here.

Printed, each rate with its 95% Wilson interval and the goal it is held to:
1. **Family-wise false verdicts** (A/A campaigns: no comparison carries an effect): the share of campaigns
   with any false slowdown/speedup verdict, for families of 10 comparisons (2 workloads x 5 conditions,
   11 runs per condition, 25 for each shared reference) and 70 (the interference preset: 11 and 33), at
   CV 2, 10 and 30%, normal and log-normal runs (goal <= 5%), and with drift, outliers and two modes
   (reported); with the per-comparison false rate and the A/A controls' false alarms beside them.
2. **Power at the advised repetitions** of every preset with comparisons: the dry-run's advice at the
   assumed CV of 2%, then campaigns of the preset at that count whose comparisons carry a true effect of
   2.5 x delta in 10% of them (at least one): the share called a slowdown (goal >= 80%).
3. **Advice read off an earlier campaign**: independent earlier campaigns of the interference preset at a
   true CV of 3% stored in a database, the dry-run's advice from it (the CV's upper confidence bound), and
   campaigns at that advice: each advice's power (goal: >= 80%, or its interval covering 80%).
4. **Pooled tails** (`stats.compare_tail`, the analysis's rule for runs of fewer than 100 samples): the
   rejection rate of true nulls at 5% (goal 4-6%) and the coverage of the 90% decision interval (goal
   >= 88%), with independent and autocorrelated (AR(1), phi 0.7) samples within a run.

Each interval is a Wilson interval at a confidence that makes the gated rates' intervals hold together at
95% (Bonferroni over them). The exit status is 1 only where an interval lies wholly outside its goal: a
`--quick` run (a few replicates, wide intervals) fails by chance at most 1 time in 20 even with every rate
exactly at its goal, and the full run (400 campaigns per family row) has intervals narrow enough that a
family-wise rate of 8% or more fails. `--json` prints
one object; `--jobs` runs rows in parallel processes (default: the CPUs this process may use).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ITERATIONS = 5
EFFECT_SHARE = 0.10  # share of a power campaign's comparisons that carry the effect (at least one)
EARLIER_CV = 0.03  # the true CV of the earlier campaigns the advice is read off
SCHEMA = 3
SECTIONS = ("family", "power", "earlier", "tails")


def plan_text(workloads: int, conditions: int, runs_per_arm: int) -> str:
    """A noop plan: `workloads` parameter sets, each under a baseline and `conditions` conditions."""
    steps = ", ".join(str(i + 1) for i in range(workloads))
    conds = "".join(
        f'[[conditions]]\nname = "c{j}"\nkind = "baseline"\nbaseline = "baseline"\n'
        for j in range(conditions)
    )
    return (
        f'name = "bench-verdicts"\nseed = 7\n[runs]\nrepetitions = {runs_per_arm}\n'
        f'iterations = {ITERATIONS}\norder = "interleave"\n[[workloads]]\nname = "noop"\n'
        f'params = {{ steps = [{steps}] }}\n[[conditions]]\nname = "baseline"\nkind = "baseline"\n{conds}'
    )


FAMILY_PLANS = {10: ("synthetic", (2, 5, 11)), 70: ("preset", "interference")}


@dataclass(frozen=True)
class Scenario:
    name: str
    cv: float  # between-run coefficient of variation
    shape: str = "lognormal"  # or "normal": the run values themselves normal
    drift: float = 0.0  # total relative drift over the campaign, along run order (every cell alike)
    outliers: float = 0.0  # share of runs 1.5x slower (any cell)
    bimodal: float = 0.0  # share of runs in a second mode 10% slower (any cell)
    gated: bool = True  # the family-wise goal applies (the others are reported)


SCENARIOS = tuple(
    Scenario(f"{shape}_cv{round(cv * 100)}", cv, shape)
    for cv in (0.02, 0.10, 0.30)
    for shape in ("normal", "lognormal")
) + (
    Scenario("cv2_drift3", 0.02, drift=0.03, gated=False),
    Scenario("cv10_drift3", 0.10, drift=0.03, gated=False),
    Scenario("cv2_outliers5", 0.02, outliers=0.05, gated=False),
    Scenario("cv10_outliers5", 0.10, outliers=0.05, gated=False),
    Scenario("cv2_bimodal40", 0.02, bimodal=0.40, gated=False),
    Scenario("cv10_bimodal40", 0.10, bimodal=0.40, gated=False),
)


def value_of(scenario: Scenario, rng: random.Random, median: float, position: float) -> float:
    """One run's value: `median` x the scenario's noise at `position` (0..1 along the campaign's order).
    Normal values are kept above 1% of the median (at CV 30% one run in 3,000 would fall below 0)."""
    v = median * (1.0 + scenario.drift * position)
    if scenario.shape == "normal":
        v *= max(0.01, 1.0 + rng.gauss(0.0, scenario.cv))
    else:
        v *= math.exp(rng.gauss(0.0, math.sqrt(math.log1p(scenario.cv**2))))
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
    compared: dict  # cell key -> the keys of the cells it is compared with (its references)


def _catalog() -> dict:
    from boardlab.workloads import all_workloads

    return {w.name: w for w in all_workloads()}


def design(text: str, source: str, *, repetitions: int | None = None) -> Design:
    """The product's cells, allocation and schedule of a plan; `repetitions` replaces the plan's (and every
    entry's own) count, as a user following the dry-run's advice would."""
    from boardlab.campaign.plan import parse_plan, unsupported_workloads
    from boardlab.campaign.schedule import (
        build_cells,
        cell_repetitions,
        compared_with,
        reference_keys,
        schedule,
    )

    catalog = _catalog()
    plan = parse_plan(text, source, catalog)
    if repetitions is not None:
        plan = dataclasses.replace(
            plan,
            runs=dataclasses.replace(plan.runs, repetitions=repetitions, precision=None),
            workloads=tuple(dataclasses.replace(w, repetitions=None) for w in plan.workloads),
        )
    skipped = unsupported_workloads(plan, catalog)
    cells = [c for c in build_cells(plan, catalog) if c.workload not in skipped]
    per_cell = cell_repetitions(plan, cells)
    rounds = range(1, max(per_cell.values()) + 1)
    runs = schedule(cells, plan.runs.order, plan.seed, rounds, reference_keys(plan, cells), per_cell)
    metrics = {c.key: next(m for m in catalog[c.workload].metrics if m.name == c.metric) for c in cells}
    compared = {c.key: refs for c, refs in compared_with(plan, cells).items() if refs}
    return Design(plan, cells, runs, metrics, compared)


def family_design(family: int, repetitions: int | None = None) -> Design:
    kind, what = FAMILY_PLANS[family]
    if kind == "preset":
        from boardlab.campaign.plan import preset_text

        return design(preset_text(what), f"preset:{what}", repetitions=repetitions)
    w, k, n = what
    return design(plan_text(w, k, repetitions or n), f"bench_verdicts family {family}")


def campaign(
    store, board: int, d: Design, scenario: Scenario, effect_keys: set, rng: random.Random, tag: str
):
    """Writes one synthetic campaign of design `d` (the cells in `effect_keys` 2.5 x delta slower) and
    returns its id."""
    import statistics

    from boardlab.analysis.core import threshold_of
    from boardlab.campaign.facts import cell_facts, store_cell_facts, store_facts
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
    store_facts(store, cid, _catalog())  # as the runner stores them: what each workload is,
    store_cell_facts(store, cid, d.plan, d.cells)  # and each cell's thresholds and pairing
    factor = {}
    for c in d.cells:
        delta, _ = threshold_of(cell_facts(d.plan, c))
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
    return cid


def _effect_keys(d: Design, rng: random.Random) -> set:
    """10% of the compared cells (at least one), none of them another comparison's reference (a plan's
    `compare` parameter makes a condition cell the reference of its other values): a planted effect shows in
    its own comparison only."""
    references = {ref for refs in d.compared.values() for ref in refs}
    keys = sorted(k for k in d.compared if k not in references)
    return set(rng.sample(keys, max(1, round(EFFECT_SHARE * len(keys)))))


def simulate(
    d: Design, scenario: Scenario, replicates: int, seed: int, workdir: Path, *, effects: bool
) -> Counter:
    """Verdict counts over `replicates` campaigns of design `d`, with 10% of its comparisons carrying the
    effect (`effects`) or none (A/A): "null:<kind>" and "effect:<kind>" per comparison, "flagged:null",
    "campaigns" and "campaigns:false" (any false verdict), "aa_control:<kind>"."""
    from boardlab.analysis.core import analyze
    from boardlab.store import Store

    rng = random.Random(f"{seed}:{scenario.name}:{len(d.compared)}:{len(d.schedule)}:{effects}")
    counts: Counter = Counter()
    db = workdir / f"{scenario.name}-{len(d.compared)}-{len(d.schedule)}-{seed}-{effects}.db"
    with Store.open(db) as store:
        board = store.upsert_board("synthetic", "synthetic board", {})
        for rep in range(replicates):
            effect = _effect_keys(d, rng) if effects else set()
            a = analyze(store, campaign(store, board, d, scenario, effect, rng, f"{scenario.name}-{rep}"))
            false_before = counts["null:slowdown"] + counts["null:speedup"]
            for ca in a.comparisons:
                # an effect cell is no comparison's reference (_effect_keys): a comparison is real exactly
                # when its own cell carries the effect
                arm = "effect" if ca.cell_key in effect else "null"
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
    """The 95% Wilson score interval of a binomial proportion k / n (Wilson 1927)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(k: int, n: int, goal: tuple[float, float] | None) -> dict:
    """k of n and the goal [lo, hi] it is held to (None: reported); `judge` adds its interval."""
    return {"k": k, "n": n, "rate": k / n if n else None, "goal": goal}


def judge(doc: dict) -> None:
    """Every rate's Wilson interval at one confidence for the whole run: 95% for all its gated rates together
    (Bonferroni: each at 1 - 0.05 / k for k gated rates), so that a run whose every rate meets its goal
    fails by chance at most 1 time in 20 however many rows it has; `missed` where the interval lies wholly
    outside the goal."""
    from statistics import NormalDist

    rates_ = [v for section in SECTIONS for row in doc[section] for v in row.values() if _is_rate(v)]
    gated = sum(1 for r in rates_ if r["goal"] is not None)
    z = NormalDist().inv_cdf(1.0 - 0.05 / (2 * max(1, gated)))
    for r in rates_:
        r["ci"] = list(wilson(r["k"], r["n"], z))
        r["missed"] = r["goal"] is not None and (r["ci"][0] > r["goal"][1] or r["ci"][1] < r["goal"][0])
    doc["interval"] = {"z": z, "gated_rates": gated, "confidence_each": 1.0 - 0.05 / max(1, gated)}


def _is_rate(value) -> bool:
    return isinstance(value, dict) and "goal" in value and "k" in value


AT_MOST_5 = (0.0, 0.05)
AT_LEAST_80 = (0.80, 1.0)


def rates(c: Counter, *, gated: bool, effects: bool) -> dict:
    false = c["null:slowdown"] + c["null:speedup"]
    out = {
        "campaigns_with_false_verdict": rate(
            c["campaigns:false"], c["campaigns"], AT_MOST_5 if gated else None
        ),
        "false_verdicts": rate(false, c["null:n"], AT_MOST_5 if gated else None),
        "aa_control_alarms": rate(
            c["aa_control:slowdown"] + c["aa_control:speedup"],
            sum(v for k, v in c.items() if k.startswith("aa_control:")),
            None,
        ),
        "flagged": rate(c["flagged:null"] + c["flagged:effect"], c["null:n"] + c["effect:n"], None),
    }
    if effects:
        out["power"] = rate(c["effect:slowdown"], c["effect:n"], AT_LEAST_80)
    return out


# ---- the jobs, each run in a process of its own ---------------------------------------------------------


def family_job(family: int, scenario: Scenario, replicates: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="boardlab-bench-verdicts-") as tmp:
        counts = simulate(family_design(family), scenario, replicates, seed, Path(tmp), effects=False)
    return {"family": family, "scenario": scenario.name, **rates(counts, gated=scenario.gated, effects=False)}


def _preset_advice(d: Design, db: Path | None) -> tuple[int, str]:
    """The dry-run's advice for design `d`: (runs per arm, its sentence), from `db`'s earlier runs or the
    assumed CV."""
    from boardlab.campaign.advice import earlier_values, power_advice
    from boardlab.campaign.reach import _compared_keys, count_comparisons

    catalog = _catalog()
    compared = _compared_keys(d.plan, d.cells)
    values = earlier_values(str(db)) if db else {}
    advice = power_advice(d.plan, d.cells, compared, count_comparisons(d.plan, d.cells, catalog), values)
    return advice[0][1].runs_per_arm, advice[0][1].sentence()


def power_job(preset: str, replicates: int, seed: int) -> dict:
    """Power at the dry-run's advice (assumed CV 2%) for one preset, at a true CV of 2%."""
    from boardlab.campaign.plan import preset_text

    n, sentence = _preset_advice(design(preset_text(preset), f"preset:{preset}"), None)
    d = design(preset_text(preset), f"preset:{preset}", repetitions=n)
    with tempfile.TemporaryDirectory(prefix="boardlab-bench-verdicts-") as tmp:
        counts = simulate(d, Scenario("lognormal_cv2", 0.02), replicates, seed, Path(tmp), effects=True)
    r = rates(counts, gated=True, effects=True)
    return {"preset": preset, "advised_runs": n, "advice": sentence, "comparisons": len(d.compared), **r}


def earlier_job(index: int, replicates: int, seed: int) -> dict:
    """One earlier campaign of the interference preset at a true CV of 3%, the advice read off it, and the
    power of campaigns at that advice."""
    from boardlab.store import Store

    truth = Scenario("lognormal_cv3", EARLIER_CV)
    with tempfile.TemporaryDirectory(prefix="boardlab-bench-verdicts-") as tmp:
        db = Path(tmp) / "earlier.db"
        d = family_design(70)
        with Store.open(db) as store:
            board = store.upsert_board("synthetic", "synthetic board", {})
            campaign(store, board, d, truth, set(), random.Random(f"earlier:{seed}:{index}"), "earlier")
        n, sentence = _preset_advice(d, db)
        counts = simulate(
            family_design(70, n), truth, replicates, seed + 1000 * index, Path(tmp), effects=True
        )
    r = rates(counts, gated=True, effects=True)
    return {"earlier": index, "advised_runs": n, "advice": sentence, **r}


def tail_job(runs: int, samples: int, phi: float, replicates: int, seed: int) -> dict:
    """The pooled-tail test on true nulls: `runs` runs of `samples` samples per arm, run-level CV 5%, samples
    lognormal (sigma 0.3) with AR(1) correlation `phi` within a run; `stats.compare_tail` as the analysis
    calls it."""
    from boardlab.stats.tails import compare_tail

    rng = random.Random(f"tails:{seed}:{runs}:{samples}:{phi}")
    rejected = covered = 0
    for i in range(replicates):
        arms = [[_tail_run(rng, samples, phi) for _ in range(runs)] for _ in range(2)]
        c = compare_tail(arms[0], arms[1], delta=0.10, seed=i)
        rejected += c.p_value < 0.05
        covered += c.decision_ci.low <= 1.0 <= c.decision_ci.high
    return {
        "design": f"{runs} runs x {samples} samples" + (f", AR(1) phi {phi}" if phi else ""),
        "reject_at_5pct": rate(rejected, replicates, (0.04, 0.06)),
        "coverage_90": rate(covered, replicates, (0.88, 1.0)),
    }


def _tail_run(rng: random.Random, samples: int, phi: float) -> list[float]:
    scale = math.exp(rng.gauss(0.0, 0.05))
    e, out = rng.gauss(0.0, 1.0), []
    for _ in range(samples):
        out.append(scale * math.exp(0.3 * e))
        e = phi * e + math.sqrt(1.0 - phi * phi) * rng.gauss(0.0, 1.0)
    return out


REPLICATES = {
    "family10": 400,
    "family70": 400,
    "power": 40,
    "earlier": 8,
    "earlier_campaigns": 30,
    "tails": 1000,
}
QUICK = {"family10": 6, "family70": 2, "power": 1, "earlier": 1, "earlier_campaigns": 1, "tails": 40}
POWER_PRESETS = ("quick", "interference", "andesite", "rt-isolation", "stream", "victory")
TAIL_DESIGNS = ((7, 20, 0.0), (5, 90, 0.0), (10, 50, 0.0), (7, 20, 0.7), (5, 90, 0.7), (10, 50, 0.7))


def jobs(reps: dict, seed: int) -> list[tuple]:
    """Every job, costliest first, as (section, function, arguments)."""
    out = [("family", family_job, (70, s, reps["family70"], seed)) for s in SCENARIOS]
    out += [("earlier", earlier_job, (i, reps["earlier_campaigns"], seed)) for i in range(reps["earlier"])]
    out += [("power", power_job, (p, reps["power"], seed)) for p in _presets_with_comparisons()]
    out += [("family", family_job, (10, s, reps["family10"], seed)) for s in SCENARIOS]
    out += [("tails", tail_job, (*t, reps["tails"], seed)) for t in TAIL_DESIGNS]
    return out


def _presets_with_comparisons() -> list[str]:
    from boardlab.campaign.plan import preset_text

    return [p for p in POWER_PRESETS if design(preset_text(p), f"preset:{p}").compared]


def run_all(reps: dict, seed: int, workers: int, progress, sections=SECTIONS) -> dict:
    doc: dict = {"schema": SCHEMA, "seed": seed, "replicates": reps, "family": [], "power": [], "earlier": [],
                 "tails": [], "sections": list(sections)}  # fmt: skip
    todo = [job for job in jobs(reps, seed) if job[0] in sections]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [(section, pool.submit(fn, *args)) for section, fn, args in todo]
        for done, (section, f) in enumerate(futures, 1):
            doc[section].append(f.result())
            progress(done, len(futures))
    judge(doc)
    doc["missed"] = list(missed(doc))
    return doc


def missed(doc: dict):
    """Every rate whose interval lies wholly outside its goal, as 'section: row: rate'."""
    for section in SECTIONS:
        for row in doc[section]:
            name = (
                row.get("scenario")
                or row.get("preset")
                or row.get("design")
                or f"earlier {row.get('earlier')}"
            )
            family = f"family {row['family']} " if "family" in row else ""
            for key, value in row.items():
                if _is_rate(value) and value["missed"]:
                    yield f"{section}: {family}{name}: {key}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true", help="a few replicates of every row (a few minutes)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="processes at once")
    parser.add_argument("--section", action="append", choices=SECTIONS,
                        help="run only this section (repeatable; default: all); the intervals then hold "
                        "together over its rates")  # fmt: skip
    args = parser.parse_args(argv)
    reps = QUICK if args.quick else REPLICATES
    t0 = time.monotonic()

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} rows, {time.monotonic() - t0:.0f} s", end="", file=sys.stderr, flush=True)

    doc = run_all(reps, args.seed, max(1, args.jobs), progress, tuple(args.section or SECTIONS))
    print(file=sys.stderr)
    doc["elapsed_s"] = round(time.monotonic() - t0, 1)
    doc["load_average"] = os.getloadavg()
    print(json.dumps(doc) if args.json else "\n".join(text_lines(doc)))
    return 1 if doc["missed"] else 0


def _r(r: dict) -> str:
    lo, hi = r["ci"]
    return f"{r['rate']:6.1%} [{lo:5.1%}, {hi:5.1%}] ({r['k']}/{r['n']})"


def text_lines(doc: dict) -> list[str]:
    load = ", ".join(f"{x:.2f}" for x in doc["load_average"])
    iv = doc["interval"]
    out = [
        f"verdicts through store -> analysis -> verdict ({doc['elapsed_s']} s; load {load}; replicates "
        f"{doc['replicates']})",
        f"rates with Wilson intervals at {iv['confidence_each']:.4%} each (z = {iv['z']:.2f}): 95% for all "
        f"{iv['gated_rates']} gated rates together",
        "",
        "1. campaigns with any false verdict (A/A campaigns; goal <= 5% where gated)",
    ]
    out.append(
        f"{'family':>7} {'scenario':<16}{'any false verdict':>30}{'per comparison':>31}{'A/A alarms':>30}"
    )
    for r in sorted(doc["family"], key=lambda r: (r["family"], r["scenario"])):
        gated = "" if r["campaigns_with_false_verdict"]["goal"] else "  (reported)"
        out.append(f"{r['family']:>7} {r['scenario']:<16}{_r(r['campaigns_with_false_verdict']):>30}"
                   f"{_r(r['false_verdicts']):>31}{_r(r['aa_control_alarms']):>30}{gated}")  # fmt: skip
    out += [
        "",
        "2. power at the dry-run's advice (assumed CV 2%; true CV 2%, 10% of comparisons 2.5 x delta slower; "
        "goal >= 80%)",
    ]
    for r in doc["power"]:
        out.append(
            f"  {r['preset']:<14} {r['advised_runs']:>3} runs per arm, {r['comparisons']:>3} comparisons: "
            f"power {_r(r['power'])}; false verdicts {_r(r['false_verdicts'])}"
        )
    out += [
        "",
        f"3. advice read off an earlier interference campaign (true CV {EARLIER_CV:.0%}; goal: >= 80% or "
        "its interval covering 80%)",
    ]
    for r in doc["earlier"]:
        out.append(f"  earlier {r['earlier']}: {r['advised_runs']:>3} runs per arm: power {_r(r['power'])}")
    out += [
        "",
        "4. pooled tails on true nulls (goals: rejection at 5% within 4-6%, 90% interval coverage >= 88%)",
    ]
    for r in doc["tails"]:
        out.append(f"  {r['design']:<34} rejects {_r(r['reject_at_5pct'])}; covers {_r(r['coverage_90'])}")
    out += ["", "missed (an interval wholly outside its goal): " + (", ".join(doc["missed"]) or "none")]
    return out


if __name__ == "__main__":
    sys.exit(main())
