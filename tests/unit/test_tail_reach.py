"""A tail verdict in a large family: the interference study's AI plan (5 models x 7 stressors, each
comparison's median and its pooled p99: 70 comparisons, 7 runs per condition), written with the store's API
and read by the analysis `boardlab report` runs, with one condition cell's slowest frames planted 3x slower.
Its p99 is called a slowdown after the correction over all 70; with too few runs the dry-run says no tail
verdict is reachable, and how many runs would reach one."""

from __future__ import annotations

import math
import random
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_verdicts  # noqa: E402

from boardlab.analysis.core import analyze  # noqa: E402
from boardlab.campaign.plan import preset_text  # noqa: E402
from boardlab.store import Store  # noqa: E402

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

FRAMES = 90


def _frames(rng: random.Random, slow_tail: bool) -> list[float]:
    """One run's frame latencies (ns): lognormal around 10 ms with a run-level CV of 3%; with `slow_tail`, the
    2% slowest frames take 3x as long (the p99 triples, the median does not move)."""
    scale = 1e7 * math.exp(rng.gauss(0.0, 0.03))
    frames = sorted(scale * rng.lognormvariate(0.0, 0.1) for _ in range(FRAMES))
    if slow_tail:
        frames[-2:] = [3 * v for v in frames[-2:]]
    rng.shuffle(frames)
    return frames


def test_a_three_times_slower_p99_in_one_of_70_comparisons_is_a_slowdown(tmp_path):
    from boardlab.campaign.facts import store_facts
    from boardlab.model.campaign import ConditionSpec

    five = preset_text("ai-interference").replace(', "resnet50"]', "]")  # 5 models x 7 stressors x 2
    d = bench_verdicts.design(five, "preset:ai-interference", repetitions=7)
    assert len(d.compared) == 35
    planted = sorted(d.compared)[0]
    rng = random.Random(7)
    with Store.open(tmp_path / "ai.db") as store:
        board = store.upsert_board("synthetic", "synthetic board", {})
        cid = store.create_campaign(name="ai", plan_hash="ai", plan_source="test", plan_text=d.plan.source,
                                    board_id=board, boardlab_version="test", kern_version=None, root="/",
                                    environment={})  # fmt: skip
        store_facts(store, cid, bench_verdicts._catalog())  # what each workload is, as the runner stores it
        conditions: dict[str, ConditionSpec] = {c.name: c for c in d.plan.conditions}
        units = {c.key: (d.metrics[c.key].unit, d.metrics[c.key].higher_is_better) for c in d.cells}
        ids = store.ensure_cells(cid, d.cells, conditions, units)
        for sr in d.schedule:
            frames = _frames(rng, sr.cell.key == planted)
            metric = d.metrics[sr.cell.key]
            result = bench_verdicts._run_result(sr, statistics.median(frames), frames, metric, sr.seq)
            store.record_run(cid, ids[sr.cell.key], result)
        store.set_campaign_status(cid, "complete")
        a = analyze(store, cid)
    assert a.family_size == 70
    tails = {ca.cell_key: ca for ca in a.tail_comparisons}
    hit = tails[planted].comparison
    assert hit is not None and hit.verdict.kind == "slowdown", hit.verdict.reasons
    assert hit.test.method == "permutation" and hit.cost_ratio > 2.5
    others = [ca.comparison.verdict.kind for key, ca in tails.items() if key != planted]
    assert "slowdown" not in others and "speedup" not in others
    medians = {ca.cell_key: ca.comparison.verdict.kind for ca in a.comparisons}
    assert medians[planted] not in ("slowdown", "speedup")  # its median did not move


def test_too_few_runs_for_a_pooled_p99_in_84_comparisons_is_said_before_the_run(tmp_path):
    from boardlab.campaign.plan import parse_plan
    from boardlab.campaign.reach import summarize_plan
    from boardlab.workloads import all_workloads

    catalog = {w.name: w for w in all_workloads()}
    # equal arms (no square-root share for the references): the splits of 5 + 5 runs are 252, the smallest
    # p 2 / 252, times 84 comparisons far above 0.05; 7 + 7 (3,432 splits) is the fewest that reaches it
    equal = 'repetitions = {}\nbaseline_allocation = "equal"'
    text = preset_text("ai-interference").replace("repetitions = 30", equal.format(5))
    s = summarize_plan(parse_plan(text, "ai-5.toml", catalog), catalog)
    assert s.comparisons == 84 and not s.reach.reachable
    assert s.reach.test == "pooled-p99 permutation" and "pooled-p99 comparison" in s.reach.message
    assert s.reach.repetitions_needed == 7 and "--repetitions 7" in s.reach.message
    more = preset_text("ai-interference").replace("repetitions = 30", equal.format(7))
    assert summarize_plan(parse_plan(more, "ai-7.toml", catalog), catalog).reach.reachable
    shared = preset_text("ai-interference").replace("repetitions = 30", "repetitions = 5")
    assert summarize_plan(
        parse_plan(shared, "ai.toml", catalog), catalog
    ).reach.reachable  # 14 reference runs
